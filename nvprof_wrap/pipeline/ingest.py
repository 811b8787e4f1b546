"""Paths → run store: read each capture once, skip what is already in, collect what had to be skipped."""
from __future__ import annotations

import functools
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from nvprof_wrap import readers
from nvprof_wrap.errors import BadInput, Terminated, ToolMissing
from nvprof_wrap.launch.manifest import read_manifest
from nvprof_wrap.readers._window import Window, make
from nvprof_wrap.store import DATA_VERSION, Store, file_identity
from nvprof_wrap.system import fork as _fork

Progress = Callable[[Path], None]


# Reading in parallel pays once captures are big: a process per capture costs ~0.3 s to start.
PARALLEL_MIN_BYTES = 64 << 20


def _pending(store: Store, paths: list[Path], skipped: list, present: set[str],
             window: Window | None = None) -> list[tuple[Path, bool, str, os.stat_result]]:
    """(path, explicit, identity, stat) of every capture not in the store yet; ``present`` gets the identity of
    every capture found. A file is hashed only when it looks like a capture (its first bytes) and the store does
    not know it unchanged (path, size, mtime, inode). Read through a window, a capture's identity is its content's
    and the window's: the store holds each file through one window at a time (_one_version)."""
    todo = []
    for root in paths:
        before = len(skipped)
        found = _pending_in(store, root, skipped, present, window, todo)
        if not found:  # a folder (a file named is a capture or refused) without one capture in it
            raise BadInput(None, f"no profiler capture in {root}" + _what_was_there(root, skipped[before:]))
    return todo


def _what_was_there(root: Path, skipped: list) -> str:
    if skipped:
        return f" ({len(skipped):,} file{'s' if len(skipped) != 1 else ''} skipped; " \
               f"{Path(skipped[0][0]).name}: {skipped[0][1]})"
    try:
        with os.scandir(root) as entries:
            return "" if any(True for _ in entries) else " (the folder is empty)"
    except OSError:
        return ""



def _refuse_or_skip(path: Path, explicit: bool, skipped: list, why: str) -> None:
    """A file named on the command line is refused; one found inside a folder is skipped, saying why."""
    if explicit:
        raise BadInput(path, why) from None
    skipped.append((str(path), why))

def _hardware_beside(path: Path) -> str:
    """The run's GPM samples are part of what is read with a capture of that run: another file of them (the run
    re-sampled, or a folder copied without them) is another reading."""
    from nvprof_wrap.readers._gpm import beside

    found = beside(path)
    if found is None:
        return ""
    try:
        st = found.stat()
    except OSError:
        return ""
    return f";gpm{st.st_size}-{st.st_mtime_ns}"


def _pending_in(store: Store, root: Path, skipped: list, present: set[str], window: Window | None,
                todo: list) -> int:
    """Adds the captures below ``root`` not in the store yet to ``todo``; returns how many captures it holds."""
    found = 0
    for path, explicit in readers.expand([root], skipped):
        try:
            st = path.stat()
        except FileNotFoundError:
            if explicit:
                raise BadInput(path, "no such file or directory") from None
            skipped.append((str(path), "vanished while reading the folder"))
            continue
        except OSError as e:
            _refuse_or_skip(path, explicit, skipped, f"cannot read ({e.strerror})")
            continue
        file = str(path.resolve())
        identity = store.known_identity(file, st)
        if identity is not None and identity.partition(_WINDOW_SEP)[2].split(";")[0] != _VERSION_TAG:
            identity = None  # fingerprinted by another data version, maybe otherwise (gzipped: what it unpacks to)
        identity = identity.split(_WINDOW_SEP)[0] if identity is not None else None
        if identity is None:
            try:
                readers.detect(path)
                identity = file_identity(path)
            except BadInput as e:
                _refuse_or_skip(path, explicit, skipped, e.why)
                continue
            except OSError as e:
                _refuse_or_skip(path, explicit, skipped, f"cannot read ({e.strerror})")
                continue
        # what was read, by which data version, through which window: any other version of it is re-read
        identity += f"{_WINDOW_SEP}{_VERSION_TAG}" + (f";{window.key}" if window is not None else "")
        identity += _hardware_beside(path)
        found += 1
        if identity in present:  # x.sqlite beside x.sqlite.gz, trace.json beside trace.json.gz: one capture
            same = next((t[0] for t in todo if t[2] == identity), None)
            why = f"the same capture as {same.name if same else 'another file read'} (identical content): read once"
            skipped.append((str(path), why))
            continue
        present.add(identity)
        if not store.has(identity):
            todo.append((path, explicit, identity, st))
    return found


_WINDOW_SEP = "@"
# After _WINDOW_SEP in every identity: the data version that read the capture (the store's knob, DATA_VERSION).
_VERSION_TAG = f"data={DATA_VERSION}"


def _read(path: Path, window: Window | None = None):
    """Read in a worker process: errors come back as values, so one bad file does not stop the others."""
    try:
        return readers.read(path, window)
    except (BadInput, ToolMissing) as e:
        return e


def _read_in_pool(path: Path, window: Window | None = None):
    """_read in a pool worker; SIGTERM (sent by _stop) ends it after its ``finally`` blocks ran."""
    try:
        return _read(path, window)
    except Terminated as e:
        os._exit(128 + e.signum)


def _stop(pool: ProcessPoolExecutor, grace_s: float = 10.0) -> None:
    """No more reads: the queued ones cancelled, the running ones ended (SIGTERM: they clean up, then exit). They
    are given ``grace_s`` to do so: if this process ended first, they would get SIGKILL (lifeline.py) mid-cleanup."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # shutdown forgets them
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        try:
            proc.terminate()
        except (OSError, ValueError, AttributeError):
            pass
    deadline = time.monotonic() + grace_s
    for proc in procs:
        try:
            proc.join(max(0.0, deadline - time.monotonic()))
        except (OSError, ValueError, AttributeError, AssertionError):
            pass


def ingest(store: Store, paths: list[Path], progress: Progress | None = None, workers: int | None = None,
           window: tuple[float, float] | None = None,
           steps: tuple[int, int] | None = None) -> tuple[tuple[str, str], ...]:
    """Ingest every capture under ``paths``.

    A file named explicitly must be readable (BadInput otherwise); a file found inside a folder
    that cannot be read is skipped and returned as (path, why), so the good ones still report.
    Several big captures (one per process or rank) are read in parallel, one process each; the store is
    written from this process only. window=(start_s, end_s) / steps=(A, B): only that part of each capture's
    timeline (readers/_window.py); a format without a timeline is refused (or skipped, inside a folder).
    """
    win = make(window, steps)
    skipped: list[tuple[str, str]] = []
    present: set[str] = set()
    todo = _pending(store, paths, skipped, present, win)
    workers = workers or min(len(todo), _fork.cores())
    results = None
    if workers > 1 and sum(t[3].st_size for t in todo) >= PARALLEL_MIN_BYTES:
        # fork: workers need no re-import of __main__ (a REPL or notebook has none to re-import); but not while
        # another thread might be inside SQLite (readers/_fork.py), nor on macOS
        fork = "fork" in multiprocessing.get_all_start_methods() and _fork.fork_is_safe()
        method = "fork" if fork else "spawn"
        try:
            # Each capture already has its own process here: its reader does not fork workers of its own.
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method),
                                     initializer=_fork.pool_worker, initargs=(os.getpid(),)) as pool:
                try:
                    results = list(pool.map(functools.partial(_read_in_pool, window=win), [t[0] for t in todo]))
                except BaseException:  # Ctrl-C or SIGTERM here only: leaving the `with` would wait for every read
                    _stop(pool)
                    raise
        except BrokenProcessPool:
            results = None  # a worker died (e.g. out of memory): read them here, one by one
    failed: list[tuple[str, str]] = []  # captures (by their content) that could not be read
    if results is not None:
        for (path, explicit, identity, st), result in zip(todo, results):
            _store_one(store, path, explicit, identity, st, result, failed, progress)
    else:
        for path, explicit, identity, st in todo:
            if progress:
                progress(path)
            _store_one(store, path, explicit, identity, st, _read(path, win), failed, None)
    skipped += failed
    _never_only_damage(store, paths, present, failed, win)
    if win is not None and skipped and not any(store.has(i) for i in present):
        # nothing could be read through the window: an empty report would look like a job without GPU work
        raise BadInput(paths[0], f"{win.describe()}: none of its captures could be read through it "
                                 f"({len(skipped)} skipped; {Path(skipped[0][0]).name}: {skipped[0][1]})")
    if store.mirror is not None and [p.resolve() for p in paths] == [store.mirror.resolve()]:
        store.forget_except(present)  # the run folder's store holds exactly its captures: none overwritten since
    for p in paths:
        _ranks_from_manifest(store, p)
    return tuple(skipped)


def _never_only_damage(store: Store, paths: list[Path], present: set[str], failed: list[tuple[str, str]],
                       window: Window | None) -> None:
    """Captures were found but none could be read: the damage, named (exit 2), instead of a report without kernels
    ("did the job run on the GPU?" of a file that may hold all of its GPU work). With a window, the window says it."""
    if not failed or window is not None or any(store.has(i) for i in present):
        return
    path, why = failed[0]
    why = why.removeprefix(f"{path}: ")  # ToolMissing names the file in its message
    if len(failed) > 1:
        why += f" (and {len(failed) - 1} more capture{'s' if len(failed) > 2 else ''}: none could be read)"
    elif len(paths) == 1 and _is_folder(paths[0]):
        why += f" — the only capture in {paths[0]}"
    raise BadInput(path, why)


def _is_folder(p: Path) -> bool:
    try:
        return p.is_dir()
    except OSError:
        return False


def _store_one(store: Store, path: Path, explicit: bool, identity: str, st: os.stat_result, result,
               skipped: list, progress: Progress | None) -> None:
    if progress:
        progress(path)
    if isinstance(result, (BadInput, ToolMissing)):
        if explicit:
            raise result
        skipped.append((str(path), getattr(result, "why", str(result))))
        return
    _one_version(store, identity)
    store.ingest(result, identity, st, str(path.resolve()))


def _one_version(store: Store, identity: str) -> None:
    """A report sums every capture in its store: the same file read through another window (or through none)
    would count twice. The other versions of this content go before this one comes in."""
    content = identity.split(_WINDOW_SEP)[0]
    held = {r["identity"] for r in store.rows("SELECT identity FROM captures")}
    others = {i for i in held if i != identity and i.split(_WINDOW_SEP)[0] == content}
    if others:
        store.forget_except(held - others)


def _ranks_from_manifest(store: Store, folder: Path) -> None:
    try:
        ranks = read_manifest(folder / "manifest.json").ranks
    except BadInput:  # none, unreadable, too big, not one `run` wrote: no ranks to label
        return
    if ranks:
        store.set_ranks(ranks)
