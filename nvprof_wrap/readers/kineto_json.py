"""PyTorch profiler / Kineto Chrome-trace JSON (``.json`` or ``.json.gz``), streamed with ijson.

GPU events carry ``cat`` kernel / gpu_memcpy / gpu_memset (older traces: Kernel / Memcpy / Memset),
``dur`` and ``ts`` in microseconds, and the device in ``args.device`` (``pid`` is the device for
GPU rows). Only aggregates per (device, name) are kept; intervals for the busy-time union go to a
temporary SQLite table, not to Python lists.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import ijson

from nvprof_wrap.demangle import demangle
from nvprof_wrap.errors import BadInput
from nvprof_wrap.limits import MAX_DURATION_NS, MAX_JSON_STRING_BYTES
from nvprof_wrap.model import Activity, Capture, Device, KernelAgg, MemAgg, OpAgg, Process, merge_kernels
from nvprof_wrap.readers._bounded import open_json
from nvprof_wrap.readers._durations import Durations
from nvprof_wrap.readers._head import Head
from nvprof_wrap.readers._nvtx import attribute
from nvprof_wrap.readers._sqlite import busy_time
from nvprof_wrap.readers._vendor import ROCM_KEYS, refuse_other_vendor

KERNEL_CATS = {"kernel", "Kernel"}
MEMCPY_CATS = {"gpu_memcpy", "Memcpy"}
MEMSET_CATS = {"gpu_memset", "Memset"}
RANGE_CATS = {"cpu_op", "Operator", "user_annotation"}  # CPU-side ops and record_function ranges
RUNTIME_CATS = {"cuda_runtime", "Runtime"}
HOST_CATS = RUNTIME_CATS | {"cpu_op", "Operator"}
GPU_CATS = KERNEL_CATS | MEMCPY_CATS | MEMSET_CATS
_BATCH = 20000
_NO_MIN = 1 << 63
_NUMBER = (int, float)
_MAX_DUR_US, _MAX_TS_US = MAX_DURATION_NS / 1000, 2**62 / 1000


def _ns(us: object) -> int | None:
    """Microseconds (a number, or a number in a string) → integer ns; None when it is not a finite number or not
    a time SQLite can hold (beyond ±2^62 ns, 146 years: start + duration must still fit)."""
    try:
        ns = float(us) * 1000  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return int(ns) if abs(ns) < 2**62 else None  # also False for nan


def _direction(name: str) -> str:
    for d in ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP"):
        if d in name:
            return d
    return "other"


class _Agg:
    """Running aggregates: dicts keyed by distinct names, and a temp table of intervals."""

    def __init__(self) -> None:
        self.kernels: dict[tuple, list[int]] = {}
        self.mem: dict[tuple, list[int]] = {}
        self.host_pid: int | None = None
        self.ranges = 0  # CPU op / annotation ranges seen: a second pass attributes kernels to them
        self.gpu_pids: set = set()  # processes a process_name event calls a GPU: their events are GPU work
        self.on_gpu = 0  # events on those processes that no category above made a kernel or a copy
        self.db = sqlite3.connect("")  # a private temporary on-disk database: memory stays flat with N
        self.db.execute('CREATE TABLE iv(pid, dev, start INTEGER, "end" INTEGER)')
        self.batch: list[tuple] = []
        self.kernel_time, self.mem_time = Durations("kernel"), Durations("memcpy/memset")

    def add(self, ev: dict) -> None:
        cat = ev.get("cat")
        if cat not in GPU_CATS:  # most events are host-side: leave them after one lookup
            if ev.get("ph") == "M" and ev.get("name") == "process_name" and "GPU" in str((ev.get("args") or {}).get("name")):
                self.gpu_pids.add(ev.get("pid"))
            elif ev.get("pid") in self.gpu_pids:
                self.on_gpu += 1
            if self.host_pid is None and cat in HOST_CATS and isinstance(ev.get("pid"), int):
                self.host_pid = ev["pid"]
            if cat in RANGE_CATS:
                self.ranges += 1
            return
        args = ev.get("args") or {}
        dev = args.get("device", ev.get("pid")) if isinstance(args, dict) else ev.get("pid")
        dev = dev if isinstance(dev, int) else None
        # Numbers in range take the short way (this runs once per GPU event); anything else is checked and counted.
        t, d, name = ev.get("ts"), ev.get("dur"), str(ev.get("name", ""))
        start = int(t * 1000) if type(t) in _NUMBER and -_MAX_TS_US < t < _MAX_TS_US else _ns(t)
        if cat in KERNEL_CATS:
            dur = int(d * 1000) if type(d) in _NUMBER and 0 <= d <= _MAX_DUR_US else self.kernel_time.ns(_ns(d))
            s = self.kernels.get((dev, name))
            if s is None:
                s = self.kernels[(dev, name)] = [0, 0, _NO_MIN, -1, 0]
            s[0] += 1  # inline: this runs once per kernel launch
            if dur is not None:
                s[1] += dur
                s[2] = min(s[2], dur)
                s[3] = max(s[3], dur)
        else:
            memcpy = cat in MEMCPY_CATS
            dur = int(d * 1000) if type(d) in _NUMBER and 0 <= d <= _MAX_DUR_US else self.mem_time.ns(_ns(d))
            key = (dev, "memcpy" if memcpy else "memset", _direction(name) if memcpy else "")
            nbytes = args.get("bytes", 0) if isinstance(args, dict) else 0
            s = self.mem.get(key)
            if s is None:
                s = self.mem[key] = [0, 0, 0]
            s[0] += 1; s[1] += dur or 0; s[2] += int(nbytes or 0)
        if start is not None and dur is not None:
            self.batch.append((0, dev, start, start + dur))
        if len(self.batch) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        self.db.executemany("INSERT INTO iv VALUES (?,?,?,?)", self.batch)
        self.batch.clear()


_HEADER_KEYS = ("deviceProperties", "distributedInfo", *ROCM_KEYS)


def _header(path: Path, tail: bytes) -> dict:
    """deviceProperties and distributedInfo: usually written before traceEvents, so one short parse
    that stops at traceEvents finds them; otherwise in the last 256 KiB of the stream (``tail``)."""
    found: dict = {}
    with open_json(path) as f:
        builders: dict[str, ijson.ObjectBuilder] = {}
        for prefix, event, value in ijson.parse(f, use_float=True):
            top = prefix.split(".", 1)[0]
            if top == "traceEvents":
                break
            if top in _HEADER_KEYS:
                b = builders.setdefault(top, ijson.ObjectBuilder())
                b.event(event, value)
        found = {k: b.value for k, b in builders.items()}
    missing = [k for k in _HEADER_KEYS if k not in found]
    if missing:
        found.update(_tail_keys(tail, missing))
    return found


def _tail_keys(tail: bytes, keys: list[str]) -> dict:
    """Keys written after traceEvents (inference_rank_1 puts distributedInfo last): looked for in the last
    256 KiB of the stream, which the events' pass kept, instead of parsing the whole trace a second time."""
    text, out = tail.decode("utf-8", errors="replace"), {}
    decoder = json.JSONDecoder()
    for key in keys:
        at = text.rfind(f'"{key}"')
        colon = text.find(":", at + len(key) + 2) if at >= 0 else -1
        if colon < 0:
            continue
        try:
            out[key] = decoder.raw_decode(text, colon + 1 + (len(text[colon + 1:]) - len(text[colon + 1:].lstrip())))[0]
        except ValueError:
            continue
    return out


def _devices(props: list) -> tuple[Device, ...]:
    return tuple(Device(int(p.get("id", i)), p.get("name"), p.get("computeMajor"), p.get("computeMinor"),
                        p.get("numSms")) for i, p in enumerate(props or []) if isinstance(p, dict))


FORMAT = "kineto-json"


def sniff(head: Head) -> bool:
    return bool(head.json_start) and (b"traceEvents" in head.raw or head.json_start == b"[")


def read(path: Path) -> Capture:
    agg = _Agg()
    try:
        with open_json(path) as f:
            for ev in ijson.items(f, "traceEvents.item", use_float=True):
                if isinstance(ev, dict):
                    agg.add(ev)
            tail, cut = f.tail(), f.cut_strings
        agg.flush()
        header = _header(path, tail)
        refuse_other_vendor(path, header)
    except (ijson.JSONError, OSError, EOFError, ValueError, TypeError) as e:
        raise BadInput(path, f"not a readable Kineto/Chrome trace JSON ({type(e).__name__}: {e})") from None
    pid = agg.host_pid
    if not agg.kernels and agg.on_gpu:
        agg.db.close()
        raise BadInput(path, f"Chrome trace with {agg.on_gpu} events on GPU processes but none a kernel this reader "
                             "knows (no 'cat' kernel / Kernel): not a PyTorch profiler trace")
    kernels = merge_kernels(KernelAgg(pid, dev, demangle(name), s[0], s[1] if s[3] >= 0 else None,
                                      s[2] if s[3] >= 0 else None, s[3] if s[3] >= 0 else None)
                            for (dev, name), s in agg.kernels.items())
    memops = tuple(MemAgg(pid, dev, kind, d, s[0], s[1], s[2]) for (dev, kind, d), s in agg.mem.items())
    activity = tuple(Activity(pid, dev, a, b, busy) for _, dev, a, b, busy
                     in busy_time(agg.db, [("iv", "pid", "dev")]))
    agg.db.close()
    try:
        ops = _ops(path, pid) if agg.ranges else ()
    except (ijson.JSONError, OSError, EOFError, ValueError, TypeError) as e:
        raise BadInput(path, f"not a readable Kineto/Chrome trace JSON ({type(e).__name__}: {e})") from None
    dist = header.get("distributedInfo") or {}
    rank = dist.get("rank") if isinstance(dist, dict) else None
    notes = agg.kernel_time.notes() + agg.mem_time.notes() + \
        ((f"{cut:,} JSON string(s) longer than {MAX_JSON_STRING_BYTES >> 20} MiB were cut there",) if cut else ())
    return Capture(str(path), "kineto-json", kernels, memops, activity, _devices(header.get("deviceProperties")),
                   (Process(pid, None, rank),) if pid is not None else (), ops=ops, notes=notes)


def _ops(path: Path, pid: int | None) -> tuple[OpAgg, ...]:
    """Which ops launched which kernels: a second streamed pass, only for traces with CPU op ranges (the
    first pass counted them, so traces without any pay nothing). Each kernel's correlation id leads to the
    runtime call that launched it (thread, CPU time); the op ranges open on that thread at that time are the
    op and its scope — the same attribution as for NVTX ranges (readers/_nvtx.py). Threads are keyed by
    pid and tid. Rows go to a temporary on-disk database, not to Python lists."""
    db = sqlite3.connect("")
    try:
        db.execute("CREATE TABLE rng(tid TEXT, s INTEGER, e INTEGER, name TEXT)")
        db.execute("CREATE TABLE rt(corr INTEGER, tid TEXT, t INTEGER)")
        db.execute("CREATE TABLE kl(corr INTEGER, dev INTEGER, name TEXT, dur INTEGER)")
        batches: dict[str, list[tuple]] = {"rng": [], "rt": [], "kl": []}
        with open_json(path) as f:
            for ev in ijson.items(f, "traceEvents.item", use_float=True):
                row = _op_row(ev) if isinstance(ev, dict) else None
                if row is not None:
                    batch = batches[row[0]]
                    batch.append(row[1])
                    if len(batch) >= _BATCH:
                        _insert(db, row[0], batch)
        for table, batch in batches.items():
            _insert(db, table, batch)
        rows = attribute(db, "SELECT tid, s, e, name FROM rng",
                         f"""SELECT {pid if pid is not None else 'NULL'} AS pid, k.dev AS dev, r.tid AS tid, r.t AS t,
                                    k.name AS key, k.dur AS dur
                             FROM kl k LEFT JOIN rt r ON r.corr = k.corr {{rslice}} {{slice}}""")
        return tuple(OpAgg(p, scope, op, demangle(name or "<unnamed kernel>"), n, tot)
                     for p, _dev, scope, op, name, n, tot in rows)
    finally:
        db.close()


def _op_row(ev: dict) -> tuple[str, tuple] | None:
    cat = ev.get("cat")
    if cat not in RANGE_CATS and cat not in RUNTIME_CATS and cat not in KERNEL_CATS:
        return None
    args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
    t, dur = _ns(ev.get("ts")), _ns(ev.get("dur"))
    if dur is not None and not 0 <= dur <= MAX_DURATION_NS:
        dur = None  # counted and noted by the first pass
    if cat in KERNEL_CATS:
        dev = args.get("device", ev.get("pid"))
        return "kl", (args.get("correlation"), dev if isinstance(dev, int) else None, str(ev.get("name", "")), dur)
    tid = f"{ev.get('pid')}/{ev.get('tid')}"
    if cat in RUNTIME_CATS:
        return "rt", (args.get("correlation"), tid, t)
    if ev.get("ph") != "X" or t is None or dur is None:
        return None
    return "rng", (tid, t, t + dur, str(ev.get("name", "")))


def _insert(db: sqlite3.Connection, table: str, batch: list[tuple]) -> None:
    if batch:
        db.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(batch[0]))})", batch)
        batch.clear()
