"""nvprof output (``nvprof -o x.nvvp``): SQLite with names in ``StringTable``, mangled.

Kernels live in ``CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`` (the default) and/or
``CUPTI_ACTIVITY_KIND_KERNEL`` (``--concurrent-kernels off``); both are read.
nvprof writes one file per process; the pid comes from the runtime API records.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Activity, Capture, Gpu, KernelAgg, MemAgg, Process, merge_kernels, merge_memops
from nvprof_wrap.readers._durations import PLAIN, SOUND, sql_duration
from nvprof_wrap.readers._head import Head
from nvprof_wrap.readers._no_kernels import DRIVER_LAUNCH_CBIDS, RUNTIME_LAUNCH_CBIDS, api_calls, refuse_launches
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline import recover
from nvprof_wrap.timeline.busy import busy_time
from nvprof_wrap.timeline.sql import (
    EVERYTHING,
    MEMCPY_DIRECTION,
    columns,
    cut,
    in_window,
    opened,
    tables,
    window_bounds,
)
from nvprof_wrap.timeline.window import Window

KERNEL_TABLES = ("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "CUPTI_ACTIVITY_KIND_KERNEL")
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
DRIVER = "CUPTI_ACTIVITY_KIND_DRIVER"


def _single_pid(conn: sqlite3.Connection, have: set[str]) -> int | None:
    if RUNTIME not in have:
        return None
    pids = [r[0] for r in conn.execute(f"SELECT DISTINCT processId FROM {RUNTIME} LIMIT 2")]
    # With several processes in one file the correlation to the runtime call would be needed;
    # nvprof writes one file per process, so one pid is what we meet.
    return pids[0] if len(pids) == 1 else None


def _kernels(conn: sqlite3.Connection, have: set[str], pid: int | None,
             where: str) -> tuple[tuple[KernelAgg, ...], list[str]]:
    present = [t for t in KERNEL_TABLES if t in have]
    checked = [sql_duration(conn, t, "kernel") for t in present]
    dur = PLAIN if all(expr == PLAIN for expr, _ in checked) else SOUND
    union = " UNION ALL ".join(f'SELECT deviceId AS dev, name, start, "end" FROM {t} WHERE {where}' for t in present)
    sql = f"""
    SELECT g.dev, COALESCE({cut("s.value")}, '<unnamed kernel>'), g.n, g.tot, g.mn, g.mx FROM
      (SELECT dev, name, COUNT(*) AS n, SUM({dur}) AS tot, MIN({dur}) AS mn, MAX({dur}) AS mx
       FROM ({union}) GROUP BY dev, name) g
    LEFT JOIN StringTable s ON s._id_ = g.name"""
    return merge_kernels(KernelAgg(pid, dev, demangle(name), n, tot, mn, mx)
                         for dev, name, n, tot, mn, mx in conn.execute(sql)), [n for _, n in checked if n]


def _memops(conn: sqlite3.Connection, have: set[str], pid: int | None,
            where: str) -> tuple[tuple[MemAgg, ...], list[str]]:
    out: list[MemAgg] = []
    notes: list[str] = []
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in have:
        dur, note = sql_duration(conn, "CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy")
        notes += [note] if note else []
        out += [MemAgg(pid, dev, "memcpy", MEMCPY_DIRECTION.get(kind, "other"), n, tot, nbytes)
                for dev, kind, n, tot, nbytes in conn.execute(
                    f"SELECT deviceId, copyKind, COUNT(*), COALESCE(SUM({dur}), 0), SUM(bytes) "
                    f"FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE {where} GROUP BY 1, 2")]
    if "CUPTI_ACTIVITY_KIND_MEMSET" in have:
        dur, note = sql_duration(conn, "CUPTI_ACTIVITY_KIND_MEMSET", "memset")
        notes += [note] if note else []
        out += [MemAgg(pid, dev, "memset", "", n, tot, nbytes) for dev, n, tot, nbytes in conn.execute(
            f"SELECT deviceId, COUNT(*), COALESCE(SUM({dur}), 0), SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET "
            f"WHERE {where} GROUP BY 1")]
    return merge_memops(out), notes


def _gpu_tables(have: set[str]) -> list[str]:
    return [t for t in (*KERNEL_TABLES, "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET") if t in have]


def _activity(conn: sqlite3.Connection, have: set[str], pid: int | None,
              span: tuple[int, int]) -> tuple[Activity, ...]:
    sources = [(t, "0", "deviceId", "1" if t in KERNEL_TABLES else "0") for t in _gpu_tables(have)]
    return tuple(Activity(pid, dev, a, b, busy) for _, dev, a, b, busy in busy_time(conn, sources, span))


def _no_kernels(path: Path, conn: sqlite3.Connection, have: set[str], copies: int) -> None:
    """Runtime / driver API records of kernel launches but no kernel record: refused, saying so."""
    found = [api_calls(conn, t, cbids) for t, cbids in ((RUNTIME, RUNTIME_LAUNCH_CBIDS), (DRIVER, DRIVER_LAUNCH_CBIDS))
             if t in have and "cbid" in columns(conn, t)]
    refuse_launches(path, sum(c for c, _ in found), sum(n for _, n in found), copies,
                    "a process killed before nvprof finished loses it")


def _devices(conn: sqlite3.Connection, have: set[str]) -> tuple[Gpu, ...]:
    if "CUPTI_ACTIVITY_KIND_DEVICE" not in have:
        return ()
    sql = f"""SELECT d.id, {cut("s.value")}, d.computeCapabilityMajor, d.computeCapabilityMinor, d.numMultiprocessors
             FROM CUPTI_ACTIVITY_KIND_DEVICE d LEFT JOIN StringTable s ON s._id_ = d.name"""
    return tuple(Gpu(*row) for row in conn.execute(sql))


FORMAT = "nvprof"


def sniff(head: Head) -> bool:
    t = head.sqlite_tables
    return "StringTable" in t and bool(t & {"CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "CUPTI_ACTIVITY_KIND_KERNEL"})


def read(path: Path, window: Window | None = None) -> Capture:
    # writes pending beside it (a journal, a WAL): read as SQLite would recover them
    with recover.readable(path), opened(path, "nvprof") as conn:
        have = tables(conn)
        if not any(t in have for t in KERNEL_TABLES) or "StringTable" not in have:
            raise BadInput(path, "nvprof file without kernel tables (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL / _KERNEL)")
        pid = _single_pid(conn, have)
        # NVTX markers of nvprof files are not read: --steps finds no step there and says so.
        span = window_bounds(conn, window, _gpu_tables(have), None) if window else EVERYTHING
        kernels, notes = _kernels(conn, have, pid, in_window(span))
        memops, mem_notes = _memops(conn, have, pid, in_window(span))
        if not kernels and window is None:  # (a window without kernels: readers.read says so)
            _no_kernels(path, conn, have, sum(m.count for m in memops))
        procs = (Process(pid),) if pid is not None else ()
        gpus = _devices(conn, have)
        none = f"{'an empty' if 'CUPTI_ACTIVITY_KIND_DEVICE' in have else 'no'} CUPTI_ACTIVITY_KIND_DEVICE table"
        lost = [] if gpus else [f"{none}: GPU models unknown"]
        return Capture(str(path), "nvprof", kernels, memops, _activity(conn, have, pid, span),
                       gpus, procs, notes=tuple(notes + mem_notes + lost))
