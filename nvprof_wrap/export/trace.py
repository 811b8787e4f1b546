"""A report's captures as one Chrome trace-event JSON (docs/trace-export.md): what ui.perfetto.dev and
chrome://tracing open. Kernels are slices on their process's GPU stream tracks, coloured and annotated with the
Report's verdict for their name; copies and sets beside them; NVTX ranges (steps included) on the CPU threads that
pushed them; hardware counters as counter tracks.

``export(report, out)`` streams: SQL cursors row by row (Kineto: the events in batches), each event written as it
comes, each distinct kernel name looked up in the Report once. Only the captures are read here, never the run store.

The clock: times are microseconds from 1 µs before the trace's first event (so that it is at ts 1: Chrome DevTools
takes ts 0 for no time). Captures that can be placed in Unix time (nsys: the session's start; our CUPTI tracer: its
start stamp in both clocks; Kineto: baseTimeNanoseconds) share that clock when all of them can, so the processes of
one run line up; otherwise each capture starts at its own first event, and the trace's metadata (otherData.clock)
says which.
"""
from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from nvprof_wrap._version import __version__
from nvprof_wrap.errors import BadInput, ToolMissing
from nvprof_wrap.export import _counters
from nvprof_wrap.export._events import Trace, Verdicts
from nvprof_wrap.export._kineto import Kineto
from nvprof_wrap.export._sqlite_sources import Cupti, Nsys, Nvprof
from nvprof_wrap.export._timeline import FIRST_NS, Clock
from nvprof_wrap.readers import gunzip_to
from nvprof_wrap.report import Report
from nvprof_wrap.system import tempdirs, tools
from nvprof_wrap.system.limits import MAX_GUNZIPPED_SQLITE_BYTES
from nvprof_wrap.system.storage import machine_failure
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline import gpm, recover
from nvprof_wrap.timeline.recover import SQLITE_MAGIC
from nvprof_wrap.timeline.sql import opened
from nvprof_wrap.timeline.window import make

Source = Nsys | Cupti | Nvprof | Kineto
SQLITE: dict[str, type[Nsys | Cupti | Nvprof]] = {"nsys-sqlite": Nsys, "nsys-rep": Nsys, "cupti": Cupti,
                                                  "nvprof": Nvprof}
# Whose schema each is, for timeline/guard.py's check (the readers' own words)
PROFILER = {"nsys-sqlite": "Nsight Systems", "nsys-rep": "Nsight Systems", "cupti": "nvprof-wrap's CUPTI tracer",
            "nvprof": "nvprof"}
FORMATS = (*SQLITE, Kineto.FORMAT)
Warn = Callable[[str], None]


def check(report: Report) -> None:
    """Refuse, before any output, a report none of whose captures has a timeline this exporter writes."""
    if not any(s.format in FORMATS for s in report.sources):
        first = report.sources[0] if report.sources else None
        raise BadInput(first.path if first else None,
                       f"{first.format if first else 'this'} capture has no timeline to export as a trace (--format "
                       "trace writes Nsight Systems exports, nvprof-wrap CUPTI captures, nvprof .nvvp files and "
                       "PyTorch profiler traces; CSV summaries, ncu and console output hold totals, not events)")


# Characters of a kernel event besides its name and verdict args' texts, and of a copy or set: measured on the
# exports of the H200 captures (tests/export/test_trace.py checks the estimate against the file written).
KERNEL_EVENT_CHARS, MEMORY_EVENT_CHARS = 215, 175
LARGE_BYTES = 200_000_000  # a trace larger than this is warned about before it is written


def estimate(report: Report) -> int:
    """The trace's JSON text in bytes, from the report before any is written: every launch repeats its kernel's name
    and verdict args; copies and sets are smaller. NVTX ranges and counter samples are not counted (a floor)."""
    kernels = sum(k.launches * (KERNEL_EVENT_CHARS + len(k.name) + len(k.reason) + len(k.family) + len(k.precision))
                  for k in report.kernels)
    memory = sum(s.count for s in report.split if s.kind in ("memcpy", "memset"))
    return kernels + memory * MEMORY_EVENT_CHARS


def size_warning(report: Report, max_events: int | None = None) -> str | None:
    """One line before a trace of more than LARGE_BYTES is written, naming the options that cut it."""
    size = estimate(report)
    if max_events is not None:
        events = sum(k.launches for k in report.kernels) + sum(s.count for s in report.split
                                                               if s.kind in ("memcpy", "memset"))
        size = round(size * min(1.0, max_events / events)) if events else size
    if size <= LARGE_BYTES:
        return None
    return (f"nvprof-wrap: warning: the trace will be at least {size / 1e6:,.0f} MB of JSON (more than "
            f"{LARGE_BYTES / 1e6:.0f} MB: slow to write and to open); cut it with --steps A:B, --window START:END or "
            "--max-events N")


def export(report: Report, out: TextIO, *, window: tuple[float, float] | None = None,
           steps: tuple[int, int] | None = None, warn: Warn = lambda _: None, max_events: int | None = None,
           progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:  # otherData
    """Write the trace of ``report``'s captures to ``out`` (text); returns its metadata (otherData). ``max_events``:
    no more events than that (the metadata that names processes and tracks aside); ``progress(events, chars)``:
    called as the writing goes."""
    check(report)
    win = make(window, steps)
    notes: list[str] = []
    with contextlib.ExitStack() as stack:
        sources: list[tuple[Source, tuple[int, int]]] = []
        for s in report.sources:
            if s.format not in FORMATS:
                notes.append(f"{s.path}: a {s.format} capture has no timeline: not in the trace")
                continue
            source = _open(Path(s.path), s.format, stack)
            try:
                sources.append((source, source.span(win)))
            except BadInput as e:  # no activity in the window, or no step ranges in this capture
                notes.append(f"{s.path}: {e.why}: not in the trace")
        clocks, clock_note = _clocks([src for src, _ in sources])
        trace = Trace(out, max_events, progress)
        verdicts = Verdicts.of(report.kernels, demangle)
        for index, ((source, span), clock) in enumerate(zip(sources, clocks)):
            source.emit(trace, verdicts, index, clock, span)
        notes += _gpm_counters(trace, sources, clocks)
        if trace.dropped:
            notes.append(f"--max-events {max_events:,}: the first {trace.written:,} events written, "
                         f"{trace.dropped:,} left out")
        for note in notes:
            warn(f"nvprof-wrap: warning: {note}")
        other = {"exporter": f"nvprof-wrap {__version__}", "clock": clock_note, "verdicts": "tensor_core arg; "
                 "cname: good = tensor cores, terrible = not, grey = unknown", "captures": [
                     {"path": str(src.path), "format": src.FORMAT, "shift_ns": c.shift} for (src, _), c in
                     zip(sources, clocks)], "notes": notes}
        if win is not None:
            other["window"] = win.describe()
        trace.finish(other)
    return other


def _clocks(sources: list[Source]) -> tuple[list[Clock], str]:
    """Each capture's shift onto the trace's clock, and what that clock is."""
    timed = [s for s in sources if s.first_ns is not None]
    if len(timed) > 1 and all(s.unix_offset is not None for s in timed):
        origin = min(s.first_ns + s.unix_offset for s in timed
                     if s.first_ns is not None and s.unix_offset is not None) - FIRST_NS  # every one, as checked
        return [Clock((s.unix_offset or 0) - origin) for s in sources], \
            f"shared: Unix time, from {FIRST_NS} ns before the first event ({origin} ns since the epoch)"
    why = "one capture" if len(timed) <= 1 else "not every capture can be placed in Unix time"
    return [Clock(FIRST_NS - (s.first_ns or 0)) for s in sources], \
        f"each capture from {FIRST_NS} ns before its own first event ({why})"


def _gpm_counters(trace: Trace, sources: list[tuple[Source, tuple[int, int]]], clocks: list[Clock]) -> list[str]:
    """A run's GPM samples, once per samples file, on the clock of the first capture of the run that can be placed
    in Unix time."""
    done: set[Path] = set()
    notes = []
    for (source, span), clock in zip(sources, clocks):
        found = gpm.beside(source.path)
        if found is None or found in done:
            continue
        if source.unix_offset is None:
            notes.append(f"{found}: {source.path} records no start time to place the GPM samples on: not in the trace")
            continue
        done.add(found)
        _counters.gpm(trace, found, source.unix_offset, clock, span)
    return notes


def _open(path: Path, fmt: str, stack: contextlib.ExitStack) -> Source:
    """The capture as the exporter reads it: a gzipped SQLite file unpacked into a temporary folder, an .nsys-rep
    through its export, a CUPTI capture cut short by a kill rolled back on a private copy (as the readers do). Its
    queries run as the readers' do (timeline/guard.py): a schema not as the profiler writes it (a view, a trigger,
    a duplicated lookup id) refused in one line, every query under a budget, a signal ending a query as itself."""
    if fmt == Kineto.FORMAT:
        return Kineto(path)
    file = _sqlite_file(path, fmt, stack)
    try:
        conn = stack.enter_context(opened(file, PROFILER[fmt]))
    except BadInput as e:  # named by the file the user gave, not a temporary copy or export of it
        raise BadInput(path, e.why) from None
    return SQLITE[fmt](conn, path)


def _sqlite_file(path: Path, fmt: str, stack: contextlib.ExitStack) -> Path:
    if fmt == "nsys-rep":
        export = path.with_suffix(".sqlite")
        if tools.export_problem(export, path) is None:
            return export
        nsys = tools.find_nsys()
        if nsys is None:
            raise ToolMissing(f"{path}: an .nsys-rep file is exported through Nsight Systems (nsys export); install "
                              "it or pass the .sqlite export")
        tmp = Path(stack.enter_context(tempdirs.folder("export")))
        return tools.nsys_export(path, nsys, tmp / (path.stem + ".sqlite"))
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    if gz:
        tmp = Path(stack.enter_context(tempdirs.folder("gz")))
        plain = tmp / path.name.removesuffix(".gz")
        try:
            written = gunzip_to(path, plain, MAX_GUNZIPPED_SQLITE_BYTES)
        except OSError as e:  # a full TMPDIR is not a corrupt gzip file
            raise machine_failure(path, e) or BadInput(path, f"corrupt gzip file ({e})") from None
        except (EOFError, zlib.error) as e:
            raise BadInput(path, f"corrupt gzip file ({e})") from None
        with open(plain, "rb") as f:
            magic = f.read(len(SQLITE_MAGIC))
        if written is None or magic != SQLITE_MAGIC:
            raise BadInput(path, "gzipped file is not a SQLite capture within the size bound")
        path = plain
    # writes pending beside it (a journal, a WAL): connect_ro opens the copy recovered with them, held as long as
    # the export reads
    stack.enter_context(recover.readable(path))
    return path

