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


def _here(n: int, meanwhile: step_series.Meanwhile = None) -> step_series.Measured:
    return None, (f"here {n}",) if meanwhile is None else (f"here {n}", "given meanwhile")


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


def _series_workers(module, started: list[int]) -> type[fork.Forked]:
    """fork.Forked that records the launches each series' worker of a reader module is started with."""

    class Recorded(fork.Forked):
        def __init__(self, fn, *args, **kw):
            if getattr(fn, "func", None) is module._steps_alone:
                started.append(args[0])
            super().__init__(fn, *args, **kw)

    return Recorded


KINETO = Path(__file__).resolve().parents[1] / "data" / "h200_runs" / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz"
CUPTI = Path(__file__).resolve().parents[1] / "data" / "h200_runs" / "ddp_cupti" / "cupti-vm-5269.sqlite"


@forking
@pytest.mark.parametrize(("capture", "reader", "launches"), [
    (KINETO, "kineto_json", 1323),  # real, H200 nanoGPT bf16 under torch.profiler
    (SAMPLE, "nsys_sqlite", 122),  # real, H200 torch ops under Nsight Systems
    (CUPTI, "cupti_sqlite", 1037),  # real, H200 DDP rank under this project's CUPTI tracer
])
def test_a_small_capture_gets_the_same_series_from_the_worker_and_its_names_classified_meanwhile(
        monkeypatch, tmp_path, classified, capture, reader, launches):
    """A capture of AHEAD_LAUNCHES or more that the reader forks nothing else for (smaller than BIG: the Kineto
    trace's rows, the nsys export, the CUPTI tracer's capture) has its series measured in a forked worker, on 2
    cores too — the same series and notes as measured here — while the reading process classifies its kernel
    names, which the report's evidence then does not classify again; fewer launches than that: measured here."""
    import importlib

    from nvprof_wrap.classify import engine

    module = importlib.import_module(f"nvprof_wrap.readers.{reader}")
    if capture.suffix == ".gz":  # unpacked: a trace bigger than its rows
        import gzip

        plain = tmp_path / capture.stem
        plain.write_bytes(gzip.decompress(capture.read_bytes()))
        capture = plain
    here = nw.analyze(capture)
    classified.clear()
    monkeypatch.setattr(engine, "_DONE", [])  # what that analysis classified: forgotten
    started: list[int] = []
    monkeypatch.setattr(step_series, "Forked", _series_workers(module, started))
    monkeypatch.setattr(step_series, "AHEAD_CORES", 99)  # as on 2 cores: only a capture smaller than BIG
    # what counts is what the reader forks its other workers for: the nsys export, the Kineto trace's rows (a
    # trace of BIG or more may have few enough rows)
    monkeypatch.setattr(step_series, "BIG", capture.stat().st_size + (0 if reader == "kineto_json" else 1))
    monkeypatch.setattr(step_series, "AHEAD_LAUNCHES", launches)
    from nvprof_wrap.pipeline import evidence

    before: list[int] = []
    pending = evidence.classify_pending

    def classifying(store):
        before.append(len(classified))  # the names classified before the report's evidence classifies any
        return pending(store)

    monkeypatch.setattr(evidence, "classify_pending", classifying)
    ahead = nw.analyze(capture)
    assert started == [launches]  # the kernel rows: the worker measured this series
    assert here.series is not None and here.series.rows
    assert ahead.series == here.series
    assert [s.notes for s in ahead.sources] == [s.notes for s in here.sources]
    assert ahead.kernels == here.kernels
    assert sorted(classified) == sorted({k.name for k in here.kernels})  # once each: in the reader, not again
    assert before and before[0] == len({k.name for k in here.kernels})

    started.clear()
    monkeypatch.setattr(step_series, "AHEAD_LAUNCHES", launches + 1)
    assert nw.analyze(capture).series == here.series and started == []


def test_meanwhile_runs_only_where_the_worker_answers_and_its_error_ends_the_worker(monkeypatch):
    calls: list[str] = []
    if fork.can_fork():
        ahead = step_series.Ahead(SAMPLE, lambda: 10, _child, _here, from_launches=10)
        assert ahead.work is not None
        assert ahead.result(20, meanwhile=lambda: calls.append("meanwhile"))[1][0].startswith("child")
        assert calls == ["meanwhile"]

        ahead = step_series.Ahead(SAMPLE, lambda: 10, _child, _here, from_launches=10)
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
    # measured here: meanwhile is handed to here(), which runs it only while it waits for a worker of its own
    # (series_np's calls side: test_series_np.test_meanwhile_runs_while_the_calls_worker_ends) — not run by Ahead
    ahead = step_series.Ahead(SAMPLE, lambda: 10, _child, _here, from_launches=11)
    assert ahead.work is None
    assert ahead.result(20, meanwhile=lambda: calls.append("not")) == (None, ("here 20", "given meanwhile"))
    assert "not" not in calls
    assert step_series.Ahead(SAMPLE, lambda: 10, _child, _here, from_launches=11).result(20) == (None, ("here 20",))


@forking
@pytest.mark.parametrize(("cores", "big", "from_launches", "forks"), [
    (2, False, 10, True),  # 2 cores, a capture the reader forks nothing else for: its launches decide
    (2, False, 11, False),
    (2, False, None, False),  # without from_launches: only a big capture on AHEAD_CORES (the rule before)
    (2, True, 10, False),  # 2 cores, a big capture: the reader's own workers hold both cores
    (3, True, None, True),  # AHEAD_CORES, a big capture: whatever its launches
    (3, True, 11, True),
    (3, False, 10, True),  # AHEAD_CORES, a small capture: from_launches
    (3, False, 11, False),
    (3, False, None, False),
])
def test_where_the_series_is_measured_ahead(monkeypatch, cores, big, from_launches, forks):
    monkeypatch.setattr(step_series, "AHEAD_CORES", 3)
    monkeypatch.setattr(step_series, "cores", lambda: cores)
    monkeypatch.setattr(step_series, "BIG", 0 if big else SAMPLE.stat().st_size + 1)
    ahead = step_series.Ahead(SAMPLE, lambda: 10, _child, _here, from_launches=from_launches)
    assert (ahead.work is not None) == forks
    ahead.abandon()


@pytest.mark.parametrize("reader", ["nsys_sqlite", "cupti_sqlite", "kineto_json"])
def test_a_series_worker_that_cannot_start_ends_the_busy_times(monkeypatch, reader):
    """The readers start the busy time's workers and the series' side by side: where the series' cannot start (its
    count of kernel rows fails, say), the busy time's are ended, not left running; where the busy time's cannot
    start, the series' is ended."""
    import importlib

    module = importlib.import_module(f"nvprof_wrap.readers.{reader}")
    capture = {"nsys_sqlite": SAMPLE, "cupti_sqlite": CUPTI, "kineto_json": KINETO}[reader]
    ended: list[str] = []
    busy_time, ahead = module.BusyTime, step_series.Ahead

    class Busy(busy_time):
        def abandon(self):
            ended.append("busy")
            super().abandon()

    class Refused(ahead):
        def __init__(self, *args, **kw):
            raise RuntimeError("the series' worker could not start")

    monkeypatch.setattr(module, "BusyTime", Busy)
    monkeypatch.setattr(step_series, "Ahead", Refused)
    with pytest.raises(Exception, match="series' worker could not start"):
        module.read(capture)
    if reader == "nsys_sqlite":  # the busy time starts first there
        assert ended == ["busy"]

    class Started(ahead):
        def abandon(self):
            ended.append("series")
            super().abandon()

    def refused(*args, **kw):
        raise RuntimeError("the busy time could not start")

    ended.clear()
    monkeypatch.setattr(step_series, "Ahead", Started)
    monkeypatch.setattr(module, "BusyTime", refused)
    with pytest.raises(Exception, match="busy time could not start"):
        module.read(capture)
    if reader != "nsys_sqlite":  # the series' starts first there
        assert ended == ["series"]


@forking
@pytest.mark.parametrize(("capture", "reader", "launches"), [
    (SAMPLE, "nsys_sqlite", 122),  # real, H200 torch ops under Nsight Systems
    (CUPTI, "cupti_sqlite", 1037),  # real, H200 DDP rank under this project's CUPTI tracer
])
@pytest.mark.parametrize(("cores", "forked"), [(2, 0), (3, 1), (4, 2)])
def test_the_names_classified_meanwhile_take_the_cores_the_series_worker_leaves(
        monkeypatch, capture, reader, launches, cores, forked):
    """While the series' worker runs, the reading process classifies the kernel names side by side on the cores that
    worker leaves (one part per PER_WORKER names, at most one per core left): here alone on 2 cores; on more, in
    forked workers too — the same classifications as one by one, every name classified before the report's
    evidence (which classifies none again)."""
    import importlib

    from nvprof_wrap.classify import classify, engine

    module = importlib.import_module(f"nvprof_wrap.readers.{reader}")
    here = nw.analyze(capture)
    names = sorted({k.name for k in here.kernels})
    monkeypatch.setattr(engine, "_DONE", [])
    series_started: list[int] = []
    parts: list[int] = []

    class Counted(engine.Forked):
        def __init__(self, fn, part):
            parts.append(len(part))
            super().__init__(fn, part)

    monkeypatch.setattr(step_series, "Forked", _series_workers(module, series_started))
    monkeypatch.setattr(step_series, "AHEAD_CORES", 99)  # the worker for a capture smaller than BIG, as on 2 cores
    monkeypatch.setattr(step_series, "BIG", capture.stat().st_size + 1)
    monkeypatch.setattr(step_series, "AHEAD_LAUNCHES", launches)
    monkeypatch.setattr(engine, "Forked", Counted)
    monkeypatch.setattr(engine, "cores", lambda: cores)
    monkeypatch.setattr(engine, "PER_WORKER", len(names) // 4)
    from nvprof_wrap.pipeline import evidence

    before: list[set[str]] = []
    pending = evidence.classify_pending

    def classifying(store):
        before.append(set(engine._done()))  # what the reader classified, before the evidence classifies any
        return pending(store)

    monkeypatch.setattr(evidence, "classify_pending", classifying)
    ahead = nw.analyze(capture)
    assert series_started == [launches]
    assert len(parts) == forked and sum(parts) < len(names)
    assert before and before[0] == set(names)
    assert [engine._done()[n] for n in names] == [classify(n) for n in names]
    assert ahead.kernels == here.kernels and ahead.series == here.series
