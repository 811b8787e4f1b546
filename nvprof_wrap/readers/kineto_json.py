"""PyTorch profiler / Kineto Chrome-trace JSON (``.json`` or ``.json.gz``), read in one streamed pass.

GPU events carry ``cat`` kernel / gpu_memcpy / gpu_memset (older traces: Kernel / Memcpy / Memset),
``dur`` and ``ts`` in microseconds, and the device in ``args.device`` (``pid`` is the device for
GPU rows). One pass over the events (readers/_trace_events.py) writes four small-row tables to a temporary
on-disk SQLite file — kernels (correlation, device, name id, start, end), copies and sets, the runtime and driver
calls (correlation, thread, time) and the CPU op / annotation ranges — and SQL does the rest: aggregates per
(device, name), the busy-time union, the ops that launched each kernel, and a window (--window / --steps).
Nothing is held per event in Python.
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
from nvprof_wrap.readers._sqlite import EVERYTHING, busy_time, in_window, window_bounds
from nvprof_wrap.readers._trace_events import NotFast, TraceEvents
from nvprof_wrap.readers._vendor import ROCM_KEYS, refuse_other_vendor
from nvprof_wrap.readers import _window
from nvprof_wrap.readers._window import Window

KERNEL_CATS = {"kernel", "Kernel"}
MEMCPY_CATS = {"gpu_memcpy", "Memcpy"}
MEMSET_CATS = {"gpu_memset", "Memset"}
MEM_CATS = MEMCPY_CATS | MEMSET_CATS
RANGE_CATS = {"cpu_op", "Operator", "user_annotation"}  # CPU-side ops and record_function ranges
RUNTIME_CATS = {"cuda_runtime", "Runtime"}
FLOW_CATS = {"ac2g", "fwdbwd"}  # flow arrows (launch → kernel, forward → backward): nothing to read in them
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
    """What one pass keeps: rows in a temporary on-disk database (memory stays flat with N), and small dicts of
    distinct values — kernel names, range names and threads (pid, tid) to integer ids — so rows hold integers."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}  # kernel names
        self.range_names: dict[str, int] = {}
        self.threads: dict[tuple, int] = {}
        self.host_pid: int | None = None
        self.ranges = 0  # CPU op / annotation ranges seen: only then are kernels attributed to ops
        self.gpu_pids: set = set()  # processes a process_name event calls a GPU: their events are GPU work
        self.on_gpu = 0  # events on those processes that no category above made a kernel or a copy
        self.db = sqlite3.connect("")
        for sql in ('CREATE TABLE kl(corr INTEGER, dev INTEGER, nid INTEGER, start INTEGER, "end" INTEGER, dur)',
                    'CREATE TABLE mem(dev INTEGER, kind, dir, start INTEGER, "end" INTEGER, dur, bytes INTEGER)',
                    "CREATE TABLE rt(corr INTEGER, tid INTEGER, t INTEGER)",
                    "CREATE TABLE rng(tid INTEGER, s INTEGER, e INTEGER, name INTEGER)"):
            self.db.execute(sql)
        self.rows: dict[str, list[tuple]] = {"kl": [], "mem": [], "rt": [], "rng": []}
        self.kernel_time, self.mem_time = Durations("kernel"), Durations("memcpy/memset")

    def add_all(self, events: list) -> None:
        kl, rt, rng, threads, range_names = self.rows["kl"], self.rows["rt"], self.rows["rng"], self.threads, \
            self.range_names
        ranges = 0
        for ev in events:
            if type(ev) is not dict:
                continue
            cat = ev.get("cat")
            if self.host_pid is None and cat in HOST_CATS:
                self._host(ev)
            # The most frequent kinds inline (this loop runs once per event; ranges, runtime calls and flows are
            # most of a torch.profiler trace): numbers in range take the short way, anything else is checked.
            if cat in RANGE_CATS:
                ranges += 1
                if ev.get("ph") != "X":
                    continue
                t, d = ev.get("ts"), ev.get("dur")
                if type(t) in _NUMBER and type(d) in _NUMBER and -_MAX_TS_US < t < _MAX_TS_US and 0 <= d <= _MAX_DUR_US:
                    s, e = int(t * 1000), int(t * 1000) + int(d * 1000)
                else:
                    s, e = _ns(t), _ns(d)
                    if s is None or e is None or not 0 <= e <= MAX_DURATION_NS:
                        continue
                    e += s
                thread = (ev.get("pid"), ev.get("tid"))
                tid = threads.get(thread)
                if tid is None:
                    tid = threads[thread] = len(threads)
                name = ev.get("name", "")
                nid = range_names.get(name) if type(name) is str else None
                if nid is None:
                    nid = self._range_name(name)
                rng.append((tid, s, e, nid))
            elif cat in FLOW_CATS:
                if ev.get("pid") in self.gpu_pids:
                    self.on_gpu += 1
            elif cat in RUNTIME_CATS:
                args, t = ev.get("args"), ev.get("ts")
                thread = (ev.get("pid"), ev.get("tid"))
                tid = threads.get(thread)
                if tid is None:
                    tid = threads[thread] = len(threads)
                rt.append((args.get("correlation") if type(args) is dict else None, tid,
                           int(t * 1000) if type(t) in _NUMBER and -_MAX_TS_US < t < _MAX_TS_US else _ns(t)))
            elif cat in KERNEL_CATS:
                kl.append(self._kernel(ev))
            elif cat in MEM_CATS:
                self.rows["mem"].append(self._mem(ev, cat))
            else:
                self._other(ev)
        self.ranges += ranges
        if len(kl) + len(rt) + len(rng) >= _BATCH:
            self.flush()

    def _host(self, ev: dict) -> None:
        if isinstance(ev.get("pid"), int):
            self.host_pid = ev["pid"]

    def _range_name(self, name: object) -> int:
        name = str(name)
        nid = self.range_names.get(name)
        if nid is None:
            nid = self.range_names[name] = len(self.range_names)
        return nid

    def _other(self, ev: dict) -> None:
        if ev.get("ph") == "M" and ev.get("name") == "process_name" and \
                "GPU" in str((ev.get("args") or {}).get("name")):
            self.gpu_pids.add(ev.get("pid"))
        elif ev.get("pid") in self.gpu_pids:
            self.on_gpu += 1

    def _kernel(self, ev: dict) -> tuple:
        args = ev.get("args")
        args = args if type(args) is dict else None
        dev = args.get("device", ev.get("pid")) if args is not None else ev.get("pid")
        t, d, name = ev.get("ts"), ev.get("dur"), str(ev.get("name", ""))
        start = int(t * 1000) if type(t) in _NUMBER and -_MAX_TS_US < t < _MAX_TS_US else _ns(t)
        dur = int(d * 1000) if type(d) in _NUMBER and 0 <= d <= _MAX_DUR_US else self.kernel_time.ns(_ns(d))
        nid = self.names.get(name)
        if nid is None:
            nid = self.names[name] = len(self.names)
        return (args.get("correlation") if args is not None else None, dev if isinstance(dev, int) else None, nid,
                start, None if start is None or dur is None else start + dur, dur)

    def _mem(self, ev: dict, cat: str) -> tuple:
        args = ev.get("args")
        args = args if isinstance(args, dict) else {}
        dev = args.get("device", ev.get("pid"))
        t, d, name = ev.get("ts"), ev.get("dur"), str(ev.get("name", ""))
        start = int(t * 1000) if type(t) in _NUMBER and -_MAX_TS_US < t < _MAX_TS_US else _ns(t)
        dur = int(d * 1000) if type(d) in _NUMBER and 0 <= d <= _MAX_DUR_US else self.mem_time.ns(_ns(d))
        memcpy = cat in MEMCPY_CATS
        return (dev if isinstance(dev, int) else None, "memcpy" if memcpy else "memset",
                _direction(name) if memcpy else "", start, None if start is None or dur is None else start + dur,
                dur, int(args.get("bytes", 0) or 0))

    def flush(self) -> None:
        for table, rows in self.rows.items():
            if rows:
                self.db.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
                rows.clear()


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
TIMELINE = True


def sniff(head: Head) -> bool:
    return bool(head.json_start) and (b"traceEvents" in head.raw or head.json_start == b"[")


def read(path: Path, window: Window | None = None) -> Capture:
    try:
        agg, header, cut = _scan(path)
    except (ijson.JSONError, OSError, EOFError, ValueError, TypeError) as e:
        raise BadInput(path, f"not a readable Kineto/Chrome trace JSON ({type(e).__name__}: {e})") from None
    try:
        refuse_other_vendor(path, header)
        if not agg.names and agg.on_gpu:
            raise BadInput(path, f"Chrome trace with {agg.on_gpu} events on GPU processes but none a kernel this "
                                 "reader knows (no 'cat' kernel / Kernel): not a PyTorch profiler trace")
        return _capture(path, agg, header, cut, window)
    finally:
        agg.db.close()


def _scan(path: Path) -> tuple[_Agg, dict, int]:
    """(rows, header keys, strings cut): the fast path, or the general one where the fast one cannot go."""
    for fast in (True, False):
        agg, events = _Agg(), TraceEvents(path, fast)
        try:
            for batch in events:
                agg.add_all(batch)
        except NotFast:
            agg.db.close()
            continue
        except BaseException:
            agg.db.close()
            raise
        agg.flush()
        header = events.header if fast else _header(path, events.tail)
        return agg, header, events.cut_strings
    raise AssertionError("unreachable: the general path never raises NotFast")  # pragma: no cover


def _capture(path: Path, agg: _Agg, header: dict, cut: int, window: Window | None) -> Capture:
    pid = agg.host_pid
    span = _span(agg, window) if window else EVERYTHING
    names = {i: name for name, i in agg.names.items()}
    kernels = merge_kernels(KernelAgg(pid, dev, demangle(names[nid]), n, tot, mn, mx) for dev, nid, n, tot, mn, mx
                            in agg.db.execute(f"SELECT dev, nid, COUNT(*), SUM(dur), MIN(dur), MAX(dur) FROM kl "
                                              f"WHERE {in_window(span)} GROUP BY dev, nid"))
    memops = tuple(MemAgg(pid, dev, kind, d, n, tot, nbytes) for dev, kind, d, n, tot, nbytes in agg.db.execute(
        f"SELECT dev, kind, dir, COUNT(*), COALESCE(SUM(dur), 0), SUM(bytes) FROM mem WHERE {in_window(span)} "
        "GROUP BY dev, kind, dir"))
    activity = tuple(Activity(pid, dev, a, b, busy) for _, dev, a, b, busy
                     in busy_time(agg.db, [("kl", "0", "dev", "1"), ("mem", "0", "dev", "0")], span))
    ops = _ops(agg, pid, names, span) if agg.ranges else ()
    dist = header.get("distributedInfo") or {}
    rank = dist.get("rank") if isinstance(dist, dict) else None
    notes = agg.kernel_time.notes() + agg.mem_time.notes() + \
        ((f"{cut:,} JSON string(s) longer than {MAX_JSON_STRING_BYTES >> 20} MiB were cut there",) if cut else ())
    return Capture(str(path), "kineto-json", kernels, memops, activity, _devices(header.get("deviceProperties")),
                   (Process(pid, None, rank),) if pid is not None else (), ops=ops, notes=notes)


def _span(agg: _Agg, window: Window) -> tuple[int, int]:
    """[lo, hi) of a window: from the first GPU activity, or from the step ranges (ProfilerStep#N, 'step N')."""
    if window.seconds is not None:
        return window_bounds(agg.db, window, ["kl", "mem"], None)
    steps = {i: n for n, i in agg.range_names.items() if _window.could_mark_a_step(n)}
    ids = ",".join(map(str, steps))
    return _window.step_bounds(window.steps, ((steps[nid], tid, s, e) for tid, s, e, nid in  # type: ignore[arg-type]
                                              agg.db.execute(f"SELECT tid, s, e, name FROM rng WHERE name IN ({ids})")))


def _ops(agg: _Agg, pid: int | None, names: dict[int, str], span: tuple[int, int]) -> tuple[OpAgg, ...]:
    """Which ops launched which kernels. Each kernel's correlation id leads to the runtime or driver call that
    launched it (thread, CPU time); the op ranges open on that thread at that time are the op and its scope — the
    same attribution as for NVTX ranges (readers/_nvtx.py). Threads are keyed by pid and tid."""
    range_names = {i: name for name, i in agg.range_names.items()}
    rows = attribute(agg.db, "SELECT tid, s, e, name FROM rng", names=range_names.__getitem__, sql=
                     f"""SELECT {pid if pid is not None else 'NULL'} AS pid, k.dev AS dev, r.tid AS tid, r.t AS t,
                                k.nid AS key, k.dur AS dur
                         FROM kl k LEFT JOIN rt r ON r.corr = k.corr {{rslice}} WHERE {in_window(span, "k")} {{slice}}""")
    return tuple(OpAgg(p, scope, op, demangle(names.get(nid) or "<unnamed kernel>"), n, tot)
                 for p, _dev, scope, op, nid, n, tot in rows)
