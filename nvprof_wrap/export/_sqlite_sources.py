"""The SQLite captures a trace is made of: Nsight Systems exports, nvprof-wrap's CUPTI tracer's files and nvprof's
.nvvp files. Each
says when its first event was and how its clock maps to Unix time, finds a window's bounds as its reader does, and
streams its rows into the trace (readers/nsys_sqlite.py, readers/cupti_sqlite.py and readers/nvprof_sqlite.py read
the same tables)."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path

from nvprof_wrap.export import _counters
from nvprof_wrap.export._events import Trace, Verdicts
from nvprof_wrap.export._timeline import START_END, Clock, gpu, ranges
from nvprof_wrap.readers import cupti_sqlite, nsys_sqlite, nvprof_sqlite
from nvprof_wrap.system.limits import USABLE
from nvprof_wrap.timeline.sql import EVERYTHING, columns, cut, in_window, tables, window_bounds
from nvprof_wrap.timeline.window import Window

NSYS_GPU = (nsys_sqlite.KERNEL, nsys_sqlite.MEMCPY, nsys_sqlite.MEMSET)
CUPTI_GPU = ("kernel", "memcpy", "memset")
NVPROF_GPU = (*nvprof_sqlite.KERNEL_TABLES, "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def _overlaps(span: tuple[int, int], alias: str = "") -> str:
    """Ranges that overlap [lo, hi) ('true' for the whole capture)."""
    if span == EVERYTHING:
        return "true"
    a = f"{alias}." if alias else ""
    return f'{a}start < {span[1]} AND {a}"end" >= {span[0]}'


def _first(conn: sqlite3.Connection, names: list[str]) -> int | None:
    firsts = [conn.execute(f"SELECT MIN(start) FROM {t} WHERE {USABLE}").fetchone()[0] for t in names]
    return min((f for f in firsts if f is not None), default=None)


class Nsys:
    """An Nsight Systems SQLite export: timestamps in ns from the session's start, which
    TARGET_INFO_SESSION_START_TIME gives in Unix time: exports of one run share that clock."""

    FORMAT = "nsys-sqlite"

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn, self.path, self.have = conn, path, tables(conn)
        self.gpu_tables = [t for t in NSYS_GPU if t in self.have]
        self.first_ns = _first(conn, self.gpu_tables + (["NVTX_EVENTS"] if "NVTX_EVENTS" in self.have else []))
        self.unix_offset = nsys_sqlite.session_span(conn, self.have)[0]

    def span(self, window: Window | None) -> tuple[int, int]:
        return window_bounds(self.conn, window, self.gpu_tables, nsys_sqlite.nvtx_ranges_sql(self.conn, self.have))

    def _col(self, table: str, name: str) -> str:
        return name if name in columns(self.conn, table) else "NULL"

    def emit(self, trace: Trace, verdicts: Verdicts, index: int, clock: Clock, span: tuple[int, int]) -> None:
        conn, have = self.conn, self.have
        # names cut in SQL as the readers cut them (timeline/sql.cut): a huge one never reaches the trace whole
        names = dict(conn.execute(f"SELECT pid, {cut('name')} FROM PROCESSES")) if "PROCESSES" in have else {}

        def pid_of(gp: object) -> int:
            pid = (gp >> 24) & 0xFFFFFF if isinstance(gp, int) else None
            return trace.process(index, pid, f"{names.get(pid) or 'process'} (pid {pid if pid else '?'})")

        parts = []
        for table, kind in zip(NSYS_GPU, range(3)):
            if table not in have:
                continue
            c = partial(self._col, table)
            name = nsys_sqlite.kernel_name_column(conn) if kind == 0 else "NULL"
            parts.append(f'SELECT start, "end", {c("globalPid")}, {c("deviceId")}, {c("streamId")}, {kind}, {name}, '
                         f'{c("correlationId")}, {c("bytes") if kind else "NULL"}, '
                         f'{c("copyKind") if kind == 1 else "NULL"} FROM {table} WHERE {in_window(span)}')
        if parts:
            gpu(trace, verdicts, conn.execute(" UNION ALL ".join(parts) + " ORDER BY 1"), clock, pid_of,
                lambda key: (conn.execute(f"SELECT {cut('value')} FROM StringIds WHERE id = ?", (key,)).fetchone()
                             or [""])[0])
        self._ranges(trace, clock, span, pid_of)
        _counters.gpu_metrics(trace, conn, have, index, clock, span)

    def _ranges(self, trace: Trace, clock: Clock, span: tuple[int, int], pid_of: Callable[[object], int]) -> None:
        conn, have = self.conn, self.have
        if "NVTX_EVENTS" not in have:
            return
        threads = dict(conn.execute(f"SELECT t.globalTid, {cut('s.value')} FROM ThreadNames t JOIN StringIds s "
                                    "ON s.id = t.nameId")) if "ThreadNames" in have else {}
        text, join = (cut("COALESCE(n.text, s.value)"), "LEFT JOIN StringIds s ON s.id = n.textId") \
            if "textId" in columns(conn, "NVTX_EVENTS") else (cut("n.text"), "")
        rows = conn.execute(f"""SELECT n.globalTid, n.start, n."end", {text},
                                       CASE n.eventType WHEN 60 THEN {START_END} ELSE 0 END
                                FROM NVTX_EVENTS n {join} WHERE n.eventType IN (59, 60) AND {_overlaps(span, "n")}
                                ORDER BY 1, 2, 3 DESC""")

        def thread_of(gt: object) -> tuple[int, int]:
            pid = pid_of(gt)
            tid = gt & 0xFFFFFF if isinstance(gt, int) else None
            return pid, trace.thread(pid, tid, threads.get(gt) and f"{threads[gt]} ({tid})")

        ranges(trace, rows, clock, thread_of)


class Cupti:
    """A capture of nvprof-wrap's CUPTI tracer (one process): CUPTI's clock, which its meta maps to Unix time
    (cupti_sqlite.unix_offset): the captures of one run's processes share it."""

    FORMAT = "cupti"

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn, self.path, self.have = conn, path, tables(conn)
        self.meta = cupti_sqlite.read_meta(conn)
        self.gpu_tables = [t for t in CUPTI_GPU if t in self.have]
        self.first_ns = _first(conn, self.gpu_tables + (["nvtx"] if "nvtx" in self.have else []))
        self.unix_offset = cupti_sqlite.unix_offset(self.meta)

    def span(self, window: Window | None) -> tuple[int, int]:
        return window_bounds(self.conn, window, self.gpu_tables, cupti_sqlite.RANGES if "nvtx" in self.have else None)

    def emit(self, trace: Trace, verdicts: Verdicts, index: int, clock: Clock, span: tuple[int, int]) -> None:
        conn, meta = self.conn, self.meta
        rank = f" rank {meta['rank']}" if meta.get("rank") not in (None, "") else ""
        own = cupti_sqlite.int_or_none(meta.get("pid"))
        pid = trace.process(index, own, f"{cupti_sqlite.command_line(meta.get('argv')) or 'process'}{rank} "
                                        f"(pid {own if own is not None else '?'})")
        parts = [f'SELECT start, "end", NULL, device_id, stream_id, {kind}, {cut("name") if kind == 0 else "NULL"}, '
                 f'correlation_id, {"bytes" if kind else "NULL"}, {"copy_kind" if kind == 1 else "NULL"} '
                 f"FROM {table} WHERE {in_window(span)}" for kind, table in enumerate(CUPTI_GPU) if table in self.have]
        if parts:
            gpu(trace, verdicts, conn.execute(" UNION ALL ".join(parts) + " ORDER BY 1"), clock, lambda _: pid, str)
        if "nvtx" in self.have:
            rows = conn.execute(f'SELECT tid, start, "end", {cut("name")}, 0 FROM nvtx WHERE {_overlaps(span)} '
                                "ORDER BY 1, 2, 3 DESC")
            ranges(trace, rows, clock, lambda tid: (pid, trace.thread(pid, tid)))


class Nvprof:
    """An nvprof capture (.nvvp / --export-profile: SQLite): CUPTI activity tables, kernel names in StringTable.
    Its timestamps are CUPTI's, but nvprof records no stamp that maps them to Unix time: each .nvvp starts at its own
    first event. Its NVTX markers (CUPTI_ACTIVITY_KIND_MARKER: start and end records to pair) are not exported."""

    FORMAT = "nvprof"

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn, self.path, self.have = conn, path, tables(conn)
        self.gpu_tables = [t for t in NVPROF_GPU if t in self.have]
        self.first_ns = _first(conn, self.gpu_tables)
        self.unix_offset: int | None = None

    def span(self, window: Window | None) -> tuple[int, int]:
        return window_bounds(self.conn, window, self.gpu_tables, None)

    def emit(self, trace: Trace, verdicts: Verdicts, index: int, clock: Clock, span: tuple[int, int]) -> None:
        conn, have = self.conn, self.have
        pids = [r[0] for r in conn.execute(f"SELECT DISTINCT processId FROM {nvprof_sqlite.RUNTIME} LIMIT 2")] \
            if nvprof_sqlite.RUNTIME in have else []
        own = pids[0] if len(pids) == 1 else None  # the GPU rows name no process: one pid, or none said
        pid = trace.process(index, own, f"nvprof capture {self.path.name} (pid {own if own is not None else '?'})")
        kinds = [0] * len(nvprof_sqlite.KERNEL_TABLES) + [1, 2]
        parts = [f'SELECT start, "end", NULL, deviceId, streamId, {kind}, {"name" if kind == 0 else "NULL"}, '
                 f'correlationId, {"bytes" if kind else "NULL"}, {"copyKind" if kind == 1 else "NULL"} '
                 f"FROM {table} WHERE {in_window(span)}" for kind, table in zip(kinds, NVPROF_GPU) if table in have]
        if parts:
            gpu(trace, verdicts, conn.execute(" UNION ALL ".join(parts) + " ORDER BY 1"), clock, lambda _: pid,
                lambda key: (conn.execute(f"SELECT {cut('value')} FROM StringTable WHERE _id_ = ?", (key,)).fetchone()
                             or [""])[0])
