"""PyTorch profiler / Kineto Chrome-trace JSON (``.json`` or ``.json.gz``), streamed with ijson.

GPU events carry ``cat`` kernel / gpu_memcpy / gpu_memset (older traces: Kernel / Memcpy / Memset),
``dur`` and ``ts`` in microseconds, and the device in ``args.device`` (``pid`` is the device for
GPU rows). Only aggregates per (device, name) are kept; intervals for the busy-time union go to a
temporary SQLite table, not to Python lists.
"""
from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import IO

import ijson

from nvprof_wrap.demangle import demangle
from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers._vendor import ROCM_KEYS, refuse_other_vendor
from nvprof_wrap.model import Activity, Capture, Device, KernelAgg, MemAgg, OpAgg, Process, merge_kernels
from nvprof_wrap.readers._nvtx import attribute
from nvprof_wrap.readers._sqlite import busy_time

KERNEL_CATS = {"kernel", "Kernel"}
MEMCPY_CATS = {"gpu_memcpy", "Memcpy"}
MEMSET_CATS = {"gpu_memset", "Memset"}
RANGE_CATS = {"cpu_op", "Operator", "user_annotation"}  # CPU-side ops and record_function ranges
RUNTIME_CATS = {"cuda_runtime", "Runtime"}
HOST_CATS = RUNTIME_CATS | {"cpu_op", "Operator"}
GPU_CATS = KERNEL_CATS | MEMCPY_CATS | MEMSET_CATS
_BATCH = 20000


def _open(path: Path) -> IO[bytes]:
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


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
        start, dur = int(float(ev.get("ts", 0)) * 1000), int(float(ev.get("dur", 0)) * 1000)
        name = str(ev.get("name", ""))
        if cat in KERNEL_CATS:
            s = self.kernels.get((dev, name))
            if s is None:
                self.kernels[(dev, name)] = [1, dur, dur, dur, 0]
            else:  # inline: this runs once per kernel launch
                s[0] += 1
                s[1] += dur
                s[2] = min(s[2], dur)
                s[3] = max(s[3], dur)
        else:
            memcpy = cat in MEMCPY_CATS
            key = (dev, "memcpy" if memcpy else "memset", _direction(name) if memcpy else "")
            nbytes = args.get("bytes", 0) if isinstance(args, dict) else 0
            self._bump(self.mem, key, dur, int(nbytes or 0))
        self.batch.append((0, dev, start, start + dur))
        if len(self.batch) >= _BATCH:
            self.flush()

    @staticmethod
    def _bump(table: dict, key: tuple, dur: int, nbytes: int) -> None:
        s = table.get(key)
        if s is None:
            table[key] = [1, dur, dur, dur, nbytes]
        else:
            s[0] += 1; s[1] += dur; s[2] = min(s[2], dur); s[3] = max(s[3], dur); s[4] += nbytes

    def flush(self) -> None:
        self.db.executemany("INSERT INTO iv VALUES (?,?,?,?)", self.batch)
        self.batch.clear()


_HEADER_KEYS = ("deviceProperties", "distributedInfo", *ROCM_KEYS)


def _header(path: Path) -> dict:
    """deviceProperties and distributedInfo: usually written before traceEvents, so one short parse
    that stops at traceEvents finds them; otherwise a full C-speed pass per key."""
    found: dict = {}
    with _open(path) as f:
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
        found.update(_tail_keys(path, missing))
    return found


def _tail_keys(path: Path, keys: list[str]) -> dict:
    """Keys written after traceEvents (inference_rank_1 puts distributedInfo last): look in the file's last
    256 KiB instead of parsing the whole trace a second time. A compressed trace has no cheap tail; it gets a
    second full pass only while it is small."""
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
        if gz:
            if path.stat().st_size > 20 << 20:
                return {}
            with gzip.open(path, "rb") as g:
                tail = g.read()[-(256 << 10):]
        else:
            f.seek(max(0, path.stat().st_size - (256 << 10)))
            tail = f.read()
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


def read(path: Path) -> Capture:
    agg = _Agg()
    try:
        header = _header(path)
        refuse_other_vendor(path, header)
        with _open(path) as f:
            for ev in ijson.items(f, "traceEvents.item", use_float=True):
                if isinstance(ev, dict):
                    agg.add(ev)
        agg.flush()
    except (ijson.JSONError, OSError, EOFError, ValueError, TypeError) as e:
        raise BadInput(path, f"not a readable Kineto/Chrome trace JSON ({type(e).__name__}: {e})") from None
    pid = agg.host_pid
    if not agg.kernels and agg.on_gpu:
        agg.db.close()
        raise BadInput(path, f"Chrome trace with {agg.on_gpu} events on GPU processes but none a kernel this reader "
                             "knows (no 'cat' kernel / Kernel): not a PyTorch profiler trace")
    kernels = merge_kernels(KernelAgg(pid, dev, demangle(name), s[0], s[1], s[2], s[3])
                            for (dev, name), s in agg.kernels.items())
    memops = tuple(MemAgg(pid, dev, kind, d, s[0], s[1], s[4]) for (dev, kind, d), s in agg.mem.items())
    activity = tuple(Activity(pid, dev, a, b, busy) for _, dev, a, b, busy
                     in busy_time(agg.db, [("iv", "pid", "dev")]))
    agg.db.close()
    try:
        ops = _ops(path, pid) if agg.ranges else ()
    except (ijson.JSONError, OSError, EOFError, ValueError, TypeError) as e:
        raise BadInput(path, f"not a readable Kineto/Chrome trace JSON ({type(e).__name__}: {e})") from None
    dist = header.get("distributedInfo") or {}
    rank = dist.get("rank") if isinstance(dist, dict) else None
    return Capture(str(path), "kineto-json", kernels, memops, activity, _devices(header.get("deviceProperties")),
                   (Process(pid, None, rank),) if pid is not None else (), ops=ops)


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
        with _open(path) as f:
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
    t = int(float(ev.get("ts", 0)) * 1000)
    if cat in KERNEL_CATS:
        dev = args.get("device", ev.get("pid"))
        return "kl", (args.get("correlation"), dev if isinstance(dev, int) else None, str(ev.get("name", "")),
                      int(float(ev.get("dur", 0)) * 1000))
    tid = f"{ev.get('pid')}/{ev.get('tid')}"
    if cat in RUNTIME_CATS:
        return "rt", (args.get("correlation"), tid, t)
    if ev.get("ph") != "X":
        return None
    return "rng", (tid, t, t + int(float(ev.get("dur", 0)) * 1000), str(ev.get("name", "")))


def _insert(db: sqlite3.Connection, table: str, batch: list[tuple]) -> None:
    if batch:
        db.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(batch[0]))})", batch)
        batch.clear()
