"""system/fork.Handed: a value a forked worker waits for, given by its parent after the fork (the per-step series'
time buckets, known once the GPU's rows are read, for the calls' worker that reads its rows meanwhile)."""
from __future__ import annotations

import os
import time

import pytest

from nvprof_wrap.system import fork
from nvprof_wrap.system.fork import Forked, Handed

pytestmark = pytest.mark.skipif(not fork.can_fork(), reason="needs fork and 2+ cores")


def _work(handed: Handed, started: float) -> tuple[object, float]:
    """What the worker did before it needed the value (nothing here), then the value and when it came."""
    return handed.get(), time.monotonic() - started


def test_the_worker_gets_what_its_parent_gives_after_forking_it() -> None:
    handed = Handed()
    worker = Forked(_work, handed, time.monotonic())
    handed.forked()
    time.sleep(0.3)  # the worker is waiting by now
    spans = [(n, n * 10, n * 10 + 10) for n in range(2000)]  # the most steps a series has (MAX_STEPS)
    handed.give(spans)
    got, waited = worker.result()
    assert got == spans and waited >= 0.3


def test_a_worker_whose_parent_gives_up_ends_with_an_error_not_a_hang() -> None:
    handed = Handed()
    worker = Forked(_work, handed, time.monotonic())
    handed.forked()
    handed.close()
    with pytest.raises(RuntimeError, match="gave up"):
        worker.result()
    with pytest.raises(ChildProcessError):
        os.waitpid(worker.pid, os.WNOHANG)


def test_work_done_here_for_a_dead_worker_gets_what_was_given() -> None:
    """Forked.result runs the work here where the worker died without an answer: get() returns the value given
    (a give() to a dead worker's pipe is no error)."""
    handed = Handed()
    worker = Forked(_work, handed, time.monotonic())
    handed.forked()
    os.kill(worker.pid, 9)
    time.sleep(0.1)
    handed.give("steps")
    assert worker.result()[0] == "steps"
