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


KINETO = Path(__file__).resolve().parents[1] / "data" / "h200_runs" / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz"


@forking
def test_a_kineto_trace_gets_the_same_series_from_the_worker_and_its_names_classified_meanwhile(monkeypatch):
    """A torch.profiler trace (real, H200 nanoGPT bf16: 1,323 launches) of AHEAD_LAUNCHES or more has its series
    measured in a forked worker on 2 cores too — the same series and notes as measured here — while the reading
    process classifies its kernel names, which the report's evidence then does not classify again."""
    from nvprof_wrap.classify import engine
    from nvprof_wrap.readers import kineto_json

    here = nw.analyze(KINETO)
    started: list[int] = []

    class Recorded(fork.Forked):
        def __init__(self, fn, *args, **kw):
            if getattr(fn, "func", None) is kineto_json._steps_alone:
                started.append(args[0])
            super().__init__(fn, *args, **kw)

    classified: list[str] = []
    classify = engine.classify

    def counted(name):
        classified.append(name)
        return classify(name)

    monkeypatch.setattr(step_series, "Forked", Recorded)
    monkeypatch.setattr(step_series, "AHEAD_CORES", 99)  # the Kineto reader's own from_cores=2 decides
    monkeypatch.setattr(kineto_json, "AHEAD_LAUNCHES", 1000)
    monkeypatch.setattr(engine, "classify", counted)
    monkeypatch.setattr(engine, "_DONE", [])  # nothing classified before in this process
    read: list[int] = []
    capture = kineto_json._capture

    def reading(*args):
        got = capture(*args)
        read.append(len(classified))  # the names the reader classified before it returned
        return got

    monkeypatch.setattr(kineto_json, "_capture", reading)
    ahead = nw.analyze(KINETO)
    assert started == [1323]  # the kernel rows: the worker measured this series
    assert read == [len({k.name for k in here.kernels})]
    assert here.series is not None and here.series.rows
    assert ahead.series == here.series
    assert [s.notes for s in ahead.sources] == [s.notes for s in here.sources]
    assert ahead.kernels == here.kernels
    assert sorted(classified) == sorted({k.name for k in here.kernels})  # once each: in the reader, not again

    started.clear()
    monkeypatch.setattr(kineto_json, "AHEAD_LAUNCHES", 1324)  # fewer launches than that: measured here
    assert nw.analyze(KINETO).series == here.series and started == []


def test_meanwhile_runs_only_where_the_worker_answers_and_its_error_ends_the_worker(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(step_series, "BIG", 0)
    if fork.can_fork():
        ahead = step_series.Ahead(SAMPLE, lambda: 10, _child, _here, from_cores=2)
        assert ahead.work is not None
        assert ahead.result(20, meanwhile=lambda: calls.append("meanwhile"))[1][0].startswith("child")
        assert calls == ["meanwhile"]

        ahead = step_series.Ahead(SAMPLE, lambda: 10, _child, _here, from_cores=2)
        cancelled: list[bool] = []
        assert ahead.work is not None
        work = ahead.work
        monkeypatch.setattr(work, "cancel", lambda: cancelled.append(True))

        def broken() -> None:
            raise RuntimeError("meanwhile failed")

        with pytest.raises(RuntimeError):
            ahead.result(20, meanwhile=broken)
        assert cancelled
        fork.Forked.cancel(work)
    ahead = step_series.Ahead(SAMPLE, lambda: 10, _child, _here, from_cores=fork.cores() + 1)
    assert ahead.work is None
    assert ahead.result(20, meanwhile=lambda: calls.append("not")) == (None, ("here 20",))
    assert "not" not in calls


def test_from_launches_takes_the_place_of_the_files_size(monkeypatch):
    monkeypatch.setattr(step_series, "BIG", SAMPLE.stat().st_size + 1)  # too small a file for the size rule
    if fork.can_fork():
        ahead = step_series.Ahead(SAMPLE, lambda: 10, _child, _here, from_cores=2, from_launches=10)
        assert ahead.work is not None
        ahead.abandon()
    assert step_series.Ahead(SAMPLE, lambda: 9, _child, _here, from_cores=2, from_launches=10).work is None
    assert step_series.Ahead(SAMPLE, lambda: 10, _child, _here, from_cores=2).work is None
