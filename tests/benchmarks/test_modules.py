"""The suite's benchmarks end to end at small sizes, each through `python -m benchmarks NAME --quick`: the result
holds what the benchmark says it measures, beside its floor (and its anchor where it has one), and a benchmark that
checks what `report` gives (the planted ranks named, the hostile inputs refused or read) says so in its result."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import __main__ as cli
from benchmarks.suite.types import Result
from tests._paths import ROOT


def _quick(name: str, tmp_path: Path) -> Result:
    assert cli.main([name, "--quick", "--out", str(tmp_path), "--work-dir", str(tmp_path / "work")]) == 0
    r = Result.read(tmp_path / f"{name}.json")
    assert r.benchmark == name and r.quick and r.machine.cores >= 1
    return r


def test_report_steps_gives_the_window_s_own_figures(tmp_path):
    """The real H200 GPT capture: steps 10 to 19 keep 3,460 of its 10,532 launches, and their GPU idle is the steps'
    own (8%), not the whole capture's start-up (51%)."""
    r = _quick("report_steps", tmp_path)
    whole, steps = r.cases
    assert (whole.label, steps.label) == ("whole capture", "`--steps 10:20`")

    def fig(case, name):
        f = case.figure(name)
        assert f is not None and f.values, (case.label, name)
        return f

    assert fig(whole, "launches").values == (10532.0,) and fig(steps, "launches").values == (3460.0,)
    assert fig(whole, "kernel time").values == (491.4,) and fig(steps, "kernel time").values == (163.7,)
    assert fig(whole, "GPU idle").values == (51.08,) and fig(steps, "GPU idle").values == (8.26,)
    assert "1.01 s from first to last kernel" in fig(whole, "GPU idle").note
    assert {f.role for f in whole.figures} == {"floor"} and {f.role for f in steps.figures} == {"measured"}


def test_tracer_record_cost_sets_each_path_beside_the_old_one_and_the_parse_alone(tmp_path, monkeypatch):
    from benchmarks import tracer_record_cost

    monkeypatch.setattr(tracer_record_cost, "QUICK", 400)
    r = _quick("tracer_record_cost", tmp_path)
    roles = {c.label: c.figures[0].role for c in r.cases}
    assert roles == {"objects + insert here (old)": "anchor", "raw + insert here": "measured",
                     "raw + writer process": "measured", "raw parse alone, records alternating": "floor",
                     "raw parse alone, records in runs of 1,000": "floor"}
    for c in r.cases:
        cpu = c.figure("traced-process CPU per launch")
        assert cpu is not None and cpu.unit == "µs" and len(cpu.values) == 1 and cpu.values[0] > 0
    assert r.extra["case_header"] == "path (400 launches, two records each)"


def test_read_xplane_reads_every_launch_it_built(tmp_path, monkeypatch):
    from benchmarks import read_xplane

    monkeypatch.setattr(read_xplane, "QUICK", (3000,))
    r = _quick("read_xplane", tmp_path)  # run() raises when the reader reads another number of launches
    (case,) = r.cases
    assert case.label.startswith("3,000 launches, ")
    read = case.figure("read, fresh process")
    assert read is not None and read.versus == "bytes read, fresh process" and read.values[0] > 0
    assert case.figure("bytes read, fresh process").role == "floor"


@pytest.mark.slow
def test_report_ranks_names_the_planted_ranks_in_every_mode(tmp_path):
    """In a child process: the benchmark's Dask LocalCluster leaves its threads behind in the process that started
    it, and a later test's forked workers are then (rightly) refused — tests/whole/test_reliability.py failed after
    this one in the full suite."""
    code = ("import sys; from benchmarks import report_ranks, __main__ as cli; report_ranks.QUICK = (12, 600); "
            "report_ranks.QUICK_PLANTS = {3: 'fp32 gemms', 5: 'straggler', 8: 'slow collectives', 10: 'fp16'}; "
            "sys.exit(cli.main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "report_ranks", "--quick", "--out", str(tmp_path),
                           "--work-dir", str(tmp_path / "work")], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]  # run() raises when the modes' reports
    # differ or name other ranks
    r = Result.read(tmp_path / "report_ranks.json")
    assert r.benchmark == "report_ranks" and r.quick
    (case,) = r.cases
    assert case.note == "reports equal; ranks 3, 5, 8, 10 planted and named, no other"
    assert case.figure("one at a time").role == "floor"
    assert any(f.name.startswith("local pool") and f.versus == "one at a time" for f in case.figures)


@pytest.mark.slow
def test_report_pathological_inputs_refuses_the_nested_json_and_reads_the_rest(tmp_path, monkeypatch):
    from benchmarks import report_pathological_inputs as pi

    monkeypatch.setattr(pi, "QUICK_MB", 20)
    r = _quick("report_pathological_inputs", tmp_path)
    notes = {c.label.split(":")[0]: c.note for c in r.cases}
    assert set(notes) == set(pi.CASES)
    assert notes["nested.json.gz"].startswith("exit 2: nested.json.gz: ")
    assert all(notes[c] == "exit 0" for c in pi.CASES if c != "nested.json.gz"), notes
    assert r.cases[1].label == "whitespace.json.gz: 20 MB of spaces after a complete trace (gzipped)"


@pytest.mark.slow
def test_report_hostile_captures_gives_what_each_input_must(tmp_path):
    r = _quick("report_hostile_captures", tmp_path)
    assert len(r.cases) == 9
    assert all(c.note.startswith("as it must: ") for c in r.cases), [c.note for c in r.cases]
    wal = next(c for c in r.cases if c.label == "wal")
    assert wal.note == "as it must: exit 0; 6,196 launches read"


def test_report_sections_times_every_section_beside_them_off(tmp_path, monkeypatch):
    from benchmarks import report_sections

    monkeypatch.setattr(report_sections, "QUICK", (20_000,))  # past NUMPY_FROM: the series' numpy pass
    r = _quick("report_sections", tmp_path)
    (case,) = r.cases
    assert case.label == "20,000 launches"
    off, on = case.figure(report_sections.OFF), case.figure(report_sections.ON)
    assert off is not None and on is not None and off.role == "floor" and on.versus == report_sections.OFF
    stage = case.figure("series pass inside one analyze")
    assert stage is not None and len(stage.values) == 1 and 0 < stage.values[0] < on.values[0]


def test_report_long_job_gives_each_output_beside_the_floors_with_its_memory(tmp_path, monkeypatch):
    from benchmarks import report_long_job

    monkeypatch.setattr(report_long_job, "QUICK", (30_000,))
    r = _quick("report_long_job", tmp_path)
    (case,) = r.cases
    assert case.label.startswith("30,000 launches, ")
    assert {f.name for f in case.figures if f.role == "floor"} == {"two-table floor", "attribution floor",
                                                                       "GROUP BY floor"}
    for name in ("report (json)", "report --per-step", "report (html)"):
        f, rss = case.figure(name), case.figure(f"{name} peak RSS")
        assert f is not None and f.versus == "two-table floor" and f.values[0] > 0
        assert rss is not None and rss.unit == "MB" and 10 < rss.values[0] < 2000  # a Python process's RSS


def test_report_kineto_json_reads_the_gzipped_trace_too(tmp_path, monkeypatch):
    from benchmarks import report_kineto_json

    monkeypatch.setattr(report_kineto_json, "QUICK", (5_000,))
    r = _quick("report_kineto_json", tmp_path)
    plain, gz = r.cases
    assert plain.label.startswith("5,000 kernels, ") and gz.label.startswith("5,000 kernels, gzipped, ")
    assert (tmp_path / "work" / "kineto_5000_gz" / "rank0.trace.json.gz").exists()
    for c in (plain, gz):
        report = c.figure("report")
        assert report is not None and report.versus == "ijson floor" and report.values[0] > 0
        assert c.figure("ijson floor").role == "floor"
