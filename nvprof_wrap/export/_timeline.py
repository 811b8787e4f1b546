"""What every SQLite capture's export shares: its GPU rows onto stream tracks, its CPU ranges onto threads.

GPU rows come in start order (one SQL sort: SQLite's sorter spills to disk, so memory stays bounded). A stream
runs one operation at a time, except where it does not (programmatic dependent launch lets a kernel start before
the one before it ends; a capture's clock may jitter): an operation that starts before the stream's track is free
goes on an overlap track beside it ("GPU 0 · stream 7 · overlap 1"), so that no two slices on a track overlap —
what Perfetto's importer needs of slices on one track. Ranges come in (thread, start, longest first) order: a range
nested in the one open on its thread is a slice there; one that is not (a start/end range, or one that crosses
another) is an async slice of its process instead.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from nvprof_wrap.export._events import MEM_CNAME, Trace, Verdicts, dumps, us
from nvprof_wrap.system.limits import MAX_DURATION_NS
from nvprof_wrap.timeline.sql import MEMCPY_DIRECTION

KERNEL, MEMCPY, MEMSET = 0, 1, 2
PUSH_POP, START_END = 0, 1
# Where the trace's first event is on the trace's clock: 1 µs, not 0. Chrome DevTools' trace engine (the Performance
# panel's parser) takes ts 0 for "no time" and leaves such an event out of the trace's bounds, so a first event at
# ts 0 lay outside the panel's view (tests/export/test_devtools.py loads every export in that engine).
FIRST_NS = 1000


@dataclass
class Clock:
    """A capture's place on the trace's clock: trace ns = capture ns + shift (the trace's first event at FIRST_NS)."""

    shift: int


class Lanes:
    """Per stream, the first free track for an operation [start, end): busy tracks by end time, free ones by
    number (interval partitioning: a heap each, so a row costs O(log tracks))."""

    def __init__(self) -> None:
        # per stream: (busy tracks as (end, track), free tracks, how many tracks)
        self.streams: dict[tuple[object, ...], tuple[list[tuple[int, int]], list[int], list[int]]] = {}

    def lane(self, key: tuple[object, ...], start: int, end: int) -> int:
        busy, free, count = self.streams.setdefault(key, ([], [], [0]))
        if len(busy) == 1 and busy[0][0] <= start and not free:  # the usual case: the stream's one track is free
            busy[0] = (end, busy[0][1])
            return busy[0][1]
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, count[0] = count[0], count[0] + 1
        heapq.heappush(busy, (end, lane))
        return lane


def gpu(trace: Trace, verdicts: Verdicts, rows: Iterable[tuple[Any, ...]], clock: Clock,
        pid_of: Callable[[object], int], raw_name: Callable[[object], str]) -> None:
    """Rows (start, end, process key, device, stream, kind, name key, correlation, bytes, copy kind), in start
    order, as slices on their stream's tracks. pid_of: the trace pid of a process key; raw_name: a name key's name.
    (The loop runs once per launch: lookups are cached in dicts, times formatted inline.)"""
    lanes, shift, buf = Lanes(), clock.shift, list[str]()
    pids: dict[object, int] = {}
    prefixes: dict[object, str] = {}
    track, write = trace.gpu.get, buf.append
    for start, end, proc, dev, stream, kind, key, corr, nbytes, copy_kind in rows:
        if start is None or end is None or not 0 <= end - start <= MAX_DURATION_NS:
            trace.count("skipped (no usable time)")
            continue
        if len(buf) >= 2048:  # one write of many events: the text stream's per-call cost, paid once per batch
            trace.write("".join(buf))
            buf.clear()
        pid = pids.get(proc)
        if pid is None:
            pid = pids[proc] = pid_of(proc)
        lane = lanes.lane((pid, dev, stream), start, end)
        tid = track((pid, dev, stream, lane)) or trace.gpu_track(pid, dev, stream, lane)
        sq, sr = divmod(start + shift, 1000)
        dq, dr = divmod(end - start, 1000)
        where = f',"pid":{pid},"tid":{tid},"ts":{sq}.{sr:03d},"dur":{dq}.{dr:03d}}},\n'
        if kind == KERNEL:
            head = prefixes.get(key)
            if head is None:
                head = prefixes[key] = verdicts.prefix(key, partial(raw_name, key))
            write(f"{head}{corr if type(corr) is int else 'null'}}}{where}")
            continue
        write(_memop(kind, nbytes, corr, copy_kind) + where)
    trace.write("".join(buf))


def _memop(kind: int, nbytes: object, corr: object, copy_kind: Any) -> str:  # copy_kind: an SQLite value
    """A copy's or a set's event, up to its place."""
    what = "memcpy" if kind == MEMCPY else "memset"
    args: dict[str, object] = {"bytes": nbytes, "correlation": corr}
    if kind == MEMCPY:
        args["direction"] = MEMCPY_DIRECTION.get(copy_kind, "other")
    name = f"memcpy {args['direction']}" if kind == MEMCPY else "memset"
    return f'{{"ph":"X","cat":"{what}","name":"{name}","cname":"{MEM_CNAME[what]}","args":{dumps(args)}'


def ranges(trace: Trace, rows: Iterable[tuple[Any, ...]], clock: Clock,
           thread_of: Callable[[object], tuple[int, int]]) -> None:
    """Rows (thread key, start, end, name, kind), ordered by thread, start, and end descending, as slices on the
    thread (nested ones) or async slices of its process (the others). thread_of: (pid, tid) of a thread key."""
    write, shift = trace.write, clock.shift
    now, where = object(), (0, 0)
    stack: list[int] = []
    for thread, start, end, name, kind in rows:
        if start is None or end is None or end < start:
            trace.count("skipped ranges (not closed)")
            continue
        if thread != now:
            now, stack, where = thread, [], thread_of(thread)
        while stack and stack[-1] <= start:
            stack.pop()
        pid, tid = where
        text = dumps(name if name else "(unnamed range)")
        if kind == START_END or (stack and end > stack[-1]):
            trace.count("async ranges")
            cookie = trace.new_id()
            write(f'{{"ph":"b","cat":"nvtx","id":{cookie},"name":{text},"pid":{pid},"tid":{tid},'
                  f'"ts":{us(start + shift)}}},\n{{"ph":"e","cat":"nvtx","id":{cookie},"name":{text},"pid":{pid},'
                  f'"tid":{tid},"ts":{us(end + shift)}}},\n')
            continue
        stack.append(end)
        write(f'{{"ph":"X","cat":"nvtx","name":{text},"pid":{pid},"tid":{tid},"ts":{us(start + shift)},'
              f'"dur":{us(end - start)}}},\n')
