"""A capture window whose nsys stop ran beside the job (tracer/window.py): the report cuts what nsys recorded while
stopping (timeline/window.py Window.cut).

tests/data/h200_runs/nsys_window_aside: a real run on the H200 (benchmarks/gpu/capture_window.sh part K) —
`nvprof-wrap run --backend nsys --no-hardware --capture-steps 100:120 -- python train.py …` of karpathy/nanoGPT,
unmodified (shakespeare_char config, 400 iterations, --compile=False). The job was held 0.66 ms at the close, nsys'
stop took 3.07 s on a helper thread, and nsys recorded 208 launches of step 120 meanwhile; each step of this loop
launches 378 kernels (every window of the same job stopped on the job's thread holds 20 x 378 = 7,560).
"""
from __future__ import annotations

import gzip
import json
import shutil
import sqlite3

import pytest

from nvprof_wrap import readers
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.timeline.window import Window
from tests._paths import RUNS

RUN = RUNS / "nsys_window_aside"
PER_STEP = 378


@pytest.fixture()
def run(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(RUN, folder)
    return folder


def _json(capsys, *argv) -> dict:
    assert main(["report", *map(str, argv), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_capture_itself_holds_what_nsys_recorded_while_stopping(run, capsys):
    """The evidence the cut is needed: the file reported alone (not as the run's)."""
    r = _json(capsys, run / "nsys.sqlite.gz")
    assert r["launches"] == 20 * PER_STEP + 208 and r["capture"] is None
    assert [(row["step"], row["launches"]) for row in r["series"]][-2:] == [(119, PER_STEP), (120, 208)]


def test_the_runs_report_holds_steps_100_to_119_only(run, capsys):
    r = _json(capsys, run)
    assert r["launches"] == 20 * PER_STEP
    assert [row["step"] for row in r["series"]] == list(range(100, 120))
    assert {row["launches"] for row in r["series"]} == {PER_STEP}
    c = r["capture"]
    assert (c["open_step"], c["close_step"], c["stopped_aside"], c["stop_s"]) == (100, 120, 1, 3.066)
    assert c["held_s"] == pytest.approx(0.2111)  # the job's own wait: the open (210 ms) and the close (0.7 ms)
    assert "the profiler's stop (3.1 s) ran beside the job, what it recorded meanwhile from step 120 on is left " \
           "out" in r["headline"][0]


def test_a_steps_window_asked_of_the_run_is_cut_too(run, capsys):
    assert _json(capsys, run, "--steps", "105:110")["launches"] == 5 * PER_STEP
    # step 120 is in the file (what nsys recorded while stopping) but not the window's: as if nsys had never seen it
    assert main(["report", str(run), "--steps", "110:121"]) == 2
    assert "no step 120 in this capture (steps 100..119)" in capsys.readouterr().err


def test_the_runs_summaries_are_cut_as_its_report(run, tmp_path, capsys):
    out = tmp_path / "summaries"
    assert main(["summarize", str(run), "-o", str(out)]) == 0
    capsys.readouterr()
    assert _json(capsys, out)["launches"] == 20 * PER_STEP


def test_the_cut_changes_nothing_where_the_capture_marks_no_step_past_it():
    whole = readers.read(RUN / "nsys.sqlite.gz")
    late = readers.read(RUN / "nsys.sqlite.gz", Window(cut=500))
    assert [(k.name, k.launches, k.total_ns) for k in late.kernels] == \
        [(k.name, k.launches, k.total_ns) for k in whole.kernels]


def test_a_capture_without_step_ranges_is_read_whole_under_a_cut(tmp_path):
    """The cut is a capture window's, not a window the user asked for: no NO_STEPS refusal."""
    path = tmp_path / "nsys.sqlite"
    with gzip.open(RUN / "nsys.sqlite.gz") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM NVTX_EVENTS")
    conn.commit()
    conn.close()
    with pytest.raises(BadInput, match="no step ranges"):
        readers.read(path, steps=(100, 110))
    assert sum(k.launches for k in readers.read(path, Window(cut=120)).kernels) == 20 * PER_STEP + 208


@pytest.mark.parametrize("bad", [{}, {"cut": -1}, {"seconds": (1.0, 2.0), "steps": (1, 2)}])
def test_a_window_is_something(bad):
    with pytest.raises(BadInput):
        Window(**bad)


def _counts(capture) -> list[tuple[str, int, int]]:
    return sorted((k.name, k.launches, k.total_ns) for k in capture.kernels)


@pytest.mark.parametrize(("cut", "steps"), [(1, None), (12, None), (29, (0, 12)), (12, (3, 12)), (30, (10, 20))])
def test_a_cut_at_step_b_is_the_steps_window_that_ends_there(gpt, cut, steps):
    """Cut at B = everything before step B's start: the same kernels as --steps 0:B (nothing precedes step 0 in
    this capture); a steps window asked inside it is that window."""
    got = readers.read(gpt, Window(steps=steps, cut=cut))
    assert _counts(got) == _counts(readers.read(gpt, steps=steps or (0, cut)))


def test_steps_past_the_cut_are_not_the_captures(gpt):
    with pytest.raises(BadInput, match=r"--steps 2:9: no step 8 in this capture \(steps 0..4\)"):
        readers.read(gpt, Window(steps=(2, 9), cut=5))


# tests/data/h200_runs/nsys_window_detached: the same job and window (benchmarks/gpu/capture_window.sh part Q2, DATA=1),
# run with the default since then: once nsys' stop returned (3.18 s, beside the job), its CUPTI was detached from the
# job (cuptiFinalize on nsys' own libcupti, status 0, 12.6 ms on the job's thread). nsys recorded 241 launches of
# step 120 while stopping, and nothing after.
DETACHED = RUNS / "nsys_window_detached"


def test_a_run_whose_nsys_cupti_was_detached_says_so_and_is_cut_the_same(tmp_path, capsys):
    folder = tmp_path / "run"
    shutil.copytree(DETACHED, folder)
    alone = _json(capsys, folder / "nsys.sqlite.gz")
    assert alone["launches"] == 20 * PER_STEP + 241
    r = _json(capsys, folder)
    assert r["launches"] == 20 * PER_STEP and [row["step"] for row in r["series"]] == list(range(100, 120))
    c = r["capture"]
    assert (c["stopped_aside"], c["profiler_detached"], c["stop_s"], c["job_steps"]) == (1, 1, 3.1793, 401)
    assert "from step 120 on is left out, then its CUPTI was detached from the job)" in r["headline"][0]


def test_a_detach_that_failed_is_not_said(tmp_path, capsys):
    """A finalize that did not return 0 (or found nothing to detach) leaves the report's line as without it."""
    folder = tmp_path / "run"
    shutil.copytree(DETACHED, folder)
    lines = (folder / "windows.jsonl").read_text().splitlines()
    failed = [line.replace('.so.13.0", 0]]', '.so.13.0", 15]]') for line in lines]
    assert failed != lines
    (folder / "windows.jsonl").write_text("\n".join(failed) + "\n")
    r = _json(capsys, folder)
    assert r["capture"]["profiler_detached"] == 0 and "detached" not in r["headline"][0]
    assert r["launches"] == 20 * PER_STEP
