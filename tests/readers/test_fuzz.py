"""Property-based fuzzing of every reader (hypothesis): damaged real captures either read or end in one line naming
the file, exit code 2, no traceback — and the run store is unchanged by a file that could not be read. Then the
bounds of issue 14: absurd nesting, long strings, mangled-name bombs and NULL times in every reader, and, in a
subprocess under a 2 GB address-space limit and a time limit, any input at all.

Case counts are recorded in docs/reliability.md; CI runs the same budgets (FUZZ_EXAMPLES scales them)."""
from __future__ import annotations

import gzip
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.report_pathological_inputs import mangled_bomb
from nvprof_wrap.cli import main
from nvprof_wrap.system.limits import MAX_JSON_DEPTH, MAX_NAME_CHARS
from nvprof_wrap.text import demangle as demangle_mod
from tests._paths import H200, PUBLIC, ROOT, RUNS

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
SEEDS = {
    "nsys-sqlite": H200 / "nsys_two_child_processes.sqlite",
    "nvprof": PUBLIC / "josiahdavis__profiling-lm__net.sql",
    "cupti": next((RUNS / "gemm_cupti").glob("cupti-*.sqlite")),
    "kineto-json": PUBLIC / "facebookresearch__HolisticTraceAnalysis__inference_rank_1.json.gz",
    "nvprof-csv": PUBLIC / "nanzifan__nvprof-result__print-gpu-summary.csv",
    "pyprof-csv": PUBLIC / "josiahdavis__profiling-lm__lm.csv",
    "ncu-csv": H200 / "ncu_tensor_metrics.csv",
}
OWN_KINETO = RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz"
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _store_rows(store: Path) -> tuple:
    conn = sqlite3.connect(store)
    try:
        return tuple(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                     for t in ("captures", "kernels", "memops", "processes", "devices"))
    finally:
        conn.close()


def check_outcome(capsys, path: Path, template: Path) -> tuple[int, str, str]:
    capsys.readouterr()  # drop anything printed before this example
    store = path.parent / "run.sqlite"  # a fresh copy per example: examples must not see each other's ingests
    shutil.copy(template, store)
    before = _store_rows(store)
    # --sum: the template's capture (a TITAN Xp's nvprof summary) and the seed's are two machines' — two jobs, which
    # report refuses (after reading them) unless asked to sum them; what is fuzzed here is the reading
    code = main(["report", str(path), "--store", str(store), "--format", "json", "--sum"])
    out, err = capsys.readouterr()
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err
        assert out == ""
        assert _store_rows(store) == before  # nothing half-ingested
    return code, out, err


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A run store that already holds one capture (so 'unchanged' is checked against real rows)."""
    s = tmp_path_factory.mktemp("store") / "template.sqlite"
    from nvprof_wrap.pipeline.ingest import ingest
    from nvprof_wrap.store import Store

    st_ = Store(s)
    ingest(st_, [SEEDS["nvprof-csv"]])
    st_.close()
    return s


def _data(fmt: str) -> bytes:
    raw = SEEDS[fmt].read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


@pytest.mark.parametrize("fmt", sorted(SEEDS))
@FUZZ
@given(data=st.data())
def test_truncated_and_bit_flipped(fmt, data, tmp_path_factory, capsys, store):
    raw = _data(fmt)
    cut = data.draw(st.integers(0, len(raw)), label="truncate at")
    blob = bytearray(raw[:cut] if data.draw(st.booleans(), label="truncate") else raw)
    for _ in range(data.draw(st.integers(0, 8), label="flips")):
        if blob:
            i = data.draw(st.integers(0, len(blob) - 1))
            blob[i] ^= data.draw(st.integers(1, 255))
    path = tmp_path_factory.mktemp("fuzz") / f"capture-{fmt}"
    path.write_bytes(bytes(blob))
    check_outcome(capsys, path, store)


_SQLITE_TABLES = {"nsys-sqlite": ("CUPTI_ACTIVITY_KIND_KERNEL", "StringIds", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                  "TARGET_INFO_GPU", "PROCESSES", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME"),
                  "nvprof": ("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "StringTable", "CUPTI_ACTIVITY_KIND_DEVICE",
                             "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_RUNTIME"),
                  "cupti": ("kernel", "meta", "device", "memcpy", "memset")}
_HOSTILE = st.one_of(st.text(max_size=50), st.binary(max_size=50), st.just("\x00" * 10), st.just("x" * 200_000),
                     st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=True), st.none(),
                     st.just("<script>alert(1)</script>=cmd|' /C calc'!A0"))


@pytest.mark.parametrize("fmt", sorted(_SQLITE_TABLES))
@FUZZ
@given(data=st.data())
def test_sqlite_schema_and_type_damage(fmt, data, tmp_path_factory, capsys, store):
    path = tmp_path_factory.mktemp("fuzz") / f"capture-{fmt}.sqlite"
    shutil.copy(SEEDS[fmt], path)
    conn = sqlite3.connect(path)
    table = data.draw(st.sampled_from(_SQLITE_TABLES[fmt]), label="table")
    action = data.draw(st.sampled_from(("drop", "retype", "hostile")), label="action")
    try:
        if action == "drop":
            conn.execute(f'DROP TABLE IF EXISTS "{table}"')
        else:
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            if cols:
                col = data.draw(st.sampled_from(cols), label="column")
                value = data.draw(_HOSTILE, label="value")
                try:
                    conn.execute(f'UPDATE "{table}" SET "{col}" = ? WHERE rowid IN '
                                 f'(SELECT rowid FROM "{table}" LIMIT 3)', (value,))
                except sqlite3.IntegrityError:  # e.g. a primary key made non-unique: that damage cannot be made
                    pass
        conn.commit()
    finally:
        conn.close()
    check_outcome(capsys, path, store)


@FUZZ
@given(events=st.lists(st.fixed_dictionaries({
    "cat": st.sampled_from(["kernel", "Kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "weird"]),
    "name": st.one_of(st.text(max_size=40), st.integers(), st.none()),
    "ts": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5), st.integers()),
    "dur": st.one_of(st.floats(allow_nan=True), st.text(max_size=5), st.integers(-10, 10**9)),
    "args": st.one_of(st.dictionaries(st.sampled_from(["device", "bytes", "stream"]),
                                      st.one_of(st.integers(), st.text(max_size=5), st.none())), st.none(),
                      st.text(max_size=5)),
}), max_size=30))
def test_kineto_json_with_wrong_types(events, tmp_path_factory, capsys, store):
    import json

    path = tmp_path_factory.mktemp("fuzz") / "trace.json"
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": [{"id": "x", "name": None}]}))
    check_outcome(capsys, path, store)


# ------------------------------------------------------------------ issue 14: bounds
TC_NAME = "volta_h884gemm_64x64_ldg8_nn"


def _event(name: object = TC_NAME, ts: object = 1, dur: object = 2) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"device": 0}}


def _write(path: Path, text: bytes, compress: bool) -> Path:
    if compress:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(text, 6))
    else:
        path.write_bytes(text)
    return path


@FUZZ
@given(depth=st.integers(1, 3 * MAX_JSON_DEPTH), opener=st.sampled_from(["[", '{"a": ']),
       where=st.sampled_from(["args", "top", "events"]), compress=st.booleans())
def test_nesting_is_read_or_refused_in_one_line(depth, opener, where, compress, tmp_path_factory, capsys, store):
    closer = "]" if opener == "[" else "}"
    nest = opener * depth + "1" + closer * depth
    ev = json.dumps(_event())
    text = {"args": '{"traceEvents": [' + ev[:-1] + ', "deep": ' + nest + "}]}",
            "top": '{"traceEvents": [' + ev + '], "deep": ' + nest + "}",
            "events": '{"traceEvents": [' + ev + ", " + nest + "]}"}[where]
    path = _write(tmp_path_factory.mktemp("fuzz") / "trace.json", text.encode(), compress)
    code, _, err = check_outcome(capsys, path, store)
    levels = depth + {"args": 3, "top": 1, "events": 2}[where]  # the levels around the nest
    assert code == (0 if levels <= MAX_JSON_DEPTH else 2), (levels, err)
    if code == 2:
        assert f"nested deeper than {MAX_JSON_DEPTH} levels" in err


@settings(FUZZ, max_examples=max(EXAMPLES // 3, 5))
@given(length=st.integers(0, 3 << 20), piece=st.sampled_from(["A", "é", "\\n", "\\u00e9", "\\\\", "\\\""]),
       field=st.sampled_from(["name", "key", "arg"]), compress=st.booleans())
def test_long_strings_are_cut_never_quadratic(length, piece, field, compress, tmp_path_factory, capsys, store):
    big = piece * (length // len(piece))
    body = {"name": f'{{"traceEvents": [{{"cat": "kernel", "ts": 1, "dur": 2, "name": "{big}"}}]}}',
            "key": f'{{"traceEvents": [{json.dumps(_event())}], "{big}": 1}}',
            "arg": f'{{"traceEvents": [{json.dumps(_event())[:-2]}, "stack": "{big}"}}}}]}}'}[field]
    path = _write(tmp_path_factory.mktemp("fuzz") / "trace.json", body.encode(), compress)
    t = time.time()
    code, out, err = check_outcome(capsys, path, store)
    assert code == 0, err
    assert time.time() - t < 30
    assert max(len(k["name"]) for k in json.loads(out)["kernels"]) <= MAX_NAME_CHARS + 1


_MANGLED = st.one_of(st.builds(mangled_bomb, st.integers(1, 30)),
                     st.from_regex(r"_Z[A-Za-z0-9_]{1,80}", fullmatch=True),
                     st.sampled_from(["_ZN5cudnn4gemm20computeOffsetsKernelENS0_20ComputeOffsetsParamsE",
                                      "_Z1fIiEvT_", "_ZSt4move"]))


@FUZZ
@given(names=st.lists(_MANGLED, min_size=1, max_size=6), as_sqlite=st.booleans())
def test_mangled_name_bombs_stay_within_the_budget(names, as_sqlite, tmp_path_factory, capsys, store):
    demangle_mod.over_budget.clear()
    demangle_mod.demangle.cache_clear()
    folder = tmp_path_factory.mktemp("fuzz")
    if as_sqlite:
        path = folder / "cupti-1.sqlite"
        shutil.copy(SEEDS["cupti"], path)
        conn = sqlite3.connect(path)
        ids = [r[0] for r in conn.execute("SELECT rowid FROM kernel LIMIT ?", (len(names),))]
        conn.executemany("UPDATE kernel SET name = ? WHERE rowid = ?", list(zip(names, ids)))
        conn.commit()
        conn.close()
    else:
        path = folder / "trace.json"
        path.write_text(json.dumps({"traceEvents": [_event(n) for n in names]}))
    t = time.time()
    code, out, err = check_outcome(capsys, path, store)
    assert code == 0, err
    assert time.time() - t < 15  # at most DEMANGLE_MAX_OVERRUNS names reach the time budget
    for k in json.loads(out)["kernels"]:
        assert len(k["name"]) <= MAX_NAME_CHARS + 1


_TIME_COLUMNS = {"nsys-sqlite": ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                 "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"),
                 "nvprof": ("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "CUPTI_ACTIVITY_KIND_KERNEL",
                            "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME"),
                 "cupti": ("kernel", "memcpy", "memset", "runtime", "nvtx")}


@pytest.mark.parametrize("fmt", sorted(_TIME_COLUMNS))
@FUZZ
@given(data=st.data())
def test_null_and_impossible_times_in_sqlite_readers_are_counted(fmt, data, tmp_path_factory, capsys, store):
    """NULL, negative and absurd start/end on any rows of any timed table: the capture still reads (exit 0)."""
    path = tmp_path_factory.mktemp("fuzz") / f"capture-{fmt}.sqlite"
    shutil.copy(SEEDS[fmt], path)
    conn = sqlite3.connect(path)
    have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table in data.draw(st.lists(st.sampled_from([t for t in _TIME_COLUMNS[fmt] if t in have]), min_size=1,
                                    max_size=3), label="tables"):
        col = data.draw(st.sampled_from(["start", "end"]), label="column")
        value = data.draw(st.sampled_from([None, -1, -(2**40), 2**62]), label="value")
        every = data.draw(st.integers(1, 5), label="every nth row")
        try:
            conn.execute(f'UPDATE "{table}" SET "{col}" = ? WHERE rowid % ? = 0', (value, every))
        except sqlite3.IntegrityError:  # a NOT NULL column (nsys declares some): that damage cannot be made
            pass
    conn.commit()
    conn.close()
    code, out, err = check_outcome(capsys, path, store)
    assert code == 0, err
    d = json.loads(out)
    assert d["kernel_time_ns"] >= 0 and all(s["total_ns"] >= 0 for s in d["time_split"])


@FUZZ
@given(times=st.lists(st.tuples(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False),
                                          st.integers(-2**63 + 1, 2**63 - 1),  # the parser refuses larger ones
                                          st.sampled_from(["", "nan", "inf", "-1", "1e400", "x"])),
                                st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False),
                                          st.integers(-10**12, 10**16), st.sampled_from(["", "nan", "-inf", "1e400"]))),
                      min_size=1, max_size=20),
       cat=st.sampled_from(["kernel", "gpu_memcpy", "gpu_memset"]))
def test_null_and_impossible_times_in_kineto_json_are_counted(times, cat, tmp_path_factory, capsys, store):
    events = [{**_event(ts=ts, dur=dur), "cat": cat} for ts, dur in times]
    path = tmp_path_factory.mktemp("fuzz") / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    code, out, err = check_outcome(capsys, path, store)
    assert code == 0, err
    assert json.loads(out)["kernel_time_ns"] >= 0


@pytest.mark.parametrize("fmt", ["nvprof-csv", "pyprof-csv", "ncu-csv"])
@FUZZ
@given(data=st.data())
def test_blank_and_negative_times_in_csv_readers(fmt, data, tmp_path_factory, capsys, store):
    """Time cells blanked, negative or absurd in a real CSV export: read (exit 0) or one line (exit 2)."""
    lines = _data(fmt).decode("utf-8", errors="replace").splitlines(keepends=True)
    rows = [i for i, line in enumerate(lines) if line.count(",") > 3 and not line.startswith("==")][1:]
    for i in data.draw(st.lists(st.sampled_from(rows), max_size=10), label="rows"):
        cells = lines[i].rstrip("\n").split(",")
        j = data.draw(st.integers(0, len(cells) - 1), label="cell")
        cells[j] = data.draw(st.sampled_from(['""', "", "-5", '"-1,000"', "1e300", "nan"]), label="value")
        lines[i] = ",".join(cells) + "\n"
    path = tmp_path_factory.mktemp("fuzz") / f"capture-{fmt}.csv"
    path.write_text("".join(lines))
    code, out, _ = check_outcome(capsys, path, store)
    if code == 0:
        assert json.loads(out)["kernel_time_ns"] >= 0


# ------------------------------------------------------------------ any input, in a child under limits
LIMIT_AS = 2 << 30
LIMIT_S = 60


def _inputs() -> st.SearchStrategy[tuple[str, bytes]]:
    """(file name, content): the shapes that once cost minutes or gigabytes, mixed with noise."""
    def nested(n: int) -> bytes:
        return b'{"traceEvents": [' + b"[" * n
    return st.one_of(
        st.builds(lambda n: ("nested.json.gz", gzip.compress(nested(n), 9)), st.integers(1, 400_000)),
        st.builds(lambda n: ("spaces.json.gz", gzip.compress(b'{"traceEvents": []' + b" " * n + b"}", 9)),
                  st.integers(0, 200 << 20)),
        st.builds(lambda n: ("long.json.gz", gzip.compress(b'{"traceEvents": [{"cat": "kernel", "name": "'
                                                           + b"A" * n + b'", "ts": 1, "dur": 1}]}', 9)),
                  st.integers(0, 64 << 20)),
        st.builds(lambda lv: ("bomb.json", json.dumps({"traceEvents": [_event(mangled_bomb(lv))]}).encode()),
                  st.integers(1, 40)),
        st.builds(lambda b: ("noise.json", b), st.binary(max_size=2000)),
        st.builds(lambda b: ("noise.json.gz", gzip.compress(b"{" + b)), st.binary(max_size=2000)),
        st.builds(lambda b: ("noise.csv", b'"Type","Time(%)",' + b), st.binary(max_size=2000)),
        # this project's own torch.profiler trace (always in the repository), cut anywhere in its first events
        st.builds(lambda cut: ("cut.json.gz", gzip.compress(gzip.decompress(OWN_KINETO.read_bytes())[:cut])),
                  st.integers(0, 1600)),
    )


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


@pytest.mark.slow
@settings(FUZZ, max_examples=max(EXAMPLES // 4, 5))
@given(case=_inputs())
def test_any_input_is_read_or_refused_within_2_gb_and_a_minute(case, tmp_path_factory):
    """The property of issue 14, for the whole command in its own process: exit 0, or exit 2 with one line; never
    more than 2 GB of address space (RLIMIT_AS: going past it fails the allocation), never more than a minute."""
    name, content = case
    path = tmp_path_factory.mktemp("any") / name
    path.write_bytes(content)
    t = time.time()
    proc = subprocess.run([sys.executable, "-m", "nvprof_wrap", "report", str(path), "--format", "json"],
                          capture_output=True, text=True, timeout=LIMIT_S, preexec_fn=_limits, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode in (0, 2), proc.stderr[-2000:]
    if proc.returncode == 2:
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and str(path) in proc.stderr
    assert time.time() - t < LIMIT_S


@pytest.fixture(scope="module")
def pathological(tmp_path_factory):
    from benchmarks.report_pathological_inputs import make

    folder = tmp_path_factory.mktemp("pathological")
    make(folder, whitespace_mb=1000)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("case, code", [("nested.json.gz", 2), ("whitespace.json.gz", 0), ("longname.json.gz", 0),
                                        ("mangled_bomb.json", 0), ("with_fifo", 0), ("junk", 0)])
def test_the_issues_pathological_inputs_within_2_gb_and_a_minute(pathological, case, code):
    """The inputs of issue 14 (benchmarks/report_pathological_inputs.py; 1 GB of whitespace here, 3 GB there), each
    through the whole command in its own process: the exit code, one line when refused, the peak memory and the
    time."""
    from benchmarks.report_pathological_inputs import measure_one

    r = measure_one(pathological / case, LIMIT_S, LIMIT_AS / 2**30, ROOT)
    assert r["rc"] == code, r
    assert r["stderr_lines"] == (1 if code == 2 else 0), r
    assert r["wall_s"] < LIMIT_S and r["peak_rss_mb"] < 1024, r
