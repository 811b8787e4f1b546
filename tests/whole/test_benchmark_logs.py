"""The measured numbers the docs quote come from raw output committed beside them: the per-round table at the end of
a committed benchmark log is what `benchmarks.window_rounds` computes from the jobs' own output archived with it."""
from __future__ import annotations

import contextlib
import io
import tarfile

from benchmarks import window_rounds
from tests._paths import ROOT

RESULTS = ROOT / "benchmarks" / "results"


def test_window_rounds_table_is_the_archived_jobs_own(tmp_path):
    log = (RESULTS / "h200_window-P_session13.log").read_text()
    with tarfile.open(RESULTS / "h200_window-P_session13.stdout.tgz") as tar:
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
