"""The benchmark suite (benchmarks/suite, `python -m benchmarks`): every benchmark has the interface and is named for
what it measures, a quick run writes its JSON result, compare flags a time more than 5% slower, and
docs/performance.md's tables are what the committed results give."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from benchmarks import __main__ as cli
from benchmarks.suite import compare, docs, registry
from benchmarks.suite.machine import Machine
from benchmarks.suite.types import Case, Figure, Result
from tests._paths import ROOT

BENCH = ROOT / "benchmarks"


def test_every_benchmark_has_the_interface_and_its_file_name():
    for name in registry.NAMES:
        b = registry.load(name)
        assert b.NAME == name and (BENCH / f"{name}.py").is_file()
        assert all(isinstance(t, str) and t for t in (b.MEASURES, b.FLOOR, b.ANCHOR)), name
        assert callable(b.run)
    # and every module of benchmarks/ that declares a NAME is in the registry
    declared = {p.stem for p in BENCH.glob("*.py") if re.search(r"^NAME = ", p.read_text(), re.MULTILINE)}
    assert declared == set(registry.NAMES)


def test_the_listing_names_each_benchmark_with_its_floor_and_anchor(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    for name in registry.NAMES:
        assert f"\n{name}\n" in f"\n{out}"
    assert out.count("\n    floor:") == out.count("\n    anchor:") == len(registry.NAMES)


def test_no_file_or_text_names_a_sitting():
    """Benchmarks and docs are named for what they measure, never for the sitting, round or session of work."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    pattern = r"session ?[0-9]+|sitting|round ?[0-9]+"
    found = subprocess.run(["git", "grep", "-inE", pattern, "--", "benchmarks", "docs"], cwd=ROOT, capture_output=True,
                           text=True, check=False).stdout
    assert found == ""
    names = subprocess.run(["git", "ls-files", "benchmarks", "docs"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout
    assert not re.search(r"(session|sitting|round)[-_ ]?\d|\d{4}-\d{2}-\d{2}", names, re.IGNORECASE)


@pytest.mark.needs_fixtures
def test_a_quick_run_writes_its_result(tmp_path, monkeypatch):
    """step_series end to end on a small generated export: its JSON beside its floor, with the machine and command."""
    from benchmarks import step_series

    monkeypatch.setattr(step_series, "QUICK", (3000,))
    assert cli.main(["step_series", "--quick", "--out", str(tmp_path), "--work-dir", str(tmp_path / "work")]) == 0
    raw = json.loads((tmp_path / "step_series.json").read_text())
    assert raw["command"] == f"python -m benchmarks step_series --quick --out {tmp_path} --work-dir {tmp_path}/work"
    assert raw["quick"] and raw["machine"]["cores"] >= 1 and raw["machine"]["python"]
    r = Result.read(tmp_path / "step_series.json")
    (case,) = r.cases
    assert case.label == "3,000 launches"
    measured = case.figure("report with the series")
    assert measured is not None and measured.versus == "report without the series" and len(measured.values) == 1
    assert case.figure("report without the series").role == "floor"


def _result(seconds: float, floor: float = 1.0) -> Result:
    case = Case("1M", (Figure("floor", "floor", "s", (floor,)), Figure("report", "measured", "s", (seconds,),
                                                                           versus="floor"),
                       Figure("memory", "measured", "MB", (50.0,))))
    return Result("x", "m", "f", "a", True, "cmd", Machine(2, "cpu", "3.11", "0", "abc"), (case,))


def test_compare_flags_a_time_more_than_five_percent_slower(tmp_path, capsys):
    old, slow, fine = _result(2.0), _result(2.2), _result(2.08)
    assert [r.slower for r in compare.rows(old, slow)] == [False, True, False]
    assert not any(r.slower for r in compare.rows(old, fine))
    # by its floor: the machine slowed both alike, so the report is not slower
    assert not any(r.slower for r in compare.rows(old, _result(2.2, floor=1.1), by_floor=True))
    a, b = old.write(tmp_path / "old.json"), slow.write(tmp_path / "new.json")
    assert cli.main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "1.100x" in out and "SLOWER" in out and "1 figure(s) more than 5% slower" in out
    assert cli.main(["compare", str(a), str(fine.write(tmp_path / "fine.json"))]) == 0


def test_the_doc_is_what_the_committed_results_give():
    text = docs.DOC.read_text(encoding="utf-8")
    found = docs.results()
    assert docs.generate(text, found) == text, "run: python -m benchmarks docs"
    named = set(re.findall(r"<!-- benchmarks:table ([\w.-]+) -->", text))
    assert named == set(found), "every committed result has its table, and every table its result"


def test_a_table_shows_each_repeat_over_its_floor():
    r = _result(2.0)
    table = docs.table(r)
    assert "| 1M | 1.00 s | 2.00 s | 2.00× | 50 MB |" in table
    assert table.splitlines()[2] == "| case | floor | report | report / floor | memory |"


def test_results_round_trip(tmp_path):
    r = _result(2.0)
    assert Result.read(r.write(tmp_path / "r.json")) == r
    assert isinstance(docs.RESULTS, Path)


def test_a_measured_wall_time_ends_at_the_exit_not_at_the_next_memory_sample():
    """measure() samples memory every SAMPLE_S (0.25 s); a sleep between samples made every wall time a multiple of
    it (a 0.3 s process read 0.5 s, and 1.28 s against 1.53 s was a sample, not a speed-up)."""
    import sys

    from benchmarks.suite.measure import SAMPLE_S, measure

    # the least of three: a sampled end reads 0.5 s every time, a moment of load on a 2-core machine (0.503 s once,
    # in the whole suite) only once
    runs = [measure([sys.executable, "-c", "import time; time.sleep(0.3)"]) for _ in range(3)]
    assert all(m.wall_s >= 0.3 for m in runs), runs
    assert min(m.wall_s for m in runs) < 2 * SAMPLE_S - 0.01, runs
