"""The Chrome trace-event writer: events written one by one into a text stream (never held), the processes and
tracks they are on (small dicts, one entry per track), and the metadata events that name them, written last.

Timestamps are integer ns on the capture's clock; each capture gives its shift onto the trace's clock, and the
writer turns ns into microseconds with three decimals ("%d.%03d": exact, so Perfetto's importer — which rounds
ts * 1000 — gets the same integer ns back).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NotRequired, TextIO, TypedDict

from nvprof_wrap.report import KernelRow

# Colours by verdict: "cname" values of Chrome's trace viewer (catapult's reserved colour names).
CNAME = {"yes": "good", "no": "terrible", "unknown": "grey"}
MEM_CNAME = {"memcpy": "yellow", "memset": "olive"}
SYNTHETIC = 1 << 30  # ids of made-up processes and tracks start here: above any Linux pid or tid (< 2^22)
GPU_SORT = 1 << 20  # GPU tracks sort after the CPU threads of their process
PROGRESS_EVERY = 16 << 20  # characters written between two progress reports


def us(ns: int) -> str:
    """Integer ns → microseconds as JSON text, exactly."""
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    q, r = divmod(ns, 1000)
    return f"{sign}{q}.{r:03d}"


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class KernelArgs(TypedDict):
    """A kernel event's args: its name's verdict in the report, and its launches there."""

    tensor_core: str
    precision: str
    family: str
    reason: str
    evidence: str
    launches: int
    verdicts: NotRequired[list[str]]  # the name's verdict differs by device


@dataclass
class Verdicts:
    """Each kernel name's verdict args, looked up in the Report once per distinct name (demangled, as the Report
    names kernels) and kept as the JSON text every launch of it repeats."""

    rows: dict[str, list[KernelRow]]
    demangle: Callable[[str], str]
    cache: dict[object, str] = field(default_factory=dict)
    named: dict[str, KernelArgs] = field(default_factory=dict)

    @classmethod
    def of(cls, kernels: tuple[KernelRow, ...], demangle: Callable[[str], str]) -> Verdicts:
        rows: dict[str, list[KernelRow]] = {}
        for k in kernels:
            rows.setdefault(k.name, []).append(k)
        return cls(rows, demangle)

    def prefix(self, key: object, raw: Callable[[], str]) -> str:
        """The start of a kernel event, up to its args' correlation value: name, colour and verdict args.
        ``key``: the capture's name key (a StringIds id, the raw name); ``raw()``: its name as the capture has it."""
        got = self.cache.get(key)
        if got is None:
            name = self.demangle(raw() or "<unnamed kernel>")
            args = self.args(name)
            got = self.cache[key] = (f'{{"ph":"X","cat":"kernel","name":{dumps(name)},'
                                     f'"cname":"{CNAME[args["tensor_core"]]}","args":{dumps(args)[:-1]},"correlation":')
        return got

    def args(self, name: str) -> KernelArgs:
        """The verdict args of a (demangled) kernel name."""
        got = self.named.get(name)
        if got is None:
            got = self.named[name] = self._args(name)
        return got

    def _args(self, name: str) -> KernelArgs:
        rows = self.rows.get(name, [])
        first = rows[0] if rows else None
        args: KernelArgs = {"tensor_core": first.tensor_core if first else "unknown",
                "precision": first.precision if first else "", "family": first.family if first else "",
                "reason": first.reason if first else "not in the report (outside its window or scope)",
                "evidence": first.evidence if first else "", "launches": sum(r.launches for r in rows)}
        if len({r.tensor_core for r in rows}) > 1:
            args["verdicts"] = sorted({r.tensor_core for r in rows})  # the name's verdict differs by device
        return args


class Trace:
    """Writes events to ``out``; tracks(): the (pid, tid) of a process's thread or GPU track, named once."""

    def __init__(self, out: TextIO, max_events: int | None = None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.out = out
        # every event is one line ending in ",\n": counted as written, cut after max_events (--max-events), and
        # progress(events, characters) told every PROGRESS_EVERY characters
        self.left = max_events
        self.written = self.dropped = self.chars = 0
        self.progress = progress
        self.next_report = PROGRESS_EVERY
        self.write: Callable[[str], object] = out.write if max_events is None and progress is None else self._counted
        self.procs: dict[tuple[object, object], int] = {}  # (capture, pid) → trace pid
        self.names: dict[int, tuple[str, int]] = {}  # trace pid → (name, sort index)
        self.threads: dict[tuple[int, int], tuple[str, int]] = {}  # (pid, tid) → (name, sort index)
        self.gpu: dict[tuple[object, ...], int] = {}  # (pid, device, stream, lane) → tid; (pid, "thread", tid)
        self.taken: set[int] = set()
        self.next_id = SYNTHETIC
        self.counts: dict[str, int] = {}
        out.write('{"displayTimeUnit":"ns","traceEvents":[\n')

    def _counted(self, text: str) -> None:
        n = text.count("\n")
        if self.left is not None:
            if self.left <= 0:  # past --max-events: nothing more but the metadata (finish)
                self.dropped += n
                return
            if n > self.left:  # cut a batch after its last event within the limit
                cut = -1
                for _ in range(self.left):
                    cut = text.index("\n", cut + 1)
                kept = text[:cut + 1]
                last = kept.rfind("\n", 0, -1) + 1
                if kept.startswith('{"ph":"b"', last):  # never an async begin without its end (its next line)
                    kept = kept[:last]
                text = kept
                self.dropped += n - kept.count("\n")
                n = kept.count("\n")
                self.left = n  # the limit reached (less one where a begin went)
            self.left -= n
        self.out.write(text)
        self.written += n
        self.chars += len(text)
        if self.progress is not None and self.chars >= self.next_report:
            self.next_report = self.chars + PROGRESS_EVERY
            self.progress(self.written, self.chars)

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def claim(self, capture: object, pid: object) -> int:
        """The trace pid of a capture's process: its own pid unless another capture's process took it (or it is
        not a plain 32-bit id)."""
        key = (capture, pid)
        got = self.procs.get(key)
        if got is None:
            own = pid if isinstance(pid, int) and 0 < pid < SYNTHETIC and pid not in self.taken else None
            got = self.procs[key] = own if own is not None else self.new_id()
            self.taken.add(got)
        return got

    def process(self, capture: object, pid: object, name: str) -> int:
        """claim(), and the process named (by the first name given)."""
        got = self.claim(capture, pid)
        if got not in self.names:
            self.names[got] = (name, len(self.names))
        return got

    def remap(self, key: tuple[object, ...]) -> int:
        """A stable made-up id for ``key`` (an id Perfetto would not take as it is)."""
        got = self.gpu.get(key)
        if got is None:
            got = self.gpu[key] = self.new_id()
        return got

    def thread(self, pid: int, tid: object, name: str | None = None) -> int:
        """A CPU thread's tid: its own, or a made-up one where it is not a plain 32-bit id below SYNTHETIC (CUPTI's
        thread ids can be any 32-bit value)."""
        own = tid
        if isinstance(tid, int) and 0 < tid < SYNTHETIC:
            made = tid
        else:
            made = self.gpu.get((pid, "thread", own)) or self.gpu.setdefault((pid, "thread", own), self.new_id())
        if (pid, made) not in self.threads:
            cpu = sum(1 for p, t in self.threads if p == pid and self.threads[(p, t)][1] < GPU_SORT)
            self.threads[(pid, made)] = (name or f"thread {own}", cpu)
        return made

    def gpu_track(self, pid: int, device: int | None, stream: int | None, lane: int) -> int:
        key = (pid, device, stream, lane)
        tid = self.gpu.get(key)
        if tid is None:
            tid = self.gpu[key] = self.new_id()
            label = f"GPU {device if device is not None else '?'} · stream {stream if stream is not None else '?'}"
            order = GPU_SORT + (device or 0) * 10_000 + len([k for k in self.gpu if k[:2] == (pid, device)])
            self.threads[(pid, tid)] = (label + (f" · overlap {lane}" if lane else ""), order)
        return tid

    def count(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def finish(self, other: dict[str, Any]) -> None:  # the trace's otherData: a JSON object
        """The metadata events (names and sort indices), then the trace's own metadata (otherData)."""
        meta = []
        for pid, (name, order) in self.names.items():
            meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
            meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": order}})
        for (pid, tid), (name, order) in self.threads.items():
            meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
            meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                         "args": {"sort_index": order}})
        if not meta:  # (a Kineto trace names its own processes) one event still closes the list: no trailing comma
            meta.append({"ph": "M", "name": "nvprof_wrap_trace", "pid": 0, "tid": 0, "args": {}})
        self.out.write(",\n".join(dumps(m) for m in meta))
        self.out.write(f'\n],"otherData":{dumps(other | {"events": self.counts})}}}\n')
