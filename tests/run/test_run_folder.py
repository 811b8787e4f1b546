"""``Run``: a run folder as one typed object, on real run folders (tests/data/h200_runs: what `run` wrote on the H200)
and on a folder made here; the step names of run/steps.py."""
from __future__ import annotations

import json
import os

import pytest

from nvprof_wrap.errors import BadInput
from nvprof_wrap.run import HistoryRow, Manifest, Run, claim, is_run, names, rank_folders, run_of, runs_inside, steps
from nvprof_wrap.run.protocol import JobRecord, RunFiles, RunRow
from tests._paths import H100_RUNS, RUNS


def test_a_real_run_folder():
    run = Run(RUNS / "gemm_nsys")
    assert run.is_run() and run.manifest_file == RUNS / "gemm_nsys" / "manifest.json"
    m = run.manifest()
    assert m.backend == "nsys" and m.exit_code == 0 and m.captures == ("nsys.nsys-rep", "nsys.sqlite")
    assert run.captures() == ["nsys.sqlite"]  # (the fixture keeps the export only) everything but the run's own
    assert run.held() is None  # no lock file: copied out of its run folder
    row = run.history_row()
    assert (row.name, row.backend, row.exit_code, row.started) == ("gemm_nsys", "nsys", 0, m.started)
    assert row.folder == str((RUNS / "gemm_nsys").resolve()) and row.command == " ".join(m.command)


def test_a_real_cupti_run_lists_what_its_manifest_lists():
    run = Run(RUNS / "ddp_cupti")
    assert run.captures() == sorted(run.manifest().captures)
    assert all(names.CAPTURE_NAMES["cupti"].fullmatch(c) for c in run.captures())


@pytest.mark.parametrize("folder", sorted(p for runs in (RUNS, H100_RUNS) for p in runs.iterdir()
                                           if (p / "manifest.json").is_file()))
def test_every_real_run_folder_reads_as_one(folder):
    run = Run(folder)
    assert run.is_run() and isinstance(run.manifest(), Manifest)
    assert run_of(folder) == folder and rank_folders(folder) == []


def test_where_each_file_is(tmp_path):
    run = Run(tmp_path)
    assert {p.name for p in (run.manifest_file, run.manifest_tmp, run.lock_file, *run.logs, run.metrics_file,
                             run.gpm_file, run.windows_file, run.store_file, run.verify_file)} == set(names.OWN)
    assert run.report_html.name == names.REPORT_HTML and run.logs == (run.stdout_log, run.stderr_log)
    assert (run.ncu_output.name, run.ncu_report.name, run.ncu_csv.name) == ("ncu", "ncu.ncu-rep", "ncu.csv")
    assert run.nsys_output(None).name == "nsys" and run.nsys_output(3).name == "rank3-nsys"
    assert run.nvprof_output(None).name == "profile%p.nvvp" and run.nvprof_output(0).name == "rank0-profile%p.nvvp"
    for name in ("rank3-nsys.nsys-rep", "nsys.sqlite"):
        assert names.CAPTURE_NAMES["nsys"].fullmatch(name)
    assert names.CAPTURE_NAMES["nvprof"].fullmatch("rank0-profile4242.nvvp")
    assert not run.is_run() and run.history_row() == HistoryRow(str(tmp_path.resolve()), tmp_path.name)


def test_a_claimed_folder_its_ranks_and_its_runs(tmp_path):
    top = Run(tmp_path / "job")
    folder, fd = claim(top.rank(1).folder)
    try:
        assert folder.name == "rank1" and top.rank(1).held() is True
        top.rank(1).manifest_file.write_text(json.dumps(Manifest(command=("python", "x.py"), backend="cupti",
                                                                  rank=1, exit_code=0).to_json()))
        (top.rank(1).folder / "cupti-h-1.sqlite").write_bytes(b"")
        (top.rank(1).folder / "nsys.sqlite-journal").write_bytes(b"")  # a side file: no capture
    finally:
        os.close(fd)
    assert top.rank(1).held() is False and top.rank(1).captures() == ["cupti-h-1.sqlite"]
    assert not top.is_run() and rank_folders(top.folder) == [top.rank(1).folder]
    assert run_of(top.rank(1).folder) == top.folder and runs_inside(tmp_path) == [top.folder]
    assert is_run(top.rank(1).folder) and top.rank(1).history_row().command == "python x.py"


def test_a_manifest_that_is_not_a_runs_is_refused_in_one_line(tmp_path):
    Run(tmp_path).manifest_file.write_text('{"name": "a web app"}')
    with pytest.raises(BadInput, match="not a run manifest"):
        Run(tmp_path).manifest()
    with pytest.raises(BadInput):
        Run(tmp_path).history_row()


def test_the_name_sets_agree():
    """What `run --force` removes, what the readers skip and what an output never replaces are the run's own files,
    each set for its reason (run/names.py)."""
    assert names.NOT_CAPTURES - set(names.OWN) == {names.REPORT_HTML}
    assert set(names.OWN) - names.NOT_CAPTURES == {names.MANIFEST_TMP, names.VERIFY}
    assert names.WRITTEN - set(names.OWN) == {names.STORE + s for s in names.SQLITE_SIDES}
    assert names.SET_ASIDE_STORE.fullmatch(f"{names.STORE}{names.SET_ASIDE}20250101-120000")


def test_the_protocols_are_what_run_gives():
    run: RunFiles = Run(RUNS / "gemm_nsys")
    job: JobRecord = Run(RUNS / "gemm_nsys").manifest()
    row: RunRow = Run(RUNS / "gemm_nsys").history_row()
    assert run.store_file.name == names.STORE and job.status == "ended" and row.backend == "nsys"


@pytest.mark.parametrize(("name", "marked"), [
    ("step 12", (steps.OWN, 12)), ("ProfilerStep#3", (steps.OWN, 3)), ("optimizer step 7", (steps.OPTIMIZER, 7)),
    ("train batch 0", (steps.BATCHES, 0)), ("step 1a", None), ("a step 1", None), ("keras:dense (Dense)", None),
    ("step ", None), ("Step 1", None),
])
def test_a_step_by_its_name(name, marked):
    assert steps.marked(name) == marked
    assert steps.could_mark_a_step(name) == (marked is not None or name.startswith("keras:"))


def test_step_names_in_sql_select_what_the_patterns_match():
    """The store's GLOB conditions match exactly what the patterns match; the readers' LIKE patterns select at
    least that (a coarse first cut in SQL: the patterns decide)."""
    import sqlite3

    conn = sqlite3.connect(":memory:")
    for name in ("step 12", "ProfilerStep#3", "optimizer step 7", "train batch 0", "step 1a", "keras:x", "steps 1",
                 "optimizer step x"):
        own, opt, like = conn.execute(f"SELECT ({steps.glob_sql('?1', steps.OWN)}), "
                                      f"({steps.glob_sql('?1', steps.OPTIMIZER)}), "
                                      f"({' OR '.join(f'?1 LIKE {p!r}' for p in steps.LIKE)})", (name,)).fetchone()
        source = (steps.marked(name) or (None,))[0]
        assert (bool(own), bool(opt)) == (source == steps.OWN, source == steps.OPTIMIZER), name
        assert bool(like) or not steps.could_mark_a_step(name), name
    assert steps.step_name(4) == "step 4"
