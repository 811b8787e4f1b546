"""In-process CUPTI activity tracer: streams GPU activity into one SQLite file per Python process.

``start()`` is called by ``inject/sitecustomize.py`` at start-up of every Python process of a traced job.
It subscribes to CUPTI through NVIDIA's ``cupti-python`` (``from cupti import cupti``), enables the
activity kinds we need and takes CUPTI's activity buffers: raw, through libcupti's own buffer callbacks
registered with ctypes and read in bulk (raw.py), or, where that is not possible, as cupti-python's record
objects (objects.py). Each completed buffer is one committed transaction in
``$NVPROF_WRAP_CUPTI_DIR/cupti-<host>-<pid>.sqlite.partial``, written in this process or, once the process
is busy, by a writer process (sink.py); the file is renamed to ``.sqlite`` when the process ends cleanly
(atexit, SIGTERM, SIGINT). docs/cupti-tracer.md describes the schema, which exits flush and the limits.
This module is CUPTI set-up and the callbacks; hooks.py the process hooks (installed by the callers of
``start()``); capture_file.py is the file format and its writer.

This code runs inside the user's process: it uses the standard library, numpy and libcupti (through ccupti.py, or
cupti-python) only, never raises into the user's program, and says anything only as single ``nvprof-wrap:`` lines
on stderr.
"""
# Broad excepts are the point here: this code runs inside the user's job and must never break it.
# ruff: noqa: BLE001, S110
from __future__ import annotations

import ctypes
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from nvprof_wrap.tracer import ccupti, host_calls, layouts
from nvprof_wrap.tracer._util import (
    _cupti_version,
    _describe,
    _is_busy,
    _launch_cbids,
    _loaded_libcupti,
    _quietly,
    no_gpu_reason,
)
from nvprof_wrap.tracer._util import _warn as _print_line
from nvprof_wrap.tracer.capture_file import (
    NvtxPairer,
    Writer,
    _claim_path,
    _hostname,
    _process_meta,
    _ranks,
    format_uuid,
)
from nvprof_wrap.tracer.devices import _device_rows, _synchronize_current_context
from nvprof_wrap.tracer.items import CaptureSink, Item
from nvprof_wrap.tracer.objects import ObjectConverter
from nvprof_wrap.tracer.setup import ENV_RUNTIME, ENV_TUNE, HOST_CALLS, CuptiSetup

__all__ = ["ENV_DIR", "ENV_RUNTIME", "NvtxPairer", "Tracer", "_claim_path", "_hostname", "format_uuid", "start"]

ENV_DIR = "NVPROF_WRAP_CUPTI_DIR"
ENV_BINDING = "NVPROF_WRAP_CUPTI_BINDING"  # "python": cupti-python even where the ctypes binding works
ENV_RAW = "NVPROF_WRAP_CUPTI_RAW"  # "0": cupti-python's record objects even where raw buffers work
# "1": completed buffers go back to CUPTI unread — no capture, for benchmarks only: what CUPTI itself costs with
# the kinds this tracer enables (benchmarks/h200_floor.sh)
ENV_DISCARD = "NVPROF_WRAP_CUPTI_DISCARD"
_DISCARD = os.environ.get(ENV_DISCARD) == "1"
ENV_CAPTURE, ENV_CAPTURE_BY = "NVPROF_WRAP_CAPTURE", "NVPROF_WRAP_CAPTURE_BY"  # tracer/window.py ENV, ENV_BY
ENV_WRITER = "NVPROF_WRAP_CUPTI_WRITER"  # "inline": never a writer process; "process": from the first buffer
BUFFER_BYTES = 8 * 1024 * 1024  # what NVIDIA's samples ask for (cupti-python path)
HAND_OVER_RECORDS = 20_000  # a buffer this full: the process is busy, a writer process pays off

# Where this module's one-line messages go: this_process.py collects them instead while it starts a tracer.
_warn: Callable[[str], None] = _print_line

BUSY_LINE = "CUPTI is already in use by another profiler ({}); this process is not traced"


_STATE: Tracer | None = None  # the tracer of this process (a fork child gets its own)
_POOL: Any = None  # raw.BufferPool handed to CUPTI (module-level: CUPTI keeps its buffers across tracers)
_RAW_CALLBACKS: Any = None  # the ctypes callbacks given to libcupti: must live as long as the process


# ----------------------------------------------------------------------------------- the tracer of a process

class Tracer(CuptiSetup):
    """CUPTI subscription, enabled activity kinds and the capture file of one process."""

    def __init__(self, cupti: Any, out_dir: str, *, fork_child: bool = False,
                 cupti_version: str | None = None) -> None:
        self.cupti, self.out_dir, self.fork_child = cupti, out_dir, fork_child
        self.cupti_version = cupti_version or _cupti_version(cupti, ask_cupti=False)
        self.writer: CaptureSink = Writer(out_dir, _process_meta(self.cupti_version, fork_child))
        self.meta: dict[str, str] = self.writer.meta  # the first meta rows (the writer may change, this not)
        self.kinds: list[Any] = []  # the ActivityKind members we enabled
        # (enable function, cbid) of the launch calls enabled
        self.api_cbids: list[tuple[Callable[..., object], int]] = []
        self.notes: dict[str, str] = {}  # extra meta rows (kinds, nvtx, flush result…)
        self.objects = ObjectConverter(cupti.ActivityKind, self._record_error)
        self.parser: Any = None  # raw.Parser when CUPTI's buffers are read raw
        self.lib: Any = None  # libcupti through ctypes (raw path)
        self.subscriber: Any = None
        self.other_profiler: str | None = None
        self.finalizing = self.finalized = self.fork_lock_held = False
        self.deferred_signals: list[int] = []
        self.record_errors = self.late_records = self.dropped = self.lost_frames = 0
        self.warned_records = False
        self.clock = "unix"
        # One buffer at a time, parsed and written in the order CUPTI completed them: a buffer's kernels may
        # name strings interned by the one before it. consumer: the thread inside (a signal must not re-enter).
        self.consume_lock = threading.Lock()
        self.consumer: int | None = None
        # A capture window (tracer/window.py): None, else "idle" (subscribed, no kind enabled) or "recording".
        # The capture file is created when the window first opens: a process that never enters it writes none.
        self.window: str | None = None
        self.windows = 0  # how many times the window opened

    @property
    def missing(self) -> set[str]:
        return self.objects.missing

    # -- set-up ------------------------------------------------------------------------------------------

    def setup(self) -> bool:
        """Subscribe, enable the kinds, register the buffer callbacks. False (after one line) if impossible."""
        try:
            self._subscribe(_on_cupti_callback)
            self._enable_kinds()
            self._register_buffers()
            return True
        except Exception as e:
            self.teardown()
            if isinstance(e, ccupti.Unavailable):  # the ctypes binding cannot do this part: _set_up moves on
                raise
            if _is_busy(self.cupti, e):
                _warn(BUSY_LINE.format(self.other_profiler or _describe(self.cupti, e)))
            else:
                # CUPTI's own status for a machine without GPU or driver is UNKNOWN: the driver says which
                why = (no_gpu_reason() if getattr(e, "status", None) is not None else None) or _describe(self.cupti, e)
                _warn(f"CUPTI could not be started ({why}); this process is not traced")
            return False

    def _register_buffers(self) -> None:
        """Raw buffers through libcupti's own callbacks where possible (raw.py), else cupti-python's objects.
        meta 'records' says which, and why not raw."""
        global _POOL, _RAW_CALLBACKS
        why = f"{ENV_RAW}=0" if os.environ.get(ENV_RAW, "1") == "0" else None
        if why is None:
            try:
                from nvprof_wrap.tracer import raw

                lib = raw.open_library(self.cupti, _loaded_libcupti())
                k = self.cupti.ActivityKind
                kinds = [int(kind) for kind in self.kinds] + ([int(k.RUNTIME), int(k.DRIVER)] if self.api_cbids else [])
                sizes = raw.record_sizes(lib, sorted(set(kinds)))
                _POOL = _POOL or raw.BufferPool()
                if _RAW_CALLBACKS is None:
                    _RAW_CALLBACKS = (raw.REQUESTED(_raw_requested), raw.COMPLETED(_raw_completed))
                    raw.keep_forever(_RAW_CALLBACKS)
                status = lib.cuptiActivityRegisterCallbacks(*_RAW_CALLBACKS)
                if status != 0:
                    raise raw.RawUnavailable(f"cuptiActivityRegisterCallbacks returned {status}")
                self.lib, self.parser = lib, raw.Parser(lib, sizes)
                # record_sizes kept only sizes of known struct versions: none of these is None
                structs = sorted({version for kind, size in sizes.items()
                                  if (version := layouts.struct_version(kind, size)) is not None})
                self.notes["records"] = f"raw buffers (CUPTI API {raw.api_version(lib)}: {', '.join(structs)})"
                return
            except Exception as e:
                if _is_busy(self.cupti, e):
                    raise
                why = str(e) if type(e).__name__ == "RawUnavailable" else f"{type(e).__name__}: {e}"
        try:
            self.cupti.activity_register_callbacks(_on_buffer_requested, _on_buffer_completed)
        except Exception as e:
            if isinstance(e, ccupti.Unavailable):  # the ctypes binding has no record objects
                raise ccupti.Unavailable(f"raw buffers not usable ({why}); {e}") from e
            raise
        self.notes["records"] = f"cupti-python objects (raw buffers not used: {why})"

    def open(self) -> None:
        """Create the .partial file now, so even a process killed early leaves its meta behind."""
        self.cupti_version = self.meta["cupti_version"] = _cupti_version(self.cupti, ask_cupti=True)
        self._stamp_start()
        self.writer.open()

    def _stamp_start(self) -> None:
        started, unix = self._now(), time.time_ns()  # both clocks at once: GPM samples (Unix time) map onto ours
        self.meta.update(self.notes, started_ns=str(started), started_unix_ns=str(unix), clock=self.clock)

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

    # -- capture windows -------------------------------------------------------------------------------

    def idle(self) -> None:
        """Subscribed, buffers registered, NVTX injected — and no activity kind enabled until resume()."""
        self.window = "idle"
        self._switch(on=False)

    def resume(self) -> str | None:
        """Record from now on (the window opened); None, else why not. Runs on the thread that marks the step."""
        if self.finalized or self.finalizing:
            return "the process's capture is already finished"
        if self.window == "recording":
            return None
        try:
            self._switch(on=True)
            if not self.writer.partial_path:
                self.open()
            self.windows += 1
            self.window = "recording"
            self.notes["window_opened_ns"] = str(self._now())
            self.notes["capture_window"] = os.environ.get(ENV_CAPTURE, "")
            return None
        except Exception as e:
            self._switch(on=False)
            return f"CUPTI could not be enabled ({_describe(self.cupti, e)})"

    def pause(self) -> str | None:
        """Stop recording (the window closed): the kinds off, what CUPTI completed handed over. None, else why
        not. Kernels launched inside the window and still running complete into CUPTI's buffers all the same;
        the final flush at the process's end delivers them."""
        if self.window != "recording" or self.finalized or self.finalizing:
            return None
        self.notes["window_closed_ns"] = str(self._now())
        self.window = "idle"
        try:
            self._switch(on=False)
            self.cupti.activity_flush_all(0)
            return None
        except Exception as e:
            return f"CUPTI could not be paused ({_describe(self.cupti, e)})"

    def keep_launch_calls_only(self) -> None:
        """Where the RUNTIME and DRIVER kinds record every API call (a windowed process), write only the launch
        calls' records: what per-callback enabling gives a whole-job trace, at a fraction of the writing (the
        records are still parsed: a numpy mask per buffer). Raw buffers only; cupti-python's objects keep all."""
        from nvprof_wrap.tracer import layouts as L

        c = self.cupti
        cbids = {L.RUNTIME: _launch_cbids(c, "RuntimeApiTraceCbid", "cuda"),
                 L.DRIVER: _launch_cbids(c, "DriverApiTraceCbid", "cu")}
        if self.parser is None or not all(cbids.values()) or self.api_cbids:
            return
        import numpy as np

        launches = sum(len(ids) for ids in cbids.values())
        cbids[L.RUNTIME] += list(host_calls.RUNTIME_HOST_CBIDS)
        cbids[L.DRIVER] += list(host_calls.DRIVER_HOST_CBIDS)
        self.parser.keep_cbids = {kind: np.array(sorted(ids), dtype=np.uint32) for kind, ids in cbids.items()}
        n = sum(len(ids) for ids in cbids.values())
        self.notes["api_records"] = f"{HOST_CALLS} ({launches} launch and {n - launches} other callback ids, kept " \
                                    "from the RUNTIME and DRIVER kinds: a windowed process)"

    def _switch(self, *, on: bool) -> None:
        """Enable or disable every kind and launch-call record this tracer set up."""
        if on:
            for kind in self.kinds:
                self.cupti.activity_enable(kind)
            for enable, cbid in self.api_cbids:
                enable(cbid, 1)
            return
        for kind in reversed(self.kinds):
            _quietly(self.cupti.activity_disable, kind)
        for enable, cbid in self.api_cbids:
            _quietly(enable, cbid, 0)

    # -- records -----------------------------------------------------------------------------------------

    def consume(self, activities: Any) -> None:
        """Write one completed buffer of cupti-python objects; runs on CUPTI's thread; never raises."""
        with self.consume_lock:
            self.consumer = threading.get_ident()
            try:
                if self.finalized:
                    self.late_records += len(activities)  # CUPTI delivered after the file was closed
                    return
                self._write(self.objects.items(activities))
            except Exception as e:
                self._record_error(e)
            finally:
                self.consumer = None

    def consume_raw(self, context: Any, stream_id: int, address: int, valid: int) -> None:
        """Write one completed raw buffer; runs on CUPTI's thread (or the flushing one); never raises."""
        with self.consume_lock:
            self.consumer = threading.get_ident()
            try:
                items, records = self.parser.parse(address, valid)
                self._count_dropped(context, stream_id)
                if self.finalized:
                    self.late_records += records
                    return
                if records:
                    self._maybe_hand_over(records)
                    self._write(items)
            except Exception as e:
                self._record_error(e)
            finally:
                self.consumer = None

    def _count_dropped(self, context: Any, stream_id: int) -> None:
        dropped = ctypes.c_size_t(0)
        if self.lib.cuptiActivityGetNumDroppedRecords(context, stream_id, ctypes.byref(dropped)) == 0:
            self.dropped += dropped.value

    def _write(self, items: Iterable[Item]) -> None:
        """Through the current writer; if the writer process is gone, write here again (what it had not
        committed is lost and counted)."""
        items = list(items) if not isinstance(self.writer, Writer) else items
        try:
            self.writer.write(items)
        except sqlite3.OperationalError as e:
            _warn(f"writing the CUPTI capture failed ({e}); tracing stops for this process")
        except OSError as e:  # sink.SinkGone
            self._back_in_process(e)
            self.writer.write(items)

    def _maybe_hand_over(self, records: int) -> None:
        """Hand the file over to a writer process once a buffer shows this process is busy (sink.py)."""
        mode = os.environ.get(ENV_WRITER, "auto")
        if not isinstance(self.writer, Writer) or mode == "inline" or self.fork_child or "writer" in self.notes:
            return
        if mode != "process" and (self.window == "idle" or self.finalizing):
            return  # the window closed or the process ends: few buffers will follow, and one write here is cheaper
            # than starting a process at the window's edge (where the job waits for it)
        if mode != "process" and records < HAND_OVER_RECORDS:
            return
        from nvprof_wrap.tracer import sink

        here = self.writer
        here.open()
        here.release()  # one writer at a time: the writer process opens the file after this
        try:
            self.writer = sink.start(here.partial_path, here.final_path)
            self.writer.write([("strings", list(here.strings.items())),
                               ("nvtx_state", here.nvtx.open, here.nvtx.early_ends)])
            self.notes["writer"] = "writer process"
        except Exception as e:
            self.writer = here
            self.notes["writer"] = f"in this process (writer process failed: {e})"

    def _back_in_process(self, exc: BaseException) -> None:
        gone = self.writer
        self.lost_frames += 1  # NVTX ranges it held open are lost too
        self.notes["writer"] = f"in this process again (writer process lost: {exc})"
        self.writer = Writer(self.out_dir, {})
        self.writer.adopt(gone.partial_path, gone.final_path)
        if self.parser is not None:
            self.writer.strings = {i: text for text, i in self.parser.strings.ids.items()}

    def _record_error(self, exc: BaseException) -> None:
        self.record_errors += 1
        if not self.warned_records:
            self.warned_records = True
            _warn(f"skipping CUPTI records that could not be written ({type(exc).__name__}: {exc})")

    # -- flush and finish --------------------------------------------------------------------------------

    def flush(self, *, forced: bool) -> None:
        """Have CUPTI hand over its buffers now (they are committed as they arrive)."""
        if self.fork_child or self.finalized or self._inside():
            return  # the last case: a signal landed inside our own write, which must finish first
        try:
            self.cupti.activity_flush_all(1 if forced else 0)
        except Exception as e:
            self._record_error(e)

    def finalize(self, how: str) -> None:
        """Flush CUPTI, write what is pending and rename .partial → .sqlite. Idempotent; never raises."""
        if self.finalized or self.finalizing or self._inside():
            return
        self.finalizing = True
        try:
            if self.window is not None and not self.writer.partial_path:  # the window never opened: no capture
                self.teardown()
                self.finalized = True
                return
            if self.fork_child:
                self.notes["cupti_flush"] = "skipped: fork child (CUPTI is not fork-safe)"
            else:
                self._drain_cupti()
            with self.consume_lock:  # a buffer CUPTI's thread is still writing goes in first
                self.finalized = True  # from here on, late CUPTI deliveries are only counted
            self._close(how)
        except Exception as e:
            _warn(f"could not finish the CUPTI capture ({type(e).__name__}: {e}); it stays .partial")
        finally:
            self.finalized, self.finalizing = True, False

    def _inside(self) -> bool:
        """This thread is inside our own buffer handling (a signal handler interrupted it)."""
        me = threading.get_ident()
        return self.consumer == me or self.writer.owner == me

    def _close(self, how: str) -> None:
        seen, described = self._devices()
        tail: list[Item] = [("rows", "device", [] if self.fork_child else _device_rows(sorted(seen - described)))]
        meta = self._final_meta(how)
        try:
            self.writer.close(meta, tail)
        except OSError as e:  # the writer process is gone: finish the file here
            self._back_in_process(e)
            meta.update(self._counts())
            self.writer.close(meta, tail)
        if self.dropped:
            _warn(f"CUPTI dropped {self.dropped} activity records (no buffer was free); the capture misses them")

    def _devices(self) -> tuple[set[int], set[int]]:
        """Devices that ran work, and those CUPTI described, over both record paths."""
        seen, described = set(self.objects.devices_seen), set(self.objects.devices_described)
        if self.parser is not None:
            seen |= self.parser.devices_seen
            described |= self.parser.devices_described
        seen.discard(None)
        return seen, described

    def _drain_cupti(self) -> None:
        _synchronize_current_context()
        try:
            self.cupti.activity_flush_all(1)  # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: incomplete buffers too
            self.notes["cupti_flush"] = "ok"
        except Exception as e:
            self.notes["cupti_flush"] = f"failed: {_describe(self.cupti, e)}"
        if self.lib is not None:
            self._count_dropped(None, 0)  # the global queue: drops while no buffer ever completed
        self.teardown()  # no record may reach Python once the interpreter is gone

    def _final_meta(self, how: str) -> dict[str, str]:
        meta = dict(self.notes)
        meta.update(_ranks())  # mp.spawn-style jobs set RANK in Python, after start-up
        meta.update(status="complete", exit=how)
        if "started_ns" not in self.meta:
            self._stamp_start()
            meta.update(started_ns=self.meta["started_ns"], started_unix_ns=self.meta["started_unix_ns"],
                        clock=self.clock)
        meta["ended_ns"] = str(self._now())
        meta.update(self._counts())
        return meta

    def _counts(self) -> dict[str, str]:
        parser = self.parser
        counts = {"missing_fields": json.dumps(sorted(self.missing)) if self.missing else None,
                  "record_errors": self.record_errors, "late_records": self.late_records,
                  "dropped_records": self.dropped, "lost_writer_frames": self.lost_frames,
                  "refused_buffers": _POOL.refused if _POOL is not None and parser is not None else 0,
                  "slow_walks": parser.slow_walks if parser else 0, "skipped_records": parser.skipped if parser else 0}
        return {key: str(value) for key, value in counts.items() if value}

    def forked_child(self) -> Tracer:
        """The tracer of a fork child: its own file (created when first needed), no CUPTI calls at all."""
        child = Tracer(self.cupti, self.out_dir, fork_child=True, cupti_version=self.cupti_version)
        child.kinds = list(self.kinds)
        child.notes = {k: v for k, v in self.notes.items() if k in ("kinds", "nvtx", "records")}
        if self.parser is not None:
            from nvprof_wrap.tracer import raw

            child.lib, child.parser = self.lib, raw.Parser(self.lib, self.parser.sizes)
        child._stamp_start()
        return child


# ------------------------------------------------------------------ CUPTI callbacks and process hooks
# Module-level functions, not bound methods: after a fork they must reach the child's tracer.

def _on_buffer_requested() -> tuple[int, int]:
    return BUFFER_BYTES, 0  # (buffer size, max records: 0 = as many as fit)


def _on_buffer_completed(activities: Any) -> None:
    tracer = _STATE
    if tracer is not None:
        tracer.consume(activities)


def _raw_requested(buffer: Any, size: Any, max_records: Any) -> None:
    """libcupti asks for a buffer: one of the pool's, or NULL when all are in use (CUPTI then drops)."""
    try:
        address = _POOL.take()
        buffer[0], size[0], max_records[0] = address or None, _POOL.size if address else 0, 0
    except Exception:
        pass


def _raw_completed(context: Any, stream_id: int, address: int | None, size: int, valid: int) -> None:
    try:
        tracer = _STATE
        if tracer is not None and tracer.parser is not None and address and not _DISCARD:
            tracer.consume_raw(context, stream_id, address, valid)
    except Exception:
        pass
    finally:
        if address:
            _POOL.give_back(address)


def _on_cupti_callback(userdata: Any, domain: Any, cbid: Any, cbdata: Any) -> None:
    """Our subscriber enables no callback domain; CUPTI never calls this."""


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


# A windowed process subscribes to CUPTI only when its window opens and detaches it (cuptiFinalize) when the window
# closes ("attach", the default), or stays subscribed with every kind off outside it ("idle":
# NVPROF_WRAP_CUPTI_WINDOW=idle). Measured on the H200 (benchmarks/h200_window.sh F, nanoGPT, 3 rounds): the median
# iteration outside a 100:120 window was +0.2% to +5.7% (one round -7%) over the unprofiled job attached, +10% to +40%
# idle; both recorded the same 7,280 launches in the window's 20 steps.
ENV_WINDOW_MODE = "NVPROF_WRAP_CUPTI_WINDOW"
_ATTACH_LATER: str | None = None  # the folder of a process that attaches when its window opens


def _start(out_dir: str, *, now: bool = False) -> None:
    global _STATE, _ATTACH_LATER
    other = os.environ.get("CUDA_INJECTION64_PATH")
    if other:  # nsys/ncu inject at CUDA start-up, after us: subscribing now would lock them out instead
        _warn(BUSY_LINE.format(f"CUDA_INJECTION64_PATH={other}"))
        return
    windowed = bool(os.environ.get(ENV_CAPTURE)) and os.environ.get(ENV_CAPTURE_BY) == "cupti"
    if windowed and os.environ.get(ENV_WINDOW_MODE, "attach") != "idle" and not now:
        try:  # libcupti loaded (not initialized) now, so NVTX reaches it once the window opens
            ccupti.load()
        except ccupti.Unavailable:
            _import_cupti()
        lib = _loaded_libcupti()
        if lib and "NVTX_INJECTION64_PATH" not in os.environ:
            os.environ["NVTX_INJECTION64_PATH"] = lib
        _ATTACH_LATER = out_dir
        return
    # Measured on an H200 (CUPTI 13.0): launch-call records enabled per callback id before the CUDA context exists
    # and switched off and on again once it does yield no record at all (a window of nanoGPT: kernels all there,
    # none attributed to an op). A windowed process takes the RUNTIME and DRIVER kinds instead, on inside the window
    # only: more records per launch there, none outside it.
    previous = os.environ.get(ENV_RUNTIME)
    if windowed and previous is None:
        os.environ[ENV_RUNTIME] = "kinds"
    try:
        tracer = _set_up(out_dir)
    finally:
        if windowed and previous is None:
            os.environ.pop(ENV_RUNTIME, None)
    if tracer is None:
        return
    tracer.enable_nvtx_injection()
    if windowed:
        tracer.keep_launch_calls_only()
        tracer.idle()  # tracer/window.py resumes it when the window opens; the file is created then
        return
    try:
        tracer.open()
    except Exception as e:
        _STATE = None
        tracer.teardown()
        _warn(f"cannot write the CUPTI capture in {out_dir} ({type(e).__name__}: {e}); "
              "this process is not traced")
        return
    # The process hooks (hooks.install: atexit, signals, fork) are installed by the callers once this returns with
    # _STATE set (sitecustomize, session.begin): hooks reads _STATE here, so this module does not import it back.


def _set_up(out_dir: str) -> Tracer | None:
    """The set-up tracer of this process, on the ctypes binding (ccupti.py) where it works, else on cupti-python;
    None after one line when neither can trace. meta 'binding' says which, and why not the first."""
    why = (f"{ENV_BINDING}=python" if os.environ.get(ENV_BINDING) == "python"
           else f"{ENV_TUNE} needs cupti-python" if os.environ.get(ENV_TUNE) else None)
    failed = None  # why the ctypes binding, when tried, could not trace
    if why is None:
        try:
            binding = ccupti.load()
            return _traced(Tracer(binding, out_dir), f"ctypes ({binding.path})")
        except ccupti.Unavailable as e:
            why = failed = str(e)
    cupti = _import_cupti(failed)
    return None if cupti is None else _traced(Tracer(cupti, out_dir), f"cupti-python (ctypes binding not used: {why})")


def _traced(tracer: Tracer, binding: str) -> Tracer | None:
    """The tracer, set up and made this process's (_STATE from before set-up: a buffer could complete at once)."""
    global _STATE
    _STATE = tracer
    try:
        if tracer.setup():
            tracer.notes["binding"] = binding
            return tracer
    except ccupti.Unavailable:
        _STATE = None
        raise
    _STATE = None
    return None


def _import_cupti(why_not_ctypes: str | None = None) -> Any | None:
    """cupti-python, the fallback binding; None after one line that says why neither binding can trace."""
    try:
        from cupti import cupti  # cupti-python: the bindings live in the submodule cupti.cupti

        return cupti
    except Exception as e:
        first = f"no libcupti for the ctypes binding ({why_not_ctypes}), and " if why_not_ctypes else ""
        _warn(f"{first}cupti-python is not usable here ({type(e).__name__}: {e}); this process is not traced")
        return None


def attach() -> str | None:
    """Attach mode (ENV_WINDOW_MODE, the default for a window): subscribe and start recording now, the window having
    opened; None, else why
    not."""
    global _ATTACH_LATER
    out_dir, _ATTACH_LATER = _ATTACH_LATER, None
    if out_dir is None:
        return "this process is not traced"
    said: list[str] = []
    printing, globals()["_warn"] = _warn, said.append
    try:
        _start(out_dir, now=True)
    finally:
        globals()["_warn"] = printing
    if _STATE is None:
        return " ".join(said) or "CUPTI could not be started"
    return _STATE.resume()  # (the caller installs the process hooks: tracer/window.py)


def detach() -> str | None:
    """Attach mode: the window closed — finish the capture and detach CUPTI from the process (cuptiFinalize)."""
    tracer = _STATE
    if tracer is None:
        return None
    tracer.pause()
    tracer.finalize("window closed")
    lib = getattr(tracer.cupti, ccupti.LIBRARY_ATTR, None)
    try:
        status = lib.cuptiFinalize() if lib is not None else None
    except Exception as e:
        return f"cuptiFinalize failed ({e})"
    return None if status in (None, 0) else f"cuptiFinalize returned {status}"


def attaching() -> bool:
    return _ATTACH_LATER is not None
