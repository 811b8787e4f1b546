"""One streamed pass over a Kineto / Chrome trace's events → small integer rows in an SQLite file
(readers/kineto_json.py reads them): kernels (correlation, device, name id, start, end, duration), copies and sets,
runtime and driver calls (correlation, thread id, time) and CPU op / annotation ranges (thread id, start, end, name
id).

Ids are the values' Python hashes (a name's, a (pid, tid) thread's): the same in forked workers, which share the
parent's hash seed, so a big uncompressed trace is read in parts side by side — one byte range per core, cut
between events (readers/_trace_events.py) — and the parts' rows are copied together without renumbering. Two
different values with one hash (a chance of ~1e-15 per trace) are never merged: the part that meets them says so and
the trace is read again in one process, numbering by count.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import zlib
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers._bounded import Mended, inflate_to
from nvprof_wrap.readers._durations import Durations
from nvprof_wrap.readers._kineto_flops import FLOP_OPS, Signatures
from nvprof_wrap.readers._trace_events import NotFast, TraceEvents, split_points
from nvprof_wrap.system import environ, tempdirs
from nvprof_wrap.system.fork import BIG, Forked, can_fork, cores
from nvprof_wrap.system.limits import MAX_DURATION_NS
from nvprof_wrap.text.cuda_calls import kind_of

try:
    from nvprof_wrap.readers import _ckineto
except ImportError:
    _ckineto = None  # type: ignore[assignment]  # not built here (no C compiler at install time): the Python loop

KERNEL_CATS = {"kernel", "Kernel"}
MEMCPY_CATS = {"gpu_memcpy", "Memcpy"}
MEMSET_CATS = {"gpu_memset", "Memset"}
MEM_CATS = MEMCPY_CATS | MEMSET_CATS
RANGE_CATS = {"cpu_op", "Operator", "user_annotation"}  # CPU-side ops and record_function ranges
RUNTIME_CATS = {"cuda_runtime", "Runtime", "cuda_driver"}  # cuda_driver: cuLaunchKernelEx (cuBLAS), PyTorch 2.x
FLOW_CATS = {"ac2g", "fwdbwd"}  # flow arrows (launch → kernel, forward → backward): nothing to read in them
HOST_CATS = RUNTIME_CATS | {"cpu_op", "Operator"}
CALL_KINDS = ("launch", "sync", "alloc", "other")  # text/cuda_calls.kind_of's kinds; rt.kind holds the index
_KIND_CODE = {kind: i for i, kind in enumerate(CALL_KINDS)}
_OTHER = _KIND_CODE["other"]
_BATCH = 20000
MAX_OPEN_BEGINS = 1 << 16  # kernels, copies and sets begun (B), not ended, held at most; more: counted at once, untimed
_NUMBER = (int, float)
_MAX_DUR_US, _MAX_TS_US = MAX_DURATION_NS / 1000, 2**62 / 1000
# readers/_ckineto.c's category codes: 1 a host range (CPU op), 2 another range (annotation), 3 a runtime or driver
# call, 4 a kernel, 5 a flow arrow, 6 the Python loop's alone (copies, sets); any other text 0 (Rows._other)
_CAT_CODES = {**{c: 1 if c in HOST_CATS else 2 for c in RANGE_CATS}, **dict.fromkeys(RUNTIME_CATS, 3),
              **dict.fromkeys(KERNEL_CATS, 4), **dict.fromkeys(FLOW_CATS, 5), **dict.fromkeys(MEM_CATS, 6)}


def _native() -> bool:
    """Whether the compiled loop runs: built here, and not turned off (NVPROF_WRAP_NATIVE=off, as the other compiled
    passes: timeline/native.py)."""
    return _ckineto is not None and not environ.native_off()


def _ns(us: object) -> int | None:
    """Microseconds (a number, or a number in a string) → integer ns; None when it is not a finite number or not
    a time SQLite can hold (beyond ±2^62 ns, 146 years: start + duration must still fit)."""
    if type(us) is bool:  # JSON's true is no time (float(True) is 1: a kernel of 1 us)
        return None
    try:
        ns = float(us) * 1000  # type: ignore[arg-type]  # any JSON value: what float() refuses is caught below
    except (TypeError, ValueError):
        return None
    return int(ns) if abs(ns) < 2**62 else None  # also False for nan


def _text(name: object) -> str:
    """A name as the file holds it, where it is text; else none ("": readers/_validate says how many launches have
    no name) — str() had named a kernel 'None' or '[1]' after a null or a list, silently."""
    return name if type(name) is str else ""


_Key = TypeVar("_Key", str, tuple[object, object])  # what gets an id: a name, a (pid, tid) thread

# An event of traceEvents, as orjson or ijson parse it: its values are whatever the file holds (checked as read).
Event = dict[str, Any]


def _direction(name: str) -> str:
    for d in ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP"):
        if d in name:
            return d
    return "other"


class Rows:
    """What one pass keeps: rows in an SQLite file (memory stays flat with N), and small dicts of distinct values —
    kernel names, range names and threads (pid, tid) to integer ids — so rows hold integers."""

    def __init__(self, db: Path, hashed: bool = True) -> None:
        self.path, self.hashed = db, hashed
        self.names: dict[str, int] = {}  # kernel names
        self.range_names: dict[str, int] = {}
        self.threads: dict[tuple[object, object], int] = {}  # (pid, tid) as the events give them
        self.taken: dict[int, set[int]] = {id(self.names): set(), id(self.range_names): set(), id(self.threads): set()}
        self.host_pid: int | None = None
        self.ranges = 0  # CPU op / annotation ranges seen: only then are kernels attributed to ops
        self.gpu_pids: set[object] = set()  # processes a process_name event calls a GPU: their events are GPU work
        self.on_gpu = 0  # events on those processes that no category above made a kernel or a copy
        self.api: dict[str, int] = {}  # CUDA runtime / driver calls by name (launch calls without kernels: refused)
        self.call_kinds: dict[str, int] = {}  # a call's name → its kind's index in CALL_KINDS (text/cuda_calls)
        self.db = sqlite3.connect(db)
        self.db.execute("PRAGMA journal_mode=OFF")
        self.db.execute("PRAGMA synchronous=OFF")
        for sql in ('CREATE TABLE kl(corr INTEGER, dev INTEGER, nid INTEGER, start INTEGER, "end" INTEGER, dur)',
                    'CREATE TABLE mem(dev INTEGER, kind, dir, start INTEGER, "end" INTEGER, dur, bytes INTEGER)',
                    # kind: the call's text/cuda_calls kind as its index in CALL_KINDS, looked up once per distinct
                    # name (call_kinds): an integer binds faster than text, and the series reads it as it is
                    'CREATE TABLE rt(corr INTEGER, tid INTEGER, t INTEGER, "end" INTEGER, kind INTEGER)',
                    "CREATE TABLE rng(tid INTEGER, s INTEGER, e INTEGER, name INTEGER)",
                    # the CPU ops with FLOPs (classify/flops.py, from their recorded shapes): a few per step
                    "CREATE TABLE fop(tid INTEGER, s INTEGER, e INTEGER, name INTEGER, flops INTEGER, prec TEXT)"):
            self.db.execute(sql)
        self.rows: dict[str, list[tuple[object, ...]]] = {"kl": [], "mem": [], "rt": [], "rng": [], "fop": []}
        self.flops_known = Signatures()  # (FLOPs, precision) per op signature
        # CUPTI's clock: a kernel at ts 0 is one whose times it could not collect (kineto#109: thousands of
        # `"ts": 0, "dur": 0` kernels in one trace) — counted without its time, as in the SQLite captures
        self.kernel_time, self.mem_time = Durations("kernel", clock=True), Durations("memcpy/memset", clock=True)
        # kernels, copies and sets begun (B), by thread, awaiting their end
        self.begun: dict[tuple[object, object], list[Event]] = {}
        self.open_begins = 0

    def add_all(self, events: list[Any]) -> None:
        """A batch of events as rows: compiled where the helper is built (readers/_ckineto.c takes the usual events
        and hands each other one to _add_python as it comes), else in Python; the same rows either way."""
        kl, rt, rng = self.rows["kl"], self.rows["rt"], self.rows["rng"]
        if _native():
            ranges, on_gpu = _ckineto.add_all(self, events, _CAT_CODES, kl, rt, rng, self.threads, self.names,
                                              self.range_names, self.api, self.call_kinds, self.gpu_pids, FLOP_OPS,
                                              _MAX_TS_US, _MAX_DUR_US)
            self.ranges += ranges
            self.on_gpu += on_gpu
        else:
            self._add_python(events)
        if len(kl) + len(rt) + len(rng) >= _BATCH:
            self.flush()

    def _add_python(self, events: list[Any]) -> None:
        kl, rt, rng, threads, range_names = self.rows["kl"], self.rows["rt"], self.rows["rng"], self.threads, \
            self.range_names
        api, names, call_kinds = self.api, self.names, self.call_kinds
        ranges = 0
        for ev in events:
            if type(ev) is not dict:
                continue
            cat = ev.get("cat")
            if cat is None and self.open_begins and ev.get("ph") == "E":  # an end that names nothing: its begin's
                held = self.begun.get((ev.get("pid"), ev.get("tid")))
                cat = held[-1].get("cat") if held else None
            try:
                host = cat in HOST_CATS
            except TypeError:  # a list or an object: no category (it had come out as "unhashable type: 'list'")
                raise BadInput(None, f"an event's \"cat\" is a {type(cat).__name__} ({str(cat)[:40]}), not a category "
                                     f"name: event {str(ev)[:80]}") from None
            if host and self.host_pid is None:
                self._host(ev)
            # The most frequent kinds inline (this loop runs once per event; ranges, runtime calls and flows are
            # most of a torch.profiler trace): numbers in range take the short way, anything else is checked.
            if cat in RANGE_CATS:
                ranges += 1
                try:  # subscripts: the keys every complete event has (the general way below when one is missing)
                    if ev["ph"] != "X":
                        continue
                    t, d, thread, name = ev["ts"], ev["dur"], (ev["pid"], ev["tid"]), ev["name"]
                except KeyError:
                    self._range(ev)
                    continue
                if type(t) in _NUMBER and type(d) in _NUMBER and -_MAX_TS_US < t < _MAX_TS_US and 0 <= d <= _MAX_DUR_US:
                    s = int(t * 1000)
                    e = s + int(d * 1000)
                else:
                    begins, lasts = _ns(t), _ns(d)
                    if begins is None or lasts is None or not 0 <= lasts <= MAX_DURATION_NS:
                        continue
                    s, e = begins, begins + lasts
                tid = threads.get(thread)
                if tid is None:
                    tid = self._id(threads, thread)
                nid = range_names.get(name) if type(name) is str else None
                if nid is None:
                    nid = self._range_name(name)
                rng.append((tid, s, e, nid))
                if type(name) is str and name in FLOP_OPS:
                    self._flops(ev, tid, s, e, nid, name)
            elif cat in FLOW_CATS:
                if ev.get("pid") in self.gpu_pids:
                    self.on_gpu += 1
            elif cat in RUNTIME_CATS:
                args, name = ev.get("args"), ev.get("name")
                at: Any = ev.get("ts")  # JSON values: the type checks below are the run-time ones
                lasted: Any = ev.get("dur")
                thread = (ev.get("pid"), ev.get("tid"))
                tid = threads.get(thread)
                if tid is None:
                    tid = self._id(threads, thread)
                if type(name) is str:
                    api[name] = api.get(name, 0) + 1
                    kind = call_kinds.get(name)
                    if kind is None:
                        kind = call_kinds[name] = _KIND_CODE.get(kind_of(name), _OTHER)
                else:
                    kind = _OTHER
                if type(at) in _NUMBER and -_MAX_TS_US < at < _MAX_TS_US:
                    began = int(at * 1000)
                    called: int | None = began
                    ends = began + int(lasted * 1000) if type(lasted) in _NUMBER and 0 <= lasted <= _MAX_DUR_US \
                        else None
                else:
                    called = _ns(at)
                    ends = called + int(lasted * 1000) if called is not None and type(lasted) in _NUMBER \
                        and 0 <= lasted <= _MAX_DUR_US else None
                rt.append((args.get("correlation") if type(args) is dict else None, tid, called, ends, kind))
            elif cat in KERNEL_CATS:
                # torch.profiler's kernel: an int device in args, a str name, numbers in range (else _kernel)
                args, name, at, lasted = ev.get("args"), ev.get("name"), ev.get("ts"), ev.get("dur")
                dev = args.get("device") if type(args) is dict else None
                if type(dev) is int and type(name) is str and type(at) in _NUMBER and type(lasted) in _NUMBER \
                        and 0 < at < _MAX_TS_US and 0 <= lasted <= _MAX_DUR_US:  # at 0 or before: _kernel says
                    nid = names.get(name)
                    if nid is None:
                        nid = self._id(names, name)
                    s, d = int(at * 1000), int(lasted * 1000)
                    kl.append((args.get("correlation"), dev, nid, s, s + d, d))  # type: ignore[union-attr]  # dev is an int only when args is a dict
                elif (row := self._kernel(ev)) is not None:
                    kl.append(row)
            elif cat in MEM_CATS:
                if (mem := self._mem(ev, cat)) is not None:
                    self.rows["mem"].append(mem)
            else:
                self._other(ev)
        self.ranges += ranges

    def _range(self, ev: Event) -> None:
        """A range event without one of the usual keys: a missing one is None (an empty name)."""
        if ev.get("ph") != "X":
            return
        s, e = _ns(ev.get("ts")), _ns(ev.get("dur"))
        if s is None or e is None or not 0 <= e <= MAX_DURATION_NS:
            return
        thread = (ev.get("pid"), ev.get("tid"))
        tid = self.threads.get(thread)
        self.rows["rng"].append((self._id(self.threads, thread) if tid is None else tid, s, s + e,
                                 self._range_name(ev.get("name", ""))))

    def _flops(self, ev: Event, tid: int, s: int, e: int, nid: int, name: str) -> None:
        found = self.flops_known.of(name, ev.get("args"))
        if found is not None:
            self.rows["fop"].append((tid, s, e, nid, *found))

    def _host(self, ev: Event) -> None:
        if isinstance(ev.get("pid"), int):
            self.host_pid = ev["pid"]

    def _range_name(self, name: object) -> int:
        name = str(name)
        nid = self.range_names.get(name)
        return self._id(self.range_names, name) if nid is None else nid

    def _id(self, ids: dict[_Key, int], value: _Key) -> int:
        """A new value's id: its hash (see the module's docstring), or a count in a one-process read."""
        taken = self.taken[id(ids)]
        i = hash(value) if self.hashed else len(taken)
        if i in taken:
            raise Collision(value)
        taken.add(i)
        ids[value] = i
        return i

    def _other(self, ev: Event) -> None:
        if ev.get("ph") == "M" and ev.get("name") == "process_name" and \
                "GPU" in str((ev.get("args") or {}).get("name")):
            self.gpu_pids.add(ev.get("pid"))
        elif ev.get("pid") in self.gpu_pids:
            self.on_gpu += 1

    def _kernel(self, ev: Event) -> tuple[object, int | None, int, int | None, int | None, int | None] | None:
        if ev.get("ph") in ("B", "E"):
            paired = self._paired(ev)
            if paired is None:
                return None
            ev = paired
        args = ev.get("args")
        args = args if type(args) is dict else None
        dev = args.get("device", ev.get("pid")) if args is not None else ev.get("pid")
        t: Any = ev.get("ts")  # JSON values: the type checks below are the run-time ones
        d: Any = ev.get("dur")
        name = _text(ev.get("name"))
        start = int(t * 1000) if type(t) in _NUMBER and -_MAX_TS_US < t < _MAX_TS_US else _ns(t)
        dur = int(d * 1000) if type(d) in _NUMBER and 0 <= d <= _MAX_DUR_US else self.kernel_time.ns(_ns(d))
        dur = self.kernel_time.started(start, dur)
        nid = self.names.get(name)
        if nid is None:
            nid = self._id(self.names, name)
        return (args.get("correlation") if args is not None else None, dev if type(dev) is int else None, nid,
                start, None if start is None or dur is None else start + dur, dur)

    def _paired(self, ev: Event) -> Event | None:
        """A kernel, copy or set written as a begin (B) and an end (E) event on its thread — the Trace Event
        Format's other way to give a duration (its end may name nothing: the begin's category is taken); each had
        been read as one of its own, every launch or copy twice and none with its time:
        the begin is held until its end, then read as one complete event of the begin's name and arguments. An end
        without its begin: nothing (in a trace read in parts, its begin is counted in an earlier part, without its
        time); begins without their end are counted without their time once the events are read (unended)."""
        key = (ev.get("pid"), ev.get("tid"))
        if ev.get("ph") == "B":
            if self.open_begins < MAX_OPEN_BEGINS:  # beyond: counted at once, without a time (bounded memory)
                self.begun.setdefault(key, []).append(ev)
                self.open_begins += 1
                return None
            return {**ev, "ph": "X", "dur": None}
        held = self.begun.get(key)
        if not held:
            return None
        begin = held.pop()
        self.open_begins -= 1
        t0: Any = begin.get("ts")  # JSON values: the type checks below are the run-time ones
        t1: Any = ev.get("ts")
        lasted = t1 - t0 if type(t0) in _NUMBER and type(t1) in _NUMBER else None
        return {**begin, "ph": "X", "dur": lasted}

    def unended(self) -> None:
        """The kernels, copies and sets begun (B) whose end never came: counted without their time."""
        for held in self.begun.values():
            for begin in held:
                ev, cat = {**begin, "ph": "X", "dur": None}, begin.get("cat")
                if cat in MEM_CATS:
                    if (mem := self._mem(ev, str(cat))) is not None:
                        self.rows["mem"].append(mem)
                elif (row := self._kernel(ev)) is not None:
                    self.rows["kl"].append(row)
        self.begun.clear()
        self.open_begins = 0

    def _mem(self, ev: Event, cat: str) -> tuple[int | None, str, str, int | None, int | None, int | None, int] | None:
        if ev.get("ph") in ("B", "E"):  # a copy or set as a begin and an end, as kernels (_paired)
            paired = self._paired(ev)
            if paired is None:
                return None
            ev = paired
        args = ev.get("args")
        args = args if isinstance(args, dict) else {}
        dev = args.get("device", ev.get("pid"))
        t: Any = ev.get("ts")  # JSON values: the type checks below are the run-time ones
        d: Any = ev.get("dur")
        name = _text(ev.get("name"))
        start = int(t * 1000) if type(t) in _NUMBER and -_MAX_TS_US < t < _MAX_TS_US else _ns(t)
        dur = int(d * 1000) if type(d) in _NUMBER and 0 <= d <= _MAX_DUR_US else self.mem_time.ns(_ns(d))
        dur = self.mem_time.started(start, dur)
        memcpy = cat in MEMCPY_CATS
        return (dev if type(dev) is int else None, "memcpy" if memcpy else "memset",
                _direction(name) if memcpy else "", start, None if start is None or dur is None else start + dur,
                dur, int(args.get("bytes", 0) or 0))

    def _take(self, mine: dict[_Key, int], theirs: dict[_Key, int]) -> None:
        """A part's ids of values (names, threads) into this one's; one id for two values is a Collision."""
        taken = self.taken[id(mine)]
        for value, i in theirs.items():
            have = mine.get(value)
            if have is None and i not in taken:
                mine[value] = i
                taken.add(i)
            elif have != i:
                raise Collision(value)

    def flush(self) -> None:
        for table, rows in self.rows.items():
            if rows:
                self.db.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
                rows.clear()
        self.db.commit()

    def summary(self) -> PartSummary:
        """What a worker sends back besides its rows' file."""
        return PartSummary(names=self.names, range_names=self.range_names, threads=self.threads,
                           host_pid=self.host_pid, ranges=self.ranges, gpu_pids=self.gpu_pids, on_gpu=self.on_gpu,
                           api=self.api, bad=(self.kernel_time.bad, self.mem_time.bad))

    def absorb(self, part: PartSummary, db: Path) -> None:
        """A later part's rows and values, after this one's (host_pid: the first seen in file order)."""
        self._take(self.names, part["names"])
        self._take(self.range_names, part["range_names"])
        self._take(self.threads, part["threads"])
        self.host_pid = self.host_pid if self.host_pid is not None else part["host_pid"]
        self.ranges += part["ranges"]
        self.gpu_pids |= part["gpu_pids"]
        self.on_gpu += part["on_gpu"]
        for name, n in part["api"].items():
            self.api[name] = self.api.get(name, 0) + n
        self.kernel_time.bad += part["bad"][0]
        self.mem_time.bad += part["bad"][1]
        self.db.execute("ATTACH DATABASE ? AS part", (str(db),))
        for table in self.rows:
            self.db.execute(f"INSERT INTO main.{table} SELECT * FROM part.{table}")
        self.db.commit()
        self.db.execute("DETACH DATABASE part")


class PartSummary(TypedDict):
    """Rows.summary(): a worker's values, sent back (pickled) beside its rows' file."""

    names: dict[str, int]
    range_names: dict[str, int]
    threads: dict[tuple[object, object], int]
    host_pid: int | None
    ranges: int
    gpu_pids: set[object]
    on_gpu: int
    api: dict[str, int]
    bad: tuple[int, int]  # (kernel, memcpy/memset) durations counted without their time


WAYS = ("parts", "fast", "general")  # tried in this order (tests pin one)


class Collision(Exception):
    """Two values with one hash: read again in one process."""


def scan(path: Path, folder: Path, finite: bool = False) -> tuple[Rows, dict[str, Any], Mended, bytes]:
    """(rows, the keys around traceEvents on the fast path, what the bounds mended, the stream's last 256 KiB on the
    general path): in parts side by side for a big uncompressed trace, else in one fast pass, else the general one.
    finite: non-finite numbers read as null (readers/_bounded.py)."""
    for how in WAYS:
        source: Path | None = path
        if how == "parts":
            source = _worth_parts(path, folder)
            if source is None:
                continue
        rows = Rows(folder / f"{how}.sqlite", hashed=how != "general")
        try:
            header, cut, tail = _parts(source, folder, rows, finite) if how == "parts" and source is not None \
                else _one(path, rows, how == "fast", finite=finite)
        except (NotFast, Collision):
            rows.db.close()
            continue
        except BaseException:
            rows.db.close()
            raise
        return rows, header, cut, tail
    raise AssertionError("unreachable: the general path never raises NotFast")  # pragma: no cover


def _worth_parts(path: Path, folder: Path) -> Path | None:
    """The uncompressed trace to read in parts side by side, or None when one pass is the better way. A gzipped
    trace (torch.profiler's use_gzip) is unpacked into the temporary folder first — at ~400 MB/s, a small price
    beside reading it in one process — unless it unpacks to more than GUNZIP_RATIO times its size or half the free
    space there (a gzip of whitespace must not fill the disk): then it is read in one streamed pass."""
    if not can_fork() or cores() < 2:
        return None
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    size = path.stat().st_size
    if not gz:
        return path if size >= BIG else None
    if size < BIG // 8:
        return None
    limit = min(size * GUNZIP_RATIO, shutil.disk_usage(folder).free // 2)
    plain = folder / "unpacked.json"
    try:
        written = inflate_to(path, plain, limit)
    except (OSError, EOFError, zlib.error):
        return None  # one streamed pass says what is wrong with the file, if anything
    return plain if written is not None and written >= BIG else None


GUNZIP_RATIO = 32  # a Kineto trace compresses ~10x; more than this is not a trace worth unpacking


def _one(path: Path, rows: Rows, fast: bool, span: tuple[int, int | None] = (0, None),
         finite: bool = False) -> tuple[dict[str, Any], Mended, bytes]:
    events = TraceEvents(path, fast, span, finite)
    for batch in events:
        rows.add_all(batch)
    rows.unended()
    rows.flush()
    return events.header, events.mended, events.tail


def _parts(path: Path, folder: Path, rows: Rows, finite: bool = False) -> tuple[dict[str, Any], Mended, bytes]:
    """Part 0 here, the others in forked workers, each into its own file; then copied together, in file order."""
    cuts = split_points(path, min(cores(), 8))
    if cuts is None:
        raise NotFast("no cut between parts")
    spans = list(zip([0, *cuts], [*cuts, None]))
    others = [Forked(_part, path, folder / f"part{i}.sqlite", span, finite) for i, span in enumerate(spans[1:], 1)]
    try:
        header, cut, _ = _one(path, rows, True, spans[0], finite)
    except BaseException:  # the parts are of no use: ended and reaped, not waited for (Ctrl-C, SIGTERM)
        for other in others:
            other.cancel()
        raise
    results = [_result(other) for other in others]
    for i, result in enumerate(results, 1):
        if isinstance(result, BaseException):
            raise result
        summary, part_header, part_cut = result
        rows.absorb(summary, folder / f"part{i}.sqlite")
        os.remove(folder / f"part{i}.sqlite")
        header.update(part_header)
        cut = cut.plus(part_cut)
    return header, cut, b""


def _part(path: Path, db: Path, span: tuple[int, int | None],
          finite: bool = False) -> tuple[PartSummary, dict[str, Any], Mended]:
    rows = Rows(db)
    try:
        header, cut, _ = _one(path, rows, True, span, finite)
        return rows.summary(), header, cut
    finally:
        rows.db.close()


def _result(other: Forked) -> tuple[PartSummary, dict[str, Any], Mended] | BaseException:
    try:
        value: tuple[PartSummary, dict[str, Any], Mended] = other.result()  # _part's, unpickled from the worker
        return value
    except Exception as e:  # noqa: BLE001 - the caller decides (NotFast, Collision: read again; others: raise)
        return e


def temp_folder() -> Path:
    return Path(tempdirs.make("kineto"))


