"""An independent, strict reader of the Chrome trace-event format, holding a trace to what Perfetto's JSON importer
(trace_processor's json_trace_tokenizer / json_trace_parser) takes: every event an object with a one-letter "ph" it
knows; ts (and dur) numbers, turned into integer ns as Perfetto does (llround(us * 1000)); pid and tid 32-bit
unsigned integers (or, as Perfetto also takes, strings); X slices on one thread track nested (Perfetto drops a slice
that crosses the one open on its track); b/e pairs matched by (cat, id, name); C events with numeric args only; M
events naming processes and threads with non-empty names. Shares nothing with nvprof_wrap.export."""
from __future__ import annotations

import gzip
import itertools
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

PHASES = set("XBEbenIiCMstfPRNODc(")
META = {"process_name", "thread_name", "process_sort_index", "thread_sort_index", "process_labels",
        "process_uptime_seconds"}


class Invalid(AssertionError):
    pass


@dataclass
class Parsed:
    events: list[dict]
    other: dict
    slices: dict[tuple, list[tuple[int, int, dict]]] = field(default_factory=lambda: defaultdict(list))
    process_names: dict = field(default_factory=dict)
    thread_names: dict = field(default_factory=dict)
    counters: dict[tuple, list[tuple[int, float]]] = field(default_factory=lambda: defaultdict(list))
    asyncs: int = 0

    def kernels(self) -> list[dict]:
        return [e for e in self.events if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel")]


def _ns(value: object, what: str, ev: dict) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Invalid(f"{what} is not a finite number: {ev}")
    return round(value * 1000)


def _id32(value: object, what: str, ev: dict, strings: bool) -> object:
    if isinstance(value, str) and strings:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise Invalid(f"{what} is not a 32-bit unsigned integer: {ev}")
    return value


def load(path: Path, strings: bool = False) -> Parsed:
    """Parse and check a trace file (gzip or plain). strings: accept string pids/tids (Kineto writes some)."""
    raw = Path(path).read_bytes()
    data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    events = data if isinstance(data, list) else data.get("traceEvents")
    if not isinstance(events, list):
        raise Invalid("no traceEvents array")
    out = Parsed(events, data.get("otherData", {}) if isinstance(data, dict) else {})
    opened: dict[tuple, int] = {}
    for ev in events:
        _check(ev, out, opened, strings)
    if opened:
        raise Invalid(f"async slices begun and never ended: {list(opened)[:3]}")
    for track, slices in out.slices.items():
        _nested(track, slices)
    return out


def _check(ev: object, out: Parsed, opened: dict, strings: bool) -> None:
    if not isinstance(ev, dict) or not isinstance(ev.get("ph"), str) or ev["ph"] not in PHASES:
        raise Invalid(f"not an event with a known ph: {ev}")
    ph = ev["ph"]
    pid = _id32(ev.get("pid", 0), "pid", ev, strings)
    tid = _id32(ev.get("tid", 0), "tid", ev, strings)
    if ph == "M":
        _meta(ev, out, pid, tid)
        return
    ts = _ns(ev.get("ts"), "ts", ev)
    if ph == "X":
        dur = _ns(ev.get("dur"), "dur", ev)
        if dur < 0:
            raise Invalid(f"negative dur: {ev}")
        if not isinstance(ev.get("name"), str):
            raise Invalid(f"slice without a name: {ev}")
        out.slices[(pid, tid)].append((ts, ts + dur, ev))
    elif ph == "C":
        args = ev.get("args")
        if not isinstance(args, dict) or not args:
            raise Invalid(f"counter without args: {ev}")
        for key, value in args.items():
            _ns(value, f"counter value {key}", ev)
            out.counters[(pid, f"{ev.get('name')} {key}")].append((ts, value))
    elif ph in "be":
        if "id" not in ev:
            raise Invalid(f"async event without an id: {ev}")
        key = (pid, ev.get("cat"), ev["id"], ev.get("name"))
        if ph == "b":
            if key in opened:
                raise Invalid(f"async slice begun twice: {ev}")
            opened[key] = ts
        else:
            start = opened.pop(key, None)
            if start is None or ts < start:
                raise Invalid(f"async end without its begin (or before it): {ev}")
            out.asyncs += 1


def _meta(ev: dict, out: Parsed, pid: object, tid: object) -> None:
    name, args = ev.get("name"), ev.get("args")
    if name not in META or not isinstance(args, dict):
        return  # Perfetto ignores other metadata events; Kineto writes some
    if name in ("process_name", "thread_name"):
        if not isinstance(args.get("name"), str) or not args["name"]:
            raise Invalid(f"{name} without a name: {ev}")
        (out.process_names if name == "process_name" else out.thread_names)[
            pid if name == "process_name" else (pid, tid)] = args["name"]
    elif name.endswith("sort_index") and (isinstance(args.get("sort_index"), bool)
                                          or not isinstance(args.get("sort_index"), int)):
        raise Invalid(f"{name} without an integer sort_index: {ev}")


def _nested(track: tuple, slices: list[tuple[int, int, dict]]) -> None:
    """Slices of one track, each inside the one open when it begins (equal starts: the longer one is the parent)."""
    slices.sort(key=lambda s: (s[0], -s[1]))
    stack: list[tuple[int, int, dict]] = []
    for s in slices:
        while stack and stack[-1][1] <= s[0]:
            stack.pop()
        if stack and s[1] > stack[-1][1]:
            raise Invalid(f"slices cross on track {track}: {stack[-1][2]} and {s[2]}")
        stack.append(s)


def overlapping(slices: list[tuple[int, int, dict]]) -> int:
    """How many slices begin before the one before them ends (a GPU stream track should have none)."""
    ordered = sorted(slices, key=lambda s: (s[0], s[1]))
    return sum(1 for a, b in itertools.pairwise(ordered) if b[0] < a[1])
