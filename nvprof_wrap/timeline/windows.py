"""What a windowed run's processes say of their capture window: RUN/windows.jsonl (tracer/window.py writes it, one
JSON object per event per process: "open", "close", "end", "failed", "stopped" — the profiler's stop, done on a
helper thread after a "close" with "stop": "aside" — and "detached": nsys' CUPTI detached from the job after that
stop).

``summary(path)`` folds the file into one ``Seen``: how many processes had a window, how many opened it, the steps it
opened and closed at, the last step any process began (the whole job's count, not just the window's), which step
source counted, and what failed. Bounded: a file past MAX_BYTES is read to that size only; lines that are not such
objects are skipped (a process killed mid-write leaves half a line).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nvprof_wrap.system import bounded

MAX_BYTES = 8 << 20


@dataclass(frozen=True)
class Seen:
    processes: int  # processes that said anything of their window
    opened: int  # of them, those whose window opened
    open_step: int | None  # the earliest step a window opened at (steps windows)
    close_step: int | None  # the latest step that closed one (None: every open one ran to its process's end)
    ended_inside: int  # processes that ended with their window open (it closed at their end)
    last_step: int | None  # the last step any process began
    source: str | None  # what counted the steps: "step marks" | "optimizer steps" | "keras batches"
    problems: tuple[str, ...]  # "failed" events: why a window could not open or close
    held_ms: float | None = None  # the longest any process was held opening and closing its window (None: unsaid)
    aside: int = 0  # processes whose profiler stopped on a helper thread (nsys: it recorded on while stopping)
    stop_ms: float | None = None  # the longest such a stop took there
    detached: int = 0  # processes from which the profiler's CUPTI was detached after its stop (every call status 0)


def _scalars(*values: object) -> bool:
    """Whether values can name a process (a record whose pid is a list or an object is not one of ours)."""
    return all(v is None or isinstance(v, (str, int, float)) for v in values)


def summary(path: Path) -> Seen | None:
    """None when the file is absent or holds no window record."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES)
    except OSError:
        return None
    by_process: dict[tuple[object, object], list[dict[str, Any]]] = {}
    for line in data.splitlines():
        try:
            event = bounded.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("event"), str) and _scalars(event.get("host"),
                                                                                      event.get("pid")):
            by_process.setdefault((event.get("host"), event.get("pid")), []).append(event)
    if not by_process:
        return None
    opened = ended_inside = aside = detached = 0
    open_steps, close_steps, last_steps, sources, problems, held, stops = [], [], [], [], [], [], []
    for events in by_process.values():
        kinds = [e["event"] for e in events]
        edges = [e["held_ms"] for e in events if e["event"] in ("open", "close") and _is_ms(e.get("held_ms"))]
        if edges:
            held.append(sum(edges))
        if "open" in kinds:
            opened += 1
        aside += any(e["event"] == "close" and e.get("stop") == "aside" for e in events)
        stops += [e["held_ms"] for e in events if e["event"] == "stopped" and _is_ms(e.get("held_ms"))]
        detached += any(e["event"] == "detached" and _all_detached(e.get("cupti")) for e in events)
        for e in events:
            step = e.get("step") if isinstance(e.get("step"), int) and not isinstance(e.get("step"), bool) else None
            if e["event"] == "open" and step is not None:
                open_steps.append(step)
            elif e["event"] == "close":
                if step is not None:
                    close_steps.append(step)
                ended_inside += e.get("at") == "end"
            elif e["event"] == "end":
                if step is not None:
                    last_steps.append(step)
                if isinstance(e.get("source"), str):
                    sources.append(e["source"])
            elif e["event"] == "failed" and isinstance(e.get("why"), str) and "open" not in kinds:
                problems.append(e["why"])  # (one that opened at a later step after all is not a problem)
            if e["event"] in ("close", "stopped") and isinstance(e.get("why"), str):
                problems.append(e["why"])
    return Seen(len(by_process), opened, min(open_steps) if open_steps else None,
                max(close_steps) if close_steps else None, ended_inside, max(last_steps) if last_steps else None,
                max(sorted(set(sources)), key=sources.count) if sources else None, tuple(dict.fromkeys(problems)),
                max(held) if held else None, aside, max(stops) if stops else None, detached)


def _all_detached(calls: object) -> bool:
    """[[path, status], ...] with at least one call and every status 0."""
    return isinstance(calls, list) and bool(calls) and all(
        isinstance(c, list) and len(c) == 2 and c[1] == 0 and not isinstance(c[1], bool) for c in calls)


def _is_ms(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e9

