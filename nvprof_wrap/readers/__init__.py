"""Readers: one per profiler format, detected from the file's content (not its extension)."""
from __future__ import annotations

import gzip
import os
import sqlite3
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Capture
from nvprof_wrap.readers import (
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
    tf_trace_json,
    xplane,
)
from nvprof_wrap.readers._sqlite import connect_ro, tables
from nvprof_wrap.readers._validate import validate

READERS: dict[str, Callable[[Path], Capture]] = {
    "nsys-sqlite": nsys_sqlite.read, "nvprof": nvprof_sqlite.read, "cupti": cupti_sqlite.read,
    "kineto-json": kineto_json.read, "nvprof-csv": nvprof_csv.read, "nsys-stats-csv": nsys_stats_csv.read,
    "ncu-csv": ncu_csv.read, "pyprof-csv": pyprof_csv.read, "nsys-rep": nsys_rep.read,
    "tf-trace-json": tf_trace_json.read, "xplane": xplane.read, "console-text": console_text.read,
}
SQLITE_MAGIC = b"SQLite format 3\x00"
# Files a run folder holds that are not captures: skipped silently when a folder is read.
_NOT_CAPTURES = {"manifest.json", "run.sqlite", "stdout.log", "stderr.log", "metrics.jsonl", ".nvprof-wrap.lock", "report.html"}
# What TensorBoard's profile plugin writes beside a run's trace: tool data derived from it, not captures.
_TENSORBOARD_TOOLS = (".kernel_stats.pb", ".overview_page.pb", ".input_pipeline.pb", ".tensorflow_stats.pb",
                      ".memory_profile.json.gz", ".pod_viewer.json", ".tpu_profile.json")


def _sniff_sqlite(path: Path) -> str:
    conn = connect_ro(path)
    try:
        have = tables(conn)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        raise BadInput(path, f"corrupt SQLite file ({e})") from None
    finally:
        conn.close()
    if "StringIds" in have or "TARGET_INFO_SESSION_START_TIME" in have:
        return "nsys-sqlite"
    if "StringTable" in have and ("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL" in have or "CUPTI_ACTIVITY_KIND_KERNEL" in have):
        return "nvprof"
    if {"meta", "kernel"} <= have:
        return "cupti"
    raise BadInput(path, "SQLite file is not an nvprof, Nsight Systems or nvprof-wrap capture (no kernel table)")


def _ncu_header(line: str) -> bool:
    return line.startswith('"ID",') and '"Kernel Name"' in line


def _sniff_text(path: Path, head: str) -> str:
    lines = [ln for ln in head.splitlines() if ln.strip()]
    body = [ln for ln in lines if not ln.startswith("==")]
    first = body[0] if body else ""
    if '"Metric Name"' in first or ('"Kernel Name"' in first and '"CC"' in first) or any(map(_ncu_header, lines)):
        return "ncu-csv"  # the header may come after the program's own output
    if first.startswith(('"Type","Time(%)"', '"Start","Duration"')):
        return "nvprof-csv"
    if '"Kernel","Module","Op"' in first or first.startswith("Kernel,Module,Op"):
        return "pyprof-csv"
    if "Total Time" in first and ("Instances" in first or "Count" in first or "Calls" in first):
        return "nsys-stats-csv"
    if console_text.sniff(path, head):
        return "console-text"
    if "==PROF==" in head and _ncu_header_later(path):
        return "ncu-csv"
    raise BadInput(path, "not a profiler capture this tool reads (docs/formats.md lists them)")


def _ncu_header_later(path: Path) -> bool:
    """ncu's CSV header after more than 64 KiB of the program's own output (ncu prints the rows at the end)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return any(map(_ncu_header, f))


def detect(path: Path) -> str:
    """The format of a capture, from its first bytes."""
    try:  # non-blocking: opening a FIFO must not wait for a writer; what it is decides before any read
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise BadInput(path, "is a directory" if stat.S_ISDIR(mode) else _special(mode))
            head = f.read(65536)
    except OSError as e:
        raise BadInput(path, f"cannot read ({e.strerror})") from None
    if not head:
        raise BadInput(path, "empty file")
    if head.startswith(SQLITE_MAGIC):
        return _sniff_sqlite(path)
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as g:
                head = g.read(65536)
        except (OSError, EOFError, zlib.error) as e:
            raise BadInput(path, f"corrupt gzip file ({e})") from None
    if head[:1] == b"\x0a" and xplane.sniff(head, path.stat().st_size):
        return "xplane"
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    # '[' opens a JSON array only when an object (or nothing) follows: "[4242] python@host" is ncu's console.
    if stripped[:1] == b"{" or (stripped[:1] == b"[" and stripped[1:].lstrip()[:1] in (b"{", b"]", b"")):
        if b"traceEvents" in head and tf_trace_json.sniff(head):
            return "tf-trace-json"
        if b"traceEvents" in head or stripped[1:].lstrip()[:1] == b"{":
            return "kineto-json"
        raise BadInput(path, "JSON without traceEvents: not a Kineto / Chrome trace")
    if b"\x00" in head[:4096]:
        # Nsight Systems reports are a proprietary binary format: the extension is the only handle on it.
        if path.suffix in (".nsys-rep", ".qdrep"):
            return "nsys-rep"
        if path.name.endswith(".xplane.pb"):
            return "xplane"
        raise BadInput(path, "binary file of an unknown format")
    return _sniff_text(path, head.decode("utf-8", errors="replace"))


def read(path: Path) -> Capture:
    """Read one capture; every failure becomes BadInput naming the file."""
    fmt = detect(path)
    try:
        return validate(READERS[fmt](path))
    except BadInput as e:
        raise BadInput(path, e.why) from None
    except sqlite3.DatabaseError as e:
        raise BadInput(path, f"corrupt or unexpected SQLite content ({e})") from None
    except (MemoryError, RecursionError):
        raise
    except Exception as e:  # noqa: BLE001 - any failure on malformed content is bad input, named with the file
        raise BadInput(path, f"unreadable {fmt} capture ({type(e).__name__}: {e})") from None


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
        for root, dirs, files in os.walk(p, onerror=lambda e, top=p: _walk_error(e, top, skipped)):
            dirs.sort()
            for name in sorted(files):
                if name in _NOT_CAPTURES or name.endswith(("-journal", "-wal", "-shm")):
                    continue
                if name.endswith((".nsys-rep", ".qdrep")) and Path(name).with_suffix(".sqlite").name in files:
                    continue  # already exported: the .sqlite beside it is the same capture
                if name.endswith(_TENSORBOARD_TOOLS) or name.startswith("events.out.tfevents."):
                    continue
                if name.endswith(".trace.json.gz") and name.replace(".trace.json.gz", ".xplane.pb") in files:
                    continue  # TensorFlow wrote the same run twice: the XSpace beside it has more
                why = not_a_file(Path(root) / name)
                if why:
                    skipped.append((str(Path(root) / name), why))
                else:
                    yield Path(root) / name, False


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
