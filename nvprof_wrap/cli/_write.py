"""Where a command's output goes: stdout (a reader that went away stops the printing, not the command) or the
FILE that -o / --save names — checked before any work (never an input, never a run folder's own file), written whole
or not at all, and never renamed over a device, a FIFO or a symlink; one line on stderr for what a command says."""
from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from nvprof_wrap.cli._args import output_file
from nvprof_wrap.errors import BadInput, CannotWrite, NvprofWrapError
from nvprof_wrap.run import Run, names
from nvprof_wrap.system import files, storage
from nvprof_wrap.text.sanitize import clean


def emit(text: str) -> None:
    """Write a rendered report to stdout. A reader that went away (`| head`) stops the printing, not the
    command: stdout is pointed at /dev/null, so that neither this nor Python's flush at exit fails, and the
    command ends with the exit code it would have had. A stdout that cannot take it (`> /dev/full`, a closed
    stdout) is IOFailure for a full disk or an I/O error (exit 74), else CannotWrite (2), after stdout is pointed at
    /dev/null the same way: `run` says it and goes on with the job's code, the other commands exit with that line."""
    out = sys.stdout
    if out is None:
        raise CannotWrite("stdout", "is closed: nothing was printed (-o FILE writes to a file)")
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        stdout_gone()
    except (OSError, ValueError) as e:
        stdout_gone()
        if isinstance(e, OSError):  # a full disk is the machine's (74), a closed stream ours to say (2)
            raise storage.write_error("stdout", e, "cannot write the output") from None
        raise CannotWrite("stdout", f"cannot write the output ({e})") from None


def stdout_gone() -> None:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def say(line: str) -> None:
    """One line on stderr, its control characters shown escaped (sanitize.py): messages carry file and kernel
    names. A closed stderr is not an error."""
    try:
        print(clean(line), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def put(args: argparse.Namespace, text: str, what: str = "output") -> None:
    """A command's rendered output to its -o / --save FILE, else stdout."""
    deliver(text, output_file(args), f"{args.format} {what}")


def deliver(text: str, path: Path | None, what: str = "output") -> None:
    """To stdout, or to `path` with one line on stderr saying where."""
    if path is None:
        emit(text)
        return
    write_text(path, text)
    say(f"nvprof-wrap: wrote the {what} to {path}")


# The files of a run folder that are the run's own (besides its captures): an output never replaces one.
RUN_FILES = names.OWN


def check_output(path: Path | None, inputs: Iterable[Path | str | None] = (), into: Path | str | None = None) -> None:
    """Refuse a FILE that cannot or must not be written, before the work, not after it: a folder; a missing
    folder; one of the command's ``inputs`` (the same file, or a capture inside an input folder); a file a run
    folder owns (its manifest, run store, logs, captures); a file inside ``into``, the run folder the command is
    about to fill. One line each (BadInput, exit 2); nothing is written."""
    if path is None:
        return
    real = Path(os.path.realpath(path))
    if into is not None and _inside(real, Path(into)):
        raise BadInput(path, f"is inside the run folder {into} that this command fills: every file there is the "
                             "run's; write the output elsewhere")
    if path.is_dir():
        raise BadInput(path, "is a directory: name the file to write")
    if not path.parent.is_dir():
        raise BadInput(path, f"cannot write: the folder {path.parent} does not exist")
    for given in inputs:
        if given is None or str(given) == "-":
            continue
        given = Path(given)
        if _same(path, given):
            raise BadInput(path, f"is the input {given}: the output would replace it; write it to another file")
        if given.is_dir() and _inside(real, given) and _capture(real):
            raise BadInput(path, f"is a capture read from {given}: the output would replace it; write it to "
                                 "another file")
    for folder in real.parents:
        what = _owned(folder, real)
        if what:
            raise BadInput(path, f"is {what} of the run folder {folder}: writing it would break the run; write the "
                                 "output elsewhere")


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _inside(real: Path, folder: Path) -> bool:
    try:
        return real.is_relative_to(os.path.realpath(folder))
    except (OSError, ValueError):
        return False


def _capture(real: Path) -> bool:
    """An existing regular file that reads as a capture (its content, as the readers detect it)."""
    from nvprof_wrap.readers import detect

    try:
        if not stat.S_ISREG(os.stat(real).st_mode):
            return False
        detect(real)
        return True
    except (OSError, BadInput):
        return False


def _owned(folder: Path, real: Path) -> str | None:
    """What ``real`` is to ``folder`` when ``folder`` is a run folder (one with a manifest.json) and the file is
    the run's: "the manifest", "a capture", …; else None."""
    try:
        if not Run(folder).manifest_file.is_file():
            return None
    except OSError:
        return None
    rel = real.relative_to(folder)
    if len(rel.parts) == 1:
        name = rel.name
        base = name
        for side in names.SQLITE_SIDES:
            base = base.removesuffix(side)
        if name in RUN_FILES or base in RUN_FILES:
            return RUN_FILES.get(name) or RUN_FILES[base]
        if base != name:
            return "a SQLite side file"
    try:
        named = set(Run(folder).manifest().captures)
    except (OSError, NvprofWrapError):
        named = set()
    return "a capture" if str(rel) in named or _capture(real) else None


def _mode(path: Path) -> int | None:
    """The file type bits of what ``path`` names now (None: nothing); a folder is refused."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BadInput(path, f"cannot write ({e.strerror or e})") from None
    if stat.S_ISDIR(mode):
        raise BadInput(path, "is a directory: name the file to write")
    return mode


def write_stream(path: Path, fill: Callable[[BinaryIO], None]) -> None:
    """write_text's rule for an output too big to hold (a trace): ``fill`` writes it to a binary file — a
    temporary file beside ``path``, renamed over it once whole (removed if anything fails), or ``path`` itself
    where it is a device, a FIFO or a symlink, written through and never replaced."""
    mode = _mode(path)
    try:
        if mode is not None and not stat.S_ISREG(mode):
            with open(path, "wb") as f:
                fill(f)
            return
        fd, tmp = files.temp_beside(path)  # O_EXCL|O_NOFOLLOW: never a name someone left there
        try:
            with os.fdopen(fd, "wb") as f:
                fill(f)
            files.replace(tmp, path, "output")
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as e:
        raise storage.write_error(path, e) from None


def write_text(path: Path, text: str, run_file: bool = False) -> None:
    """Whole or not at all where ``path`` is absent or a regular file: written beside it, then renamed over it.
    Anything else the user named is written through, never replaced: a device (/dev/null), a FIFO, a symlink
    (/dev/stdout; its target is written). A ``run_file`` (a file nvprof-wrap names in a run folder, report.html)
    is never written through: anything but a regular file there is refused (system/files.py)."""
    data = text.encode("utf-8", errors="replace")
    mode = _mode(path)
    if mode is not None and not stat.S_ISREG(mode):
        if run_file:
            files.refuse_odd(path, "report")
        _write_through(path, data)
        return
    tmp = None
    try:
        fd, tmp = files.temp_beside(path)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        files.replace(tmp, path, "output")
    except OSError as e:
        raise storage.write_error(path, e) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)


def _write_through(path: Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as e:
        raise storage.write_error(path, e) from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as e:
        raise storage.write_error(path, e) from None
    finally:
        os.close(fd)
