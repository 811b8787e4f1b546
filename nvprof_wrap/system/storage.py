"""Whose fault a failed read or write is: the machine's storage (disk or quota full, an I/O error: exit 74,
errors.IOFailure) or the path the user chose (read-only, locked, not a folder: exit 2, errors.CannotWrite).
One table, used by the command line's last resort, its outputs, the run store and the run's manifest."""
from __future__ import annotations

import errno
from pathlib import Path

from nvprof_wrap.errors import CannotWrite, IOFailure

# errno → how it is said. Only these are the machine's: the same command works again once space is freed or the
# disk is healthy, whatever path was given.
MACHINE = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EIO: "I/O error"}


def machine_failed(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in MACHINE


def why(e: OSError) -> str:
    """The few words for an OSError: 'disk full' rather than 'No space left on device'."""
    return MACHINE.get(e.errno) or e.strerror or str(e)  # type: ignore[arg-type]


def write_error(path: Path | str | None, e: OSError, what: str = "cannot write") -> CannotWrite | IOFailure:
    """The error to raise for an OSError while writing ``path``: IOFailure (74) when the machine failed, else
    CannotWrite (2)."""
    kind = IOFailure if machine_failed(e) else CannotWrite
    return kind(path, f"{what} ({why(e)})")
