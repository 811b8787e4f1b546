"""The capture file of the CUPTI tracer: schema, record fields, NVTX pairing and the streaming SQLite writer.

Used by cupti_trace.py inside the user's process: standard library only, never raises into the job.
docs/cupti-tracer.md describes the file.
"""
# ruff: noqa: BLE001, S110
from __future__ import annotations

import json
import operator
import os
import re
import socket
import sqlite3
import stat
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

from nvprof_wrap.tracer.items import Column, Item, MarkerValues, NvtxRow, OpenRange, Row

FORMAT = "nvprof-wrap-cupti"
FORMAT_VERSION = "1"
_LEAKED: list[Any] = []  # SQLite connections inherited over fork: kept alive on purpose, never closed

# CUpti_ActivityFlag bits of MARKER records (cupti_activity.h). cupti-python's ActivityFlag enum has
# MARKER_START and MARKER_INSTANTANEOUS but no MARKER_END, so the C values are used directly.
MARKER_INSTANTANEOUS = 1 << 0
MARKER_START = 1 << 1
MARKER_END = 1 << 2

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE kernel(start INTEGER, end INTEGER, device_id INTEGER, context_id INTEGER, stream_id INTEGER,
  correlation_id INTEGER, name TEXT, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER,
  block_y INTEGER, block_z INTEGER, registers_per_thread INTEGER, static_shared INTEGER, dynamic_shared INTEGER);
CREATE TABLE memcpy(start INTEGER, end INTEGER, device_id INTEGER, stream_id INTEGER, correlation_id INTEGER,
  bytes INTEGER, copy_kind INTEGER, src_kind INTEGER, dst_kind INTEGER);
CREATE TABLE memset(start INTEGER, end INTEGER, device_id INTEGER, stream_id INTEGER, correlation_id INTEGER,
  bytes INTEGER, value INTEGER);
CREATE TABLE nvtx(start INTEGER, end INTEGER, name TEXT, domain TEXT, tid INTEGER);
CREATE TABLE runtime(start INTEGER, end INTEGER, correlation_id INTEGER, tid INTEGER, cbid INTEGER);
CREATE TABLE driver(start INTEGER, end INTEGER, correlation_id INTEGER, tid INTEGER, cbid INTEGER);
CREATE TABLE device(device_id INTEGER PRIMARY KEY, name TEXT, cc_major INTEGER, cc_minor INTEGER,
  sm_count INTEGER, uuid TEXT);
"""
# cupti-python attribute names (cupti/cupti.pyi: ActivityKernel*, ActivityMemcpy*, ActivityMemset*,
# ActivityDevice*) in the column order of each table.
KERNEL_FIELDS = ("start", "end", "device_id", "context_id", "stream_id", "correlation_id", "name",
                 "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread",
                 "static_shared_memory", "dynamic_shared_memory")
MEMCPY_FIELDS = ("start", "end", "device_id", "stream_id", "correlation_id", "bytes", "copy_kind",
                 "src_kind", "dst_kind")
MEMSET_FIELDS = ("start", "end", "device_id", "stream_id", "correlation_id", "bytes", "value")
# CUDA runtime and driver API calls (ActivityAPI): the launching thread and CPU time of each kernel, by
# correlation id, so that kernels can be attributed to the NVTX ranges open on that thread. Only the launch
# calls are asked for (see Tracer._enable_api_records): measured on an H200 (torch 2.11, CUDA 13), the
# RUNTIME kind alone gives 10 records per kernel and still misses every cuBLAS GEMM, which cuBLAS launches
# through the driver (cuLaunchKernelEx); launch calls only give one record per kernel and miss none.
RUNTIME_FIELDS = ("start", "end", "correlation_id", "thread_id", "cbid")
DEVICE_FIELDS = ("id", "name", "compute_capability_major", "compute_capability_minor",
                 "num_multiprocessors", "uuid")

INSERT = {
    "kernel": "INSERT INTO kernel VALUES (" + ",".join("?" * len(KERNEL_FIELDS)) + ")",
    "memcpy": "INSERT INTO memcpy VALUES (" + ",".join("?" * len(MEMCPY_FIELDS)) + ")",
    "memset": "INSERT INTO memset VALUES (" + ",".join("?" * len(MEMSET_FIELDS)) + ")",
    "nvtx": "INSERT INTO nvtx VALUES (?,?,?,?,?)",
    "runtime": "INSERT INTO runtime VALUES (?,?,?,?,?)",
    "driver": "INSERT INTO driver VALUES (?,?,?,?,?)",
    "device": "INSERT OR REPLACE INTO device VALUES (?,?,?,?,?,?)",
    "meta": "INSERT OR REPLACE INTO meta VALUES (?,?)",
}
BATCH_ROWS = 4096  # rows per executemany: bounds the Python memory used while writing a buffer
_INT64_MAX = (1 << 63) - 1

def _text(value: Any) -> str | None:
    """CUPTI strings: NULL/empty → None; bytes are decoded (names stay mangled, as CUPTI gives them)."""
    if value is None or value == "" or value == b"":
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)

def format_uuid(value: Any) -> str | None:
    """A CUuuid (``.bytes``), bytes or str → 'GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx' as nvidia-smi prints."""
    if value is None:
        return None
    raw = getattr(value, "bytes", value)
    if isinstance(raw, (bytes, bytearray)) and len(raw) >= 16:
        h = bytes(raw[:16]).hex()
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    text = str(raw)
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"

def _hostname() -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()) or "unknown-host"

def _rank_env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value not in (None, ""):
            return value
    return None

def _process_meta(cupti_version: str, fork_child: bool) -> dict[str, str]:
    """The meta rows known when the file is created (status stays 'partial' until finalize)."""
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "pid": str(os.getpid()),
            "ppid": str(os.getppid()), "hostname": socket.gethostname(),
            "argv": json.dumps(list(getattr(sys, "orig_argv", None) or sys.argv)),
            "cupti_version": cupti_version, "status": "partial"}
    meta.update(_ranks())
    if fork_child:
        meta["fork_child"] = "1"
    return meta

def _ranks() -> dict[str, str]:
    """rank/local_rank from the launcher's environment (torchrun, Slurm, Open MPI, MPICH), when set."""
    out = {}
    rank = _rank_env("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")
    local = _rank_env("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")
    if rank is not None:
        out["rank"] = rank
    if local is not None:
        out["local_rank"] = local
    return out

def _read_fields(record: Any, fields: tuple[str, ...], getter: Callable[[Any], Row],
                 missing: set[str]) -> Row:
    """The record's attributes in column order; a missing attribute becomes NULL and is noted once."""
    try:
        return getter(record)
    except AttributeError:
        row: list[Any] = []
        for name in fields:
            value = getattr(record, name, _MISSING)
            if value is _MISSING:
                missing.add(name)
                value = None
            row.append(value)
        return tuple(row)

def _sql_value(value: Any) -> Any:
    """A value SQLite can store: ints outside int64 (e.g. CUPTI_TIMESTAMP_UNKNOWN = 2**64-1) become NULL."""
    if value is None or isinstance(value, (str, float, bytes)):
        return value
    if isinstance(value, int):
        return int(value) if -(1 << 63) <= value < (1 << 63) else None
    return str(value)

_MISSING = object()
_KERNEL_GET = operator.attrgetter(*KERNEL_FIELDS)
_RUNTIME_GET = operator.attrgetter(*RUNTIME_FIELDS)
_MEMCPY_GET = operator.attrgetter(*MEMCPY_FIELDS)
_MEMSET_GET = operator.attrgetter(*MEMSET_FIELDS)
_DEVICE_GET = operator.attrgetter(*DEVICE_FIELDS)

class NvtxPairer:
    """Turns CUPTI MARKER records into nvtx rows: a START and its END (same marker id) make one range.

    Only ranges still open are kept in memory. An END may come before its START when they land in
    different CUPTI buffers, so unmatched ENDs wait too.
    """

    def __init__(self) -> None:
        self.open: dict[int, OpenRange] = {}  # id → (start, name, domain, tid)
        self.early_ends: dict[int, int] = {}  # id → end timestamp

    def feed(self, record: Any) -> NvtxRow | None:
        """The nvtx row this record (a cupti-python object) completes, or None (range still open, …)."""
        return self.feed_values(*marker_values(record))

    def feed_values(self, flags: int, mid: int, ts: int, name: str | None, domain: str | None,
                    tid: int | None) -> NvtxRow | None:
        """The nvtx row this marker completes, or None (range still open, sync marker, …)."""
        if flags & MARKER_START:
            end = self.early_ends.pop(mid, None)
            if end is None:
                self.open[mid] = (ts, name, domain, tid)
                return None
            return (ts, end, name, domain, tid)
        if flags & MARKER_END:
            opened = self.open.pop(mid, None)
            if opened is None:
                self.early_ends[mid] = ts
                return None
            return (opened[0], ts) + opened[1:]
        if flags & MARKER_INSTANTANEOUS:
            return (ts, None, name, domain, tid)
        return None  # NVTX sync-object markers: not ranges, not recorded

    def leftovers(self) -> list[NvtxRow]:
        """Ranges never closed (the process ended inside them): written with end NULL."""
        rows: list[NvtxRow] = [(s, None, name, dom, tid) for s, name, dom, tid in self.open.values()]
        self.open.clear()
        self.early_ends.clear()
        return rows

def marker_values(record: Any) -> MarkerValues:
    """(flags, id, timestamp, name, domain, tid) of a cupti-python marker object."""
    flags = int(getattr(record, "flags_", getattr(record, "flags", 0)) or 0)
    return (flags, record.id, record.timestamp, _text(getattr(record, "name", None)),
            _text(getattr(record, "domain", None)), _thread_id(record))


def _thread_id(record: Any) -> int | None:
    try:
        return int(record.object_id.pt.thread_id)
    except Exception:
        return None

class Writer:
    """One SQLite file, written under a lock, one committed transaction per CUPTI buffer.

    What it writes comes as *items*: ("rows", table, rows), ("cols", table, columns) with numpy columns in the
    table's column order (kernel names as ids), ("strings", [(id, text)]) the names those ids stand for,
    ("markers", columns) raw NVTX markers and ("marker_rows", rows) cupti-python's, both paired into nvtx rows
    here. The same writer runs in the traced process or in the writer process (sink.py).

    Rollback journal, not WAL: the reader opens captures with immutable=1, which ignores a WAL file, so
    committed rows must be in the main file. A SIGKILL between buffers leaves a readable .partial file.
    """

    def __init__(self, out_dir: str, meta: dict[str, str]) -> None:
        self.out_dir, self.meta = out_dir, meta
        self.lock = threading.Lock()
        self.owner: int | None = None  # thread holding the lock: a signal handler must not re-enter
        self.conn: sqlite3.Connection | None = None
        self.partial_path = self.final_path = ""
        self.closed = self.broken = False
        self.nvtx = NvtxPairer()
        self.strings: dict[int, str] = {}

    def open(self) -> None:
        """Create the .partial file with its schema and meta (idempotent; raises on a bad folder)."""
        with self.lock:
            self._open_locked()

    def _open_locked(self) -> None:
        if self.conn is not None or self.closed:
            return
        if not self.partial_path:
            os.makedirs(self.out_dir, exist_ok=True)
            self.partial_path, self.final_path = _claim_path(self.out_dir, f"cupti-{_hostname()}-{os.getpid()}")
            conn = self._connect()
            conn.execute("BEGIN")
            for statement in filter(str.strip, SCHEMA.split(";")):
                conn.execute(statement)
            conn.executemany("INSERT OR REPLACE INTO meta VALUES (?,?)", self.meta.items())
            conn.execute("COMMIT")
        else:  # a file created before (by this writer, or by the traced process before a hand-over)
            conn = self._connect()
        self.conn = conn

    def _connect(self) -> sqlite3.Connection:
        # nofollow: SQLite refuses the file, or its -journal, when it is a link planted in the run folder
        uri = f"file:{urllib.parse.quote(os.path.abspath(self.partial_path))}?nofollow=1"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-16384")  # 16 MiB: one buffer's rows fit, no spill mid-transaction
        return conn

    def adopt(self, partial_path: str, final_path: str) -> None:
        """Write to a .partial file another writer created and let go of (the hand-over to sink.py)."""
        self.partial_path, self.final_path = partial_path, final_path

    def write(self, items: Iterable[Item]) -> bool:
        """Write items in one transaction; False when the file is closed or broken."""
        with self.lock:
            self.owner = threading.get_ident()
            try:
                if self.closed or self.broken:
                    return False
                self._open_locked()
                self._transaction(items)
                return True
            except sqlite3.OperationalError:
                self.broken = True  # disk full, folder gone…: stop writing, keep the job running
                raise
            finally:
                self.owner = None

    def _transaction(self, items: Iterable[Item]) -> None:
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            for item in items:
                self._item(conn, item)
            conn.execute("COMMIT")
        except BaseException:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:  # a failed COMMIT may have ended the transaction already
                pass
            raise

    def _conn(self) -> sqlite3.Connection:
        """The open connection; callers opened it under the lock (_open_locked), so None here is a bug."""
        if self.conn is None:
            raise RuntimeError("the capture file is not open")
        return self.conn

    def _item(self, conn: sqlite3.Connection, item: Item) -> None:
        if item[0] == "rows":
            self._insert(conn, item[1], item[2])
        elif item[0] == "cols":
            for rows in _column_rows(item[2], self.strings if item[1] == "kernel" else None):
                self._insert(conn, item[1], rows)
        elif item[0] == "strings":
            self.strings.update(item[1])
        elif item[0] == "markers":
            for rows in _column_rows(item[1], None):
                s = self.strings.get
                self._insert(conn, "nvtx", [r for f, ts, mid, name, dom, tid in rows if (r := self.nvtx.feed_values(
                    f, mid, ts, s(name), s(dom), None if tid < 0 else tid)) is not None])
        elif item[0] == "nvtx_state":  # the open ranges, handed over with the file (sink.py)
            self.nvtx.open.update(item[1])
            self.nvtx.early_ends.update(item[2])
        elif item[0] == "marker_rows":
            self._insert(conn, "nvtx",
                         [r for values in item[1] if (r := self.nvtx.feed_values(*values)) is not None])

    @staticmethod
    def _insert(conn: sqlite3.Connection, table: str, rows: list[Row]) -> None:
        if not rows:
            return
        conn.execute("SAVEPOINT batch")  # executemany stops half-way on a bad value: undo that half
        try:
            conn.executemany(INSERT[table], rows)
        except (sqlite3.InterfaceError, sqlite3.ProgrammingError, OverflowError):
            # A value SQLite cannot bind (an object, a uint64 ≥ 2**63): redo this batch with clean values.
            conn.execute("ROLLBACK TO batch")
            conn.executemany(INSERT[table], [tuple(map(_sql_value, row)) for row in rows])
        conn.execute("RELEASE batch")

    def close(self, meta: dict[str, str], tail: Iterable[Item] = ()) -> str:
        """Write the tail items, the NVTX ranges still open (end NULL) and the final meta, close and rename
        .partial → .sqlite; returns the final path."""
        with self.lock:
            if self.closed:
                return self.final_path
            self._open_locked()
            self._transaction([*tail, ("rows", "nvtx", self.nvtx.leftovers()),
                               ("rows", "meta", list(meta.items()))])
            self._conn().close()
            self.closed = True
            if not _replaceable(self.final_path):
                return self.partial_path  # never renamed over a link, FIFO or device: the capture stays .partial
            os.rename(self.partial_path, self.final_path)
            return self.final_path

    def release(self) -> None:
        """Close the connection, keeping the file .partial, for another writer to adopt."""
        with self.lock:
            if self.conn is not None:
                self.conn.close()
                self.conn = None

    def leak(self) -> None:
        """In a fork child: drop this (parent's) connection without closing it. Closing an inherited
        SQLite connection could roll back or delete the parent's journal, so it is kept alive forever."""
        if self.conn is not None:
            _LEAKED.append(self.conn)
            try:
                import ctypes

                ctypes.pythonapi.Py_IncRef(ctypes.py_object(self.conn))  # survives interpreter teardown too
            except Exception:
                pass
        self.conn, self.closed = None, True

def _column_rows(columns: list[Column], names: dict[int, str] | None) -> Iterable[list[Row]]:
    """Rows of numpy columns, BATCH_ROWS at a time. names: the kernel table's name column (the 7th) holds
    string ids. Unsigned 64-bit values above int64 (CUPTI_TIMESTAMP_UNKNOWN) become NULL."""
    n = len(columns[0]) if columns else 0
    for lo in range(0, n, BATCH_ROWS):
        lists: list[list[Any]] = []
        for col in columns:
            part = col[lo:lo + BATCH_ROWS]
            values = part.tolist()
            if part.dtype.kind == "u" and part.dtype.itemsize == 8 and len(part) and part.max() > _INT64_MAX:
                values = [v if v <= _INT64_MAX else None for v in values]
            lists.append(values)
        if names is not None:
            lists[6] = [names.get(i) for i in lists[6]]
        yield list(zip(*lists))


def _replaceable(path: str) -> bool:
    """Absent or a regular file (lstat); the tracer runs in the user's process, so it says no rather than raise."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _claim_path(out_dir: str, base: str) -> tuple[str, str]:
    """(partial, final) paths for a new capture; a pid seen before on this host gets a -N suffix."""
    for n in range(10000):
        name = base if n == 0 else f"{base}-{n}"
        final = os.path.join(out_dir, name + ".sqlite")
        partial = final + ".partial"
        if os.path.lexists(final):  # a dangling link counts: it is never written through
            continue
        try:
            os.close(os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o644))
        except FileExistsError:
            continue
        return partial, final
    raise OSError(f"no free capture name for {base} in {out_dir}")
