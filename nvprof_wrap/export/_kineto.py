"""A PyTorch profiler (Kineto) trace is a Chrome trace already: its events are written again, in two streamed
passes (readers/_trace_events.py gives them in batches, orjson's fast path or ijson's general one). The first finds
the trace's first timestamp, its first GPU activity and its step ranges (for --window / --steps, as
readers/kineto_json.py finds them); the second writes each event with its time moved onto the trace's clock, the
kernels with our verdict args (and colour) added to theirs, and — when several captures share the trace — each
capture's numeric pids moved where another capture took them.

Kineto writes ``baseTimeNanoseconds`` (Unix time of ts 0) since PyTorch 2.x: such traces share the Unix clock with the
run's other captures; an older one is placed on its own start.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nvprof_wrap.export._events import CNAME, Trace, Verdicts, dumps
from nvprof_wrap.export._timeline import Clock
from nvprof_wrap.readers import KERNEL_CATS, MEM_CATS, RANGE_CATS, NotFast, TraceEvents
from nvprof_wrap.run.steps import could_mark_a_step
from nvprof_wrap.timeline.sql import EVERYTHING
from nvprof_wrap.timeline.window import Window, bounds

_NUMBER = (int, float)
_GPU_CATS = KERNEL_CATS | MEM_CATS


def _ns(value: object) -> int | None:
    if type(value) not in _NUMBER:
        return None
    ns = value * 1000  # type: ignore[operator]  # an int or a float (type(), not isinstance: a bool is no time)
    return round(ns) if abs(ns) < 2**62 else None  # also False for nan


class Kineto:
    FORMAT = "kineto-json"

    def __init__(self, path: Path) -> None:
        self.path, self.fast = path, True
        self.first_ns: int | None = None
        self.gpu_first: int | None = None
        self.steps: list[tuple[str, tuple[object, object], int, int]] = []  # (name, (pid, tid), start, end)
        self.header: dict[str, Any] = {}  # the trace's JSON members other than its events
        try:
            self._scan()
        except NotFast:
            self.fast, self.first_ns, self.gpu_first, self.steps = False, None, None, []
            self._scan()

    def _batches(self) -> Iterator[list[Any]]:  # events: JSON values
        events = TraceEvents(self.path, self.fast)
        yield from events
        self.header = events.header

    def _scan(self) -> None:
        first, gpu_first, steps = None, None, self.steps
        self.header = {}
        for batch in self._batches():
            for ev in batch:
                if type(ev) is not dict:
                    continue
                t = _ns(ev.get("ts"))
                if t is None:
                    continue
                first = t if first is None or t < first else first
                cat = ev.get("cat")
                if cat in _GPU_CATS:
                    gpu_first = t if gpu_first is None or t < gpu_first else gpu_first
                elif cat in RANGE_CATS and ev.get("ph") == "X" and isinstance(ev.get("name"), str) and \
                        could_mark_a_step(ev["name"]):
                    end = _ns(ev.get("dur"))
                    steps.append((ev["name"], (ev.get("pid"), ev.get("tid")), t, t + (end or 0)))
        self.first_ns, self.gpu_first = first, gpu_first
        base = self.header.get("baseTimeNanoseconds")
        self.unix_offset = base if isinstance(base, int) and base > 0 else None

    def span(self, window: Window | None) -> tuple[int, int]:
        if window is None:
            return EVERYTHING
        return bounds(window, self.gpu_first, self.steps)

    def emit(self, trace: Trace, verdicts: Verdicts, index: int, clock: Clock, span: tuple[int, int]) -> None:
        lo, hi = span
        write, shift, whole = trace.write, clock.shift, span == EVERYTHING
        for batch in self._batches():
            for ev in batch:
                if type(ev) is not dict:
                    continue
                t = _ns(ev.get("ts"))
                if t is not None and not whole and ev.get("ph") != "M":
                    dur = _ns(ev.get("dur")) or 0
                    inside = lo <= t < hi if ev.get("cat") in _GPU_CATS else t < hi and t + dur >= lo
                    if not inside:
                        continue
                if t is not None:
                    ev["ts"] = round((t + shift) / 1000, 3)
                pid, tid = ev.get("pid"), ev.get("tid")
                if isinstance(pid, int):
                    ev["pid"] = trace.claim(index, pid)
                if isinstance(tid, int) and not 0 <= tid < 2**32:  # Perfetto takes these as tid 0: all one thread
                    ev["tid"] = trace.remap(("kineto tid", index, pid, tid))
                if ev.get("cat") in KERNEL_CATS and ev.get("ph") == "X":
                    args = verdicts.args(verdicts.demangle(str(ev.get("name", "")) or "<unnamed kernel>"))
                    ev["cname"] = CNAME[args["tensor_core"]]
                    ev["args"] = (ev["args"] if isinstance(ev.get("args"), dict) else {}) | args
                    trace.count("kernels")
                write(dumps(ev))
                write(",\n")
