"""In-process CUPTI activity tracer: streams GPU activity into one SQLite file per Python process.

``start()`` is called by ``inject/sitecustomize.py`` at start-up of every Python process of a traced job.
It subscribes to CUPTI through NVIDIA's ``cupti-python`` (``from cupti import cupti``), enables the
activity kinds we need, and writes each completed CUPTI buffer to
``$NVPROF_WRAP_CUPTI_DIR/cupti-<host>-<pid>.sqlite.partial`` in one committed transaction; the file is
renamed to ``.sqlite`` when the process ends cleanly (atexit, SIGTERM, SIGINT). docs/cupti-tracer.md
describes the schema, which exits flush and the limits (fork, os._exit, SIGKILL, other profilers).

This code runs inside the user's process: it uses the standard library only (plus cupti-python), never
raises into the user's program, and says anything only as single ``nvprof-wrap:`` lines on stderr.
"""
# Broad excepts are the point here: this code runs inside the user's job and must never break it.
# ruff: noqa: BLE001, S110
from __future__ import annotations

import atexit
import json
import operator
import os
import re
import signal
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

ENV_DIR = "NVPROF_WRAP_CUPTI_DIR"
ENV_RUNTIME = "NVPROF_WRAP_CUPTI_RUNTIME"  # "0": no runtime-API records (lower overhead, no per-op table)
FORMAT = "nvprof-wrap-cupti"
FORMAT_VERSION = "1"
BUFFER_BYTES = 8 * 1024 * 1024  # what NVIDIA's samples ask for; CUPTI hands back one list per buffer
BATCH_ROWS = 4096  # rows per executemany: bounds the Python memory used per table while writing a buffer
FORK_LOCK_TIMEOUT_S = 30.0

# CUpti_ActivityFlag bits of MARKER records (cupti_activity.h). cupti-python's ActivityFlag enum has
# MARKER_START and MARKER_INSTANTANEOUS but no MARKER_END, so the C values are used directly.
MARKER_INSTANTANEOUS = 1 << 0
MARKER_START = 1 << 1
MARKER_END = 1 << 2

BUSY_LINE = "CUPTI is already in use by another profiler ({}); this process is not traced"

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
}

_STATE: Tracer | None = None  # the tracer of this process (a fork child gets its own)
_PREV_HANDLERS: dict[int, Any] = {}
_HOOKS_INSTALLED = False
_LEAKED: list[Any] = []  # SQLite connections inherited over fork: kept alive on purpose, never closed


# ----------------------------------------------------------------------------------------- small helpers

def _warn(message: str) -> None:
    """One line on stderr, never an exception (stderr may be closed at exit)."""
    try:
        sys.stderr.write("nvprof-wrap: " + " ".join(str(message).split()) + "\n")
        sys.stderr.flush()
    except Exception:
        pass


def _describe(cupti: Any, exc: BaseException) -> str:
    """'CUPTI_ERROR_X' for a cuptiError, else 'Type: message'."""
    status = getattr(exc, "status", None)
    if status is not None and cupti is not None:
        try:
            return "CUPTI_" + cupti.Result(status).name
        except Exception:
            pass
    return f"{type(exc).__name__}: {exc}"


def _is_busy(cupti: Any, exc: BaseException) -> bool:
    """True for CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: another profiler holds CUPTI."""
    try:
        return getattr(exc, "status", None) == cupti.Result.ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
    except Exception:
        return False


def _quietly(fn: Callable, *args: Any) -> None:
    """Undo a CUPTI setting, ignoring errors (CUPTI may be half set up or gone)."""
    try:
        fn(*args)
    except Exception:
        pass


def _launch_cbids(cupti: Any, enum_name: str, prefix: str) -> list[int]:
    """Callback ids of the calls that launch kernels or graphs (cudaLaunchKernel*, cuLaunchKernelEx,
    cu(da)GraphLaunch, cooperative launches), from cupti-python's enum; [] if it has none."""
    enum = getattr(cupti, enum_name, None)
    if enum is None:
        return []
    pattern = re.compile(rf"^{prefix}(Graph)?Launch(?!HostFunc)")
    return sorted({int(member) for name, member in enum.__members__.items() if pattern.match(name)})


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


def _cupti_version(cupti: Any, *, ask_cupti: bool) -> str:
    """cupti-python's package version, plus CUPTI's API version where the binding has get_version (13.5+).
    ask_cupti=False before we subscribed: NVIDIA wants the subscription to be the first CUPTI call."""
    try:
        from importlib.metadata import version

        text = "cupti-python " + version("cupti-python")
    except Exception:
        text = "cupti-python (version unknown)"
    if ask_cupti and hasattr(cupti, "get_version"):
        try:
            text += f" (CUPTI API {cupti.get_version()})"
        except Exception:
            pass
    return text


def _loaded_libcupti() -> str | None:
    """Path of the libcupti this process has loaded (cupti-python finds it through cuda.pathfinder)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1]
                if "/libcupti.so" in path and os.path.exists(path):
                    return path
    except OSError:
        pass
    return None


def _read_fields(record: Any, fields: tuple[str, ...], getter: Callable[[Any], tuple],
                 missing: set[str]) -> tuple:
    """The record's attributes in column order; a missing attribute becomes NULL and is noted once."""
    try:
        return getter(record)
    except AttributeError:
        row = []
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


# ------------------------------------------------------------------------------------------- NVTX ranges

class NvtxPairer:
    """Turns CUPTI MARKER records into nvtx rows: a START and its END (same marker id) make one range.

    Only ranges still open are kept in memory. An END may come before its START when they land in
    different CUPTI buffers, so unmatched ENDs wait too.
    """

    def __init__(self) -> None:
        self.open: dict[int, tuple] = {}  # id → (start, name, domain, tid)
        self.early_ends: dict[int, int] = {}  # id → end timestamp

    def feed(self, record: Any) -> tuple | None:
        """The nvtx row this record completes, or None (range still open, sync marker, …)."""
        flags = int(getattr(record, "flags_", getattr(record, "flags", 0)) or 0)
        ts, mid = record.timestamp, record.id
        if flags & MARKER_START:
            start = (ts, _text(record.name), _text(getattr(record, "domain", None)), _thread_id(record))
            end = self.early_ends.pop(mid, None)
            if end is None:
                self.open[mid] = start
                return None
            return (start[0], end) + start[1:]
        if flags & MARKER_END:
            start = self.open.pop(mid, None)
            if start is None:
                self.early_ends[mid] = ts
                return None
            return (start[0], ts) + start[1:]
        if flags & MARKER_INSTANTANEOUS:
            return (ts, None, _text(record.name), _text(getattr(record, "domain", None)), _thread_id(record))
        return None  # NVTX sync-object markers: not ranges, not recorded

    def leftovers(self) -> list[tuple]:
        """Ranges never closed (the process ended inside them): written with end NULL."""
        rows = [(s, None, name, dom, tid) for s, name, dom, tid in self.open.values()]
        self.open.clear()
        self.early_ends.clear()
        return rows


def _thread_id(record: Any) -> int | None:
    try:
        return int(record.object_id.pt.thread_id)
    except Exception:
        return None


# ---------------------------------------------------------------------------------------- the SQLite file

class Writer:
    """One SQLite file, written from CUPTI's thread(s) under a lock, one committed transaction per buffer.

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

    def open(self) -> None:
        """Create the .partial file with its schema and meta (idempotent; raises on a bad folder)."""
        with self.lock:
            self._open_locked()

    def _open_locked(self) -> None:
        if self.conn is not None or self.closed:
            return
        os.makedirs(self.out_dir, exist_ok=True)
        self.partial_path, self.final_path = _claim_path(self.out_dir, f"cupti-{_hostname()}-{os.getpid()}")
        conn = sqlite3.connect(self.partial_path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-16384")  # 16 MiB: one buffer's rows fit, no spill mid-transaction
        conn.execute("BEGIN")
        for statement in filter(str.strip, SCHEMA.split(";")):
            conn.execute(statement)
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?,?)", self.meta.items())
        conn.execute("COMMIT")
        self.conn = conn

    def write(self, batches: Iterable[tuple[str, list[tuple]]]) -> bool:
        """Insert (table, rows) batches in one transaction; False when the file is closed or broken."""
        with self.lock:
            self.owner = threading.get_ident()
            try:
                if self.closed or self.broken:
                    return False
                self._open_locked()
                self.conn.execute("BEGIN")
                try:
                    for table, rows in batches:
                        self._insert(table, rows)
                    self.conn.execute("COMMIT")
                except BaseException:
                    try:
                        self.conn.execute("ROLLBACK")
                    except sqlite3.Error:  # a failed COMMIT may have ended the transaction already
                        pass
                    raise
                return True
            except sqlite3.OperationalError:
                self.broken = True  # disk full, folder gone…: stop writing, keep the job running
                raise
            finally:
                self.owner = None

    def _insert(self, table: str, rows: list[tuple]) -> None:
        if not rows:
            return
        self.conn.execute("SAVEPOINT batch")  # executemany stops half-way on a bad value: undo that half
        try:
            self.conn.executemany(INSERT[table], rows)
        except (sqlite3.InterfaceError, sqlite3.ProgrammingError, OverflowError):
            # A value SQLite cannot bind (an object, a uint64 ≥ 2**63): redo this batch with clean values.
            self.conn.execute("ROLLBACK TO batch")
            self.conn.executemany(INSERT[table], [tuple(map(_sql_value, row)) for row in rows])
        self.conn.execute("RELEASE batch")

    def query(self, sql: str) -> list[tuple]:
        with self.lock:
            if self.conn is None or self.closed:
                return []
            return self.conn.execute(sql).fetchall()

    def close(self, meta: dict[str, str]) -> str:
        """Write the final meta, close and rename .partial → .sqlite; returns the final path."""
        with self.lock:
            if self.closed:
                return self.final_path
            self._open_locked()
            self.conn.execute("BEGIN")
            self.conn.executemany("INSERT OR REPLACE INTO meta VALUES (?,?)", meta.items())
            self.conn.execute("COMMIT")
            self.conn.close()
            self.closed = True
            os.rename(self.partial_path, self.final_path)
            return self.final_path

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


def _claim_path(out_dir: str, base: str) -> tuple[str, str]:
    """(partial, final) paths for a new capture; a pid seen before on this host gets a -N suffix."""
    for n in range(10000):
        name = base if n == 0 else f"{base}-{n}"
        final = os.path.join(out_dir, name + ".sqlite")
        partial = final + ".partial"
        if os.path.exists(final):
            continue
        try:
            os.close(os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            continue
        return partial, final
    raise OSError(f"no free capture name for {base} in {out_dir}")


# ----------------------------------------------------------------------------------- the tracer of a process

class Tracer:
    """CUPTI subscription, enabled activity kinds and the capture file of one process."""

    def __init__(self, cupti: Any, out_dir: str, *, fork_child: bool = False,
                 cupti_version: str | None = None) -> None:
        self.cupti, self.out_dir, self.fork_child = cupti, out_dir, fork_child
        self.cupti_version = cupti_version or _cupti_version(cupti, ask_cupti=False)
        self.writer = Writer(out_dir, _process_meta(self.cupti_version, fork_child))
        self.nvtx = NvtxPairer()
        self.kinds: list[Any] = []  # the ActivityKind members we enabled
        self.api_cbids: list[tuple[Callable, int]] = []  # (enable function, cbid) of the launch calls enabled
        self.notes: dict[str, str] = {}  # extra meta rows (kinds, nvtx, flush result…)
        self.missing: set[str] = set()  # record attributes that did not exist (NULL written)
        self.subscriber: Any = None
        self.other_profiler: str | None = None
        self.finalizing = self.finalized = self.fork_lock_held = False
        self.deferred_signals: list[int] = []
        self.record_errors = self.late_records = 0
        self.warned_records = False
        self.clock = "unix"
        self._convert = self._converters()

    # -- set-up ------------------------------------------------------------------------------------------

    def setup(self) -> bool:
        """Subscribe, enable the kinds, register the buffer callbacks. False (after one line) if impossible."""
        try:
            self._subscribe()
            self._enable_kinds()
            self.cupti.activity_register_callbacks(_on_buffer_requested, _on_buffer_completed)
            return True
        except Exception as e:
            self.teardown()
            if _is_busy(self.cupti, e):
                _warn(BUSY_LINE.format(self.other_profiler or _describe(self.cupti, e)))
            else:
                _warn(f"CUPTI could not be started ({_describe(self.cupti, e)}); this process is not traced")
            return False

    def _subscribe(self) -> None:
        """Be CUPTI's subscriber first, as NVIDIA recommends: another holder shows up here, by name."""
        c = self.cupti
        if not (hasattr(c, "subscribe_v2") and hasattr(c, "SubscriberParams")):
            self.subscriber = c.subscribe(_on_cupti_callback, None)
            return
        params = c.SubscriberParams()
        params.struct_size = c.SUBSCRIBER_PARAMS_SIZE
        params.subscriber_name = "nvprof-wrap"
        try:
            self.subscriber = c.subscribe_v2(_on_cupti_callback, None, params.ptr)
        except Exception as e:
            if _is_busy(c, e):
                try:
                    self.other_profiler = _text(params.old_subscriber_name)
                except Exception:
                    pass
                raise
            # Measured on an H200 (libcupti 13.0.85 and 13.4.92, cupti-python 13.4.0): subscribe_v2 answers
            # INVALID_PARAMETER (its params struct is newer than the library); the v1 call works.
            self.notes["subscribe"] = f"subscribe_v2 failed ({_describe(c, e)}); used subscribe"
            self.subscriber = c.subscribe(_on_cupti_callback, None)

    def _enable_kinds(self) -> None:
        k = self.cupti.ActivityKind
        if not self._enable(k.CONCURRENT_KERNEL, required=False):
            self._enable(k.KERNEL, required=True)
            _warn("CUPTI could not trace concurrent kernels; using the KERNEL kind, which serializes kernels")
        for kind in (k.MEMCPY, k.MEMSET, k.DEVICE, k.MARKER):
            self._enable(kind, required=False)
        self._enable_api_records()
        self.notes["kinds"] = json.dumps([kind.name for kind in self.kinds])

    def _enable_api_records(self) -> None:
        """Records of the API calls that launch kernels (runtime and driver), for kernel -> thread -> NVTX.
        Per-cbid enabling (CUPTI 12.6+) keeps it to one record per launch; otherwise every runtime and driver
        call is recorded. meta 'api_records' says which."""
        if os.environ.get(ENV_RUNTIME, "1") == "0":
            self.notes["api_records"] = f"none ({ENV_RUNTIME}=0)"
            return
        c = self.cupti
        picked = [(c.activity_enable_runtime_api, cbid) for cbid in _launch_cbids(c, "RuntimeApiTraceCbid", "cuda")]
        picked += [(c.activity_enable_driver_api, cbid) for cbid in _launch_cbids(c, "DriverApiTraceCbid", "cu")]
        done: list[tuple[Callable, int]] = []
        try:
            if not picked:
                raise AttributeError("this cupti-python has no callback-id enums")
            for enable, cbid in picked:
                enable(cbid, 1)
                done.append((enable, cbid))
            self.api_cbids = done
            self.notes["api_records"] = f"kernel launch calls only ({len(done)} callback ids)"
            return
        except Exception as e:
            if _is_busy(c, e):
                raise
            for enable, cbid in done:
                _quietly(enable, cbid, 0)
            reason = _describe(c, e) if not isinstance(e, AttributeError) else str(e)
        for kind in (c.ActivityKind.RUNTIME, c.ActivityKind.DRIVER):
            self._enable(kind, required=False)
        self.notes["api_records"] = f"every runtime and driver call (per-call enabling failed: {reason})"

    def _enable(self, kind: Any, *, required: bool) -> bool:
        try:
            self.cupti.activity_enable(kind)
        except Exception as e:
            if required or _is_busy(self.cupti, e):
                raise
            self.notes[f"kind_{kind.name.lower()}"] = f"not enabled: {_describe(self.cupti, e)}"
            return False
        self.kinds.append(kind)
        return True

    def enable_nvtx_injection(self) -> None:
        """NVTX reaches CUPTI only through NVTX_INJECTION64_PATH = the libcupti in use (cupti-python docs).
        NVTX reads it at its first call, which comes after this start-up hook; children inherit it."""
        if not any(kind.name == "MARKER" for kind in self.kinds):
            self.notes["nvtx"] = "unavailable: the MARKER kind is not enabled"
            return
        current, lib = os.environ.get("NVTX_INJECTION64_PATH"), _loaded_libcupti()
        if current:
            same = lib is not None and os.path.realpath(current) == os.path.realpath(lib)
            self.notes["nvtx"] = "enabled" if same else f"unavailable: NVTX_INJECTION64_PATH is {current}"
        elif lib is None:
            self.notes["nvtx"] = "unavailable: the loaded libcupti was not found in /proc/self/maps"
        else:
            os.environ["NVTX_INJECTION64_PATH"] = lib
            self.notes["nvtx"] = "enabled"

    def open(self) -> None:
        """Create the .partial file now, so even a process killed early leaves its meta behind."""
        self.cupti_version = self.writer.meta["cupti_version"] = _cupti_version(self.cupti, ask_cupti=True)
        self._stamp_start()
        self.writer.open()

    def _stamp_start(self) -> None:
        started = self._now()
        self.writer.meta.update(self.notes, started_ns=str(started), clock=self.clock)

    def _now(self) -> int:
        """CUPTI's clock (the records' clock) when CUPTI may be called, else Unix time; meta 'clock' says which."""
        if not self.fork_child:
            try:
                now = int(self.cupti.get_timestamp())
                self.clock = "cupti"
                return now
            except Exception:
                pass
        self.clock = "unix"
        return time.time_ns()

    def teardown(self) -> None:
        """Disable our kinds and unsubscribe, ignoring errors (CUPTI may be half set up)."""
        for kind in reversed(self.kinds):
            _quietly(self.cupti.activity_disable, kind)
        for enable, cbid in self.api_cbids:
            _quietly(enable, cbid, 0)
        self.api_cbids = []
        if self.subscriber is not None:
            try:
                self.cupti.unsubscribe(self.subscriber)
            except Exception:
                pass
            self.subscriber = None

    # -- records -----------------------------------------------------------------------------------------

    def _converters(self) -> dict[int, Callable[[Any], tuple[str, tuple] | None]]:
        """ActivityKind value → record-to-(table, row) function (KERNEL and MEMCPY2 share tables)."""
        missing = self.missing

        def kernel(a: Any) -> tuple[str, tuple]:
            row = _read_fields(a, KERNEL_FIELDS, _KERNEL_GET, missing)
            return "kernel", row if isinstance(row[6], str) else row[:6] + (_text(row[6]),) + row[7:]

        def device(a: Any) -> tuple[str, tuple]:
            d = _read_fields(a, DEVICE_FIELDS, _DEVICE_GET, missing)
            return "device", (d[0], _text(d[1]), d[2], d[3], d[4], format_uuid(d[5]))

        def marker(a: Any) -> tuple[str, tuple] | None:
            row = self.nvtx.feed(a)
            return None if row is None else ("nvtx", row)

        table = {("CONCURRENT_KERNEL", "KERNEL"): kernel,
                 ("MEMCPY", "MEMCPY2"): lambda a: ("memcpy", _read_fields(a, MEMCPY_FIELDS, _MEMCPY_GET, missing)),
                 ("MEMSET",): lambda a: ("memset", _read_fields(a, MEMSET_FIELDS, _MEMSET_GET, missing)),
                 ("DEVICE",): device, ("MARKER",): marker,
                 ("RUNTIME",): lambda a: ("runtime", _read_fields(a, RUNTIME_FIELDS, _RUNTIME_GET, missing)),
                 ("DRIVER",): lambda a: ("driver", _read_fields(a, RUNTIME_FIELDS, _RUNTIME_GET, missing))}
        out = {}
        for names, fn in table.items():
            for name in names:
                member = getattr(self.cupti.ActivityKind, name, None)
                if member is not None:
                    out[int(member)] = fn
        return out

    def consume(self, activities: Any) -> None:
        """Write one completed CUPTI buffer; runs on CUPTI's thread (or the flushing one); never raises."""
        try:
            if self.finalized:
                self.late_records += len(activities)  # CUPTI delivered after the file was closed
                return
            self.writer.write(self._batches(activities))
        except sqlite3.OperationalError as e:
            _warn(f"writing the CUPTI capture failed ({e}); tracing stops for this process")
        except Exception as e:
            self._record_error(e)

    def _batches(self, activities: Iterable[Any]) -> Iterable[tuple[str, list[tuple]]]:
        """(table, rows) batches of at most BATCH_ROWS, produced while the writer inserts them."""
        pending: dict[str, list[tuple]] = {}
        for record in activities:
            try:
                fn = self._convert.get(int(record.kind))
                converted = fn(record) if fn is not None else None
            except Exception as e:
                self._record_error(e)
                continue
            if converted is None:
                continue
            table, row = converted
            rows = pending.setdefault(table, [])
            rows.append(row)
            if len(rows) >= BATCH_ROWS:
                pending[table] = []
                yield table, rows
        yield from pending.items()

    def _record_error(self, exc: BaseException) -> None:
        self.record_errors += 1
        if not self.warned_records:
            self.warned_records = True
            _warn(f"skipping CUPTI records that could not be written ({type(exc).__name__}: {exc})")

    # -- flush and finish --------------------------------------------------------------------------------

    def flush(self, *, forced: bool) -> None:
        """Have CUPTI hand over its buffers now (they are committed as they arrive)."""
        if self.fork_child or self.finalized or self.writer.owner == threading.get_ident():
            return  # the last case: a signal landed inside our own write, which must finish first
        try:
            self.cupti.activity_flush_all(1 if forced else 0)
        except Exception as e:
            self._record_error(e)

    def finalize(self, how: str) -> None:
        """Flush CUPTI, write what is pending and rename .partial → .sqlite. Idempotent; never raises."""
        if self.finalized or self.finalizing or self.writer.owner == threading.get_ident():
            return
        self.finalizing = True
        try:
            if self.fork_child:
                self.notes["cupti_flush"] = "skipped: fork child (CUPTI is not fork-safe)"
            else:
                self._drain_cupti()
            self.finalized = True  # from here on, late CUPTI deliveries are only counted
            devices = [] if self.fork_child else _device_rows(_devices_without_facts(self.writer))
            self.writer.write(self._tail(devices))
            self.writer.close(self._final_meta(how))
        except Exception as e:
            _warn(f"could not finish the CUPTI capture ({type(e).__name__}: {e}); it stays .partial")
        finally:
            self.finalized, self.finalizing = True, False

    def _tail(self, devices: list[tuple]) -> Iterable[tuple[str, list[tuple]]]:
        # A generator, so the open NVTX ranges are taken under the writer's lock: a CUPTI thread that
        # was already delivering a buffer may still be pairing markers.
        yield "nvtx", self.nvtx.leftovers()
        yield "device", devices

    def _drain_cupti(self) -> None:
        _synchronize_current_context()
        try:
            self.cupti.activity_flush_all(1)  # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: incomplete buffers too
            self.notes["cupti_flush"] = "ok"
        except Exception as e:
            self.notes["cupti_flush"] = f"failed: {_describe(self.cupti, e)}"
        self.teardown()  # no record may reach Python once the interpreter is gone

    def _final_meta(self, how: str) -> dict[str, str]:
        meta = dict(self.notes)
        meta.update(_ranks())  # mp.spawn-style jobs set RANK in Python, after start-up
        meta.update(status="complete", exit=how)
        if "started_ns" not in self.writer.meta:
            self._stamp_start()
            meta.update(started_ns=self.writer.meta["started_ns"], clock=self.clock)
        meta["ended_ns"] = str(self._now())
        for key, value in (("missing_fields", json.dumps(sorted(self.missing)) if self.missing else None),
                           ("record_errors", self.record_errors), ("late_records", self.late_records)):
            if value:
                meta[key] = str(value)
        return meta

    def forked_child(self) -> Tracer:
        """The tracer of a fork child: its own file (created when first needed), no CUPTI calls at all."""
        child = Tracer(self.cupti, self.out_dir, fork_child=True, cupti_version=self.cupti_version)
        child.kinds = list(self.kinds)
        child.notes = {k: v for k, v in self.notes.items() if k in ("kinds", "nvtx")}
        child._stamp_start()
        return child


# --------------------------------------------------------------------------------------- device facts

def _devices_without_facts(writer: Writer) -> list[int]:
    """Devices that ran work but got no CUPTI DEVICE record."""
    return [r[0] for r in writer.query(
        "SELECT device_id FROM kernel UNION SELECT device_id FROM memcpy UNION SELECT device_id FROM memset "
        "EXCEPT SELECT device_id FROM device") if r[0] is not None]


def _device_rows(device_ids: list[int]) -> list[tuple]:
    rows = []
    for dev in device_ids:
        row = _torch_device(dev) or _driver_device(dev)
        if row is not None:
            rows.append(row)
    return rows


def _torch_device(dev: int) -> tuple | None:
    """From torch, only if the job imported it and initialized CUDA (we never import it ourselves)."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return None
        p = torch.cuda.get_device_properties(dev)
        return (dev, p.name, p.major, p.minor, p.multi_processor_count, format_uuid(getattr(p, "uuid", None)))
    except Exception:
        return None


def _driver_device(dev_id: int) -> tuple | None:
    """From the CUDA driver through cuda-bindings (a dependency of cupti-python); the process used CUDA."""
    try:
        from cuda.bindings import driver as drv

        ok, attr = drv.CUresult.CUDA_SUCCESS, drv.CUdevice_attribute
        err, dev = drv.cuDeviceGet(dev_id)
        if err != ok:
            return None

        def get(which: Any) -> int | None:
            e, value = drv.cuDeviceGetAttribute(which, dev)
            return int(value) if e == ok else None

        err, raw = drv.cuDeviceGetName(256, dev)
        name = raw.split(b"\0", 1)[0].decode("utf-8", "replace") if err == ok and isinstance(raw, bytes) else None
        uuid = None
        try:
            err, u = drv.cuDeviceGetUuid(dev)
            uuid = format_uuid(u) if err == ok else None
        except Exception:
            pass
        return (dev_id, name, get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
                get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), uuid)
    except Exception:
        return None


def _synchronize_current_context() -> None:
    """Wait for this thread's queued GPU work, so the forced flush finds complete records (no-op without CUDA)."""
    try:
        from cuda.bindings import driver as drv

        err, ctx = drv.cuCtxGetCurrent()
        if err == drv.CUresult.CUDA_SUCCESS and ctx is not None and int(ctx) != 0:
            drv.cuCtxSynchronize()
    except Exception:
        pass


# ------------------------------------------------------------------ CUPTI callbacks and process hooks
# Module-level functions, not bound methods: after a fork they must reach the child's tracer.

def _on_buffer_requested() -> tuple[int, int]:
    return BUFFER_BYTES, 0  # (buffer size, max records: 0 = as many as fit)


def _on_buffer_completed(activities: Any) -> None:
    tracer = _STATE
    if tracer is not None:
        tracer.consume(activities)


def _on_cupti_callback(userdata: Any, domain: Any, cbid: Any, cbdata: Any) -> None:
    """Our subscriber enables no callback domain; CUPTI never calls this."""


def _at_exit() -> None:
    tracer = _STATE
    if tracer is None:
        return
    tracer.finalize("exit")
    for signum in tracer.deferred_signals:  # a fatal signal that came while we were finishing
        if not callable(_PREV_HANDLERS.get(signum, signal.SIG_DFL)):
            _die_by(signum)


def _on_signal(signum: int, frame: Any) -> None:
    """Flush (or finish the file, when the signal is about to end the process), then chain."""
    previous = _PREV_HANDLERS.get(signum, signal.SIG_DFL)
    tracer = _STATE
    if tracer is not None:
        if tracer.finalizing:
            tracer.deferred_signals.append(signum)
            return
        if callable(previous):
            tracer.flush(forced=False)  # the process may well go on (KeyboardInterrupt can be caught)
        else:
            tracer.finalize(signal.Signals(signum).name)
    if callable(previous):
        previous(signum, frame)  # default_int_handler raises KeyboardInterrupt here
        return
    _die_by(signum)


def _die_by(signum: int) -> None:
    """End the process by this signal's default action, so the exit status still says 'killed by SIGxxx'."""
    try:
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_kill(threading.get_ident(), signum)
    except Exception:
        pass
    os._exit(128 + signum)


def _install_signal_handlers() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous = signal.getsignal(signum)
            if previous is signal.SIG_IGN or previous is None:
                continue  # ignored on purpose, or set outside Python: leave it alone
            signal.signal(signum, _on_signal)
            _PREV_HANDLERS[signum] = previous
        except (ValueError, OSError):  # not the main thread
            pass


def _before_fork() -> None:
    tracer = _STATE
    if tracer is not None and not tracer.finalized:
        # No thread of ours may be inside SQLite when the process is copied: its mutexes would stay
        # locked in the child.
        tracer.fork_lock_held = tracer.writer.lock.acquire(timeout=FORK_LOCK_TIMEOUT_S)


def _after_fork_parent() -> None:
    tracer = _STATE
    if tracer is not None and tracer.fork_lock_held:
        tracer.fork_lock_held = False
        tracer.writer.lock.release()


def _after_fork_child() -> None:
    global _STATE
    parent = _STATE
    if parent is None:
        return
    parent.writer.leak()
    _STATE = None if parent.finalized else parent.forked_child()


def _install_hooks() -> None:
    """atexit, SIGINT/SIGTERM and fork hooks, once per process (a fork child inherits them)."""
    global _HOOKS_INSTALLED
    if _HOOKS_INSTALLED:
        return
    _HOOKS_INSTALLED = True
    atexit.register(_at_exit)  # registered first, so it runs last: after the job's own atexit work
    _install_signal_handlers()
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent,
                        after_in_child=_after_fork_child)


# --------------------------------------------------------------------------------------------- start()

def start() -> None:
    """Trace this process into $NVPROF_WRAP_CUPTI_DIR when that is set. Idempotent; never raises."""
    global _STATE
    out_dir = os.environ.get(ENV_DIR)
    if not out_dir or _STATE is not None:
        return
    try:
        # Children inherit the variable; one that changes directory must still write to the same folder.
        out_dir = os.environ[ENV_DIR] = os.path.abspath(out_dir)
        _start(out_dir)
    except Exception as e:
        _STATE = None
        _warn(f"CUPTI tracer failed to start ({type(e).__name__}: {e}); this process is not traced")


def _start(out_dir: str) -> None:
    global _STATE
    other = os.environ.get("CUDA_INJECTION64_PATH")
    if other:  # nsys/ncu inject at CUDA start-up, after us: subscribing now would lock them out instead
        _warn(BUSY_LINE.format(f"CUDA_INJECTION64_PATH={other}"))
        return
    cupti = _import_cupti()
    if cupti is None:
        return
    tracer = _STATE = Tracer(cupti, out_dir)  # before setup: a buffer could complete at once
    if not tracer.setup():
        _STATE = None
        return
    tracer.enable_nvtx_injection()
    try:
        tracer.open()
    except Exception as e:
        _STATE = None
        tracer.teardown()
        _warn(f"cannot write the CUPTI capture in {out_dir} ({type(e).__name__}: {e}); "
              "this process is not traced")
        return
    _install_hooks()


def _import_cupti() -> Any | None:
    try:
        from cupti import cupti  # cupti-python: the bindings live in the submodule cupti.cupti

        return cupti
    except Exception as e:
        _warn(f"cupti-python is not usable here ({type(e).__name__}: {e}); this process is not traced")
        return None
