"""A run folder holds one run. ``claim`` makes or takes the folder for this run, or refuses:

- a new or empty folder is claimed by creating ``.nvprof-wrap.lock`` in it atomically (O_EXCL) and locking it
  (flock): of two runs racing for one folder, one gets it and the other is refused;
- a folder that holds a run (the lock file, or a manifest from before it) is refused, unless ``force``: then,
  once the lock is ours (a run still writing into it keeps it locked, its job included), everything in it is
  removed and the run starts in the empty folder;
- any other folder with files in it is refused, ``force`` or not (``-o ~`` must never empty a home folder).

The lock file stays (it marks the folder as a run folder); the lock is released when the run and its job end.
"""
from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from nvprof_wrap.errors import BadInput

LOCK = ".nvprof-wrap.lock"
_RUN_MARKERS = (LOCK, "manifest.json")


def claim(folder: Path, force: bool = False, numbered: bool = False) -> tuple[Path, int]:
    """(folder, descriptor holding the lock). numbered: a default name — take the first of NAME, NAME-2, …
    that does not exist yet, instead of refusing."""
    if numbered:
        folder = _claim_new(folder)
    else:
        _make(folder)
    try:
        entries = set(os.listdir(folder))
    except OSError as e:
        raise BadInput(folder, f"cannot read the run folder ({e.strerror})") from None
    if entries & set(_RUN_MARKERS):
        if not force:
            raise BadInput(folder, "already holds a run: pass a new folder to -o, or --force to replace it")
        fd = _open(folder / LOCK, os.O_WRONLY | os.O_CREAT)
        _lock(fd, folder)
        _empty(folder)
    elif entries:
        raise BadInput(folder, "is not empty and holds no run: pass a new folder to -o (--force replaces only a "
                               "folder that holds a run)")
    else:
        try:
            fd = _open(folder / LOCK, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            raise BadInput(folder, "another run claimed this folder just now: pass a new folder to -o") from None
        _lock(fd, folder)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return folder, fd


def _claim_new(folder: Path) -> Path:
    """The first of NAME, NAME-2, … that this process creates itself: creating the folder (without exist_ok) is
    the atomic step, so two runs started in the same second with the same default name never take one folder —
    the loser of a race moves on to the next number instead of being refused."""
    _make(folder.parent)
    n = 1
    while True:
        candidate = folder if n == 1 else folder.with_name(f"{folder.name}-{n}")
        n += 1
        if candidate.exists():
            continue
        try:
            candidate.mkdir()  # honours the user's umask
        except FileExistsError:
            continue  # another run made it between the check and here
        except OSError as e:
            raise BadInput(candidate, f"cannot create the run folder ({e.strerror})") from None
        return candidate


def _make(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)  # honours the user's umask
    except FileExistsError:
        raise BadInput(folder, "-o names a file, not a folder") from None
    except NotADirectoryError:
        raise BadInput(folder, "-o: a folder on this path is a file") from None
    except OSError as e:
        raise BadInput(folder, f"cannot create the run folder ({e.strerror})") from None


def _open(path: Path, flags: int) -> int:
    try:
        return os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
    except FileExistsError:
        raise
    except OSError as e:
        raise BadInput(path.parent, f"cannot write into the run folder ({e.strerror})") from None


def _lock(fd: int, folder: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        owner = _owner(folder)
        raise BadInput(folder, f"a run{owner} is still writing into this folder: pass a new folder to -o") from None


def _owner(folder: Path) -> str:
    try:
        pid = (folder / LOCK).read_text().strip()
    except OSError:
        return ""
    return f" (nvprof-wrap pid {pid})" if pid.isdigit() else ""


def _empty(folder: Path) -> None:
    """Everything but the lock file (ours now) goes: --force replaces the run entirely."""
    for entry in os.scandir(folder):
        if entry.name == LOCK:
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError as e:
            raise BadInput(entry.path, f"--force: cannot remove it from the run folder ({e.strerror})") from None
