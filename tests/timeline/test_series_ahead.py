"""The per-step series measured ahead in a forked worker (timeline/series.py Ahead), beside the reader's other
passes: the same series as measured in the reading process, and measured there whenever the launches say so."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import nvprof_wrap as nw
from nvprof_wrap.system import fork
from nvprof_wrap.timeline import series as step_series

SAMPLE = Path(__file__).resolve().parents[2] / "nvprof_wrap" / "samples" / "torch_ops" / "nsys_torch_ops.sqlite"

forking = pytest.mark.skipif(not fork.can_fork(), reason="no fork here (one core, macOS or Windows)")


def _child(n: int) -> step_series.Measured:
    return None, (f"child {os.getpid()} {n}",)


def _here(n: int) -> step_series.Measured:
    return None, (f"here {n}",)


@forking
def test_the_worker_measures_in_a_child_with_the_guessed_launches(monkeypatch):
    monkeypatch.setattr(step_series, "BIG", 0)
    monkeypatch.setattr(step_series, "AHEAD_CORES", 2)
    ahead = step_series.Ahead(SAMPLE, lambda: 10, _child, _here)
    assert ahead.work is not None
    _series, (said,) = ahead.result(20)
    word, pid, n = said.split()
    assert (word, n) == ("child", "10") and int(pid) != os.getpid()


@forking
def test_launches_past_the_limit_end_the_worker_and_measure_here(monkeypatch):
    monkeypatch.setattr(step_series, "BIG", 0)
    monkeypatch.setattr(step_series, "AHEAD_CORES", 2)
    monkeypatch.setenv(step_series.ENV_MAX, "100")
    ahead = step_series.Ahead(SAMPLE, lambda: 10, _child, _here)
    assert ahead.work is not None
    assert ahead.result(1000) == (None, ("here 1000",))
    assert ahead.result(0) == (None, ("here 0",))


def test_no_worker_where_the_guess_is_past_the_limit_the_file_small_or_the_cores_few(monkeypatch):
    monkeypatch.setenv(step_series.ENV_MAX, "100")
    monkeypatch.setattr(step_series, "BIG", 0)
    monkeypatch.setattr(step_series, "AHEAD_CORES", 2)
    assert step_series.Ahead(SAMPLE, lambda: 1000, _child, _here).work is None
    monkeypatch.setenv(step_series.ENV_MAX, "-1")
    monkeypatch.setattr(step_series, "BIG", SAMPLE.stat().st_size + 1)
    assert step_series.Ahead(SAMPLE, lambda: 1000, _child, _here).work is None
    monkeypatch.setattr(step_series, "BIG", 0)
    monkeypatch.setattr(step_series, "AHEAD_CORES", fork.cores() + 1)
    assert step_series.Ahead(SAMPLE, lambda: 1000, _child, _here).work is None


@forking
def test_a_real_capture_gets_the_same_series_from_the_worker(monkeypatch):
    here = nw.analyze(SAMPLE)
    started: list[int] = []

    class Recorded(fork.Forked):
        def __init__(self, fn, *args, **kw):
            started.append(args[0])
            super().__init__(fn, *args, **kw)

    monkeypatch.setattr(step_series, "BIG", 0)
    monkeypatch.setattr(step_series, "AHEAD_CORES", 2)
    monkeypatch.setattr(step_series, "Forked", Recorded)
    ahead = nw.analyze(SAMPLE)
    assert started and started[0] > 0  # the kernel rows: the worker measured this series
    assert here.series is not None and here.series.rows
    assert ahead.series == here.series
    assert [s.notes for s in ahead.sources] == [s.notes for s in here.sources]
