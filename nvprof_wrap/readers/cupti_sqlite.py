"""Captures written by nvprof-wrap's own CUPTI tracer (one SQLite file per process; docs/cupti-tracer.md)."""
from __future__ import annotations

import functools
import sqlite3
from pathlib import Path
from typing import Any

from nvprof_wrap.classify.engine import classify_meanwhile
from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import (
    Activity,
    Capture,
    Gpu,
    KernelAgg,
    MemAgg,
    OpAgg,
    Process,
    StepSeries,
    merge_kernels,
    merge_memops,
)
from nvprof_wrap.readers import _nvtx_flops
from nvprof_wrap.readers._durations import on, sql_duration
from nvprof_wrap.readers._head import Head
from nvprof_wrap.readers._no_kernels import DRIVER_LAUNCH_CBIDS, RUNTIME_LAUNCH_CBIDS, api_calls, refuse_launches
from nvprof_wrap.system import bounded
from nvprof_wrap.system.fork import BIG
from nvprof_wrap.text import cuda_calls
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline import hw_sources, recover
from nvprof_wrap.timeline import series as step_series
from nvprof_wrap.timeline.busy import BusyTime
from nvprof_wrap.timeline.nvtx import attribute, borrowed_note
from nvprof_wrap.timeline.series_tables import MEMSET_PART, copy_part_sql
from nvprof_wrap.timeline.sql import (
    EVERYTHING,
    MEMCPY_DIRECTION,
    cut,
    in_window,
    opened,
    reopened,
    tables,
    window_bounds,
)
from nvprof_wrap.timeline.window import Window


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {k: v for k, v in conn.execute("SELECT key, value FROM meta")}


def int_or_none(v: str | None) -> int | None:
    try:
        return int(v) if v not in (None, "") else None
    except ValueError:
        return None


def command_line(argv_json: str | None) -> str | None:
    """'["/opt/venv/bin/python", "-u", "train.py", ...]' → 'python -u train.py ...'."""
    try:
        argv = bounded.loads(argv_json or "null")
    except ValueError:
        return argv_json
    if not isinstance(argv, list) or not argv:
        return None
    return " ".join([Path(str(argv[0])).name, *map(str, argv[1:])])


NAME = cut("name")  # a kernel's or device's name, as read: cut in SQL (timeline/sql.cut)


def _kernels(conn: sqlite3.Connection, pid: int | None, dur: str, where: str) -> tuple[KernelAgg, ...]:
    sql = f"""SELECT device_id, {NAME}, COUNT(*), SUM({dur}), MIN({dur}), MAX({dur})
             FROM kernel WHERE {where} GROUP BY 1, 2"""
    return merge_kernels(KernelAgg(pid, dev, demangle(name or "<unnamed kernel>"), n, tot, mn, mx)
                         for dev, name, n, tot, mn, mx in conn.execute(sql))


def _memops(conn: sqlite3.Connection, pid: int | None, where: str) -> tuple[tuple[MemAgg, ...], tuple[str, ...]]:
    (cdur, cnote), (sdur, snote) = sql_duration(conn, "memcpy", "memcpy"), sql_duration(conn, "memset", "memset")
    out = [MemAgg(pid, dev, "memcpy", MEMCPY_DIRECTION.get(kind, "other"), n, tot, nbytes)
           for dev, kind, n, tot, nbytes in conn.execute(
               f"SELECT device_id, copy_kind, COUNT(*), COALESCE(SUM({cdur}), 0), SUM(bytes) FROM memcpy "
               f"WHERE {where} GROUP BY 1, 2")]
    out += [MemAgg(pid, dev, "memset", "", n, tot, nbytes) for dev, n, tot, nbytes in conn.execute(
        f"SELECT device_id, COUNT(*), COALESCE(SUM({sdur}), 0), SUM(bytes) FROM memset WHERE {where} GROUP BY 1")]
    return merge_memops(out), tuple(n for n in (cnote, snote) if n)


FORMAT = "cupti"


def sniff(head: Head) -> bool:
    return {"meta", "kernel"} <= head.sqlite_tables


def read(path: Path, window: Window | None = None) -> Capture:
    # A process killed mid-commit leaves '<file>-journal' beside the .partial file: read as rolled back.
    with recover.readable(path):
        return _read(path, window)


def _ops(conn: sqlite3.Connection, have: set[str], pid: int | None, split_over: Path | None,
         dur: str, where: str, lent: dict[str, int]) -> tuple[OpAgg, ...]:
    """Kernels → their launch call (thread, CPU time) by correlation id → the NVTX ranges of that thread.
    Launch calls are runtime (cudaLaunchKernel…) or driver (cuLaunchKernelEx…: cuBLAS) API records."""
    api = [t for t in ("runtime", "driver") if t in have and conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()]
    if not api or "nvtx" not in have:
        return ()  # no API records (older tracer, or NVPROF_WRAP_CUPTI_RUNTIME=0), or no NVTX table
    calls = " UNION ALL ".join(f"SELECT correlation_id, tid, start FROM {t}" for t in api)
    ranges = RANGES
    launches = f"""SELECT {pid if pid is not None else 'NULL'} AS pid, k.device_id AS dev, r.tid AS tid,
                          r.start AS t, {cut("k.name")} AS key, {on(dur, "k")} AS dur
                   FROM kernel k LEFT JOIN ({calls}) r ON r.correlation_id = k.correlation_id {{rslice}}
                   WHERE {where} {{slice}}"""
    # split_over: a big capture's path, reopened by each attribution slice running side by side
    reopen = None if split_over is None else functools.partial(reopened, split_over)
    rows = attribute(conn, ranges, launches, borrowed=lent, reopen=reopen,
                     kernel_table="kernel" if split_over is not None else None, correlation="correlation_id")
    return tuple(OpAgg(p, scope, op, demangle(key or "<unnamed kernel>"), n, tot)
                 for p, _dev, scope, op, key, n, tot in rows)


RANGES = f'SELECT tid, start AS s, "end" AS e, {cut("name")} AS name FROM nvtx'

# meta 'api_records' (tracer/setup.py) → which CUDA calls the capture holds (timeline/series.py's host)
_HOST = (("kernel launch calls, copies, waits and allocations", "launch, sync, alloc"),
         ("every runtime and driver call", "all"), ("kernel launch calls only", "launch"), ("none", "none"))
_KINDS = {"runtime": (RUNTIME_LAUNCH_CBIDS, cuda_calls.RUNTIME_HOST_CBIDS),
          "driver": (DRIVER_LAUNCH_CBIDS, cuda_calls.DRIVER_HOST_CBIDS)}


def _steps(conn: sqlite3.Connection, have: set[str], pid: int | None, meta: dict[str, str], launches: int,
           span: tuple[int, int], meanwhile: step_series.Meanwhile = None) -> tuple[StepSeries | None, tuple[str, ...]]:
    """(the per-step series, notes): timeline/series.py over the kernel, copy and set tables and the API calls."""
    if not launches:
        return None, ()
    if why := step_series.too_big(launches):
        return None, (why,)
    records = meta.get("api_records") or ""
    host = next((h for prefix, h in _HOST if records.startswith(prefix)), "launch" if records else "none")
    p = "NULL" if pid is None else str(int(pid))
    gpu = [step_series.GpuTable("kernel", p, NAME),
           step_series.GpuTable("memcpy", p, part=copy_part_sql("copy_kind", MEMCPY_DIRECTION)),
           step_series.GpuTable("memset", p, part=MEMSET_PART)]
    api = [step_series.ApiTable(t, p, "cbid", functools.partial(_call_kinds, t)) for t in ("runtime", "driver")
           if t in have]
    series = step_series.measure(conn, gpu, api, RANGES if "nvtx" in have else None, host if api else "none",
                             lambda keys: {k: demangle(k) for k in keys if isinstance(k, str)}, span, launches,
                             meanwhile=meanwhile)
    return series, ()


def _steps_alone(path: Path, have: set[str], pid: int | None, meta: dict[str, str], span: tuple[int, int],
                 launches: int) -> tuple[StepSeries | None, tuple[str, ...]]:
    """_steps on a connection of its own (step_series.Ahead's forked worker)."""
    with opened(path, "nvprof-wrap's CUPTI tracer") as conn:
        return _steps(conn, have, pid, meta, launches, span)


def _call_kinds(table: str, _conn: sqlite3.Connection, keys: list[Any]) -> dict[Any, str]:
    """The text/cuda_calls kind of each callback id (a capture's SQL values) of the runtime or driver table."""
    launches, host = _KINDS[table]
    return {k: "launch" if k in launches else host[k][1] if k in host else "other" for k in keys}


def unix_offset(meta: dict[str, str]) -> int | None:
    """Unix time minus the capture's clock: the tracer stamps its start in both (meta started_ns and
    started_unix_ns). An older capture has only started_ns: CUPTI's clock is Unix time on Linux (measured on the
    H200: the first kernel 0.75 s before the job's own first time.time_ns() stamp, as its warm-up ran), so 0."""
    started, unix = int_or_none(meta.get("started_ns")), int_or_none(meta.get("started_unix_ns"))
    if started is None:
        return None
    return unix - started if unix is not None else 0


def _read(path: Path, window: Window | None) -> Capture:
    with opened(path, "nvprof-wrap's CUPTI tracer") as conn:
        have = tables(conn)
        missing = {"meta", "kernel", "memcpy", "memset", "device"} - have
        if missing:
            raise BadInput(path, f"nvprof-wrap CUPTI capture without table(s) {', '.join(sorted(missing))}")
        meta = read_meta(conn)
        pid = int_or_none(meta.get("pid"))
        # Busy time side by side with the rest (forked workers for a big capture, like the nsys reader).
        span = window_bounds(conn, window, ["kernel", "memcpy", "memset"], RANGES if "nvtx" in have else None) \
            if window else EVERYTHING
        # the series in a forked worker where the capture is worth it (timeline/series.Ahead), this process
        # classifying the kernel names meanwhile
        ahead = step_series.Ahead(path, lambda: int(conn.execute("SELECT COUNT(*) FROM kernel").fetchone()[0]),
                                  functools.partial(_steps_alone, path, have, pid, meta, span),
                                  lambda n, meanwhile: _steps(conn, have, pid, meta, n, span, meanwhile),
                                  from_launches=step_series.AHEAD_LAUNCHES)
        try:
            busy_time = BusyTime(conn, path, [(t, "0", "device_id", "1" if t == "kernel" else "0")
                                                for t in ("kernel", "memcpy", "memset")], span)
            try:
                dur, kernel_note = sql_duration(conn, "kernel", "kernel")
                kernels = _kernels(conn, pid, dur, in_window(span))
                memops, mem_notes = _memops(conn, pid, in_window(span))
                big = path.stat().st_size >= BIG
                lent: dict[str, int] = {}  # attribute's launches lent to the main thread (borrowed_note)
                ops = _ops(conn, have, pid, path if big else None, dur, in_window(span, "k"), lent)
                flops = _nvtx_flops.cupti(conn, have, RANGES, pid, on(dur, "k"), span)  # --annotate torch's shapes
            except BaseException:
                busy_time.abandon()
                raise
            activity = tuple(Activity(pid, dev, a, b, busy) for _, dev, a, b, busy in busy_time.result())
            if not kernels and window is None:  # (a window without kernels: readers.read says so)
                found = [api_calls(conn, t, cbids) for t, cbids in (("runtime", RUNTIME_LAUNCH_CBIDS),
                                                                    ("driver", DRIVER_LAUNCH_CBIDS)) if t in have]
                refuse_launches(path, sum(c for c, _ in found), sum(n for _, n in found),
                                sum(m.count for m in memops),
                                "a process that ended before the tracer flushed its buffers loses them")
            devices = tuple(Gpu(*r) for r in conn.execute(
                f"SELECT device_id, {NAME}, cc_major, cc_minor, sm_count FROM device"))
            hw_dev, hw_k, hw_s, hw_notes = hw_sources.of(
                conn, have, path, "kernel", "device_id", NAME, unix_offset(meta), None if window is None else span,
                lambda keys: {k: demangle(k) for k in keys if isinstance(k, str)})
        except BaseException:
            ahead.abandon()
            raise
        procs = (Process(pid, command_line(meta.get("argv")), int_or_none(meta.get("rank")), meta.get("hostname")),) \
            if pid is not None else ()
        partial = meta.get("status") != "complete" or str(path).endswith(".partial")
        notes = (("partial capture: the process ended before the tracer could finish it",) if partial else ()) + \
            ((kernel_note,) if kernel_note else ()) + mem_notes + \
            borrowed_note(lent, sum(k.total_ns or 0 for k in kernels))
        series, series_notes = ahead.result(sum(k.launches for k in kernels),
                                            meanwhile=lambda: classify_meanwhile(k.name for k in kernels))
        return Capture(str(path), "cupti", kernels, memops, activity, devices, procs, series=series,
                       ops=ops, notes=notes + hw_notes + series_notes, partial=partial,
                       started_ns=int_or_none(meta.get("started_ns")),
                       ended_ns=int_or_none(meta.get("ended_ns")), command=command_line(meta.get("argv")),
                       ppid=int_or_none(meta.get("ppid")), hw_devices=hw_dev, hw_kernels=hw_k, hw_series=hw_s,
                       op_flops=flops)
