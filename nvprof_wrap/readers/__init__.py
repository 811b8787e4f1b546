"""Readers: one per profiler format, detected from the file's content (not its extension).

How to add a format: a module here with ``FORMAT = "name"``, ``sniff(head: Head) -> bool`` (from the first bytes,
never the extension) and ``read(path) -> Capture`` (aggregates in SQL, bounded memory: docs/performance.md), one
entry in _FORMATS below at the place its sniff is to be tried, a row in docs/formats.md, and a real file of the
format in tests/whole/test_contracts.py's REAL: the contract test fails for a format in READERS without one,
and reads each to check the Capture's shape.
"""
from __future__ import annotations

import functools
import gzip
import os
import sqlite3
import stat
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from nvprof_wrap.errors import BadInput, IOFailure
from nvprof_wrap.model import Capture
from nvprof_wrap.readers import (
    _dlprof,
    console_text,
    cupti_sqlite,
    kineto_json,
    ncu_csv,
    nsys_rep,
    nsys_sqlite,
    nsys_stats_csv,
    nvprof_csv,
    nvprof_sqlite,
    pyprof_csv,
    summary,
    tf_trace_json,
    xplane,
)
from nvprof_wrap.readers._bounded import gunzip_to as gunzip_to
from nvprof_wrap.readers._head import SQLITE_MAGIC, Head
from nvprof_wrap.readers._kineto_rows import KERNEL_CATS as KERNEL_CATS
from nvprof_wrap.readers._kineto_rows import MEM_CATS as MEM_CATS
from nvprof_wrap.readers._kineto_rows import RANGE_CATS as RANGE_CATS
from nvprof_wrap.readers._no_kernels import copies_only as copies_only
from nvprof_wrap.readers._trace_events import NotFast as NotFast
from nvprof_wrap.readers._trace_events import TraceEvents as TraceEvents
from nvprof_wrap.readers._validate import validate
from nvprof_wrap.readers._vendor import rocm_capture
from nvprof_wrap.run.names import MANIFEST, XLA_DUMP, not_a_capture
from nvprof_wrap.system import tempdirs, tools
from nvprof_wrap.system.limits import MAX_GUNZIPPED_SQLITE_BYTES
from nvprof_wrap.system.storage import machine_failure
from nvprof_wrap.timeline import gpm, recover
from nvprof_wrap.timeline.window import Window, make, refuse

# Imported "as" themselves: what other stages use of the readers' parsing, by public names (tests/whole/test_layers.py:
# no stage imports another's _private module) — a gzipped capture unpacked within its bound (export/trace.py), a
# Kineto trace's event categories and its streamed events (export/_kineto.py), the error for captures with copies
# but no kernel (pipeline/compose.py).

# The formats, in the order their sniffs are tried: each reader module declares FORMAT, sniff(head) and read(path).
# Adding a format: one module, one line here.
_FORMATS: tuple[tuple[str, Callable[[Head], bool], Callable[[Path], Capture]], ...] = tuple(
    (m.FORMAT, sniff, m.read) for m, sniff in (
        (summary, summary.sniff),
        (nsys_sqlite, nsys_sqlite.sniff), (nvprof_sqlite, nvprof_sqlite.sniff), (cupti_sqlite, cupti_sqlite.sniff),
        (xplane, xplane.sniff), (tf_trace_json, tf_trace_json.sniff), (kineto_json, kineto_json.sniff),
        (nsys_rep, nsys_rep.sniff),
        (ncu_csv, ncu_csv.sniff), (nvprof_csv, nvprof_csv.sniff), (pyprof_csv, pyprof_csv.sniff),
        (nsys_stats_csv, nsys_stats_csv.sniff), (console_text, console_text.sniff), (ncu_csv, ncu_csv.sniff_late)))
READERS: dict[str, Callable[[Path], Capture]] = {fmt: read for fmt, _, read in _FORMATS}
# The formats with a timeline of GPU activity: their read(path, window) applies --window / --steps.
TIMELINE: dict[str, Callable[[Path, Window | None], Capture]] = {
    m.FORMAT: m.read for m in (nsys_sqlite, nsys_rep, nvprof_sqlite, cupti_sqlite, kineto_json, xplane)}
# What a capture window's cut (Window.cut) applies to: what nsys recorded while its stop ran beside the job. Other
# captures in the run folder (a trace the job's own torch.profiler wrote) are read as they are.
CUT = {nsys_sqlite.FORMAT, nsys_rep.FORMAT}
# When a reader's output changes, change the data version (store.DATA_VERSION, the one knob): run stores kept beside
# run folders then read their captures again instead of going on reporting what an older reader made of them.

# What TensorBoard's profile plugin writes beside a run's trace: tool data derived from it, not captures.
_TENSORBOARD_TOOLS = (".kernel_stats.pb", ".overview_page.pb", ".input_pipeline.pb", ".tensorflow_stats.pb",
                      ".memory_profile.json.gz", ".pod_viewer.json", ".tpu_profile.json")


def _head(path: Path) -> Head:
    try:  # non-blocking: opening a FIFO must not wait for a writer; what it is decides before any read
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise BadInput(path, "is a directory" if stat.S_ISDIR(st.st_mode) else _special(st.st_mode))
            raw = f.read(65536)
    except OSError as e:
        raise machine_failure(path, e) or BadInput(path, f"cannot read ({e.strerror})") from None
    if not raw:
        raise BadInput(path, "empty file")
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as g:
                return Head(path, g.read(65536), st.st_size, gz=True)
        except (OSError, EOFError, zlib.error) as e:
            raise machine_failure(path, e) or BadInput(path, f"corrupt gzip file ({e})") from None
    return Head(path, raw, st.st_size)


# nsys writes its raw stream (.qdstrm), turns it into a .nsys-rep and deletes it: one left behind is an import that
# failed or stopped (a JAX job's on the H200: "Errors occurred while processing the raw events").
QDSTRM = ("an Nsight Systems raw stream (.qdstrm) that nsys did not turn into a report — its import failed or was cut "
          "short; not read: import it with QdstrmImporter --input-file FILE (beside nsys, in its host folder), then "
          "report the .nsys-rep")


# Windows PowerShell 5's `>` and Out-File write UTF-16 text (a byte-order mark, then two bytes a character): a console
# listing or CSV saved so was "binary file of an unknown format"
UTF16 = ("UTF-16 text (as Windows PowerShell's > and Out-File write it): save it as UTF-8 and report that — "
         "`Get-Content FILE | Set-Content -Encoding utf8 NEW` in PowerShell, `iconv -f UTF-16 -t UTF-8 FILE > NEW` "
         "elsewhere — or redirect the profiler's output with `| Out-File -Encoding utf8 FILE`")


def detect(path: Path) -> str:
    """The format of a capture, from its content: the first reader whose sniff says yes."""
    head = _head(path)
    if head.gz and head.raw.startswith(SQLITE_MAGIC):
        return "sqlite-gz"  # read() unpacks it and detects again
    fmt = next((fmt for fmt, sniff, _ in _FORMATS if sniff(head)), None)
    if fmt is not None:
        return fmt
    if head.is_sqlite:
        have = head.sqlite_tables
        if have & {"CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "CUPTI_ACTIVITY_KIND_KERNEL"}:  # had read "no kernel table"
            raise BadInput(path, "a CUPTI kernel table without the table of its kernels' names (nvprof's StringTable, "
                                 "Nsight Systems' StringIds): a damaged or hand-edited capture — not read")
        listed = ", ".join(t[:40] for t in sorted(have)[:6]) + (f" and {len(have) - 6} more" if len(have) > 6 else "")
        raise BadInput(path, "SQLite file is not an nvprof, Nsight Systems or nvprof-wrap capture (no kernel table; "
                             f"{'its tables: ' + listed if have else 'no tables'})")
    if head.json_start:
        raise BadInput(path, "JSON without traceEvents: not a Kineto / Chrome trace")
    if head.binary and path.name.endswith(".qdstrm"):
        raise BadInput(path, QDSTRM)
    if head.binary and head.raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # a UTF-16 byte-order mark
        raise BadInput(path, UTF16)
    if head.binary:
        raise BadInput(path, "binary file of an unknown format")
    if why := rocm_capture(head.raw):  # rocprof's stats CSV and other AMD outputs: said what they are
        raise BadInput(path, why)
    if why := _dlprof.explain(head):  # a report of a tool that reads captures: refused in its own words
        raise BadInput(path, why)
    raise BadInput(path, "not a profiler capture this tool reads (docs/formats.md lists them)")


def read(path: Path | str, window: tuple[float, float] | Window | None = None,
         steps: tuple[int, int] | None = None) -> Capture:
    """Read one capture; every failure becomes BadInput naming the file.

    window=(start_s, end_s): only what the GPU did in that window, in seconds from the capture's first GPU activity;
    steps=(A, B): only steps A..B-1 (timeline/window.py says which ranges are steps and what a window keeps). path:
    a str too (it was blamed on the file: "unreadable … capture (AttributeError: 'str' object has no attribute
    'stat')")."""
    path = Path(path)
    win = window if isinstance(window, Window) else make(window, steps)
    with recover.readable(path):  # an SQLite file with writes pending beside it: its committed content
        return _read(path, win)


# Exceptions no file's content can cause — a name, an import or an assertion of the reader's own code failing: its
# bug, which had read "unreadable … capture (NameError: …)", exit 2, on any file that reached that line
_OURS = (NameError, ImportError, AssertionError, NotImplementedError, SyntaxError)


def _read(path: Path, win: Window | None) -> Capture:
    fmt = detect(path)
    if win is not None and win.cuts_only and win.cut is None and fmt not in CUT and fmt != "sqlite-gz":
        win = None  # --with-warmup alone: only Nsight Systems captures leave a warm-up out (readers/_xla_warmup.py)
    if fmt == "sqlite-gz":
        return _read_gunzipped_sqlite(path, win)
    try:
        if fmt == summary.FORMAT:  # read through its window when it was summarised (readers/summary.py)
            return validate(summary.read(path, win))
        if win is not None and win.cut is not None and fmt not in CUT:
            win = win.asked()
        if win is None:
            return validate(READERS[fmt](path))
        if fmt not in TIMELINE:
            raise refuse(fmt)
        return _windowed(validate(TIMELINE[fmt](path, win)), win)
    except BadInput as e:
        raise BadInput(path, e.why) from None
    except (IOFailure, MemoryError):
        raise
    except _OURS:  # no content makes these: a reader's own bug, exit 70 with where to report it — not "bad input"
        raise
    except RecursionError:  # any parser of any reader, on input nested past what it can follow: that file's fault
        raise BadInput(path, f"unreadable {fmt} capture: nested deeper than the parser follows") from None
    except (sqlite3.Error, OSError) as e:  # the machine (a full TMPDIR under SQLite's sorts, EIO) or the content
        raise machine_failure(path, e) or BadInput(path, f"corrupt or unexpected SQLite content ({e})"
                                                   if isinstance(e, sqlite3.DatabaseError) else
                                                   f"unreadable {fmt} capture ({type(e).__name__}: {e})") from None
    except Exception as e:  # noqa: BLE001 - any failure on malformed content is bad input, named with the file
        raise BadInput(path, f"unreadable {fmt} capture ({type(e).__name__}: {e})") from None


def _read_gunzipped_sqlite(path: Path, window: Window | None = None) -> Capture:
    """A gzipped SQLite capture (people compress exports to keep or share them): unpacked, streaming and bounded,
    into a temporary folder that is removed once read."""
    with tempdirs.folder("gz") as tmp:
        plain = Path(tmp) / path.name.removesuffix(".gz")
        try:
            written = gunzip_to(path, plain, MAX_GUNZIPPED_SQLITE_BYTES)
        except OSError as e:  # a full TMPDIR is not a corrupt gzip file
            raise machine_failure(path, e) or BadInput(path, f"corrupt gzip file ({e})") from None
        except (EOFError, zlib.error) as e:
            raise BadInput(path, f"corrupt gzip file ({e})") from None
        if written is None:
            raise BadInput(path, f"gzipped SQLite unpacks to more than {MAX_GUNZIPPED_SQLITE_BYTES >> 30} GiB")
        gpm.keep_beside(path, plain)  # a run folder's GPM samples still lie beside the capture they belong to
        try:
            capture = read(plain, window)
        except BadInput as e:  # named after the file the user gave, not the temporary copy
            raise BadInput(path, e.why) from None
    return replace(capture, path=str(path))


def _windowed(capture: Capture, window: Window) -> Capture:
    if not capture.kernels and not capture.memops:
        raise BadInput(None, f"no GPU activity in {window.describe()}")
    return capture


def expand(paths: list[Path], skipped: list[tuple[str, str]] | None = None) -> Iterator[tuple[Path, bool]]:
    """(file, explicit) for each path; a directory yields every regular file below it, in a stable order.
    What a folder holds that cannot be read — FIFOs, sockets, devices (opening one can block forever), broken
    links, unreadable subfolders — goes to ``skipped`` as (path, why); an unreadable folder named explicitly is
    BadInput."""
    skipped = [] if skipped is None else skipped
    for p in paths:
        if not _is_dir(p):
            yield p, True
            continue
        for root, dirs, files in os.walk(p, onerror=functools.partial(_walk_error, top=p, skipped=skipped)):
            dirs.sort()
            if MANIFEST in files and XLA_DUMP in dirs:
                dirs.remove(XLA_DUMP)  # a run folder's XLA dumps: compiled code, read as evidence, never captures
            for name in sorted(files):
                if not_a_capture(name) or tools.is_export_scratch(name):  # a run folder's own files
                    continue
                if name.endswith((".nsys-rep", ".qdrep")) and _exported(Path(root) / name, files):
                    continue  # already exported: the .sqlite beside it is the same capture
                if name.endswith(".sqlite") and _stale_export(Path(root) / name, files):
                    continue  # an export left empty, cut short or stale: its .nsys-rep is read (exported again)
                if name.endswith(_TENSORBOARD_TOOLS) or name.startswith("events.out.tfevents."):
                    continue
                if name.endswith(".trace.json.gz") and name.replace(".trace.json.gz", ".xplane.pb") in files:
                    continue  # TensorFlow wrote the same run twice: the XSpace beside it has more
                why = not_a_file(Path(root) / name)
                if why:
                    skipped.append((str(Path(root) / name), why))
                else:
                    yield Path(root) / name, False


def _report_of(export: Path, files: list[str]) -> Path | None:
    return next((export.with_suffix(ext) for ext in (".nsys-rep", ".qdrep")
                 if export.with_suffix(ext).name in files), None)


def _exported(rep: Path, files: list[str]) -> bool:
    """Whether the .nsys-rep ``rep`` has a complete export beside it that stands for it: its .sqlite (not empty,
    not cut short, not older than the report: tools.export_problem), or that export gzipped (x.sqlite.gz)."""
    export = rep.with_suffix(".sqlite")
    if export.name in files:
        return tools.export_problem(export, rep) is None
    if export.name + ".gz" in files:
        try:
            with gzip.open(export.with_name(export.name + ".gz"), "rb") as g:
                return g.read(16).startswith(SQLITE_MAGIC)
        except (OSError, EOFError, zlib.error):
            return False
    return False


def _stale_export(export: Path, files: list[str]) -> bool:
    """An export beside its .nsys-rep that cannot stand for it (empty, cut short, older): the report is read
    instead, through a fresh export — unless the file is no export at all (read as what it is)."""
    rep = _report_of(export, files)
    return rep is not None and not _exported(rep, files) and tools.replaceable_export(export)


def _is_dir(p: Path) -> bool:
    try:
        return stat.S_ISDIR(p.stat().st_mode)
    except FileNotFoundError:
        return False
    except OSError as e:
        raise BadInput(p, f"cannot read ({e.strerror})") from None


def _walk_error(e: OSError, top: Path, skipped: list[tuple[str, str]]) -> None:
    if Path(e.filename) == top:
        raise BadInput(top, f"cannot read the folder ({e.strerror})")
    skipped.append((e.filename, f"folder not read ({e.strerror})"))


def not_a_file(path: Path) -> str | None:
    """Why ``path`` is not a regular file that can be read without blocking, or None."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "broken link"
    except OSError as e:
        return f"cannot read ({e.strerror})"
    return None if stat.S_ISREG(mode) else _special(mode)


def _special(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
             (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder"))
    return "not a regular file (" + next((k for test, k in kinds if test(mode)), "special") + ")"
