"""system/fork.Answer: a forked child's big buffers (numpy arrays, pickle.PickleBuffer) come back beside its pickle,
in shared memory, and what the parent gets is what the child sent — through the pipe where they are small or there
is no shared memory to be had."""
from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from nvprof_wrap.system import fork
from nvprof_wrap.system.fork import Answer, Forked, can_fork

needs_memfd = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no memfd here (not Linux)")


def _value():
    return {"cols": [np.arange(300_000, dtype=np.int64), np.arange(7, dtype=np.int32)],
            "kept": [pickle.PickleBuffer(bytes(range(256)) * 4_000)], "rows": [(1, "a", None)] * 3}


def _same(got, want) -> None:
    assert got["rows"] == want["rows"]
    for a, b in zip(got["cols"], want["cols"]):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert bytes(got["kept"][0]) == bytes(want["kept"][0].raw())


@needs_memfd
def test_big_buffers_go_beside_the_pipe_and_come_back_whole() -> None:
    a = Answer()
    try:
        data = a.dumps(_value())
        assert len(data) < 10_000  # 3.4 MB of buffers, none of it in the pipe's bytes
        got = a.loads(data)
    finally:
        a.close()
    _same(got, _value())
    arr = got["cols"][0]
    assert arr.flags.writeable and arr.ctypes.data % 64 == 0  # aligned; writable, privately (copy-on-write)
    arr[0] = 99
    assert arr[0] == 99
    assert isinstance(got["kept"][0], memoryview) and got["kept"][0].readonly  # bytes stay read-only


@needs_memfd
def test_small_answers_and_answers_without_buffers_go_through_the_pipe(monkeypatch) -> None:
    a = Answer()
    try:
        plain = a.dumps([(1, "x")] * 10)
        assert a.loads(plain) == [(1, "x")] * 10
        monkeypatch.setattr(fork, "OUT_OF_BAND", 1 << 40)  # every answer small
        data = a.dumps(_value())
        assert len(data) > 3_000_000  # in the pipe's bytes
        _same(a.loads(data), _value())
    finally:
        a.close()


def test_without_shared_memory_everything_goes_through_the_pipe(monkeypatch) -> None:
    monkeypatch.delattr(os, "memfd_create", raising=False)
    a = Answer()
    assert a.fd == -1
    data = a.dumps(_value())
    assert len(data) > 3_000_000
    _same(a.loads(data), _value())


@needs_memfd
def test_a_full_shared_memory_sends_it_through_the_pipe(monkeypatch) -> None:
    """No room for the buffers (ENOSPC from a full /dev/shm): the whole answer goes through the pipe."""
    a = Answer()

    def full(*_a):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "ftruncate", full)
    try:
        data = a.dumps(_value())
        assert len(data) > 3_000_000
        _same(a.loads(data), _value())
    finally:
        a.close()


@pytest.mark.skipif(not can_fork(), reason="no fork here (or one core)")
def test_a_forked_childs_big_answer_and_its_error() -> None:
    """End to end: the child's arrays, read after its shared file is closed in the parent (the mapping holds them);
    an error raised in the child is raised by result()."""
    f = Forked(_value)
    got = f.result()
    assert f._answer is not None and f._answer.fd == -1  # closed once read
    _same(got, _value())

    def fails():
        raise ValueError("in the child")
    with pytest.raises(ValueError, match="in the child"):
        Forked(fails).result()
