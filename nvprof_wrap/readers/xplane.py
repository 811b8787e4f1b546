"""XSpace protobuf (``<host>.xplane.pb`` under ``plugins/profile/<run>/``): what TensorFlow ≥ 2.3 and JAX write.

One plane per device (``/device:GPU:N``, with compute capability and SM count in its stats) and one for the host;
in a GPU plane one line per CUDA stream ("Stream #13(Compute)") plus lines derived from them ("TensorFlow Ops",
"XLA Ops", "Steps", …, skipped); each event points at an event metadata (the kernel's name, or MemcpyH2D …) and
carries stats: kernel_details, memcpy_details, and the op that launched it (tf_op, hlo_op / hlo_module,
annotation: readers/_tfop.py).

Bounded: the file is mapped, not read; a wire-format walk (readers/_protowire.py) cuts it into planes and lines
and skips host planes unparsed; a GPU plane's metadata is parsed once, its lines in chunks of events of at most
_CHUNK bytes, each chunk parsed by protobuf (readers/_xplane_schema.py) and folded into aggregates per
(device, kernel name) and per op. GPU intervals go to a temporary SQLite table for the busy-time union.
"""
from __future__ import annotations

import mmap
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from google.protobuf.message import DecodeError

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Activity, Capture, Gpu, KernelAgg, MemAgg, OpAgg, merge_kernels, merge_memops
from nvprof_wrap.readers import _protowire as wire
from nvprof_wrap.readers._durations import Durations, fold
from nvprof_wrap.readers._head import Head
from nvprof_wrap.readers._tfop import copy_bytes, copy_kind, gpu_ordinal, is_stream, op_of
from nvprof_wrap.readers._xplane_schema import schema
from nvprof_wrap.system.limits import MAX_DURATION_NS
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline.busy import busy_time

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

    def __init__(self) -> None:
        self.kernels: dict[tuple[int, str], list[Any]] = {}  # (device, name) → _durations.fold's stats
        self.mem: dict[tuple[int, str, str], list[int]] = {}  # (device, kind, direction) → [n, ns, bytes]
        self.ops: dict[tuple[str, str, str], list[int]] = {}  # (scope, op, name) → [launches, ns]
        self.with_op = 0
        self.planes: list[str] = []
        self.devices: dict[int, Gpu] = {}
        self.copies = 0
        self.kernel_time, self.mem_time = Durations("kernel"), Durations("memcpy/memset")
        self.db = sqlite3.connect("")
        self.db.execute('CREATE TABLE iv(dev, start INTEGER, "end" INTEGER, k INTEGER)')
        self.batch: list[tuple[int, int, int, bool]] = []

    def interval(self, dev: int, start: int, dur: int, kernel: bool) -> None:
        self.batch.append((dev, start, start + dur, kernel))
        if len(self.batch) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        self.db.executemany("INSERT INTO iv VALUES (?,?,?,?)", self.batch)
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
        if kind is None:
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
        if n == 1 and dur is not None and abs(start := line_ts + ev.offset_ps // 1000) < _MAX_TS_NS:
            agg.interval(dev, start, dur, kind is None)


def _line(buf: wire.Buf, start: int, end: int, agg: _Agg, plane: _Plane, S: SimpleNamespace) -> None:
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
    if first is None or not is_stream(line_id, name):
        return
    # Events are contiguous (field 4, repeated); any XLine-shaped run of them parses as an XLine of its own.
    chunk_start, chunk_end = first, first
    for number, _kind, tag, _s, e in wire.fields(buf, first, end):
        if number != 4:
            continue
        if tag != chunk_end or e - chunk_start > _CHUNK:
            _fold(agg, plane, ts, S.XLine.FromString(bytes(buf[chunk_start:chunk_end])).events)
            chunk_start = tag
        chunk_end = e
    _fold(agg, plane, ts, S.XLine.FromString(bytes(buf[chunk_start:chunk_end])).events)


def _plane(buf: wire.Buf, start: int, end: int, agg: _Agg, S: SimpleNamespace) -> None:
    name, header_parts, lines = "", [], []
    for number, kind, tag, s, e in wire.fields(buf, start, end):
        if number == 3:
            lines.append((s, e))
            continue
        if number == 2 and kind == wire.LEN:
            name = wire.text(buf, s, e)
        header_parts.append(bytes(buf[tag:e]))
    agg.planes.append(name)
    dev = gpu_ordinal(name)
    if dev is None:
        return  # host, TPU and metadata planes: never parsed
    header = S.XPlane.FromString(b"".join(header_parts))
    plane = _Plane(header, dev)
    agg.devices[dev] = plane.device(header)
    for s, e in lines:
        _line(buf, s, e, agg, plane, S)


def _scan(path: Path, agg: _Agg) -> list[str]:
    """Walk the XSpace; returns the profiler's own error messages."""
    S = schema()
    errors: list[str] = []
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        for number, kind, _tag, s, e in wire.fields(buf, 0, len(buf)):
            if number == 1 and kind == wire.LEN:
                _plane(buf, s, e, agg, S)
            elif number == 2 and kind == wire.LEN:
                errors.append(wire.text(buf, s, e))
        agg.flush()
    finally:
        buf.close()
    return errors


def read(path: Path) -> Capture:
    agg = _Agg()
    try:
        errors = _scan(path, agg)
        activity = tuple(Activity(None, dev, a, b, busy)
                         for _, dev, a, b, busy in busy_time(agg.db, [("iv", "0", "dev", "k")]))
    except (ValueError, DecodeError, OSError) as e:
        raise BadInput(path, f"not a readable XSpace (.xplane.pb) file ({type(e).__name__}: {e})") from None
    finally:
        agg.db.close()
    kernels = merge_kernels(KernelAgg(None, dev, demangle(name), *s) for (dev, name), s in agg.kernels.items())
    memops = merge_memops(MemAgg(None, dev, kind, d, *s) for (dev, kind, d), s in agg.mem.items())
    if not kernels:
        _nothing(path, agg, errors)
        return Capture(str(path), "xplane", (), memops, notes=(
            f"XSpace without a GPU plane (planes: {', '.join(agg.planes) or 'none'}): the job ran on the CPU",))
    ops = tuple(OpAgg(None, scope, op, demangle(name), n, tot) for (scope, op, name), (n, tot) in agg.ops.items()) \
        if agg.with_op else ()
    return Capture(str(path), "xplane", kernels, memops, activity, tuple(agg.devices[d] for d in sorted(agg.devices)),
                   ops=_merge_ops(ops), notes=agg.kernel_time.notes() + agg.mem_time.notes())


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
