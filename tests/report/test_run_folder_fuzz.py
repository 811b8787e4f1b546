"""Property test (hypothesis) of the files of a run folder that `report RUN_DIR` reads besides its captures:
manifest.json, windows.jsonl, metrics.jsonl, gpm.jsonl, stdout.log, stderr.log and a capture's summary. Each,
damaged — cut at any byte, bytes flipped, nested thousands of levels deep, numbers past any type, values of the
wrong type — gives a report (exit 0) or one line (exit 2) in bounded time: never a traceback, never exit 70.

The folders are built from real H200 runs (tests/data/h200_runs): hw_phases_cupti (capture, manifest, GPM samples,
logs) with keras_fp16_cupti_ops' metrics.jsonl and stderr.log and the summary of gemm_cupti's capture beside it;
nsys_window_aside (a windowed run: windows.jsonl) with gpt_bf16_nsys' stdout.log. FUZZ_EXAMPLES scales the budget
(CI: 15 examples per file, ~15 s)."""
from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvprof_wrap.cli import main
from tests._paths import RUNS

EXAMPLES = max(6, int(os.environ.get("FUZZ_EXAMPLES", "60")) // 4)  # per file: 9 files, ~15 s in all
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SUMMARY = "cupti-vm-4574.sqlite.summary.json.gz"
FILES = [("cupti", name) for name in ("manifest.json", "metrics.jsonl", "gpm.jsonl", "stdout.log", "stderr.log",
                                      SUMMARY)] + [("nsys", name) for name in ("manifest.json", "windows.jsonl",
                                                                                "stdout.log")]
PER_EXAMPLE_S = 20


@pytest.fixture(scope="module")
def run_folders(tmp_path_factory) -> dict[str, Path]:
    """A CUPTI run with GPM samples, logs, metrics and a summary beside its capture; an nsys run with a capture
    window (windows.jsonl is read only for a windowed run)."""
    cupti = tmp_path_factory.mktemp("fuzz") / "cupti"
    shutil.copytree(RUNS / "hw_phases_cupti", cupti)
    for name in ("metrics.jsonl", "stderr.log"):
        shutil.copy(RUNS / "keras_fp16_cupti_ops" / name, cupti)
    summaries = tmp_path_factory.mktemp("summary")
    assert main(["summarize", str(next((RUNS / "gemm_cupti").glob("cupti-*.sqlite"))), "-o", str(summaries)]) == 0
    shutil.copy(summaries / SUMMARY, cupti)
    nsys = tmp_path_factory.mktemp("fuzz") / "nsys"
    shutil.copytree(RUNS / "nsys_window_aside", nsys)
    shutil.copy(RUNS / "gpt_bf16_nsys" / "stdout.log", nsys)
    for folder in (cupti, nsys):  # the run store kept: examples read again only what changed
        assert main(["report", str(folder), "--format", "json"]) == 0
    return {"cupti": cupti, "nsys": nsys}


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    | st.sampled_from([2**64, -(2**70), 10**30, 1e308, -1e308, "", "0", "nan"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6)
_HUGE = st.sampled_from([b"9" * 5000, b"1e999", b"-1e400", b"NaN", b"-Infinity", b"18446744073709551616",
                         b"-9223372036854775809", b"1" + b"0" * 400, b"0.0000000000000000000000001"])


@st.composite
def damaged(draw, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["truncate", "flip", "deep", "huge", "wrong type"]))
    if kind == "truncate":
        return data[:draw(st.integers(0, max(len(data) - 1, 0)))]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            if out:
                out[draw(st.integers(0, len(out) - 1))] ^= 1 << draw(st.integers(0, 7))
        return bytes(out)
    if kind == "deep":  # where a value starts (a parser reaches the nesting), or anywhere
        starts = [0, *(m.end() for m in re.finditer(rb"\n|: ?|\[", data[:1 << 20]))]
        at = draw(st.sampled_from(starts) | st.integers(0, len(data)))
        levels = draw(st.sampled_from([101, 999, 1001, 5000, 200_000]))
        opener = draw(st.sampled_from([b"[", b'{"a":']))
        closer = b"]" if opener == b"[" else b"}"
        return data[:at] + opener * levels + closer * draw(st.sampled_from([0, levels])) + data[at:]
    if kind == "huge":
        numbers = list(re.finditer(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", data))
        if not numbers:
            return data + draw(_HUGE)
        m = draw(st.sampled_from(numbers))
        return data[:m.start()] + draw(_HUGE) + data[m.end():]
    return _wrong_type(draw, data)


def _wrong_type(draw, data: bytes) -> bytes:
    """One value of a JSON record (a line of a .jsonl, or the whole document) replaced by a value of another type."""
    lines = data.split(b"\n")
    which = draw(st.integers(0, max(len(lines) - 1, 0)))
    try:
        record = json.loads(lines[which])
    except ValueError:
        record = None
    if not isinstance(record, dict) or not record:
        try:  # the whole file as one document (manifest.json, a summary)
            record, which, lines = json.loads(data), 0, [data]
        except ValueError:
            return data + b"\n" + json.dumps(draw(_JSON_VALUES)).encode()
    target = record
    for _ in range(draw(st.integers(0, 3))):  # somewhere inside, not only at the top
        keys = list(target) if isinstance(target, dict) else list(range(len(target))) if isinstance(target, list) \
            else []
        inner = [k for k in keys if isinstance(target[k], (dict, list)) and target[k]]
        if not inner:
            break
        target = target[draw(st.sampled_from(inner))]
    keys = list(target) if isinstance(target, dict) else list(range(len(target))) if isinstance(target, list) else []
    if keys:
        target[draw(st.sampled_from(keys))] = draw(_JSON_VALUES)
    lines[which] = json.dumps(record).encode()
    return b"\n".join(lines)


def _plain(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


@pytest.mark.parametrize("run, name", FILES)
@FUZZ
@given(data=st.data())
def test_a_damaged_file_of_a_run_folder_gives_a_report_or_one_line(run_folders, capsys, run, name, data):
    folder = run_folders[run]
    path = folder / name
    pristine = path.read_bytes()
    bad = data.draw(damaged(_plain(path)), label="damage")
    if name == SUMMARY and data.draw(st.booleans(), label="gzip the damage"):
        bad = gzip.compress(bad, 1)
    try:
        path.write_bytes(bad)
        capsys.readouterr()
        t = time.monotonic()
        code = main(["report", str(folder), "--format", "json"])
        took = time.monotonic() - t
        out, err = capsys.readouterr()
    finally:
        path.write_bytes(pristine)
    assert code in (0, 2), (code, err[-2000:])
    assert "Traceback" not in err and took < PER_EXAMPLE_S, (took, err[-2000:])
    if code == 2:
        assert err.count("\n") == 1 and out == "", err
    else:
        assert json.loads(out)["schema"].startswith("nvprof-wrap.report/")
