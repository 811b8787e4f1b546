"""The export's options and inputs for long work (issue 45): the size is estimated from the report and warned
about, before anything is written, over LARGE_BYTES, naming the options that cut it; --max-events N writes the first
N events and stays a valid trace (the strict reader of the format, and Chrome DevTools' trace engine where node is at
hand); progress goes to stderr when asked (or on a terminal); nvprof .nvvp files are exported too."""
from __future__ import annotations

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.cli import main
from nvprof_wrap.export import _events, trace
from nvprof_wrap.export.trace import estimate, export
from tests._paths import PUBLIC, RUNS
from tests.export._chrome_trace import load
from tests.export.test_devtools import devtools, engine, kernels_of  # noqa: F401 - engine: the fixture (getfixturevalue)

NSYS = [RUNS / "gpt_fp32_nsys", RUNS / "timm_amp_steps_nsys", RUNS / "ddp_nsys"]


@pytest.mark.parametrize("run", NSYS, ids=lambda p: p.name)
def test_the_estimate_is_a_close_floor_of_the_file(tmp_path, run):
    rep = analyze(run, health=False)
    out = tmp_path / "t.json"
    with open(out, "w", encoding="utf-8") as f:
        export(rep, f)
    size = out.stat().st_size
    assert 0.7 * size <= estimate(rep) <= size  # the events the report knows of; NVTX and counters come on top


def test_a_large_trace_is_warned_about_before_it_is_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(trace, "LARGE_BYTES", 1_000_000)  # gpt_fp32_nsys: ~6.8 MB
    out = tmp_path / "t.json.gz"
    assert main(["report", str(RUNS / "gpt_fp32_nsys"), "--format", "trace", "-o", str(out),
                 "--store", str(tmp_path / "s.sqlite")]) == 0
    err = capsys.readouterr().err
    warning = next(line for line in err.splitlines() if "warning: the trace will be" in line)
    assert "--steps" in warning and "--max-events" in warning and " MB of JSON" in warning
    assert err.index(warning) < err.index("wrote the trace")
    # cut well under the bound by --max-events: no warning
    assert main(["report", str(RUNS / "gpt_fp32_nsys"), "--format", "trace", "-o", str(out), "--max-events", "500",
                 "--store", str(tmp_path / "s.sqlite")]) == 0
    assert "warning: the trace will be" not in capsys.readouterr().err


@pytest.mark.parametrize("n", [1, 777, 5000])
def test_max_events_writes_the_first_n_and_a_valid_trace(tmp_path, capsys, n):
    out = tmp_path / "t.json.gz"
    assert main(["report", str(RUNS / "gpt_fp32_nsys_steps"), "--format", "trace", "-o", str(out),
                 "--max-events", str(n), "--store", str(tmp_path / "s.sqlite")]) == 0
    got = load(out)  # strict: nesting, async begins ended, ids
    events = [e for e in got.events if e.get("ph") != "M"]
    assert n - 1 <= len(events) <= n  # one less where the cut fell between an async range's begin and end
    whole = load_whole(tmp_path)
    assert events == [e for e in whole.events if e.get("ph") != "M"][:len(events)]
    note = next(x for x in got.other["notes"] if x.startswith("--max-events"))
    assert f"{len(events):,} events written" in note
    assert "left out" in capsys.readouterr().err


def load_whole(tmp_path):
    out = tmp_path / "whole.json"
    if not out.exists():
        assert main(["report", str(RUNS / "gpt_fp32_nsys_steps"), "--format", "trace", "-o", str(out),
                     "--store", str(tmp_path / "s.sqlite")]) == 0
    return load(out)


def test_progress_on_stderr_when_asked(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_events, "PROGRESS_EVERY", 200_000)
    monkeypatch.setattr("nvprof_wrap.cli._trace.PROGRESS_S", 0.0)
    out = tmp_path / "t.json"
    assert main(["report", str(RUNS / "gpt_fp32_nsys"), "--format", "trace", "-o", str(out), "--progress",
                 "--store", str(tmp_path / "s.sqlite")]) == 0
    err = capsys.readouterr().err
    shown = [x for x in err.split("\r") if x.startswith("nvprof-wrap: trace: ")]
    assert len(shown) >= 3 and " events, " in shown[0] and " MB written" in shown[0]
    assert main(["report", str(RUNS / "gpt_fp32_nsys"), "--format", "trace", "-o", str(out),
                 "--store", str(tmp_path / "s.sqlite")]) == 0
    assert "nvprof-wrap: trace: " not in capsys.readouterr().err  # not a terminal, not asked: quiet


def test_devtools_opens_a_cut_trace(tmp_path, request):
    out = tmp_path / "t.json"
    assert main(["report", str(RUNS / "gpt_fp32_nsys_steps"), "--format", "trace", "-o", str(out),
                 "--max-events", "3000", "--store", str(tmp_path / "s.sqlite")]) == 0
    kernels = kernels_of(devtools(request.getfixturevalue("engine"), out))
    written = [e for e in load(out).events if e.get("cat") == "kernel"]
    assert 0 < len(kernels) == len(written)


NVVP = PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp"


@pytest.mark.skipif(not NVVP.is_file(), reason=f"the public fixtures are not here ({NVVP})")
def test_an_nvvp_is_exported_with_its_verdicts_and_opens_in_devtools(tmp_path, request):
    rep = analyze(NVVP, health=False)
    out = tmp_path / "nvvp.json"
    with open(out, "w", encoding="utf-8") as f:
        other = export(rep, f)
    assert [c["format"] for c in other["captures"]] == ["nvprof"]
    got = load(out)
    kernels = [e for e in got.events if e.get("cat") == "kernel"]
    assert len(kernels) == sum(k.launches for k in rep.kernels) > 0
    verdict = {k.name: k.tensor_core for k in rep.kernels}
    assert all(e["args"]["tensor_core"] == verdict[e["name"]] for e in kernels)
    copies = sum(s.count for s in rep.split if s.kind in ("memcpy", "memset"))
    assert len([e for e in got.events if e.get("cat") in ("memcpy", "memset")]) == copies
    assert len(kernels_of(devtools(request.getfixturevalue("engine"), out))) == len(kernels)
