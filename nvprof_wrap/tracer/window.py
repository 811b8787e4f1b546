"""Capture windows inside the job: ``nvprof-wrap run --capture-steps A:B`` and ``--capture-after S [--capture-for S]``.

Runs in every Python process of a windowed job (the injected sitecustomize calls ``install()`` when
$NVPROF_WRAP_CAPTURE is set). The launcher (launch/window.py) sets:

  NVPROF_WRAP_CAPTURE     "steps:A:B" (steps A..B-1) or "seconds:AFTER:END" (END may be "inf"), seconds counted
                          from NVPROF_WRAP_CAPTURE_T0 (Unix time, when `run` started the job)
  NVPROF_WRAP_CAPTURE_BY  who records: "cupti" (this process's CUPTI tracer: its activity kinds are enabled only
                          inside the window, CUPTI stays subscribed but idle outside it), "profiler"
                          (cuProfilerStart/Stop: nvprof --profile-from-start off), "profiler-aside" (the same, the
                          stop on a helper thread: nsys --capture-range=cudaProfilerApi, whose stop holds its
                          caller ~3 s; then nsys' CUPTI detached from the job), "self" (the profiler keeps the
                          time itself: nsys --delay/--duration; here the window is only recorded)

Steps are the marks timeline/window.py reads, told apart live in the same order of preference: the job's own NVTX
'step N' ranges (pushed or started through torch.cuda.nvtx or the nvtx package), else torch optimizer steps (the
global step hook of annotate.py: step N begins when optimizer.step() returns for the N-th time; step 0 at torch's
import), else Keras training batches (keras' CallbackList.on_train_batch_begin, counted over epochs from 0), else
XLA executions: the calls of the function the job's `jax.jit` made that it calls most (step N begins when that
function is called the N+1-th time from outside any other jitted call; the step a report reads in the capture is
the same program's execution: run/steps.py XLA_EXECUTIONS). A source
claims the count once it says anything past the import-time step 0 (the job's own marks at once); the sources below
it are then ignored. The window opens when step A begins (or the first step after it) and closes when step B
begins, or when the process ends.

Each process appends what happened to $NVPROF_WRAP_RUN_DIR/windows.jsonl, one JSON object per line, written with one
O_APPEND write (lines of several processes never interleave): {"window": "steps:100:120", "pid", "host", "event":
"open" | "close" | "end" | "failed" | "stopped" | "detached", "unix_ns", "step", "source", "why", "held_ms", "stop",
"cupti"}. "end" comes at
the process's exit with the last step seen; "held_ms" (open, close) is how long opening or closing held the thread
that did it — for a steps window the job's own: the profiler's cost at the window's edges. A close whose profiler
stop ran on a helper thread says "stop": "aside"; "stopped" follows when that stop returned, its "held_ms" how long
it took there (the report then cuts the capture at step B: timeline/window.py Window.cut); "detached" once nsys'
CUPTI was detached from the job after that stop, "cupti" each cuptiFinalize call's [path, status]. The report reads
the file (timeline/windows.py).

Runs inside the user's process: standard library only, never raises into the job, says things only as single
``nvprof-wrap:`` lines on stderr.
"""
# ruff: noqa: BLE001, S110
from __future__ import annotations

import atexit
import ctypes
import json
import math
import os
import re
import socket
import stat
import threading
import time
from collections.abc import Callable
from typing import Any

from nvprof_wrap.tracer import _util

ENV = "NVPROF_WRAP_CAPTURE"
ENV_T0 = "NVPROF_WRAP_CAPTURE_T0"
ENV_BY = "NVPROF_WRAP_CAPTURE_BY"
FILE = "windows.jsonl"
# The step sources, the job's own marks first (timeline/window.py prefers them in this order).
SOURCES = ("step marks", "optimizer steps", "keras batches", "XLA executions")
_STEP_NAME = re.compile(r"^(?:step |ProfilerStep#)(\d+)$")

_CONTROLLER: Controller | None = None
STOP_JOIN_S = 120.0  # at the process's exit, the longest it waits for a stop running aside


def _warn(message: str) -> None:
    _util._warn(f"capture window: {message}")


def parse(text: str) -> tuple[str, float, float]:
    """'steps:A:B' | 'seconds:AFTER:END' → (kind, start, end); ValueError when it is neither."""
    kind, start, end = text.split(":")
    if kind not in ("steps", "seconds"):
        raise ValueError(text)
    lo, hi = float(start), float(end)
    if not (0 <= lo < hi) or math.isnan(lo):
        raise ValueError(text)
    return kind, lo, hi


# ---------------------------------------------------------------------------------------------- what records

# One line of FILE: {"event": …} and what that event says (keys vary by event; the report reads them)
Event = dict[str, object]


class Recorder:
    """Who records inside the window: enable() at its start, disable() at its end; each returns None when done,
    else why not. later: what is left to do on the job's thread, run at its next step mark (then None)."""

    later: Callable[[], None] | None = None

    def enable(self) -> str | None:
        return None

    def disable(self) -> str | None:
        return None

    def stop_aside(self, record: Callable[[Event], None]) -> threading.Thread | None:
        """disable() on a helper thread, the job running on; None where this recorder does not (disable() then)."""
        return None


class CuptiRecorder(Recorder):
    """This process's CUPTI tracer (cupti_trace._STATE): its activity kinds on inside the window only."""

    def __init__(self) -> None:
        self.attached = False  # attach mode: subscribed when the window opened (cupti_trace.attach)

    def _tracer(self) -> Any:
        from nvprof_wrap.tracer import cupti_trace

        return cupti_trace._STATE

    def enable(self) -> str | None:
        from nvprof_wrap.tracer import cupti_trace

        with _job_context():
            if cupti_trace.attaching():
                self.attached = True
                why = cupti_trace.attach()
                if cupti_trace._STATE is not None:
                    from nvprof_wrap.tracer import hooks

                    hooks.install()  # atexit, signals, fork: the capture is finished on every exit
                return why
            tracer = self._tracer()
            return "this process is not traced" if tracer is None else tracer.resume()

    def disable(self) -> str | None:
        from nvprof_wrap.tracer import cupti_trace

        tracer = self._tracer()
        if tracer is None:
            return None
        with _job_context():
            return cupti_trace.detach() if self.attached else tracer.pause()


class _job_context:
    """On a thread with no CUDA context current (the timer of a seconds window), the job's primary contexts made
    current for the duration: measured on an H200, CUPTI enabled from such a thread recorded no kernel of the job's
    own threads. Nothing is created: only contexts the job already made active are pushed."""

    def __enter__(self) -> None:
        self.pushed: list[tuple[Any, int]] = []
        try:
            cuda = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            current = ctypes.c_void_p()
            if cuda.cuCtxGetCurrent(ctypes.byref(current)) != 0 or current.value:
                return  # the driver not initialized (nothing to push), or this thread has its context
            count = ctypes.c_int(0)
            if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
                return
            for dev in range(count.value):
                flags, active, ctx = ctypes.c_uint(0), ctypes.c_int(0), ctypes.c_void_p()
                if cuda.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active)) or not active.value:
                    continue
                if cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0:
                    if cuda.cuCtxPushCurrent(ctx) == 0:
                        self.pushed.append((cuda, dev))
                    else:
                        cuda.cuDevicePrimaryCtxRelease(dev)
                break  # one current context is what CUPTI asks for
        except (OSError, AttributeError):
            pass

    def __exit__(self, *exc: object) -> None:
        for cuda, dev in self.pushed:
            try:
                popped = ctypes.c_void_p()
                cuda.cuCtxPopCurrent(ctypes.byref(popped))
                cuda.cuDevicePrimaryCtxRelease(dev)
            except Exception:
                pass


# nsys leaves its CUPTI attached after its capture range: measured on the H200 (benchmarks/h200_window.sh P, Q), the
# job's steps then ran 12-50% slower to its end, with nsys run directly as much as under `run`; with that CUPTI
# detached once nsys' stop returned, a CUDA call costs what it costs unprofiled (h200_window.sh R: 0.93-1.03x per call,
# 1.20-1.40x attached), the capture whole. nsys records nothing after its stop
# (--capture-range-end=stop), so nothing is lost. Only nsys' own copy of libcupti is detached: the one in the folder
# of its injection library (libToolsInjection*), never torch's or another tool's. "0": leave it attached.
ENV_DETACH = "NVPROF_WRAP_NSYS_DETACH"
_INJECTION = "libToolsInjection"


def _mapped(*names: str) -> list[str]:
    """The files mapped into this process whose name starts with one of names."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(None, 5)[-1].strip() for line in maps if any(n in line for n in names)}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/") and os.path.basename(p).startswith(names))


def _detach_profilers_cupti(record: Callable[[Event], None]) -> None:
    """cuptiFinalize on the libcupti beside nsys' injection library, on the calling (the job's) thread, between its
    CUDA calls; records {"event": "detached", "cupti": [[path, status], ...], "held_ms"} (status 0: detached), with
    "why" where there was none to detach."""
    began, done = time.perf_counter(), []
    mapped = _mapped("libcupti.so", _INJECTION)
    folders = {os.path.dirname(p) for p in mapped if os.path.basename(p).startswith(_INJECTION)}
    for path in (p for p in mapped if os.path.basename(p).startswith("libcupti.so")):
        if os.path.dirname(path) not in folders:
            continue
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            done.append([path, int(lib.cuptiFinalize())])
        except (OSError, AttributeError) as e:
            done.append([path, f"{type(e).__name__}: {e}"])
    why = {} if done else {"why": "no libcupti beside a profiler's injection library in this process",
                           "mapped": mapped}
    record({"event": "detached", "cupti": done, "held_ms": _ms_since(began), **why})


# nsys: cuProfilerStop holds its caller while nsys stops collecting (measured on the H200: 2.9-3.5 s, 3.2 s with
# --no-hardware); called from a helper thread it holds the job ~1 ms, nsys records a few hundred launches more (the
# report cuts its captures at step B: timeline/window.py). "job": on the job's thread all the same.
ENV_STOP = "NVPROF_WRAP_PROFILER_STOP"
# The step sources whose marks are NVTX ranges in the capture (the job's 'step N', annotate's 'optimizer step N'):
# the report can cut there, so only these stop aside; Keras batches where annotate marks them ('train batch N',
# counted as here: run's step marks, unless --no-step-marks).
CUT_AT_MARKS = ("step marks", "optimizer steps")
MARKED: set[str] = set()  # the other sources annotate marks in this process (annotate.patch_keras_batches says so)


def _marked_in_capture(source: str | None) -> bool:
    return source in CUT_AT_MARKS or source in MARKED


class ProfilerRecorder(Recorder):
    """cuProfilerStart / cuProfilerStop of the CUDA driver, on the calling thread's current context (the thread that
    marks the steps is the one that launches the work). A process that never loaded libcuda has nothing to start.
    aside: the stop may run on a helper thread with the job's context (nsys; nvprof's stop is left as it was)."""

    def __init__(self, aside: bool = False) -> None:
        self.aside = aside and os.environ.get(ENV_STOP) != "job"

    def _call(self, name: str) -> str | None:
        try:
            cuda = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:
            return "the process has not loaded the CUDA driver yet"
        status = getattr(cuda, name)()
        # 3: CUDA_ERROR_NOT_INITIALIZED (torch imported, CUDA not yet used: step 0 of a 0:B window under nsys);
        # 201: CUDA_ERROR_INVALID_CONTEXT. Both pass by the next step: the window opens there.
        return None if status == 0 else f"{name} returned CUDA error {status}" + \
            {3: " (CUDA not initialized yet)", 201: " (no CUDA context on this thread yet)"}.get(status, "")

    def enable(self) -> str | None:
        return self._call("cuProfilerStart")

    def disable(self) -> str | None:
        return self._call("cuProfilerStop")

    def stop_aside(self, record: Callable[[Event], None]) -> threading.Thread | None:
        """cuProfilerStop on a helper thread, with the context current on this (the job's) thread made current
        there; it records {"event": "stopped", "held_ms": how long the stop took there, "why"}. None (nothing
        started) where this thread has no context to hand over, or the stop is asked on the job's thread: the caller
        stops here instead."""
        if not self.aside:
            return None
        try:
            cuda = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            ctx = ctypes.c_void_p()
            if cuda.cuCtxGetCurrent(ctypes.byref(ctx)) != 0 or not ctx.value:
                return None
        except (OSError, AttributeError):
            return None

        def stop() -> None:
            began, why = time.perf_counter(), None
            try:
                if cuda.cuCtxPushCurrent_v2(ctx) != 0:
                    why = "cuProfilerStop not called: the job's context could not be made current on a helper thread"
                else:
                    try:
                        why = self._call("cuProfilerStop")
                    finally:
                        cuda.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
            except Exception as e:
                why = f"cuProfilerStop on a helper thread failed ({type(e).__name__}: {e})"
            record({"event": "stopped", "held_ms": _ms_since(began), **({"why": why} if why else {})})
            if why:
                _warn(f"the window's close: {why}")
            elif os.environ.get(ENV_DETACH) != "0":  # on the job's thread at its next step mark
                self.later = lambda: _detach_profilers_cupti(record)

        thread = threading.Thread(target=stop, name="nvprof-wrap-profiler-stop", daemon=True)
        thread.start()
        return thread


RECORDERS: dict[str, Callable[[], Recorder]] = {"cupti": CuptiRecorder, "profiler": ProfilerRecorder,
                                                 "profiler-aside": lambda: ProfilerRecorder(aside=True),
                                                 "self": Recorder}


# ----------------------------------------------------------------------------------------------- the window

class Controller:
    """The window of one process: waiting → open → closed (never reopened)."""

    def __init__(self, spec: str, recorder: Recorder, record: Callable[[Event], None]) -> None:
        self.spec = spec
        self.kind, self.lo, self.hi = parse(spec)
        self.recorder, self.record = recorder, record
        self.state = "waiting"
        self.source: str | None = None  # the step source that claimed the count
        self.last: dict[str, int] = {}  # the last step each source said began
        self.opened = False
        self.pid = os.getpid()
        self.retry = False  # opening failed for a reason the next step may not have (no CUDA context yet)
        self.stopping: threading.Thread | None = None  # the profiler's stop, running on a helper thread
        self.lock = threading.RLock()

    # -- steps -------------------------------------------------------------------------------------------

    def step(self, n: int, source: str) -> None:
        """Step n begins, by this source (one of SOURCES). Never raises."""
        try:
            with self.lock:
                later = self.recorder.later
                if later is not None:
                    self.recorder.later = None
                    later()
                rank = SOURCES.index(source)
                if self.source is not None and rank > SOURCES.index(self.source):
                    return  # a source the job's own count outranks
                claims = source == SOURCES[0] or n > 0  # optimizer step 0 is only torch's import
                if claims and (self.source is None or rank < SOURCES.index(self.source)):
                    self.source = source
                self.last[source] = n
                if self.kind != "steps":
                    return
                if self.state == "waiting" and (self.lo <= n < self.hi):
                    self._open(step=n, source=source)
                elif self.state == "open" and not (self.lo <= n < self.hi):
                    self._close(step=n, source=source)
        except Exception as e:
            _warn(f"step {n} not handled ({type(e).__name__}: {e})")

    # -- time --------------------------------------------------------------------------------------------

    def start_timers(self, t0: float) -> None:
        """Open at t0 + start, close at t0 + end (Unix seconds), on one daemon thread."""
        def wait_and(at: float, action: Callable[[], None]) -> None:
            delay = at - time.time()
            if delay > 0:
                time.sleep(delay)
            action()

        def run() -> None:
            wait_and(t0 + self.lo, lambda: self._timed("open"))
            if math.isfinite(self.hi):
                wait_and(t0 + self.hi, lambda: self._timed("close"))

        threading.Thread(target=run, name="nvprof-wrap-window", daemon=True).start()

    def _timed(self, what: str) -> None:
        try:
            with self.lock:
                if what == "open" and self.state == "waiting":
                    self._open()
                elif what == "close" and self.state == "open":
                    self._close()
        except Exception as e:
            _warn(f"could not {what} the window ({type(e).__name__}: {e})")

    # -- open and close ----------------------------------------------------------------------------------

    def _open(self, step: int | None = None, source: str | None = None) -> None:
        began = time.perf_counter()
        why = self.recorder.enable()
        held = _ms_since(began)
        if why is not None:
            retry = "no CUDA context" in why or "not loaded the CUDA driver" in why or "not initialized" in why
            if not (retry and self.retry):  # said once
                self.record({"event": "failed", "step": step, "source": source, "why": why})
            if retry and self.kind == "steps":
                self.retry = True  # try again when the next step begins
                return
            self.state = "closed"
            _warn(f"the window could not open ({why}); nothing of this process is recorded")
            return
        self.state, self.opened = "open", True
        self.record({"event": "open", "step": step, "source": source, "held_ms": held})

    def _close(self, step: int | None = None, source: str | None = None, at: str | None = None) -> None:
        self.state = "closed"
        began = time.perf_counter()
        aside = at is None and self.kind == "steps" and _marked_in_capture(self.source)
        self.stopping = self.recorder.stop_aside(self.record) if aside else None
        why = None if self.stopping is not None else self.recorder.disable()
        self.record({"event": "close", "step": step, "source": source, "held_ms": _ms_since(began),
                     **({"stop": "aside"} if self.stopping is not None else {}),
                     **({"at": at} if at else {}), **({"why": why} if why else {})})

    def end(self) -> None:
        """At the process's exit: close an open window, say the last step seen."""
        if os.getpid() != self.pid:
            return  # a fork child exiting through atexit: the parent's window is not its to end
        try:
            if self.stopping is not None:  # a stop still running aside: the process ends once nsys has stopped
                self.stopping.join(STOP_JOIN_S)
            with self.lock:
                if self.state == "open":
                    self._close(at="end")
                source = self.source or next((s for s in SOURCES if s in self.last), None)
                self.record({"event": "end", "state": "closed" if self.opened else "never opened",
                             "source": source, "step": self.last.get(source) if source else None})
        except Exception:
            pass


def _ms_since(began: float) -> float:
    """Milliseconds since ``began`` (perf_counter): how long opening or closing the window held the thread that
    did it — the job's own thread for a steps window (the profiler's cost at the window's edges)."""
    return round((time.perf_counter() - began) * 1e3, 3)


def _append_only_to_a_file(path: str) -> int:
    """An fd appending to path, never through a link (O_NOFOLLOW), never blocking on a FIFO (O_NONBLOCK) and never
    onto anything but a regular file (what system/files.py does for the rest of the package; the tracer imports only
    itself inside the job's processes)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file: nothing is written through it")
    return fd


def _writer(folder: str | None, spec: str) -> Callable[[Event], None]:
    """One line per event, appended with one write (atomic for lines this short on a local file system)."""
    host, pid = socket.gethostname(), os.getpid()

    def record(event: Event) -> None:
        if not folder:
            return
        line = {"window": spec, "pid": pid, "host": host, "unix_ns": time.time_ns(), **event}
        try:
            fd = _append_only_to_a_file(os.path.join(folder, FILE))
            try:
                os.write(fd, (json.dumps(line) + "\n").encode())
            finally:
                os.close(fd)
        except OSError as e:
            _warn(f"cannot write {FILE} ({e})")

    return record


# ------------------------------------------------------------------------------------------ the step sources

def _named_step(name: Any) -> int | None:
    m = _STEP_NAME.match(name) if isinstance(name, str) else None
    return int(m.group(1)) if m else None


def _watch_nvtx(module: Any, names: tuple[str, ...]) -> None:
    """Wrap the NVTX functions that open a range so a 'step N' range tells the window first."""
    for attr in names:
        original = getattr(module, attr, None)
        if original is None or getattr(original, "_nvprof_wrap_window", False):
            continue

        def opened(*args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            n = _named_step(args[0] if args else kwargs.get("message", kwargs.get("msg")))
            if n is not None and _CONTROLLER is not None:
                _CONTROLLER.step(n, SOURCES[0])
            return _original(*args, **kwargs)

        # Markers on the wrapper function (ours, functools' __wrapped__): a function's type has no such attributes.
        opened._nvprof_wrap_window = True  # type: ignore[attr-defined]  # our marker on the wrapper
        opened.__wrapped__ = original  # type: ignore[attr-defined]  # functools' marker on the wrapper
        setattr(module, attr, opened)


def _watch_torch(torch_module: Any) -> None:
    nvtx = getattr(getattr(torch_module, "cuda", None), "nvtx", None)
    if nvtx is not None:
        _watch_nvtx(nvtx, ("range_push", "range_start"))


def _watch_nvtx_package(module: Any) -> None:
    _watch_nvtx(module, ("push_range", "start_range"))


def _watch_keras(keras_module: Any) -> None:
    """Keras training batches: CallbackList.on_train_batch_begin, which Model.fit calls before every batch."""
    callbacks = getattr(keras_module, "callbacks", None)
    cls = getattr(callbacks, "CallbackList", None)
    original = getattr(cls, "on_train_batch_begin", None)
    if cls is None or original is None or getattr(original, "_nvprof_wrap_window", False):
        return
    count = [0]

    def on_train_batch_begin(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _CONTROLLER is not None:
            _CONTROLLER.step(count[0], SOURCES[2])
        count[0] += 1
        return original(self, *args, **kwargs)

    on_train_batch_begin._nvprof_wrap_window = True  # type: ignore[attr-defined]  # our marker: see _watch_nvtx
    cls.on_train_batch_begin = on_train_batch_begin


def xla_execution(n: int) -> None:
    """jit_calls.py: step n begins by the calls of the job's most-called jitted function."""
    if _CONTROLLER is not None:
        _CONTROLLER.step(n, SOURCES[3])


def optimizer_step(n: int) -> None:
    """annotate.patch_steps: optimizer step n begins (0 at torch's import)."""
    if _CONTROLLER is not None:
        _CONTROLLER.step(n, SOURCES[1])


# ------------------------------------------------------------------------------------------------- install

def install() -> None:
    """The window of this process, from the environment; nothing when it asks for none. Never raises."""
    global _CONTROLLER
    spec = os.environ.get(ENV)
    if not spec or _CONTROLLER is not None:
        return
    try:
        by = os.environ.get(ENV_BY, "self")
        controller = Controller(spec, RECORDERS.get(by, Recorder)(), _writer(os.environ.get("NVPROF_WRAP_RUN_DIR"),
                                                                               spec))
    except ValueError:
        _warn(f"{ENV}={spec!r} is not a window (steps:A:B or seconds:AFTER:END); this process records everything")
        if os.environ.get(ENV_BY) == "cupti":
            CuptiRecorder().enable()  # the tracer waits idle for a window: record from now on instead
        return
    _CONTROLLER = controller
    atexit.register(controller.end)  # after the tracer's own atexit (registered first): runs before it
    os.register_at_fork(after_in_child=_forget)
    if controller.kind == "seconds":
        try:
            t0 = float(os.environ.get(ENV_T0) or time.time())
        except ValueError:
            t0 = time.time()
        controller.start_timers(t0)
        return
    from nvprof_wrap.tracer.imports import when_imported

    when_imported("torch", _watch_torch)
    when_imported("nvtx", _watch_nvtx_package)
    when_imported("keras", _watch_keras)
    from nvprof_wrap.tracer import jit_calls

    jit_calls.on_step = xla_execution
    when_imported("jax", jit_calls.watch_jax)


def _forget() -> None:
    """A fork child has no window of its own (its tracer does not call CUPTI; it marks no steps of the parent's)."""
    global _CONTROLLER
    _CONTROLLER = None
