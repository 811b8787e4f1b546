"""CUPTI activity buffers read in bulk: libcupti's buffer callbacks registered through ctypes, each completed
buffer walked once and its fields gathered with numpy, by record kind (layouts.py says where they are).

cupti-python hands over one Python object per record, which the tracer then converted: about 20 µs per kernel
launch measured on an H200. Here a buffer costs a short Python walk over its record headers (runs of records of
one kind are skipped in one numpy step), one numpy gather per field and one string read per distinct name
pointer; nothing is created per record. The output is a list of *items* that capture_file.Writer writes (in
this process or in the writer process, sink.py).

Runs inside the user's process: never raises out of a CUPTI callback (cupti_trace.py catches everything).
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from nvprof_wrap.tracer import layouts as L
from nvprof_wrap.tracer.ccupti import LIBRARY_ATTR
from nvprof_wrap.tracer.items import DeviceRow, Item

BUFFER_BYTES = 8 * 1024 * 1024  # what NVIDIA's samples ask for
MAX_BUFFERS = 8  # at most 64 MiB in CUPTI's hands or being written; past that CUPTI drops records (counted)
GALLOP_AFTER = 8  # records of one kind in a row before the rest of the run is found with numpy (stepwise walk)
FAST_WALK = True  # False: every buffer walked stepwise (benchmarks/window_ab.py compares the two in one process)

REQUESTED = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                             ctypes.POINTER(ctypes.c_size_t))
COMPLETED = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                             ctypes.c_size_t)


class RawUnavailable(Exception):
    """The raw path cannot be used here (the message says why); the tracer uses cupti-python's objects."""


# ------------------------------------------------------------------------------------------ the library

def open_library(cupti: Any, path: str | None) -> Any:
    """The libcupti cupti-python uses (path: as found in /proc/self/maps), through ctypes. RTLD_NOLOAD: the
    very copy already loaded, never a second one (two libcuptis in one process would not share their state)."""
    lib = getattr(cupti, LIBRARY_ATTR, None)
    if lib is None:
        if path is None:
            raise RawUnavailable("the loaded libcupti was not found in /proc/self/maps")
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError as e:
            raise RawUnavailable(f"cannot open {path} ({e})") from e
    try:
        lib.cuptiActivityGetNextRecord.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                                   ctypes.POINTER(ctypes.c_void_p)]
        lib.cuptiActivityRegisterCallbacks.argtypes = [REQUESTED, COMPLETED]
        lib.cuptiActivityGetNumDroppedRecords.argtypes = [ctypes.c_void_p, ctypes.c_uint32,
                                                          ctypes.POINTER(ctypes.c_size_t)]
        lib.cuptiGetVersion.argtypes = [ctypes.POINTER(ctypes.c_uint32)]
    except AttributeError as e:
        raise RawUnavailable(f"libcupti lacks a function ({e})") from e
    return lib


def api_version(lib: Any) -> int | None:
    """CUPTI_API_VERSION of the loaded library (28 = CUDA 12.9 Update 1, 130001 = 13.0 with update 1…)."""
    v = ctypes.c_uint32()
    return int(v.value) if lib.cuptiGetVersion(ctypes.byref(v)) == 0 else None


def record_sizes(lib: Any, kinds: list[int]) -> dict[int, int]:
    """The record size libcupti uses for each kind, asked of libcupti itself before any record exists: in a
    scratch buffer holding the kind at every 8-byte slot, cuptiActivityGetNextRecord's second record starts
    one record after the first. Raises RawUnavailable for a kind whose size is not a struct layouts.py knows."""
    sizes = {}
    for kind in kinds:
        scratch = (ctypes.c_uint64 * 128)(*([kind] * 128))  # 1 KiB, 8-aligned; little-endian: kind, then 0
        rec, starts = ctypes.c_void_p(), []
        for _ in range(2):
            status = lib.cuptiActivityGetNextRecord(scratch, ctypes.sizeof(scratch), ctypes.byref(rec))
            if status != 0 or rec.value is None:
                raise RawUnavailable(f"libcupti does not step over kind {kind} records (status {status})")
            starts.append(rec.value)
        size = starts[1] - starts[0]
        if L.struct_version(kind, size) is None:
            raise RawUnavailable(f"kind {kind} records are {size} bytes, a struct version not checked here")
        sizes[kind] = size
    return sizes


def walk_with_library(lib: Any, address: int, valid: int) -> list[tuple[int, int]]:
    """(offset, kind) of every record, stepped by libcupti itself: the slow, authoritative walk, used when the
    fast one meets something unexpected."""
    out, rec = [], ctypes.c_void_p()
    while lib.cuptiActivityGetNextRecord(address, valid, ctypes.byref(rec)) == 0 and rec.value is not None:
        offset = rec.value - address
        out.append((offset, ctypes.c_uint32.from_address(rec.value).value))
    return out


class BufferPool:
    """The activity buffers handed to CUPTI: at most MAX_BUFFERS, reused, so memory stays bounded. When all
    are in use CUPTI gets none and drops records, which it counts (cuptiActivityGetNumDroppedRecords)."""

    def __init__(self, size: int = BUFFER_BYTES, limit: int = MAX_BUFFERS) -> None:
        self.size, self.limit = size, limit
        self.free: list[Any] = []
        self.busy: dict[int, Any] = {}
        self.refused = 0

    def take(self) -> int:
        """Address of a free 8-aligned buffer, or 0 when the limit is reached."""
        if self.free:
            block = self.free.pop()
        elif len(self.busy) < self.limit:
            block = (ctypes.c_uint64 * (self.size // 8))()  # c_uint64: 8-byte aligned
            keep_forever(block)  # CUPTI may still hold it while the interpreter shuts down
        else:
            self.refused += 1
            return 0
        address = ctypes.addressof(block)
        self.busy[address] = block
        return address

    def give_back(self, address: int) -> None:
        block = self.busy.pop(address, None)
        if block is not None:
            self.free.append(block)


def keep_forever(obj: Any) -> None:
    """One reference never given back: memory and callbacks handed to libcupti must outlive interpreter
    shutdown (CUPTI could still flush into a buffer, or call back, while Python tears down)."""
    with contextlib.suppress(Exception):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


# ------------------------------------------------------------------------------------------- parsing

class Strings:
    """Names interned once: text -> id (0 is NULL). New ones are handed to the writer with the buffer."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.new: list[tuple[int, str]] = []

    def ids_of(self, pointers: np.ndarray) -> np.ndarray:
        """Ids of the C strings at these addresses, each distinct address read once per buffer (a pointer is
        not trusted across buffers: a module unloaded in between could free its names)."""
        if not len(pointers):
            return np.zeros(0, np.int64)
        distinct, where = np.unique(pointers, return_inverse=True)
        ids = np.fromiter((self.id_of(_c_string(p)) for p in distinct.tolist()), np.int64, len(distinct))
        return ids[where]

    def id_of(self, text: str | None) -> int:
        if text is None:
            return 0
        found = self.ids.get(text)
        if found is None:
            found = self.ids[text] = len(self.ids) + 1
            self.new.append((found, text))
        return found

    def take_new(self) -> list[tuple[int, str]]:
        new, self.new = self.new, []
        return new


def _c_string(address: int) -> str | None:
    if not address:
        return None
    return ctypes.string_at(address).decode("utf-8", "replace") or None


# Where a record of each kind keeps two timestamps, in 8-byte slots from its start (layouts.py: start and end; a
# marker has one). A position whose kind word names such a kind and whose timestamps lie near the buffer's own
# clock is a candidate record start; walk() checks that the candidates chain from record to record.
_STAMPS = {L.RUNTIME: (1, 2), L.DRIVER: (1, 2), L.KERNEL: (2, 3), L.CONCURRENT_KERNEL: (2, 3), L.MEMCPY: (2, 3),
           L.MEMCPY2: (2, 3), L.MEMSET: (2, 3), L.MARKER: (1, 1)}
_LAST_STAMP = max(slot for slots in _STAMPS.values() for slot in slots)
STAMPS_BEFORE, STAMPS_AFTER = 3600 * 10**9, 7 * 86400 * 10**9  # around the buffer's first timestamp, in ns
FIRST_STAMP_WITHIN = 64  # records stepped from the buffer's start to find its first timestamp


class _Tables:
    """Per kind (indexed by the kind word, clipped): record size in slots, and the slots of its two timestamps
    (0: not a kind walk() finds by candidates — it steps over those one by one)."""

    def __init__(self, sizes: dict[int, int]) -> None:
        top = max(sizes) + 2
        self.top = top - 1  # kind words past the table's end land here: no kind
        self.slots = np.zeros(top, np.int64)
        self.first, self.second = np.zeros(top, np.int64), np.zeros(top, np.int64)
        self.stamped = np.zeros(256, bool)  # by a kind word's first byte: may be a kind with timestamps
        self.runs = self.stepped = 0  # what walks with these tables took whole and stepped alone (benchmarks)
        self.ok = all(size % 8 == 0 and size > 0 for size in sizes.values())
        for kind, size in sizes.items():
            self.slots[kind] = size // 8
            if kind in _STAMPS:
                self.first[kind], self.second[kind] = _STAMPS[kind]
                self.stamped[kind & 0xFF] = True


def walk(mem: np.ndarray, valid: int, sizes: dict[int, int],
         tables: _Tables | None = None) -> dict[int, np.ndarray] | None:
    """Record offsets by kind, in buffer order; None when the headers do not add up (unknown kind, a record running
    past validSize): the caller then walks with libcupti.

    Records sit one after the other, each starting on an 8-byte slot with its kind, so the walk is a chain: the
    next record starts one record size further. Stepping it in Python costs ~0.3 µs a record (RUNTIME and DRIVER
    records, every API call of a windowed process, made that most of the tracer's cost there). Instead: every slot
    whose kind word and timestamps look like a record's is a candidate (numpy, over the whole buffer); a run of
    candidates each one record size after the one before is taken whole once its first is reached; where the chain
    meets a record that is no candidate (a device record, a timestamp of 0), that record is stepped over alone. The
    result is the exact chain from the buffer's start — a false candidate inside a record is never reached, only
    where a reached record's size says the next one starts counts."""
    t = tables or _Tables(sizes)
    if not t.ok or valid % 8 or not FAST_WALK:
        return _walk_stepwise(mem, valid, sizes)
    n = valid // 8
    if n == 0:
        return {}
    slots = mem[:valid].view("<u8")
    kinds = slots.view("<u4")[::2]  # the first 4 bytes of a record are its kind
    ref = _first_stamp(kinds, slots, sizes, n)
    if ref is None:  # no timestamp to find candidates by (none in the first records): the stepwise walk gallops
        return _walk_stepwise(mem, valid, sizes)
    cand, nxt = _candidates(mem, slots, kinds, valid, ref, t)
    ends = np.flatnonzero(nxt[:-1] != cand[1:])  # a run of chained candidates ends at these
    runs: list[np.ndarray] = []
    singles: list[int] = []
    pos, last = 0, len(cand) - 1
    while pos < n:
        i = int(np.searchsorted(cand, pos))
        if i <= last and cand[i] == pos:
            e = int(np.searchsorted(ends, i))
            j = int(ends[e]) if e < len(ends) else last
            runs.append(cand[i:j + 1])
            pos = int(nxt[j])
            continue
        size = sizes.get(int(kinds[pos]))
        if size is None:
            return None
        singles.append(pos)
        pos += size // 8
    if pos != n:
        return None
    t.runs, t.stepped = t.runs + len(runs), t.stepped + len(singles)
    found = np.concatenate([*runs, np.array(singles, np.int64)])
    if singles:  # records stepped alone go back to their place in the buffer
        found.sort()
    of_kind = kinds[found]
    present = np.flatnonzero(np.bincount(np.minimum(of_kind, t.top), minlength=t.top + 1))
    return {int(kind): found[of_kind == kind] * 8 for kind in present if int(kind) in sizes}


def _candidates(mem: np.ndarray, slots: np.ndarray, kinds: np.ndarray, valid: int, ref: int,
                t: _Tables) -> tuple[np.ndarray, np.ndarray]:
    """Slots that look like record starts (kind word of a timestamped kind, both timestamps near ``ref``, the record
    inside the buffer) and that some other candidate ends at, with where each would end."""
    n = len(slots)
    lo, hi = np.uint64(max(ref - STAMPS_BEFORE, 0)), np.uint64(min(ref + STAMPS_AFTER, 2**64 - 1))
    at = np.flatnonzero(t.stamped[mem[:valid:8]])  # by the kind word's first byte (a 256-entry table)
    kk = np.minimum(kinds[at], t.top)
    for stamp in (t.first, t.second):  # the first timestamp leaves few false candidates for the second
        where = at + stamp[kk]
        if len(where) and at[-1] + _LAST_STAMP >= n:  # a candidate in the last slots: its stamps may lie past them
            np.minimum(where, n - 1, out=where)
        a = slots[where]
        ok = a >= lo
        ok &= a <= hi
        at, kk = at[ok], kk[ok]
    nxt = at + t.slots[kk]
    ok = (nxt <= n) & (t.first[kk] > 0)
    cand, nxt = at[ok], nxt[ok]
    # A true record is where the record before it ends; a false candidate (a slot inside a record that looks like
    # one: Kernel's partitionedGlobalCacheRequested is a small number followed by its end and completed timestamps)
    # is almost never where another candidate ends. Keeping only the candidates some candidate ends at leaves runs
    # that break only where the chain really meets a non-candidate (which walk() steps over alone).
    ends_here = np.zeros(n + 1, bool)
    ends_here[nxt] = True
    ends_here[0] = True  # the buffer's first record
    pointed = ends_here[cand]
    return cand[pointed], nxt[pointed]


def _first_stamp(kinds: np.ndarray, slots: np.ndarray, sizes: dict[int, int], n: int) -> int | None:
    """The first plausible timestamp of the buffer (the records' clock), stepping from its start."""
    pos = 0
    for _ in range(FIRST_STAMP_WITHIN):
        if pos >= n:
            return None
        kind = int(kinds[pos])
        size = sizes.get(kind)
        if size is None:
            return None
        stamps = _STAMPS.get(kind)
        if stamps is not None and pos + stamps[1] < n:
            value = int(slots[pos + stamps[0]])
            if 0 < value < 2**63:
                return value
        pos += size // 8
    return None


def _walk_stepwise(mem: np.ndarray, valid: int, sizes: dict[int, int]) -> dict[int, np.ndarray] | None:
    """The walk one record head at a time (the reference walk() is tested against, and what it does where record
    sizes are not whole slots). A Python loop reads record heads one by one until a
    pattern shows, GALLOP_AFTER records of one kind in a row or as many pairs of two kinds alternating (API
    and kernel records); numpy then finds where the pattern ends in a few strided steps."""
    heads = mem[:valid].data.cast("I")  # the first 4 bytes of a record are its kind
    kinds32 = mem[:valid].view("<u4")
    singles: dict[int, list[int]] = {k: [] for k in sizes}
    chunks: dict[int, list[np.ndarray]] = {k: [] for k in sizes}
    pos, prev, prev2, same, alternating = 0, -1, -1, 0, 0
    while pos < valid:
        kind = heads[pos >> 2]
        size = sizes.get(kind)
        if size is None:
            return None
        same = same + 1 if kind == prev else 1
        alternating = alternating + 1 if kind == prev2 and kind != prev else 0
        pattern: tuple[tuple[int, int], ...]
        if same >= GALLOP_AFTER:
            pattern = ((kind, size),)
        elif alternating >= 2 * GALLOP_AFTER:
            pattern = ((kind, size), (prev, sizes[prev]))
        else:
            singles[kind].append(pos)
            prev2, prev, pos = prev, kind, pos + size
            continue
        n = _periods(kinds32, pos, valid, pattern)
        if n == 0:  # the partner record is not there: read this one alone
            singles[kind].append(pos)
            prev2, prev, pos, same, alternating = -1, -1, pos + size, 0, 0
            continue
        stride, at = sum(sz for _, sz in pattern), pos
        for k, sz in pattern:
            if singles[k]:
                chunks[k].append(np.array(singles[k], np.int64))
                singles[k] = []
            chunks[k].append(np.arange(at, pos + n * stride, stride, dtype=np.int64))
            at += sz
        pos, prev, prev2, same, alternating = pos + n * stride, -1, -1, 0, 0
    if pos != valid:
        return None
    out = {}
    for kind in sizes:
        parts = chunks[kind] + ([np.array(singles[kind], np.int64)] if singles[kind] else [])
        if parts:
            out[kind] = np.concatenate(parts) if len(parts) > 1 else parts[0]
    return out


def _periods(kinds32: np.ndarray, pos: int, valid: int, pattern: tuple[tuple[int, int], ...]) -> int:
    """How many whole repeats of the pattern ((kind, size), ...) follow one another from pos. Exact: the record
    at pos is one of the pattern's first kind, so each next head sits where the sizes say; every head of the
    expected kind extends the run."""
    stride = sum(size for _, size in pattern)
    views, at = [], pos
    for kind, size in pattern:
        views.append((kind, kinds32[at >> 2: valid >> 2: stride >> 2]))
        at += size
    total = min(len(v) for _, v in views)
    i, width = 0, 256
    while i < total:
        ok = np.ones(min(width, total - i), bool)
        for kind, view in views:
            ok &= view[i:i + len(ok)] == kind
        bad = np.flatnonzero(~ok)
        if bad.size:
            return i + int(bad[0])
        i += len(ok)
        width *= 4
    return total


def walk_fallback(lib: Any, address: int, valid: int, sizes: dict[int, int]) -> tuple[dict[int, np.ndarray], int]:
    """The slow walk: offsets by kind as libcupti steps them, and the count of records of kinds not read."""
    by_kind: dict[int, list[int]] = {}
    skipped = 0
    for offset, kind in walk_with_library(lib, address, valid):
        if kind in sizes:
            by_kind.setdefault(kind, []).append(offset)
        else:
            skipped += 1
    return {k: np.array(v, np.int64) for k, v in by_kind.items()}, skipped


def gather(mem: np.ndarray, offsets: np.ndarray, field: L.Field) -> np.ndarray:
    """One field of every record at these offsets (fields are naturally aligned: see layouts.py)."""
    dtype = np.dtype(field.dtype)
    column: np.ndarray = mem.view(dtype)[(offsets + field.offset) // dtype.itemsize]  # numpy types a gather as Any
    return column


_CBID = next(f for f in L.API_LAYOUT.fields if f.column == "cbid")
_DEVICE_COLUMN = 2  # device_id is the third column of the kernel, memcpy and memset tables


class Parser:
    """Turns one completed buffer into writer items; keeps the interned names and the devices seen."""

    def __init__(self, lib: Any, sizes: dict[int, int]) -> None:
        self.lib, self.sizes = lib, sizes
        self.strings = Strings()
        self.devices_seen: set[int] = set()
        self.devices_described: set[int] = set()
        self.slow_walks = self.skipped = 0
        # {RUNTIME or DRIVER: the callback ids kept}: where CUPTI records every API call (a windowed process), only
        # the launch calls are written — the records per-callback enabling would have given (cupti_trace.py)
        self.keep_cbids: dict[int, np.ndarray] = {}
        self.tables = _Tables(sizes)
        self._by_kind: dict[int, Callable[[np.ndarray, np.ndarray, int], list[Item]]] = {
            L.KERNEL: self._table, L.CONCURRENT_KERNEL: self._table, L.MEMCPY: self._table,
            L.MEMCPY2: self._table, L.MEMSET: self._table, L.RUNTIME: self._api, L.DRIVER: self._api,
            L.MARKER: self._markers, L.DEVICE: self._devices}

    def parse(self, address: int, valid: int) -> tuple[list[Item], int]:
        """(items, records) of the buffer at address with valid bytes."""
        mem = np.ctypeslib.as_array((ctypes.c_uint8 * valid).from_address(address)) if valid else np.zeros(0, np.uint8)
        offsets = walk(mem, valid, self.sizes, self.tables)
        if offsets is None:
            self.slow_walks += 1
            offsets, skipped = walk_fallback(self.lib, address, valid, self.sizes)
            self.skipped += skipped
        items: list[Item] = []
        for kind in sorted(offsets, key=lambda k: k != L.DEVICE):  # devices first: their names come with them
            items += self._by_kind[kind](mem, offsets[kind], kind)
        new = self.strings.take_new()
        head: list[Item] = [("strings", new)] if new else []
        return head + items, sum(len(o) for o in offsets.values())

    def _table(self, mem: np.ndarray, offsets: np.ndarray, kind: int) -> list[Item]:
        layout = L.LAYOUTS[kind]
        columns: list[np.ndarray] = []
        for field in layout.fields:
            column = gather(mem, offsets, field)
            columns.append(self.strings.ids_of(column) if field.column == "name" else column)
        self.devices_seen.update(np.unique(columns[_DEVICE_COLUMN]).tolist())
        return [("cols", layout.table, columns)]

    def _api(self, mem: np.ndarray, offsets: np.ndarray, kind: int) -> list[Item]:
        keep = self.keep_cbids.get(kind)
        if keep is not None:
            offsets = offsets[np.isin(gather(mem, offsets, _CBID), keep)]
            if not len(offsets):
                return []
        return [("cols", L.API_TABLES[kind], [gather(mem, offsets, f) for f in L.API_LAYOUT.fields])]

    def _markers(self, mem: np.ndarray, offsets: np.ndarray, kind: int) -> list[Item]:
        flags, ts, mid, obj, tid, name, domain = (gather(mem, offsets, f) for f in L.MARKER_LAYOUT.fields)
        thread = np.where((obj == L.OBJECT_KIND_THREAD) | (obj == L.OBJECT_KIND_PROCESS), tid.astype(np.int64), -1)
        return [("markers", [flags, ts, mid, self.strings.ids_of(name), self.strings.ids_of(domain), thread])]

    def _devices(self, mem: np.ndarray, offsets: np.ndarray, kind: int) -> list[Item]:
        at = {f.column: f.offset for f in L.DEVICE_LAYOUT.fields}
        rows: list[DeviceRow] = []
        buf = mem.data
        for off in offsets.tolist():  # one record per device: struct is fine here
            dev, major, minor, sms = (struct.unpack_from("<I", buf, off + at[c])[0]
                                      for c in ("device_id", "cc_major", "cc_minor", "sm_count"))
            name = _c_string(struct.unpack_from("<Q", buf, off + at["name"])[0])
            uuid = bytes(mem[off + at["uuid"]: off + at["uuid"] + 16])
            rows.append((dev, name, major, minor, sms, _uuid_text(uuid)))
            self.devices_described.add(dev)
        return [("rows", "device", rows)]


def _uuid_text(raw: bytes) -> str:
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
