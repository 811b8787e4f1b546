"""TensorBoard / XProf trace JSON (``<host>.trace.json.gz`` under ``plugins/profile/<run>/``), as TensorFlow 2.x and
JAX write it: a Chrome trace without ``cat`` fields, the GPU as a process named ``/device:GPU:N``, one thread per
CUDA stream ("Stream #13(Compute)") beside derived threads ("TensorFlow Ops", "XLA Ops", "Steps") that repeat the
streams' time spans. Stream events are kernels (the event name is the kernel's name) or copies (``MemcpyH2D`` …);
their args name the op that launched them (readers/_tfop.py).

Streamed with ijson in one pass: aggregates keyed by (process, thread, name) and by op, resolved against the
process / thread names at the end (their metadata events may come anywhere); GPU intervals go to a temporary
SQLite table for the busy-time union and the per-step series. Steps: the host events with a ``step_num`` arg (the
JAX / TensorFlow profilers' StepTraceAnnotation, readers/_profiler_steps.py). No --steps / --window here: the one
pass folds every launch before it can know where a step begins (the marks and the process names may come after the
GPU's events); the XSpace the profiler writes beside this file reads with them (readers/xplane.py).

TensorFlow 1's ``timeline`` JSON (``tensorflow.python.client.timeline`` over a ``RunMetadata``'s step stats) names
its processes the same way, with " Compute" / " Tensors" after the device (``/device:GPU:0/stream:13 Compute``), and
names every GPU event by the op type that ran (``Conv2D``, ``MatMul``, ``_XlaLaunch``; its ``args.op``): the kernel
names are not in it. Such a file is refused, naming what it holds and what to capture instead.
"""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import ijson

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Activity, Capture, Gpu, KernelAgg, MemAgg, OpAgg, merge_kernels, merge_memops
from nvprof_wrap.readers import _profiler_steps as psteps
from nvprof_wrap.readers._bounded import open_json as _open
from nvprof_wrap.readers._durations import fold, from_us, note
from nvprof_wrap.readers._head import Head
from nvprof_wrap.readers._tfop import copy_bytes, copy_kind, gpu_ordinal, is_stream, op_of
from nvprof_wrap.readers._trace_events import KEY, once
from nvprof_wrap.system.limits import MAX_DURATION_NS
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline.busy import busy_time
from nvprof_wrap.timeline.window import Range

_BATCH = 20000
NO_OP = ("(no op recorded)", "(no op recorded)")
# TensorFlow 1 timeline processes: the device (or the job's device), a stream or the copy engine, then the row kind
_TF1_PROCESS = re.compile(r"^/(?:job:[^ ]*/)?device:[A-Za-z_]+:\d+(?:/(?:stream:\w+|memcpy))? (?:Compute|Tensors)$")
_TF1_STREAM = re.compile(r"^/device:GPU:(\d+)/stream:(\d+) Compute$")


FORMAT = "tf-trace-json"


def sniff(head: Head) -> bool:
    return bool(head.json_start) and b"traceEvents" in head.raw and sniff_bytes(head.raw)


def sniff_bytes(head: bytes) -> bool:
    """TensorFlow / JAX profiler traces name their processes '/device:GPU:N' and '/host:CPU' (Kineto never does)."""
    return b'"/device:GPU:' in head or (b'"/host:CPU"' in head and b'"cat"' not in head)


class _Agg:
    """What one pass over the events keeps. Processes and threads are keyed by their pid and tid as the trace has
    them (JSON values)."""

    def __init__(self) -> None:
        self.procs: dict[object, str] = {}
        self.threads: dict[tuple[object, object], str] = {}
        # (pid, tid, name) → [launches, total, min, max, launches without a usable time] (_durations.fold's, and one)
        self.kernels: dict[tuple[object, object, str], list[Any]] = {}
        # (pid, tid, kind, direction) → [n, ns, bytes, untimed]
        self.mem: dict[tuple[object, object, str, str], list[int]] = {}
        self.ops: dict[tuple[object, object, str, str, str], list[int]] = {}  # (…, scope, op, name) → [n, ns]
        self.with_op = 0
        self.named_by_op: dict[object, list[int]] = {}  # pid → [events, events whose name is their args.op] (TF 1)
        self.db = sqlite3.connect("")  # a private temporary database: memory stays flat with the trace's size
        self.db.execute(f"CREATE TABLE iv(pid, tid, {psteps.IV_COLUMNS})")
        self.batch: list[tuple[object, object, int, int, bool, int | None, str | None, str | None]] = []
        self.keys: dict[str, int] = {}  # kernel name → its key in iv
        self.marks: list[tuple[object, str, int, int, int]] = []  # (pid, name, step, start, end) of step marks

    def meta(self, ev: dict[str, Any]) -> None:
        given = ev.get("args")
        args = given if isinstance(given, dict) else {}
        if ev.get("name") == "process_name":
            self.procs[ev.get("pid")] = str(args.get("name", ""))
        elif ev.get("name") == "thread_name":
            self.threads[(ev.get("pid"), ev.get("tid"))] = str(args.get("name", ""))

    def add(self, ev: dict[str, Any]) -> None:
        pid, tid = ev.get("pid"), ev.get("tid")
        given = ev.get("args")
        if isinstance(given, dict) and psteps.STEP_NUM in given:
            self.mark(pid, ev, given[psteps.STEP_NUM])
        known = self.procs.get(pid)
        if known is not None and gpu_ordinal(known) is None:
            return  # host events: most of the trace, dropped after one lookup
        args = given if isinstance(given, dict) else {}
        name = str(ev.get("name", ""))
        by_op = self.named_by_op.setdefault(pid, [0, 0])
        by_op[0] += 1
        by_op[1] += args.get("op") == name
        start, dur = from_us(ev.get("ts", 0)), from_us(ev.get("dur"))
        if dur is not None and not 0 <= dur <= MAX_DURATION_NS:
            dur = None  # missing, negative or absurd: counted without its time (readers/_durations.py)
        copy = copy_kind(name, args)
        if copy is None:
            s = self.kernels.get((pid, tid, name))
            if s is None:  # [launches, total, min, max, launches without a usable time]
                self.kernels[(pid, tid, name)] = [*fold(None, dur), int(dur is None)]
            elif dur is None or s[2] is None:
                fold(s, dur)
                s[4] += dur is None
            else:
                s[0] += 1; s[1] += dur; s[2] = min(s[2], dur); s[3] = max(s[3], dur)
            op = op_of(args)
            self.with_op += op is not None
            o = self.ops.setdefault((pid, tid, *(op or NO_OP), name), [0, 0])
            o[0] += 1; o[1] += dur or 0
        else:
            m = self.mem.setdefault((pid, tid, *copy), [0, 0, 0, 0])
            m[0] += 1; m[1] += dur or 0; m[2] += copy_bytes(args); m[3] += dur is None
        if start is not None and dur is not None:
            key = None if copy is not None else self.keys.setdefault(name, len(self.keys))
            self.batch.append((pid, tid, start, start + dur, copy is None, key, *(copy or (None, None))))
        if len(self.batch) >= _BATCH:
            self.flush()

    def mark(self, pid: object, ev: dict[str, Any], step: object) -> None:
        """A host event with a step number (a step mark, if its process is a host's)."""
        n, start, dur = psteps.step_number(step), from_us(ev.get("ts")), from_us(ev.get("dur"))
        if n is not None and start is not None:
            self.marks.append((pid, str(ev.get("name", "")), n, start, start + (dur or 0)))

    def steps(self) -> list[Range]:
        """The step ranges of the host processes' marks."""
        return psteps.pick((name, n, s, e) for pid, name, n, s, e in self.marks
                           if gpu_ordinal(self.procs.get(pid, "")) is None)

    def flush(self) -> None:
        self.db.executemany("INSERT INTO iv VALUES (?,?,?,?,?,?,?,?)", self.batch)
        self.batch.clear()

    def stream(self, pid: object, tid: object) -> int | None:
        """The GPU ordinal of a stream thread; None for host threads and derived lines."""
        dev = gpu_ordinal(self.procs.get(pid, ""))
        if dev is None or not is_stream(tid if isinstance(tid, int) else None, self.threads.get((pid, tid), "")):
            return None
        return dev


def _scan(path: Path) -> _Agg:
    agg = _Agg()
    try:
        with _open(path, watch=KEY) as f:
            for ev in ijson.items(f, "traceEvents.item", use_float=True):
                if not isinstance(ev, dict):
                    continue
                if ev.get("ph") == "M":
                    agg.meta(ev)
                elif ev.get("ph") == "X":
                    agg.add(ev)
        agg.flush()
        if f.watched > 1:
            once(path)
    except BadInput:
        agg.db.close()
        raise
    except (ijson.JSONError, OSError, EOFError, ValueError, TypeError) as e:
        agg.db.close()
        raise BadInput(path, f"not a readable TensorFlow profiler trace JSON ({type(e).__name__}: {e})") from None
    return agg


def _activity(agg: _Agg) -> tuple[Activity, ...]:
    streams = [(pid, tid, agg.stream(pid, tid)) for pid, tid in agg.db.execute("SELECT DISTINCT pid, tid FROM iv")]
    agg.db.execute("CREATE TABLE gpu(pid, tid, dev)")
    agg.db.executemany("INSERT INTO gpu VALUES (?,?,?)", [s for s in streams if s[2] is not None])
    agg.db.execute('CREATE TABLE giv AS SELECT g.dev AS dev, i.start AS start, i."end" AS "end", i.k AS k, '
                   "i.key AS key, i.kind AS kind, i.dir AS dir "
                   "FROM iv i JOIN gpu g ON g.pid IS i.pid AND g.tid IS i.tid")
    return tuple(Activity(None, dev, a, b, busy)
                 for _, dev, a, b, busy in busy_time(agg.db, [("giv", "0", "dev", "k")]))


def _found(agg: _Agg) -> str:
    """What a trace without kernels holds on its GPUs, in a few words."""
    gpus = sorted({n for n in agg.procs.values() if gpu_ordinal(n) is not None})
    events = sum(s[0] for (pid, _t, *_), s in agg.mem.items() if gpu_ordinal(agg.procs.get(pid, "")) is not None)
    lines = sorted({agg.threads.get(k, str(k[1])) for k in agg.threads
                    if gpu_ordinal(agg.procs.get(k[0], "")) is not None})
    return (f"{', '.join(gpus)} with {events} copy/set events and no kernel on its streams "
            f"(lines: {', '.join(lines[:6])})")


def _tf1_ops_only(path: Path, agg: _Agg) -> None:
    """Refuse a TensorFlow 1 timeline whose GPU stream rows hold op types only (every event named by its args.op)."""
    if not any(_TF1_PROCESS.match(n) for n in agg.procs.values()):
        return
    streams = {pid: m for pid, n in agg.procs.items() if (m := _TF1_STREAM.match(n))}
    counts = [agg.named_by_op.get(pid, [0, 0]) for pid in streams]
    events = sum(c[0] for c in counts)
    if not events or any(c[0] != c[1] for c in counts):
        return
    ops: dict[str, list[int]] = {}
    for (pid, _tid, name), st in agg.kernels.items():
        if pid in streams and not name.startswith("MEMCPY"):  # TensorFlow 1's copies: MEMCPYHtoD, …
            o = ops.setdefault(name, [0, 0])
            o[0] += st[0]; o[1] += st[1] or 0
    top = [n for n, _ in sorted(ops.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0]))[:3]]
    gpus = len({m.group(1) for m in streams.values()})
    rows = "rows" if gpus == 1 else f"rows of {gpus} GPUs"
    raise BadInput(path, f"a TensorFlow 1 timeline: its GPU {rows} hold {events:,} events named by TensorFlow op "
                         f"({', '.join(top)}{', …' if len(ops) > len(top) else ''}), not kernel names: tensor-core use "
                         "is not in it. Capture kernels with nsys profile --trace=cuda (nvprof up to CUDA 10) or "
                         "TensorFlow 2.2+'s TensorBoard profiler")


def read(path: Path) -> Capture:
    agg = _scan(path)
    try:
        _tf1_ops_only(path, agg)
        kernels = merge_kernels(KernelAgg(None, dev, demangle(name), *s[:4])
                                for (pid, tid, name), s in agg.kernels.items()
                                if (dev := agg.stream(pid, tid)) is not None)
        memops = merge_memops(MemAgg(None, dev, kind, d, *s[:3]) for (pid, tid, kind, d), s in agg.mem.items()
                              if (dev := agg.stream(pid, tid)) is not None and kind != "other")
        # records without a usable time, on the GPU streams only (metadata may name a process after its events)
        untimed = (sum(s[4] for (pid, tid, _), s in agg.kernels.items() if agg.stream(pid, tid) is not None),
                   sum(s[3] for (pid, tid, kind, _), s in agg.mem.items()
                       if agg.stream(pid, tid) is not None and kind != "other"))
        activity = _activity(agg)
        names = {key: name for name, key in agg.keys.items()}
        series, series_notes = psteps.measure(agg.db, agg.steps(), names, sum(k.launches for k in kernels),
                                              table="giv")
    finally:
        agg.db.close()
    gpus = {d for n in agg.procs.values() if (d := gpu_ordinal(n)) is not None}
    if not kernels:
        if gpus:
            raise BadInput(path, f"TensorFlow profiler trace with GPU events but no kernel: {_found(agg)}")
        return Capture(str(path), "tf-trace-json", (), notes=(
            "TensorFlow profiler trace without a GPU: only "
            + (", ".join(sorted(set(agg.procs.values()))) or "no process")
            + " — the job ran on the CPU, or the profiler could not load CUPTI",))
    ops: list[OpAgg] = []
    if agg.with_op:
        merged: dict[tuple[str, str, str], list[int]] = {}  # (scope, op, name) → [n, ns]
        for (pid, tid, scope, op, name), (n, tot) in agg.ops.items():
            if agg.stream(pid, tid) is not None:
                m = merged.setdefault((scope, op, demangle(name)), [0, 0])
                m[0] += n; m[1] += tot
        ops = [OpAgg(None, scope, op, name, n, tot) for (scope, op, name), (n, tot) in merged.items()]
    notes = tuple(note(n, what) for n, what in zip(untimed, ("kernel", "memcpy/memset")) if n) + series_notes
    return Capture(str(path), "tf-trace-json", kernels, memops, activity, tuple(Gpu(d) for d in sorted(gpus)),
                   ops=tuple(ops), notes=notes, series=series)
