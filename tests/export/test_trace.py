"""`report --format trace`: real captures exported, then read back by an independent strict parser of the Chrome
trace-event format (tests/export/_chrome_trace.py) — and, where a trace_processor_shell is at hand, by Perfetto's own
trace processor. The correctness check: kernel launches and kernel time per name in the trace equal the Report's.
tests/export/test_devtools.py loads the exports in a real parser too: Chrome DevTools' trace engine."""
from __future__ import annotations

import os
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from nvprof_wrap.cli import main
from nvprof_wrap.export._events import CNAME
from nvprof_wrap.export._timeline import FIRST_NS
from nvprof_wrap.export.trace import export
from nvprof_wrap.pipeline import analyze
from tests._paths import PUBLIC, ROOT, RUNS
from tests.export._chrome_trace import load, overlapping

SAMPLES = ROOT / "nvprof_wrap" / "samples"


_DONE: dict[tuple, tuple] = {}  # one export per capture and window for the whole module: the tests share them


def traced(tmp_path: Path, *paths: Path, strings: bool = False, **window):
    """(report, parsed trace) of captures, exported through the library (a store in memory: nothing written
    beside the captures)."""
    key = (paths, strings, tuple(sorted(window.items())))
    if key not in _DONE:
        rep = analyze(*paths, health=False, **window)
        out = tmp_path / "trace.json"
        with open(out, "w", encoding="utf-8") as f:
            export(rep, f, **window)
        _DONE[key] = rep, load(out, strings=strings)
    return _DONE[key]


def per_name(events: list[dict]) -> dict[str, list[int]]:
    got: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in events:
        got[e["name"]][0] += 1
        got[e["name"]][1] += round(e["dur"] * 1000)
    return dict(got)


def report_per_name(rep) -> dict[str, list[int]]:
    want: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for k in rep.kernels:
        want[k.name][0] += k.launches
        want[k.name][1] += k.total_ns
    return dict(want)


def same_kernels(got: dict, want: dict) -> None:
    """Launches per name equal; kernel time per name equal within 1 ns a launch: the Kineto reader truncates a float
    of microseconds to ns where Perfetto (and this test) rounds it."""
    assert {n: c for n, (c, _) in got.items()} == {n: c for n, (c, _) in want.items()}
    assert all(abs(got[n][1] - want[n][1]) <= want[n][0] for n in want)


def verdicts_match(rep, parsed) -> None:
    verdict = {k.name: k for k in rep.kernels}
    for e in parsed.kernels():
        row = verdict[e["name"]]
        assert e["args"]["tensor_core"] == row.tensor_core and e["cname"] == CNAME[row.tensor_core]
        assert {"precision", "family", "reason", "evidence", "launches"} <= set(e["args"])


def gpu_tracks(parsed) -> dict[tuple, list]:
    return {t: s for t, s in parsed.slices.items() if parsed.thread_names.get(t, "").startswith("GPU ")}


SQLITE_CAPTURES = [RUNS / "ddp_cupti", RUNS / "children_nsys", RUNS / "hw_phases_nsys", RUNS / "hw_phases_cupti",
                   RUNS / "keras_fp16_cupti_ops", SAMPLES / "torch_ops" / "nsys_torch_ops.sqlite",
                   SAMPLES / "two_children" / "nsys_two_child_processes.sqlite"]


@pytest.mark.parametrize("path", SQLITE_CAPTURES, ids=lambda p: p.name)
def test_kernels_in_the_trace_are_the_reports(tmp_path, path):
    rep, parsed = traced(tmp_path, path)
    assert per_name(parsed.kernels()) == report_per_name(rep)
    verdicts_match(rep, parsed)
    tracks = gpu_tracks(parsed)
    assert tracks and all(overlapping(s) == 0 for s in tracks.values())
    for pid, _tid in parsed.slices:
        assert pid in parsed.process_names
    assert all(t in parsed.thread_names for t in parsed.slices)
    assert all(" · stream " in parsed.thread_names[t] for t in tracks)


def test_cpu_ranges_and_steps_sit_on_the_threads_that_pushed_them(tmp_path):
    rep, parsed = traced(tmp_path, RUNS / "gpt_fp32_nsys_steps" / "nsys.sqlite.gz")
    ranges = [e for e in parsed.events if e.get("cat") == "nvtx" and e["ph"] == "X"]
    steps = [e for e in ranges if e["name"].startswith("step ")]
    assert len(steps) >= 3
    assert {(e["pid"], e["tid"]) for e in steps} <= set(parsed.thread_names)
    assert not any(parsed.thread_names[(e["pid"], e["tid"])].startswith("GPU ") for e in steps)
    assert per_name(parsed.kernels()) == report_per_name(rep)


def test_steps_window_keeps_the_windowed_reports_kernels(tmp_path):
    rep, parsed = traced(tmp_path, RUNS / "gpt_fp32_nsys_steps" / "nsys.sqlite.gz", steps=(2, 4))
    whole = analyze(RUNS / "gpt_fp32_nsys_steps" / "nsys.sqlite.gz", health=False)
    assert 0 < rep.verdict.launches < whole.verdict.launches
    assert per_name(parsed.kernels()) == report_per_name(rep)
    assert parsed.other["window"] == "--steps 2:4"


def test_processes_of_one_run_share_the_unix_clock(tmp_path):
    _, parsed = traced(tmp_path, RUNS / "ddp_cupti")
    assert parsed.other["clock"].startswith("shared: Unix time")
    assert len({c["shift_ns"] for c in parsed.other["captures"]}) == 1
    ranks = {pid for pid, _ in gpu_tracks(parsed)}
    assert len(ranks) == 2  # two ranks, each its own process with its own GPU
    assert min(round(e["ts"] * 1000) for e in parsed.events if "ts" in e and e["ph"] != "M") == FIRST_NS


def test_nsys_gpu_metrics_become_counter_tracks(tmp_path):
    _, parsed = traced(tmp_path, RUNS / "hw_phases_nsys")
    names = {name for _pid, name in parsed.counters}
    assert any(n.startswith("Tensor Active") for n in names) and any(n.startswith("SMs Active") for n in names)
    assert {parsed.process_names[pid] for pid, _ in parsed.counters} == \
        {"GPU 0 · hardware counters (nsys gpu metrics)"}


def test_gpm_samples_of_the_run_become_counter_tracks(tmp_path):
    _, parsed = traced(tmp_path, RUNS / "hw_phases_cupti")
    names = {name for _pid, name in parsed.counters}
    assert {"GPM tensor % value", "GPM sm % value", "GPM hmma % value"} <= names
    assert max(v for (_, n), pts in parsed.counters.items() if n == "GPM tensor % value" for _, v in pts) > 10


def test_kineto_trace_is_written_again_with_our_verdicts(tmp_path):
    rep, parsed = traced(tmp_path, RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz", strings=True)
    same_kernels(per_name(parsed.kernels()), report_per_name(rep))
    verdicts_match(rep, parsed)
    assert parsed.other["captures"][0]["format"] == "kineto-json"


@pytest.mark.parametrize("name", ["GindaChen__nsys-ai__mfu_2gpu_after.sqlite", "NVIDIA__Fuser__report1.sqlite",
                                  "LeiWang1999__memfusion_artifact__report1.sqlite",
                                  pytest.param("facebookresearch__HolisticTraceAnalysis__nccl_data.json.gz",
                                               marks=pytest.mark.slow)])
def test_other_peoples_captures(tmp_path, name):
    path = PUBLIC / name
    if not path.is_file():
        pytest.skip(f"needs {path} (the shared fixtures)")
    rep, parsed = traced(tmp_path, path, strings=True)
    same_kernels(per_name(parsed.kernels()), report_per_name(rep))
    verdicts_match(rep, parsed)


def _run_copy(tmp_path: Path, run: str) -> Path:
    folder = tmp_path / run
    shutil.copytree(RUNS / run, folder)
    return folder


def test_cli_writes_gzip_and_plain_json(tmp_path, capsys):
    folder = _run_copy(tmp_path, "children_cupti")
    for out in (tmp_path / "run.json.gz", tmp_path / "run.json"):
        assert main(["report", str(folder), "--format", "trace", "-o", str(out)]) == 0
        assert load(out).kernels()
    assert (tmp_path / "run.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert (tmp_path / "run.json").read_bytes()[:1] == b"{"
    assert "wrote the trace to" in capsys.readouterr().err
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_cli_refuses_without_output_and_without_a_timeline(tmp_path, capsys):
    folder = _run_copy(tmp_path, "children_cupti")
    assert main(["report", str(folder), "--format", "trace"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "-o" in err[0]
    stats = _run_copy(tmp_path, "gpt_fp32_stats")
    assert main(["report", str(stats), "--format", "trace", "-o", str(tmp_path / "t.json.gz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no timeline" in err[0]
    assert not (tmp_path / "t.json.gz").exists()


def test_cli_never_replaces_a_symlinks_target_by_renaming(tmp_path):
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert main(["report", str(SAMPLES / "torch_ops" / "nsys_torch_ops.sqlite"), "--format", "trace",
                 "-o", str(link)]) == 0
    assert link.is_symlink() and load(target).kernels()


def _trace_processor() -> str | None:
    return os.environ.get("NVPROF_WRAP_TRACE_PROCESSOR") or shutil.which("trace_processor_shell") or \
        shutil.which("trace_processor")


def test_perfetto_trace_processor_reads_the_trace(tmp_path):
    """Perfetto's own importer, where its binary is at hand (the perfetto package downloads it from the network
    otherwise, which this project's machines cannot reach): slices with our verdict args, named tracks, counters."""
    tp_module = pytest.importorskip("perfetto.trace_processor", reason="needs the perfetto package (the test extra)")
    shell = _trace_processor()
    if shell is None:
        pytest.skip("no trace_processor_shell: set NVPROF_WRAP_TRACE_PROCESSOR or put it on PATH")
    rep = analyze(RUNS / "hw_phases_nsys", health=False)
    out = tmp_path / "trace.json"
    with open(out, "w", encoding="utf-8") as f:
        export(rep, f)
    tp = tp_module.TraceProcessor(trace=str(out), config=tp_module.TraceProcessorConfig(bin_path=shell))
    try:
        rows = tp.query("SELECT s.name, COUNT(*) AS n, SUM(s.dur) AS ns FROM slice s JOIN args a "
                        "ON a.arg_set_id = s.arg_set_id WHERE a.key = 'args.tensor_core' "
                        "GROUP BY s.name")
        assert {r.name: [r.n, r.ns] for r in rows} == report_per_name(rep)
        names = {r.name for r in tp.query("SELECT name FROM thread") if r.name}
        assert any(n.startswith("GPU 0 · stream ") for n in names)
        assert next(iter(tp.query("SELECT COUNT(*) AS n FROM counter"))).n > 0
        assert next(iter(tp.query("SELECT COUNT(*) AS n FROM stats WHERE severity IN ('error', 'data_loss') "
                                  "AND value > 0"))).n == 0
    finally:
        tp.close()


def test_strict_parser_catches_crossing_slices(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":10},'
                   '{"ph":"X","name":"b","pid":1,"tid":1,"ts":5,"dur":10}]}')
    with pytest.raises(AssertionError, match="cross"):
        load(bad)


_PEAK = """
import io, resource, sys
from nvprof_wrap.export.trace import export
from nvprof_wrap.pipeline import analyze
rep = analyze(sys.argv[1], health=False)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
export(rep, io.TextIOWrapper(open(sys.argv[2], "wb"), encoding="utf-8"))
print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


@pytest.mark.slow
def test_memory_stays_bounded_on_a_big_capture(tmp_path):
    """The export streams: exporting 500k launches (benchmarks/generate.py, the nsys schema) raises the process's
    peak memory by a few MiB over what the report itself took, as for 50k launches."""
    import subprocess
    import sys

    grew = {}
    for n in (50_000, 500_000):
        capture = tmp_path / f"n{n}.sqlite"
        subprocess.run([sys.executable, "-m", "benchmarks.generate", "nsys", str(n), str(capture)], cwd=ROOT,
                       check=True)
        out = subprocess.run([sys.executable, "-c", _PEAK, str(capture), str(tmp_path / "t.json")], cwd=ROOT,
                             check=True, capture_output=True, text=True).stdout.split()
        grew[n] = (int(out[1]) - int(out[0])) / 1024  # MiB over the report's own peak
        assert load(tmp_path / "t.json").kernels() if n == 50_000 else True
    assert grew[500_000] < 32, grew


def test_kineto_steps_window_keeps_the_windowed_reports_kernels(tmp_path):
    rep, parsed = traced(tmp_path, RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz", strings=True, steps=(2, 4))
    assert 0 < len(parsed.kernels()) == rep.verdict.launches
    same_kernels(per_name(parsed.kernels()), report_per_name(rep))
