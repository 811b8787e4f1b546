"""A run folder holds one run. ``claim`` makes or takes the folder for this run, or refuses:

- a new or empty folder is claimed by creating ``.nvprof-wrap.lock`` in it atomically (O_EXCL) and locking it
  (flock): of two runs racing for one folder, one gets it and the other is refused;
- a folder that holds a run nvprof-wrap made is refused, unless ``force``: then, once the lock is ours (a run still
  writing into it keeps it locked, its job included), the files that run wrote are removed — and only those
  (``written``: its manifest, logs and store, the captures its manifest lists, their exports) — and the run
  starts in the emptied folder. A run folder holding anything else (a file the user put there, a subfolder) is
  refused, with what is there named: nothing is removed;
- a run folder nvprof-wrap made is known by its manifest: one that says ``"format": "nvprof-wrap-run"`` with
  its version (run/manifest.py), or one written before that mark, by the keys every manifest `run` ever
  wrote has ("nvprof_wrap", "command", "profiler_argv", "backend", "captures") with the types `run` writes;
  a manifest.json of anything else (a browser extension's, a web app's) is not a run and the folder is refused
  without a word of ``--force``;
- any other folder with files in it is refused, ``force`` or not (``-o ~`` must never empty a home folder).

The lock file stays (it marks the folder as a run folder); the lock is released when the run and its job end.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.run import names
from nvprof_wrap.run.manifest import FORMAT, Manifest
from nvprof_wrap.run.names import LOCK, MANIFEST
from nvprof_wrap.system import files, tools
from nvprof_wrap.system.limits import MAX_MANIFEST_BYTES

_RUN_MARKERS = (LOCK, MANIFEST)


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
        why = not_ours(folder)
        if why:
            raise BadInput(folder, f"is not empty and is not a run folder of nvprof-wrap ({why}): pass a new "
                                   "folder to -o")
        if not force:
            raise BadInput(folder, "already holds a run: pass a new folder to -o, or --force to replace it")
        fd = _open(folder / LOCK, os.O_WRONLY | os.O_CREAT)
        _lock(fd, folder)
        try:
            _replace(folder)  # decided again now that the lock is ours: nothing can be writing into it
        except BaseException:
            os.close(fd)
            raise
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
        return files.open_fd(path, flags, what="run folder's lock")
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


def held(folder: Path) -> bool | None:
    """Whether a run still holds ``folder`` (its wrapper, or its job, which inherits the lock): True; False when
    the lock file is there and no process holds it (the run's wrapper and job are gone); None without a lock file
    (a run folder of a version before it) or when it cannot be told. Asks with a shared lock, released at once."""
    try:
        fd = files.open_regular(folder / LOCK, 1 << 10)  # a FIFO planted there hung every report of the folder
    except BadInput:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)
    return False


def _owner(folder: Path) -> str:
    try:
        with os.fdopen(files.open_regular(folder / LOCK, 1 << 10), "rb") as f:
            pid = f.read(64).decode("ascii", "replace").strip()
    except (OSError, BadInput):
        return ""
    return f" (nvprof-wrap pid {pid})" if pid.isdigit() else ""


_LEGACY = {"nvprof_wrap": str, "command": list, "profiler_argv": list, "backend": str, "captures": list}


def _manifest_data(folder: Path) -> dict[str, object] | str:
    path = folder / MANIFEST
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            return f"its {MANIFEST} is too big to be a run's"
        data = json.loads(path.read_text(errors="replace"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError):
        return f"its {MANIFEST} is not a run manifest (unreadable)"
    return data if isinstance(data, dict) else f"its {MANIFEST} is not a run manifest"


def not_ours(folder: Path) -> str | None:
    """Why ``folder`` is not a run folder nvprof-wrap made (None when it is): its manifest carries our format mark,
    or every key a manifest of an earlier version had; a lock file of ours alone (a run killed before its manifest
    was written) is ours too."""
    data = _manifest_data(folder)
    if isinstance(data, str):
        return data
    if not data:
        return None if (folder / LOCK).is_file() else f"no {MANIFEST}"
    marked = data.get("format") == FORMAT and isinstance(data.get("version"), int)
    legacy = "format" not in data and all(isinstance(data.get(k), t) for k, t in _LEGACY.items())
    if not (marked or legacy):
        return f"its {MANIFEST} is not one nvprof-wrap wrote"
    try:
        Manifest.from_json(data)
    except BadInput:
        return f"its {MANIFEST} is not one nvprof-wrap wrote"
    if not all(names.plain_name(c) for c in _names(data.get("captures"))):
        return f"its {MANIFEST} lists captures outside the folder"
    return None


def _names(listed: object) -> list[object]:
    return list(listed) if isinstance(listed, list) and listed else []


def written(folder: Path) -> set[str]:
    """The names of the files the run in ``folder`` (not_ours: None) wrote there: what `run --force` may remove."""
    got = _manifest_data(folder)
    data = got if isinstance(got, dict) else {}
    captures = {c for c in _names(data.get("captures")) if isinstance(c, str) and names.plain_name(c)}
    for c in list(captures):
        if c.endswith(names.NSYS_REPORTS):
            captures.add(names.export_of(c))  # its export
    ours = set(names.WRITTEN) | captures
    try:
        entries = os.listdir(folder)
    except OSError:
        entries = []
    backend = data.get("backend")
    running = isinstance(backend, str) and data.get("status") == "running"
    pattern = names.CAPTURE_NAMES.get(str(backend)) if running else None
    for name in entries:
        if names.SET_ASIDE_STORE.fullmatch(name) or (pattern is not None and pattern.fullmatch(name)) \
                or names.NUMERICS_FILE.fullmatch(name):
            ours.add(name)
        elif tools.is_export_scratch(name):
            ours.add(name)  # an export's lock or temporary file (tools.nsys_export), by its name
    return ours


def _replace(folder: Path) -> None:
    """--force: the files the run wrote go (never the lock: ours now); refused, with nothing removed, while the
    folder holds anything else."""
    why = not_ours(folder)
    if why:
        raise BadInput(folder, f"is not a run folder of nvprof-wrap ({why}): pass a new folder to -o")
    ours = written(folder)
    try:
        entries = list(os.scandir(folder))
    except OSError as e:
        raise BadInput(folder, f"cannot read the run folder ({e.strerror})") from None
    dumps = [e for e in entries if e.name == names.XLA_DUMP and e.is_dir(follow_symlinks=False)]  # XLA's, for us
    strangers = sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in entries
                       if e not in dumps and (e.name not in ours or e.is_dir(follow_symlinks=False)))
    if strangers:
        shown = ", ".join(strangers[:3]) + (f" and {len(strangers) - 3} more" if len(strangers) > 3 else "")
        raise BadInput(folder, f"--force replaces only what a run wrote, and this run folder also holds {shown}, "
                               "which no run wrote: nothing was removed; move them out, or pass a new folder to -o")
    for entry in entries:
        if entry.name == LOCK:
            continue
        if entry in dumps:
            try:
                shutil.rmtree(entry.path)  # never follows a link inside it
            except OSError as e:
                raise BadInput(entry.path, f"--force: cannot remove it from the run folder ({e.strerror})") from None
            continue
        try:
            os.unlink(entry.path)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise BadInput(entry.path, f"--force: cannot remove it from the run folder ({e.strerror})") from None
