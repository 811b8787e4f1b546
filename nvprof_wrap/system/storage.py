"""Whose fault a failed read or write is: the machine's storage (disk, quota or temporary folder full, an I/O
error: exit 74, errors.IOFailure) or the input or path the user chose (a damaged capture: BadInput; read-only,
locked, not a folder: CannotWrite; both exit 2). One table, used by the readers, the command line's last resort, its
outputs, the run store and the run's manifest.

A machine's failure is never the capture's fault: the same file reads once space is freed. So under a read it is
IOFailure, never BadInput — which a folder's read skips with a note and exit 0, and which says "corrupt".
"""
from __future__ import annotations

import errno
import os
import sqlite3
import tempfile
from pathlib import Path

from nvprof_wrap.errors import CannotWrite, IOFailure

# errno → how it is said. Only these are the machine's: the same command works again once space is freed or the
# disk is healthy, whatever path was given.
MACHINE = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EIO: "I/O error"}


def machine_failed(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in MACHINE


def why(e: OSError) -> str:
    """The few words for an OSError: 'disk full' rather than 'No space left on device'."""
    return (MACHINE.get(e.errno) if e.errno is not None else None) or e.strerror or str(e)


def write_error(path: Path | str | None, e: OSError, what: str = "cannot write") -> CannotWrite | IOFailure:
    """The error to raise for an OSError while writing ``path``: IOFailure (74) when the machine failed, else
    CannotWrite (2)."""
    kind = IOFailure if machine_failed(e) else CannotWrite
    return kind(path, f"{what} ({why(e)})")

_SQLITE_IOERR, _SQLITE_FULL = 10, 13  # primary result codes (extended codes keep them in the low byte)
# What SQLite says when the code did not come with the error (an older Python): its own fixed messages.
_SQLITE_MESSAGES = {"database or disk is full": _SQLITE_FULL, "disk I/O error": _SQLITE_IOERR}


def machine_failure(path: Path | str | None, e: BaseException) -> IOFailure | None:
    """IOFailure naming `path` when `e` (an OSError or a sqlite3.Error met while reading it) is the machine's
    storage failing — full (ENOSPC, EDQUOT, SQLITE_FULL) or erring (EIO, SQLITE_IOERR*) — else None."""
    if isinstance(e, OSError):
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            return IOFailure(path, _full(e.filename))
        if e.errno == errno.EIO:
            return IOFailure(path, f"I/O error{_on(e.filename)}: the disk failed, not the capture")
        return None
    if isinstance(e, sqlite3.Error):
        code = getattr(e, "sqlite_errorcode", None)
        code = _SQLITE_MESSAGES.get(str(e)) if code is None else code & 0xFF
        if code == _SQLITE_FULL:  # a read writes only SQLite's temporary files (sorts, GROUP BY)
            return IOFailure(path, _full(None, sqlite=True))
        if code == _SQLITE_IOERR:
            return IOFailure(path, f"I/O error while reading (SQLite: {e}): the disk or {_temp_name(True)} "
                                   "failed, not the capture")
    return None


def _full(filename: str | bytes | None, sqlite: bool = False) -> str:
    if filename is not None and not _in_temp(os.fsdecode(filename)):
        return f"disk full writing {os.fsdecode(filename)}: free space and read it again"
    return f"temporary space full in {_temp_name(sqlite)}: free space or set TMPDIR"


def _on(filename: str | bytes | None) -> str:
    return "" if filename is None else f" on {os.fsdecode(filename)}"


def _in_temp(filename: str) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())
    except (OSError, ValueError):
        return False


def _temp_name(sqlite: bool) -> str:
    """NAME=folder of the temporary folder in use: SQLite's own (SQLITE_TMPDIR first, then TMPDIR, then the
    system's, as its Unix VFS looks) or Python's (tempfile: TMPDIR, else the first writable of the system's)."""
    if sqlite:
        for name in ("SQLITE_TMPDIR", "TMPDIR"):
            folder = os.environ.get(name)
            if folder and os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
                return f"{name}={folder}"
        for folder in ("/var/tmp", "/usr/tmp", "/tmp"):
            if os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
                return f"TMPDIR={folder} (the default)"
    return f"TMPDIR={tempfile.gettempdir()}"
