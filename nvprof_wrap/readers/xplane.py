"""XSpace protobuf (``<host>.xplane.pb`` under ``plugins/profile/<run>/``): what TensorFlow ≥ 2.3 and JAX write.

One plane per device (``/device:GPU:N``, with compute capability and SM count in its stats) and one for the host;
in a GPU plane one line per CUDA stream ("Stream #13(Compute)") plus lines derived from them ("TensorFlow Ops",
"XLA Ops", "Steps", …, skipped); each event points at an event metadata (the kernel's name, or MemcpyH2D …) and
carries stats: kernel_details, memcpy_details, and the op that launched it (tf_op, hlo_op / hlo_module,
annotation: readers/_tfop.py).
The host plane ("/host:CPU") is parsed only where it can hold step marks (a "step_num" stat: the JAX and TensorFlow
profilers' StepTraceAnnotation, readers/_profiler_steps.py): its events with a step number are the steps of the
per-step series and of a --steps window.

Bounded: the file is mapped, not read; a wire-format walk (readers/_protowire.py) cuts it into planes and lines
and skips other planes unparsed; a GPU plane's metadata is parsed once, its lines in chunks of events of at most
_CHUNK bytes, each chunk parsed by protobuf (readers/_xplane_schema.py) and folded into aggregates per
(device, kernel name) and per op. GPU intervals go to a temporary SQLite table for the busy-time union and the
per-step series.

A window (--steps A:B from the step marks, --window in seconds from the first GPU activity: found by a first walk)
keeps the kernels, copies and sets that start inside it (timeline/window.py); the busy time is cut at its edges.
"""
from __future__ import annotations

import mmap
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from google.protobuf.message import DecodeError

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Activity, Capture, Gpu, KernelAgg, MemAgg, OpAgg, merge_kernels, merge_memops
from nvprof_wrap.readers import _profiler_steps as psteps
from nvprof_wrap.readers import _protowire as wire
from nvprof_wrap.readers._durations import Durations, fold
from nvprof_wrap.readers._head import Head
from nvprof_wrap.readers._tfop import copy_bytes, copy_kind, gpu_ordinal, is_stream, op_of
from nvprof_wrap.system.limits import MAX_DURATION_NS
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline.busy import busy_time
from nvprof_wrap.timeline.sql import EVERYTHING
from nvprof_wrap.timeline.window import Range, Window, bounds, step_bounds

_CHUNK = 4 << 20  # bytes of events parsed at once (~100k events)
_BATCH = 20000
_MAX_TS_NS = 2**62  # a start SQLite can hold with its duration added (as for Kineto traces)
_WANTED = {"tf_op", "hlo_op", "hlo_module", "annotation", "kernel_annotation", "level 0", "memcpy_details",
           "memset_details"}
NO_OP = ("(no op recorded)", "(no op recorded)")


FORMAT = "xplane"


def sniff(head: Head) -> bool:
    if head.raw[:1] == b"\x0a" and looks_like_xspace(head.raw, head.size):
        return True
    return head.binary and head.path.name.endswith(".xplane.pb")


def looks_like_xspace(head: bytes, size: int) -> bool:
    """An XSpace starts with its first plane (field 1), whose first fields are its id and a readable name."""
    try:
        key, pos = wire.varint(head, 0, len(head))
        length, pos = wire.varint(head, pos, len(head))
        if key != 0x0A or pos + length > size:
            return False
        for number, kind, _tag, s, e in wire.fields(head, pos, min(pos + length, len(head))):
            if number == 2 and kind == wire.LEN:
                name = bytes(head[s:e]).decode("utf-8")
                return name.isprintable() and name.startswith("/")
            if number != 1:
                return False
    except (ValueError, UnicodeDecodeError):
        return False
    return False


# A protobuf message of the XSpace schema: its classes are built at run time (readers/_xplane_schema.py), so no
# static type describes them.
Message = Any


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


class _Agg:
    """What the walk keeps: aggregates, planes and devices seen, and the kernels' and copies' intervals."""

    def __init__(self, span: tuple[int, int] = EVERYTHING) -> None:
        self.span = span  # what a window keeps: launches that start in [lo, hi)
        self.kernels: dict[tuple[int, str], list[Any]] = {}  # (device, name) → _durations.fold's stats
        self.mem: dict[tuple[int, str, str], list[int]] = {}  # (device, kind, direction) → [n, ns, bytes]
        self.ops: dict[tuple[str, str, str], list[int]] = {}  # (scope, op, name) → [launches, ns]
        self.with_op = 0
        self.planes: list[str] = []
        self.devices: dict[int, Gpu] = {}
        self.copies = 0
        self.kernel_time, self.mem_time = Durations("kernel"), Durations("memcpy/memset")
        self.keys: dict[str, int] = {}  # kernel name → its key in iv
        self.db = sqlite3.connect("")
        self.db.execute(f"CREATE TABLE iv(dev, {psteps.IV_COLUMNS})")
        self.batch: list[tuple[int, int, int, bool, int | None, str | None, str | None]] = []

    def interval(self, dev: int, start: int, dur: int, kind: tuple[str, str] | None, name: str) -> None:
        if kind is None:
            key = self.keys.get(name)
            if key is None:
                key = self.keys.setdefault(name, len(self.keys))
            self.batch.append((dev, start, start + dur, True, key, None, None))
        else:
            self.batch.append((dev, start, start + dur, False, None, *kind))
        if len(self.batch) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        self.db.executemany("INSERT INTO iv VALUES (?,?,?,?,?,?,?)", self.batch)
        self.batch.clear()


class _Plane:
    """One GPU plane's metadata: stat names, event names, and the few stats that say which op ran."""

    def __init__(self, header: Message, dev: int) -> None:
        self.dev = dev
        self.stat_names = {k: v.name for k, v in header.stat_metadata.items()}
        self.wanted = {k: n for k, n in self.stat_names.items() if n in _WANTED}
        self.events = {k: (v.name or v.display_name, self.stats(v.stats)) for k, v in header.event_metadata.items()}
        self.op_cache: dict[tuple[tuple[str, object], ...], tuple[str, str] | None] = {}  # by the event's stats
        # (event metadata, memcpy details?, memset details?) → copy_kind's answer
        self.kind_cache: dict[tuple[int, bool, bool], tuple[str, str] | None] = {}

    def stats(self, stats: Message) -> dict[str, object]:
        """The wanted stats of an event (runs once per event: one dict lookup per stat for the others)."""
        out: dict[str, object] = {}
        wanted = self.wanted
        for st in stats:
            name = wanted.get(st.metadata_id)
            if name is not None:
                which = st.WhichOneof("value")
                v = getattr(st, which) if which else ""
                out[name] = self.stat_names.get(v, "") if which == "ref_value" else v
        return out

    def device(self, header: Message) -> Gpu:
        plane = {self.stat_names.get(s.metadata_id): getattr(s, s.WhichOneof("value") or "int64_value")
                 for s in header.stats}
        return Gpu(self.dev, None, plane.get("compute_cap_major"), plane.get("compute_cap_minor"),
                      plane.get("core_count"))


def _fold(agg: _Agg, plane: _Plane, line_ts: int, events: Message) -> None:
    """Aggregate a chunk of one stream's events: this loop runs once per kernel launch."""
    dev = plane.dev
    lo, hi = agg.span
    windowed = agg.span != EVERYTHING
    for ev in events:
        name, md_stats = plane.events.get(ev.metadata_id, ("", {}))
        if ev.stats:
            stats = plane.stats(ev.stats)
            if md_stats:
                stats = {**md_stats, **stats}
        else:
            stats = md_stats
        key = (ev.metadata_id, "memcpy_details" in stats, "memset_details" in stats)
        kind = plane.kind_cache[key] if key in plane.kind_cache else \
            plane.kind_cache.setdefault(key, copy_kind(name, stats))
        dur = (ev.duration_ps + 500) // 1000
        n = ev.num_occurrences if ev.WhichOneof("data") == "num_occurrences" else 1
        if not 0 <= dur <= MAX_DURATION_NS:  # a damaged clock: counted, without its time (readers/_durations.py)
            dur = None
        start = line_ts + ev.offset_ps // 1000
        if windowed and not (n == 1 and lo <= start < hi):
            pass  # outside the window (or not placed in time): only its interval, for the busy time cut at the edges
        elif kind is None:
            s = agg.kernels.get((dev, name))
            if s is None or dur is None or s[2] is None:
                agg.kernels[(dev, name)] = fold(s, dur, n)
                agg.kernel_time.bad += dur is None
            else:
                s[0] += n; s[1] += dur; s[2] = min(s[2], dur); s[3] = max(s[3], dur)
            okey = tuple(stats.items())
            op = plane.op_cache[okey] if okey in plane.op_cache else plane.op_cache.setdefault(okey, op_of(stats))
            agg.with_op += op is not None
            o = agg.ops.setdefault((*(op or NO_OP), name), [0, 0])
            o[0] += n; o[1] += dur or 0
        elif kind[0] != "other":
            m = agg.mem.setdefault((dev, *kind), [0, 0, 0])
            m[0] += n; m[1] += dur or 0; m[2] += copy_bytes(stats)
            agg.mem_time.bad += dur is None
        if n == 1 and dur is not None and abs(start) < _MAX_TS_NS:
            agg.interval(dev, start, dur, kind, name)


def _line(buf: wire.Buf, start: int, end: int, S: SimpleNamespace,
          wanted: Callable[[int | None, str], bool]) -> Iterator[tuple[int, Message]]:
    """(the line's timestamp, a chunk of its events) of a line that is wanted (by its id and name)."""
    line_id, name, ts, first = None, "", 0, None
    for number, kind, tag, s, e in wire.fields(buf, start, end):
        if number == 4:
            first = tag
            break
        if number == 1 and kind == wire.VARINT:
            line_id = _signed(wire.varint(buf, s, e)[0])
        elif number == 2 and kind == wire.LEN:
            name = wire.text(buf, s, e)
        elif number == 3 and kind == wire.VARINT:
            ts = _signed(wire.varint(buf, s, e)[0])
    if first is None or not wanted(line_id, name):
        return
    # Events are contiguous (field 4, repeated); any XLine-shaped run of them parses as an XLine of its own.
    chunk_start, chunk_end = first, first
    for number, _kind, tag, _s, e in wire.fields(buf, first, end):
        if number != 4:
            continue
        if tag != chunk_end or e - chunk_start > _CHUNK:
            yield ts, S.XLine.FromString(bytes(buf[chunk_start:chunk_end])).events
            chunk_start = tag
        chunk_end = e
    yield ts, S.XLine.FromString(bytes(buf[chunk_start:chunk_end])).events


def _plane(buf: wire.Buf, start: int, end: int, agg: _Agg, S: SimpleNamespace) -> None:
    name, header, lines = _parts(buf, start, end)
    dev = gpu_ordinal(name)
    if dev is None:
        return  # host, TPU and metadata planes: read for their steps alone (_host)
    parsed = S.XPlane.FromString(header)
    plane = _Plane(parsed, dev)
    agg.devices[dev] = plane.device(parsed)
    for s, e in lines:
        for ts, events in _line(buf, s, e, S, is_stream):
            _fold(agg, plane, ts, events)


def _host(buf: wire.Buf, start: int, end: int, marks: list[tuple[str, int, int, int]], S: SimpleNamespace) -> None:
    """The events of a host plane that carry a step number (StepTraceAnnotation); none parsed when the plane
    names no step_num stat."""
    _name, header_bytes, lines = _parts(buf, start, end)
    header = S.XPlane.FromString(header_bytes)
    ids = {k for k, v in header.stat_metadata.items() if v.name == psteps.STEP_NUM}
    if not ids:
        return
    names = {k: v.name or v.display_name for k, v in header.event_metadata.items()}
    for s, e in lines:
        for ts, events in _line(buf, s, e, S, lambda _i, _n: True):
            for ev in events:
                for st in ev.stats:
                    if st.metadata_id in ids:
                        which = st.WhichOneof("value")
                        n = psteps.step_number(getattr(st, which) if which else None)
                        if n is not None and ev.WhichOneof("data") != "num_occurrences":
                            at = ts + ev.offset_ps // 1000
                            marks.append((names.get(ev.metadata_id, ""), n, at, at + ev.duration_ps // 1000))
                        break


def _parts(buf: wire.Buf, start: int, end: int) -> tuple[str, bytes, list[tuple[int, int]]]:
    """A plane's name, its header (every field but its lines: an XPlane of its own) and its lines' byte ranges."""
    name, header_parts, lines = "", [], []
    for number, kind, tag, s, e in wire.fields(buf, start, end):
        if number == 3:
            lines.append((s, e))
            continue
        if number == 2 and kind == wire.LEN:
            name = wire.text(buf, s, e)
        header_parts.append(bytes(buf[tag:e]))
    return name, b"".join(header_parts), lines


def _plane_name(buf: wire.Buf, start: int, end: int) -> str:
    for number, kind, _tag, s, e in wire.fields(buf, start, end):
        if number == 2 and kind == wire.LEN:
            return wire.text(buf, s, e)
    return ""


def _scan(path: Path, window: Window | None, origin: int | None = None) -> tuple[_Agg, list[str], list[Range]]:
    """Walk the XSpace: its host planes' step marks first (a --steps window is cut by them), then its GPU planes.
    Returns what was kept, the profiler's own error messages and the step ranges."""
    from nvprof_wrap.readers._xplane_schema import schema  # protobuf: imported by the reading of an XSpace only

    S = schema()
    errors: list[str] = []
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        planes: list[tuple[str, int, int]] = []
        for number, kind, _tag, s, e in wire.fields(buf, 0, len(buf)):
            if number == 1 and kind == wire.LEN:
                planes.append((_plane_name(buf, s, e), s, e))
            elif number == 2 and kind == wire.LEN:
                errors.append(wire.text(buf, s, e))
        gpus = [name for name, _s, _e in planes if gpu_ordinal(name) is not None]
        if len(set(gpus)) < len(gpus):  # one profile holds each device once: two XSpaces joined (cat a b)
            twice = sorted({n for n in gpus if gpus.count(n) > 1})
            raise BadInput(path, f"holds the plane {twice[0]} {gpus.count(twice[0])} times: one profile has each "
                                 "device once (two profiles joined into one file?)")
        marks: list[tuple[str, int, int, int]] = []
        for name, s, e in planes:
            if name.endswith("host:CPU"):
                _host(buf, s, e, marks, S)
        ranges = psteps.pick(marks)
        agg = _Agg(_span(window, ranges, origin))
        try:
            agg.planes = [name for name, _s, _e in planes]
            for name, s, e in planes:
                if gpu_ordinal(name) is not None:
                    _plane(buf, s, e, agg, S)
            agg.flush()
        except BaseException:
            agg.db.close()
            raise
    finally:
        buf.close()
    return agg, errors, ranges


def _span(window: Window | None, ranges: list[Range], origin: int | None) -> tuple[int, int]:
    """[lo, hi) of what a window keeps (timeline/window.py); origin: the first GPU activity (for --window)."""
    if window is None or window.cuts_only:  # a capture window's cut alone: nsys's (readers.CUT), read whole
        return EVERYTHING
    if window.steps is not None:
        return step_bounds(window.steps, ranges)
    return bounds(window, origin, ())


def read(path: Path, window: Window | None = None) -> Capture:
    try:
        if window is not None and window.seconds is not None:  # counted from the first GPU activity: a first walk
            first, _errors, _ranges = _scan(path, None)
            try:
                origin = first.db.execute("SELECT MIN(start) FROM iv WHERE k = 1 OR kind != 'other'").fetchone()[0]
            finally:
                first.db.close()
            agg, errors, ranges = _scan(path, window, origin)
        else:
            agg, errors, ranges = _scan(path, window)
    except (ValueError, DecodeError, OSError) as e:
        raise BadInput(path, f"not a readable XSpace (.xplane.pb) file ({type(e).__name__}: {e})") from None
    try:
        activity = tuple(Activity(None, dev, a, b, busy)
                         for _, dev, a, b, busy in busy_time(agg.db, [("iv", "0", "dev", "k")], agg.span))
        kernels = merge_kernels(KernelAgg(None, dev, demangle(name), *s) for (dev, name), s in agg.kernels.items())
        names = {key: name for name, key in agg.keys.items()}
        series, series_notes = psteps.measure(agg.db, ranges, names, sum(k.launches for k in kernels), agg.span)
    except (ValueError, DecodeError, OSError) as e:
        raise BadInput(path, f"not a readable XSpace (.xplane.pb) file ({type(e).__name__}: {e})") from None
    finally:
        agg.db.close()
    memops = merge_memops(MemAgg(None, dev, kind, d, *s) for (dev, kind, d), s in agg.mem.items())
    if not kernels:
        if agg.span != EVERYTHING:  # nothing started in the window: readers.read says so
            return Capture(str(path), "xplane", (), memops)
        _nothing(path, agg, errors)
        return Capture(str(path), "xplane", (), memops, notes=(
            f"XSpace without a GPU plane (planes: {', '.join(agg.planes) or 'none'}): the job ran on the CPU",))
    ops = tuple(OpAgg(None, scope, op, demangle(name), n, tot) for (scope, op, name), (n, tot) in agg.ops.items()) \
        if agg.with_op else ()
    return Capture(str(path), "xplane", kernels, memops, activity, tuple(agg.devices[d] for d in sorted(agg.devices)),
                   ops=_merge_ops(ops), notes=agg.kernel_time.notes() + agg.mem_time.notes() + series_notes,
                   series=series)


def _nothing(path: Path, agg: _Agg, errors: list[str]) -> None:
    """A capture that holds GPU planes, or profiler errors, but no kernel is bad input, said in one line."""
    gpus = [p for p in agg.planes if gpu_ordinal(p) is not None]
    copies = sum(s[0] for s in agg.mem.values())
    if gpus:
        raise BadInput(path, f"XSpace with GPU planes ({', '.join(gpus)}) but no kernel on their streams "
                             f"({copies} copy/set events)"
                             + (f"; profiler errors: {'; '.join(errors)[:200]}" if errors else ""))
    if errors:
        raise BadInput(path, f"XSpace without GPU events; the profiler reported: {'; '.join(errors)[:240]}")


def _merge_ops(ops: tuple[OpAgg, ...]) -> tuple[OpAgg, ...]:
    merged: dict[tuple[str, str, str], list[int]] = {}  # (scope, op, name) → [launches, ns]
    for o in ops:
        m = merged.setdefault((o.scope, o.op, o.name), [0, 0])
        m[0] += o.launches; m[1] += o.total_ns
    return tuple(OpAgg(None, s, op, n, a, t) for (s, op, n), (a, t) in merged.items())
