"""timeline/windows.py: what a windowed run's processes wrote to RUN/windows.jsonl, folded into one summary."""
from __future__ import annotations

import json
from pathlib import Path

from nvprof_wrap.timeline import windows


def _write(path: Path, events: list[dict]) -> Path:
    path.write_text("".join(json.dumps({"window": "steps:100:120", "host": "h", "unix_ns": 1, **e}) + "\n"
                            for e in events) + '{"window": "steps:100:120", "pid": 9, "ev')  # a half-written line
    return path


def test_the_edges_cost_is_the_slowest_process_open_plus_close(tmp_path):
    """Each process says how long opening and closing its window held it; the run's figure is the slowest
    process's sum (its ranks ran side by side: the job waited for the slowest)."""
    path = _write(tmp_path / "windows.jsonl", [
        {"pid": 1, "event": "open", "step": 100, "source": "optimizer steps", "held_ms": 40.5},
        {"pid": 2, "event": "open", "step": 100, "source": "optimizer steps", "held_ms": 900.0},
        {"pid": 1, "event": "close", "step": 120, "source": "optimizer steps", "held_ms": 180.25},
        {"pid": 2, "event": "close", "step": 120, "source": "optimizer steps", "held_ms": 3100.0},
        {"pid": 1, "event": "end", "state": "closed", "source": "optimizer steps", "step": 1000},
        {"pid": 2, "event": "end", "state": "closed", "source": "optimizer steps", "step": 1000}])
    seen = windows.summary(path)
    assert seen is not None and (seen.processes, seen.opened, seen.open_step, seen.close_step) == (2, 2, 100, 120)
    assert seen.held_ms == 4000.0


def test_without_held_times_or_with_damaged_ones_the_cost_is_unsaid(tmp_path):
    """Files written before the processes measured their edges, and values that are not durations."""
    old = _write(tmp_path / "old.jsonl", [{"pid": 1, "event": "open", "step": 100},
                                          {"pid": 1, "event": "close", "step": 120}])
    assert windows.summary(old).held_ms is None
    bad = _write(tmp_path / "bad.jsonl", [{"pid": 1, "event": "open", "step": 100, "held_ms": True},
                                          {"pid": 1, "event": "close", "step": 120, "held_ms": -5},
                                          {"pid": 2, "event": "close", "step": 120, "held_ms": "3"},
                                          {"pid": 3, "event": "end", "step": 130, "held_ms": 50.0}])
    assert windows.summary(bad).held_ms is None
    assert windows.summary(tmp_path / "absent.jsonl") is None


def test_the_window_line_says_what_the_edges_held_and_whose_thread():
    """A steps window opens and closes on the job's own thread (the job waited); a seconds window on its timer's."""
    from nvprof_wrap.report import CaptureScope, capture_line

    steps = CaptureScope("steps", 100, 120, "--capture-steps 100:120", processes=1, opened=1, open_step=100,
                         close_step=120, last_step=1000, job_steps=1000, source="optimizer steps", held_s=0.234)
    assert "; opening and closing it held the job 0.23 s)" in capture_line(steps)
    seconds = CaptureScope("seconds", 60, 70, "--capture-after 60 --capture-for 10", processes=1, opened=1,
                           held_s=4.1)
    assert "; opening and closing it took 4.10 s on its timer thread)" in capture_line(seconds)
    quick = CaptureScope("steps", 100, 120, "--capture-steps 100:120", processes=1, opened=1, held_s=0.001)
    assert "held" not in capture_line(quick)  # under 5 ms: not worth a word
