"""The measured numbers the docs quote come from raw output committed beside them: the per-round table at the end of
a committed benchmark log is what `benchmarks.window_rounds` computes from the jobs' own output archived with it."""
from __future__ import annotations

import contextlib
import io
import tarfile

from benchmarks import nsys_after_summary, window_account, window_rounds
from tests._paths import ROOT

RESULTS = ROOT / "benchmarks" / "results" / "capture_window"  # benchmarks/gpu/capture_window.sh's parts


def test_window_rounds_table_is_the_archived_jobs_own(tmp_path):
    log = (RESULTS / "P-raw_nsys_range.log").read_text()
    with tarfile.open(RESULTS / "P-raw_nsys_range.stdout.tgz") as tar:
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert window_rounds.main([str(tmp_path)]) == 0
    table = out.getvalue()
    assert table.count("\n") == 2 + 12  # header, rule, 3 rounds x 4 runs
    assert log.rstrip().endswith(table.rstrip())
    # the numbers docs/backends.md quotes for nsys run directly, round 1 (loop / unprofiled)
    assert "| 1 | raw | 14.99 | 24.57 | 26.31 | 1.43 |" in table


def test_window_rounds_refuses_a_folder_without_runs(tmp_path, capsys):
    assert window_rounds.main([str(tmp_path)]) == 1
    assert "no runs with iteration times" in capsys.readouterr().err


def _run(main, argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def _log_table(name: str) -> str:
    """The table a committed log ends with (before the script's closing `=== HH:MM:SS done`)."""
    lines = (RESULTS / name).read_text().rstrip().splitlines()
    return "\n".join(line for line in lines if not line.startswith("=== "))


def test_q3_q4_rounds_tables_are_the_archived_jobs_own(tmp_path):
    for log, archive, runs in (("Q3b-nsys_detach_vs_idle.log", "Q3-nsys_detach_vs_idle.stdout.tgz", 25),
                               ("Q4-unprofiled_twin.log", "Q4-unprofiled_twin.stdout.tgz", 6)):
        folder = tmp_path / archive
        with tarfile.open(RESULTS / archive) as tar:
            tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        table = _run(window_rounds.main, [str(folder)])
        assert table.count("\n") == 2 + runs
        assert _log_table(log).endswith(table.rstrip())
    # docs/backends.md: two unprofiled runs of one command, round by round (loop / the first one's)
    assert "| 2 | twin | 15.48 | 18.01 | 17.07 | 0.87 |" in table


def test_window_account_tells_a_window_from_the_noise():
    """The direct account of what a window's own steps cost: the unprofiled runs' (no window) is the noise, every
    nsys window run's sits above all of it, and raw nsys' stop on the job's thread (~3.3 s) shows whole."""
    out = _run(window_account.main, [str(RESULTS / n) for n in (
        "Q3-nsys_detach_vs_idle.stdout.tgz", "Q1-nsys_detach_knob.stdout.tgz",
        "Q2-nsys_detach_default.stdout.tgz", "P-raw_nsys_range.stdout.tgz")])
    share = []  # (run, its share of the loop, %): the archives' runs share names
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and cells[-1].endswith("%"):
            share.append((cells[0], float(cells[-1].rstrip("%"))))
    none = [v for k, v in share if "_none_" in k]
    detach = [v for k, v in share if "_detach_" in k and "_cn_" not in k]
    raw = [v for k, v in share if k.startswith("p_raw_") and "_cuda_" not in k]
    assert (len(none), len(detach), len(raw)) == (14, 11, 3)
    assert max(abs(v) for v in none) <= 0.6 < min(detach) and max(detach) <= 1.9
    assert all(12.0 <= v <= 15.5 for v in raw)
    # docs/backends.md quotes these lines
    assert "account detach: 11 runs, share of the loop median 1.4% (1.0% to 1.9%)" in out


def test_nsys_after_range_table_is_the_logs_own():
    """capture_window.sh R's table (per CUDA call before / after nsys' range) is what its JSON lines give."""
    for log in ("R1-per_call_after_range.log", "R2-per_call_after_range_per_reference.log"):
        table = _run(nsys_after_summary.main, [str(RESULTS / log)])
        rows = table.rstrip().split("\n", 1)[1]  # R1 ran before the header named the per-reference kinds
        assert _log_table(log).endswith(rows)
    # docs/backends.md: attached, a call after the range costs more than before it; detached, no more than
    # unprofiled (per pure-Python reference: the CPU's drift cancelled)
    assert "| full | kernel/ref | 4 | 17.28 | 1.192 (0.99-1.34) |" in table
    assert ("| full_detach | kernel/ref | 4 | 20.29 | 0.795 (0.66-0.94) | 1.139 (0.93-1.32) | 0.999 (0.70-1.04) |"
            in table)
