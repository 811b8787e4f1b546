"""Console text that profilers print, recognised by content wherever it sits among the program's own output:
nvprof's summary, GPU trace and metrics (readers/console_nvprof.py), Nsight Systems' stats tables and Nsight
Compute's per-kernel sections (readers/console_nsight.py). Summaries come at the end of a log, so the first and
the last 64 KiB are what detection looks at; reading streams the whole file once per kind found.
"""
from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Capture, CounterVerdict, Gpu, KernelAgg, MemAgg, OpAgg, Process, merge_kernels
from nvprof_wrap.readers import _log_gpus, console_nsight, console_nvprof, ncu_csv
from nvprof_wrap.readers._csv import cut_lines, open_text
from nvprof_wrap.readers._head import Head
from nvprof_wrap.system.bounded import open_bytes

_WINDOW = 65536
# kind → (what marks it, in order of precedence)
MARKERS: dict[str, re.Pattern[str]] = {
    # the whole summary, or its rows pasted without the header: a "GPU activities:" row, or two rows one after
    # the other (console_nvprof.ROW_TAIL: times with their units)
    "nvprof-summary": re.compile(r"^==\d+== Profiling result:\s*\n(?:.*\n)?.*Time\(%\)\s+Time\s+Calls|"
                                 rf"^[ \t]*GPU activities:[ \t]+{console_nvprof.ROW_TAIL}|"
                                 rf"^[ \t]*{console_nvprof.ROW_TAIL}.*\n[ \t]*{console_nvprof.ROW_TAIL}", re.MULTILINE),
    "nvprof-gpu-trace": re.compile(r"^==\d+== Profiling result:\s*\n\s+Start\s+Duration\s", re.MULTILINE),
    "nvprof-metrics": re.compile(r"^Invocations\s+Metric Name\s+Metric Description\s+Min\s+Max\s+Avg", re.MULTILINE),
    # nsys's own lines, or a kernel table's header wherever it was pasted (columns, CSV, a Markdown pipe table)
    "nsys-stats": re.compile(r"Executing '(?:cuda_gpu_kern_sum|gpukernsum|cuda_gpu_mem_time_sum|cuda_gpu_sum)'|"
                             r"\((?:cuda_gpu_kern_sum|gpukernsum)\):|^CUDA Kernel Statistics|"
                             r"^[ \t>|]*\"?Time ?\(%\)\"?[ \t|,]+\"?Total Time(?: \(ns\))?\"?[ \t|,]+\"?Instances\b",
                             re.MULTILINE),
    "ncu-console": re.compile(r"^\s{4}Section: ", re.MULTILINE),
}


FORMAT = "console-text"


def sniff(head: Head) -> bool:
    return bool(head.text) and bool(kinds(head.path, head.text))


def kinds(path: Path, head: str) -> list[str]:
    """The console kinds in a text file (or a gzipped one), from its first and last 64 KiB. Detection asks, then
    reading asks again: the answer is kept for the same file, unchanged, so a gzipped log is not unpacked twice."""
    st = path.stat()
    return list(_kinds(str(path), st.st_size, st.st_mtime_ns, head))


@functools.lru_cache(maxsize=4)
def _kinds(path: str, _size: int, _mtime_ns: int, head: str) -> tuple[str, ...]:
    text = head + "\n" + _tail(Path(path), len(head.encode()))
    return tuple(kind for kind, marker in MARKERS.items() if marker.search(text))


def _tail(path: Path, head_bytes: int) -> str:
    """The last 64 KiB of the text past the first head_bytes ('' when the head was all of it). A gzipped log is
    streamed through once, keeping only the last window."""
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
        if not gz:
            size = os.fstat(f.fileno()).st_size
            if size <= head_bytes:
                return ""
            f.seek(max(head_bytes, size - _WINDOW))
            return f.read().decode("utf-8", errors="replace")
    with open_bytes(path) as g:  # within the gzip budget
        skip = head_bytes
        while skip > 0 and (chunk := g.read(min(skip, 1 << 20))):
            skip -= len(chunk)
        window = b""
        while chunk := g.read(1 << 20):
            window = (window + chunk)[-_WINDOW:]
    return window.decode("utf-8", errors="replace")


def _lines(path: Path) -> Iterator[str]:
    with open_text(path) as f:
        yield from cut_lines(f)  # a program's line of gigabytes is not held (MemoryError before)


@dataclass(frozen=True)
class Part:
    """What one kind of console output in a text gave."""

    kernels: Sequence[KernelAgg] = ()
    memops: Sequence[MemAgg] = ()
    counters: Sequence[CounterVerdict] = ()
    devices: Sequence[Gpu] = ()
    notes: Sequence[str] = ()
    ops: Sequence[OpAgg] = ()


def _nvprof_summary(path: Path) -> Part:
    kernels, mem, bare, odd, repeated = console_nvprof.summary(_lines(path), path)
    fragment = (f"nvprof summary: {bare} rows without their '==PID== Profiling result:' header (pasted in part): "
                "only the kernels shown")
    first = odd[0] if odd else ""
    shown = first if len(first) <= 80 else first[:79] + "…"
    unread = (f"nvprof summary: {len(odd):,} line(s) inside its table are no row this reader knows (first: "
              f"{shown!r}): not counted — the kernels they name, if any, are missing")
    twice = (f"nvprof summary: {repeated} table(s) repeat an earlier one row for row (the same summary pasted "
             "twice?): counted once")
    return Part(kernels, mem, notes=["nvprof summary: no timeline, no idle time", *([fragment] if bare else []),
                                     *([unread] if odd else []), *([twice] if repeated else [])])


def _nvprof_trace(path: Path) -> Part:
    kernels, mem, devices, notes = console_nvprof.gpu_trace(_lines(path), path)
    return Part(kernels, mem, devices=devices, notes=notes)


def _nvprof_metrics(path: Path) -> Part:
    kernels, counters, devices = console_nvprof.metrics(_lines(path))
    return Part(kernels, counters=counters, devices=devices,
                notes=["nvprof --metrics: launches replayed for counters, kernel time not captured"])


def _nsys(path: Path) -> Part:
    t = console_nsight.nsys_tables(_lines(path))
    return Part(t.kernels, t.memops, devices=t.devices,
                notes=["nsys stats tables: no timeline, no idle time", *t.notes], ops=t.ops)


def _ncu(path: Path) -> Part:
    launches, profiled = console_nsight.ncu_sections(_lines(path))
    if not launches:
        return Part()
    c = ncu_csv._aggregate(path, launches.values())
    count = console_nsight.ncu_count_note(len(launches), profiled)
    return Part(c.kernels, counters=c.counters, devices=c.devices, notes=[*c.notes, *([count] if count else [])])


READERS: dict[str, Callable[[Path], Part]] = {
    "nvprof-summary": _nvprof_summary, "nvprof-gpu-trace": _nvprof_trace, "nvprof-metrics": _nvprof_metrics,
    "nsys-stats": _nsys, "ncu-console": _ncu,
}


FOLDED_SHARE = 0.3  # of a text's non-empty lines, exactly as long as its longest: folded at that width


def _folded(head: str) -> str:
    """What to add where a text's tables gave no kernel row and its lines look folded at one width (a terminal's or
    an editor's hard wrap at 80 or 120 columns cuts each table row in two: neither half is a row): '' otherwise."""
    lines = [line for line in head.splitlines() if line.strip()]
    if len(lines) < 4:
        return ""
    width = max(map(len, lines))
    widest = [line for line in lines if len(line) == width]
    at = len(widest)
    # a fold cuts wherever the width falls: inside words and numbers; rows nsys padded to one width (its boxed
    # tables) end in blanks or a border
    inside = sum(1 for line in widest if line[-1] not in " |+")
    if width < 40 or at < FOLDED_SHARE * len(lines) or inside < at / 3:
        return ""
    return (f" — {at} of its {len(lines)} lines are exactly {width} characters long: the text looks folded at "
            f"{width} columns, each table row cut in two; paste it unwrapped (`nsys stats --format csv` writes whole "
            "rows)")


def read(path: Path, found: list[str] | None = None) -> Capture:
    with open_text(path) as f:  # gzipped logs too (decompressed as read)
        head = f.read(_WINDOW)
    present = found or kinds(path, head)
    parts = {kind: READERS[kind](path) for kind in present}
    kernels: list[KernelAgg] = [k for p in parts.values() for k in p.kernels]
    if not kernels:
        cut = next((f" — {n}" for p in parts.values() for n in p.notes if n.startswith(console_nsight.CUT_ROW)), "")
        raise BadInput(path, f"{' and '.join(present) or 'console text'} found, but no kernel row in it "
                             f"(only copies, API calls or other tables){_folded(head) or cut}")
    memops: list[MemAgg] = [m for p in parts.values() for m in p.memops]
    counters: list[CounterVerdict] = [c for p in parts.values() for c in p.counters]
    devices = {d.device_id: d for p in parts.values() for d in p.devices}
    # GPUs the rest of the log names (TensorFlow's start-up lines, nvprof's 'Device "…"'), where the tables do not
    devices, logged = _log_gpus.fill_in(devices, head + "\n" + _tail(path, len(head.encode())))
    pids = sorted({k.pid for k in kernels if k.pid is not None})
    notes = tuple(n for p in parts.values() for n in p.notes) + logged
    # Counter-only formats keep their own names: the report counts their replayed launches only when nothing
    # timed the kernels (report.py).
    fmt = present[0] if present in (["ncu-console"], ["nvprof-metrics"]) else "console-" + "+".join(present)
    return Capture(str(path), fmt, merge_kernels(kernels), tuple(memops), devices=tuple(devices.values()),
                   processes=tuple(Process(p) for p in pids), counters=tuple(counters), notes=notes,
                   ops=tuple(o for p in parts.values() for o in p.ops))
