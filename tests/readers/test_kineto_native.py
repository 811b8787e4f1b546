"""The Kineto reader's compiled loop (readers/_ckineto.c) against its Python loop (Rows._add_python): the same rows in
the same order, the same ids, counts and host, the same error — on every trace-event file of the fixtures and on
hostile events built here. The compiled loop takes only the usual events and hands each other one to the Python loop
as it comes; a difference in any value it writes is a wrong kernel time, launch or op."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from nvprof_wrap.readers import _kineto_rows
from nvprof_wrap.readers._kineto_rows import Rows, scan
from tests._paths import DATA, FIXTURES

pytestmark = pytest.mark.skipif(_kineto_rows._ckineto is None, reason="the compiled helper is not built here")

_TABLES = ("kl", "mem", "rt", "rng", "fop")


def _trace_files() -> list[Path]:
    """Every file of the fixtures (and tests/data) whose start holds a traceEvents key, plain or gzipped."""
    import gzip

    found = []
    for root in (FIXTURES, DATA):
        for p in sorted(root.rglob("*.json*")) if root.is_dir() else ():
            try:
                with (gzip.open(p) if p.name.endswith(".gz") else open(p, "rb")) as f:
                    head = f.read(1 << 16)
            except (OSError, EOFError):
                continue
            if b'"traceEvents"' in head:
                found.append(p)
    return found


def _state(rows: Rows) -> dict[str, Any]:
    rows.flush()
    tables = {t: rows.db.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in _TABLES}
    return {"tables": tables, "summary": rows.summary(), "call_kinds": rows.call_kinds, "ranges": rows.ranges,
            "open": rows.open_begins}


def _scanned(path: Path, folder: Path, native: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("NVPROF_WRAP_NATIVE", "on" if native else "off")
    folder.mkdir()
    try:
        rows, header, cut, tail = scan(path, folder)
    except Exception as e:  # noqa: BLE001 - compared: the same failure both ways
        return {"error": (type(e).__name__, str(e).replace(str(folder), "FOLDER"))}
    try:
        return {**_state(rows), "header": header, "cut": cut, "tail": tail}
    finally:
        rows.db.close()


TRACES = _trace_files()


@pytest.mark.parametrize("path", TRACES, ids=[p.name for p in TRACES])
def test_the_compiled_loop_reads_every_real_trace_as_the_python_loop(path: Path, tmp_path, monkeypatch) -> None:
    compiled = _scanned(path, tmp_path / "c", True, monkeypatch)
    python = _scanned(path, tmp_path / "p", False, monkeypatch)
    assert compiled == python


def test_the_fixtures_hold_traces_the_compiled_loop_takes(tmp_path, monkeypatch) -> None:
    """Not a vacuous comparison: the fixtures' Kineto traces are here and give kernels, launch calls and op ranges
    (the TF and ROCm timelines among the files give none: other readers take them)."""
    if not FIXTURES.is_dir():
        pytest.skip(f"needs the shared fixtures ({FIXTURES}: absent here)")
    full = 0
    for i, path in enumerate(TRACES):
        got = _scanned(path, tmp_path / str(i), True, monkeypatch)
        full += "error" not in got and all(got["tables"][t] for t in ("kl", "rt", "rng"))
    assert full >= 8


def _hostile() -> list[Any]:
    big = 10**30
    ev: list[Any] = [
        "not an event", 3, None,
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 10.5, "dur": 2.25,
         "args": {"Input Dims": [[64, 32], [32, 16]], "Input type": ["float", "float"]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 7, "tid": 7, "ts": 11, "dur": 1},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 8, "ts": 9, "dur": 100},
        {"ph": "B", "cat": "cpu_op", "name": "b", "pid": 7, "tid": 7, "ts": 1},  # not X: counted only
        {"ph": 5, "cat": "cpu_op", "name": "b", "pid": 7, "tid": 7, "ts": 1, "dur": 1},
        {"cat": "cpu_op", "name": "no ph", "pid": 7, "tid": 7, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "no dur", "pid": 7, "tid": 7, "ts": 1},
        {"ph": "X", "cat": "cpu_op", "name": "text ts", "pid": 7, "tid": 7, "ts": "12.5", "dur": "1"},
        {"ph": "X", "cat": "cpu_op", "name": "bool", "pid": 7, "tid": 7, "ts": True, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "nan", "pid": 7, "tid": 7, "ts": math.nan, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "inf dur", "pid": 7, "tid": 7, "ts": 1, "dur": math.inf},
        {"ph": "X", "cat": "cpu_op", "name": "huge", "pid": 7, "tid": 7, "ts": big, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "negative dur", "pid": 7, "tid": 7, "ts": 1, "dur": -1},
        {"ph": "X", "cat": "cpu_op", "name": "edge", "pid": 7, "tid": 7, "ts": 4611686018427387, "dur": 604800000},
        {"ph": "X", "cat": "cpu_op", "name": "past edge", "pid": 7, "tid": 7, "ts": 4611686018427388, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "neg", "pid": 7, "tid": 7, "ts": -5.75, "dur": 0},
        {"ph": "X", "cat": "cpu_op", "name": 12, "pid": 7, "tid": 7, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "str pid", "pid": "7", "tid": None, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 20.125, "dur": 3,
         "args": {"correlation": 5}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 21, "dur": big,
         "args": {"correlation": 6}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 9, "ts": 22, "dur": True,
         "args": [1]},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 9, "ts": 23},
        {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "ts": 24, "dur": 1.5, "args": {}},
        {"ph": "X", "cat": "cuda_runtime", "name": None, "pid": 7, "tid": 7, "ts": 25, "dur": 1},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 7, "tid": 7, "ts": "26", "dur": 1},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 7, "tid": 7, "ts": 27.5,
         "dur": 0.001, "args": {"correlation": None}},
        {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 21.5, "dur": 4.75,
         "args": {"device": 0, "correlation": 5, "stream": 7}},
        {"ph": "X", "cat": "Kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 30, "dur": 1, "args": {"device": 1}},
        {"ph": "X", "cat": "kernel", "name": "at zero", "pid": 0, "tid": 7, "ts": 0, "dur": 0,
         "args": {"device": 0, "correlation": 9}},
        {"ph": "X", "cat": "kernel", "name": "bool device", "pid": 0, "tid": 7, "ts": 31, "dur": 1,
         "args": {"device": True}},
        {"ph": "X", "cat": "kernel", "name": "no args", "pid": 0, "tid": 7, "ts": 32, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": ["list"], "pid": 0, "tid": 7, "ts": 33, "dur": 1, "args": {"device": 0}},
        {"ph": "B", "cat": "kernel", "name": "begun", "pid": 0, "tid": 7, "ts": 40, "args": {"device": 0}},
        {"ph": "E", "pid": 0, "tid": 7, "ts": 45},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 50, "dur": 2,
         "args": {"device": 0, "bytes": 64}},
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "stream 7"}},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "on a GPU", "pid": 0, "tid": 7, "ts": 60, "dur": 1},
        {"ph": "f", "cat": "ac2g", "name": "flow", "pid": 0, "tid": 7, "ts": 61},
        {"ph": "s", "cat": "ac2g", "name": "flow", "pid": 7, "tid": 7, "ts": 61},
        {"ph": "X", "cat": "python_function", "name": "f", "pid": 0, "tid": 7, "ts": 62, "dur": 1},
        {"ph": 3, "cat": "python_function", "name": "f", "pid": 0, "tid": 7, "ts": 62, "dur": 1},
        {"ph": "X", "cat": 7, "name": "number cat", "pid": 0, "tid": 7, "ts": 63, "dur": 1},
        {"ph": "X", "name": "no cat", "pid": 0, "tid": 7, "ts": 64, "dur": 1},
    ]
    return ev


def _added(events: list[Any], db: Path, native: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("NVPROF_WRAP_NATIVE", "on" if native else "off")
    rows = Rows(db)
    try:
        for i in range(0, len(events), 7):  # in batches, as the stream gives them
            rows.add_all(events[i:i + 7])
        rows.unended()
        return {**_state(rows), "host": rows.host_pid}
    except Exception as e:  # noqa: BLE001 - compared: the same failure both ways
        return {"error": (type(e).__name__, str(e))}
    finally:
        rows.db.close()


@pytest.mark.parametrize("order", ["as written", "host last", "reversed"])
def test_the_compiled_loop_gives_the_python_loops_rows_for_hostile_events(order, tmp_path, monkeypatch) -> None:
    events = _hostile()
    if order == "host last":  # the host's pid from a later event: the first ones wait for it
        events = [e for e in events if not (isinstance(e, dict) and e.get("pid") == 7)] + \
                 [e for e in events if isinstance(e, dict) and e.get("pid") == 7]
    elif order == "reversed":
        events = events[::-1]
    compiled = _added(events, tmp_path / "c.sqlite", True, monkeypatch)
    python = _added(events, tmp_path / "p.sqlite", False, monkeypatch)
    assert compiled == python
    assert "error" not in python and python["tables"]["kl"] and python["tables"]["rt"] and python["tables"]["rng"]
    assert python["tables"]["fop"] and python["summary"]["on_gpu"] >= 1  # FLOPs and GPU events counted both ways


@pytest.mark.parametrize("bad", [
    {"ph": "X", "cat": "cpu_op", "name": "list pid", "pid": [1], "tid": 7, "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {"a": 1}, "tid": 7, "ts": 1, "dur": 1},
    {"ph": "X", "cat": ["kernel"], "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1},
    {"ph": "s", "cat": "ac2g", "name": "flow", "pid": [0], "tid": 7, "ts": 61},
    {"ph": "X", "cat": "kernel", "name": "huge dev", "pid": 0, "tid": 7, "ts": 34, "dur": 1,
     "args": {"device": 10**30}},  # past SQLite's integers: refused (OverflowError) both ways
])
def test_an_event_the_python_loop_refuses_is_refused_alike(bad, tmp_path, monkeypatch) -> None:
    events = [*_hostile()[3:8], bad]
    compiled = _added(events, tmp_path / "c.sqlite", True, monkeypatch)
    python = _added(events, tmp_path / "p.sqlite", False, monkeypatch)
    assert compiled == python


def test_the_compiled_loop_runs_by_default_and_turns_off(monkeypatch) -> None:
    monkeypatch.delenv("NVPROF_WRAP_NATIVE", raising=False)
    assert _kineto_rows._native()
    monkeypatch.setenv("NVPROF_WRAP_NATIVE", "off")
    assert not _kineto_rows._native()


def test_a_python_exception_inside_the_compiled_loop_propagates(tmp_path, monkeypatch) -> None:
    """A hash collision (Rows._id raises Collision) inside the compiled loop reaches scan, which reads again."""
    monkeypatch.delenv("NVPROF_WRAP_NATIVE", raising=False)
    rows = Rows(tmp_path / "x.sqlite")
    try:
        rows.taken[id(rows.names)].add(hash("k"))
        with pytest.raises(_kineto_rows.Collision):
            rows.add_all([{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1,
                           "args": {"device": 0}}])
    finally:
        rows.db.close()
