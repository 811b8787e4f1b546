"""One error hierarchy. The library raises; only ``cli`` turns an error into one line and an exit code."""
from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType

# An unexpected exception, a bug of ours: the command line exits with this (sysexits' EX_SOFTWARE), never 1, which
# is a missed gate (cli/_exit.py).
INTERNAL = 70
# The machine's storage failed us, not the input (sysexits' EX_IOERR): IOFailure.
IO_ERROR = 74


class NvprofWrapError(Exception):
    """Base of every error this package raises on purpose (a usage error to the command line: exit 2)."""

    exit_code = 2


class BadInput(NvprofWrapError):
    """A file or argument we cannot use: names the file and the problem (exit code 2)."""

    exit_code = 2

    def __init__(self, path: Path | str | None, why: str) -> None:
        self.path = None if path is None else str(path)
        # One line, always: parser errors (ijson, sqlite) can carry newlines and carets.
        why = " ".join(str(why).split())
        self.why = why if len(why) <= 300 else why[:297] + "..."
        super().__init__(f"{self.path}: {self.why}" if self.path else self.why)

    # crosses process boundaries (parallel reading) with its two fields
    def __reduce__(self) -> tuple[type[NvprofWrapError], tuple[object, str]]:
        return (type(self), (self.path, self.why))


class IOFailure(NvprofWrapError):
    """The machine failed, not the file: the disk or the temporary folder is full, a read or a write gave an I/O
    error (exit code 74, sysexits' EX_IOERR). Never a reason to call a capture damaged or to skip it: the same file
    reads once space is freed. Not a BadInput, so that no reader's `except BadInput` (skip a bad file, go on)
    swallows it."""

    exit_code = IO_ERROR

    def __init__(self, path: Path | str | None, why: str) -> None:
        self.path = None if path is None else str(path)
        why = " ".join(str(why).split())
        self.why = why if len(why) <= 300 else why[:297] + "..."
        super().__init__(f"{self.path}: {self.why}" if self.path else self.why)

    def __reduce__(self) -> tuple[type[NvprofWrapError], tuple[object, str]]:
        return (type(self), (self.path, self.why))


class CannotWrite(BadInput):
    """A file nvprof-wrap must write cannot be written: disk full, read-only, locked by another process
    (exit code 2). Never a reason to call the file damaged."""


class ToolMissing(NvprofWrapError):
    """A profiler or helper program that the requested action needs is not installed (exit code 2)."""

    exit_code = 2


class Terminated(BaseException):
    """SIGTERM (or, for a command that reads, SIGHUP) ends the command the way Ctrl-C does: raised where the
    process is, so that every ``finally`` runs — temporary folders are removed, helper processes stopped — and
    the command exits 128+signal. A BaseException, like KeyboardInterrupt: no ``except Exception`` swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def terminate(signum: int, _frame: FrameType | None) -> None:
    """A signal handler (lifeline.end_on): raise Terminated where the process is — once. The same signal again is
    ignored from then on: it would cut the cleanup short (a pool worker got a second SIGTERM from the pool, which
    took its sibling's exit for a crash, in the middle of removing its temporary folder)."""
    signal.signal(signum, signal.SIG_IGN)
    raise Terminated(signum)
