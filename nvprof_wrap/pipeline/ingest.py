"""Paths → run store: read each capture once, skip what is already in, collect what had to be skipped."""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from nvprof_wrap import readers
from nvprof_wrap.errors import BadInput, ToolMissing
from nvprof_wrap.model import Capture, Process
from nvprof_wrap.pipeline import reading
from nvprof_wrap.readers import summary
from nvprof_wrap.run import Run
from nvprof_wrap.store import DATA_VERSION, Store, file_identity
from nvprof_wrap.system import fork as _fork
from nvprof_wrap.system.storage import machine_failure
from nvprof_wrap.timeline import series as step_series
from nvprof_wrap.timeline.window import Window, make

Progress = Callable[[Path], None]
Skipped = list[tuple[str, str]]  # (file, why it was not read)
# (path, named on the command line, identity — None: fingerprinted where it is read —, its stat)
Pending = tuple[Path, bool, str | None, os.stat_result]
# a capture fingerprinted while it is read → (the forked fingerprinting, what _tagged appends to it)
Beside = dict[Path, tuple[_fork.Forked, str]]


# Reading in parallel pays once captures are big, or many: starting the pool's processes costs ~0.3 s. (256 rank
# captures of 160 KB each, 41 MB: 86 s one by one on 2 cores; benchmarks/report_ranks.py.)
PARALLEL_MIN_BYTES = 64 << 20
PARALLEL_MIN_CAPTURES = 8


def _pending(store: Store, paths: list[Path], skipped: Skipped, present: dict[str, Path],
             window: Window | None = None, hash_here: bool = True,
             beside: Beside | None = None) -> list[Pending]:
    """(path, explicit, identity, stat) of every capture not in the store yet; ``present`` gets the identity of
    every capture found. A file is hashed only when it looks like a capture (its first bytes) and the store does
    not know it unchanged (path, size, mtime, inode). Read through a window, a capture's identity is its content's
    and the window's: the store holds each file through one window at a time (_one_version). hash_here False
    (reading on a cluster): a capture the store does not know gets identity None, its worker fingerprints it.
    beside, when given, gets the fingerprinting of a capture that _hashed_beside its read (its identity None)."""
    todo: list[Pending] = []
    alone = beside is not None and len(paths) == 1 and not store.rows("SELECT 1 FROM captures LIMIT 1")
    for root in paths:
        before = len(skipped)
        found = _pending_in(store, root, skipped, present, window, todo, hash_here, beside if alone else None)
        if not found:  # a folder (a file named is a capture or refused) without one capture in it
            raise BadInput(None, f"no profiler capture in {root}" + _what_was_there(root, skipped[before:]))
    return todo


def _what_was_there(root: Path, skipped: Skipped) -> str:
    if skipped:
        return f" ({len(skipped):,} file{'s' if len(skipped) != 1 else ''} skipped; " \
               f"{Path(skipped[0][0]).name}: {skipped[0][1]})"
    try:
        with os.scandir(root) as entries:
            return "" if any(True for _ in entries) else " (the folder is empty)"
    except OSError:
        return ""



def _refuse_or_skip(path: Path, explicit: bool, skipped: Skipped, why: str) -> None:
    """A file named on the command line is refused; one found inside a folder is skipped, saying why."""
    if explicit:
        raise BadInput(path, why) from None
    skipped.append((str(path), why))

def _unreadable(path: Path, explicit: bool, skipped: Skipped, e: OSError) -> None:
    """A file that cannot be read: the machine's failure (a full disk, EIO) ends the read with exit 74 — never a
    file skipped for it; anything else (a permission, a file gone) is refused or skipped as a bad input."""
    failure = machine_failure(path, e)
    if failure is not None:
        raise failure from None
    _refuse_or_skip(path, explicit, skipped, f"cannot read ({e.strerror})")


def _hardware_beside(path: Path) -> str:
    """The run's GPM samples are part of what is read with a capture of that run: another file of them (the run
    re-sampled, or a folder copied without them) is another reading."""
    from nvprof_wrap.timeline.gpm import beside

    found = beside(path)
    if found is None:
        return ""
    try:
        st = found.stat()
    except OSError:
        return ""
    return f";gpm{st.st_size}-{st.st_mtime_ns}"


def _pending_in(store: Store, root: Path, skipped: Skipped, present: dict[str, Path], window: Window | None,
                todo: list[Pending], hash_here: bool = True, beside: Beside | None = None) -> int:
    """Adds the captures below ``root`` not in the store yet to ``todo``; returns how many captures it holds.
    beside (one file named, an empty store): where _hashed_beside, its fingerprinting, the identity left None."""
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
            _unreadable(path, explicit, skipped, e)
            continue
        file = str(path.resolve())
        identity = store.known_identity(file, st)
        if identity is not None and identity.partition(_WINDOW_SEP)[2].split(";")[0] != _VERSION_TAG:
            identity = None  # fingerprinted by another data version, maybe otherwise (gzipped: what it unpacks to)
        identity = identity.split(_WINDOW_SEP)[0] if identity is not None else None
        if identity is None:
            try:
                if readers.detect(path) == summary.FORMAT:  # a capture read elsewhere: the reading's identity
                    found += 1
                    summarised = _summarised(path, window)
                    if _first_time(store, path, summarised, present, skipped):
                        todo.append((path, explicit, summarised, st))
                    continue
                if beside is not None and explicit and _hashed_beside(path, st, window, beside):
                    found += 1
                    todo.append((path, explicit, None, st))
                    continue
                identity = file_identity(path) if hash_here else None
            except BadInput as e:
                _refuse_or_skip(path, explicit, skipped, e.why)
                continue
            except OSError as e:
                _unreadable(path, explicit, skipped, e)
                continue
        found += 1
        if identity is None:  # fingerprinted where it is read (reading.on_dask), then checked like below
            todo.append((path, explicit, None, st))
            continue
        identity = _tagged(identity, path, window)
        if not _first_time(store, path, identity, present, skipped):
            continue
        todo.append((path, explicit, identity, st))
    return found


def _hashed_beside(path: Path, st: os.stat_result, window: Window | None, beside: Beside) -> bool:
    """A big capture named alone, read into an empty store: its fingerprint (SHA-256 of every byte, 0.15 s of a
    222 MB export, before anything else could start) is taken in a forked child while it is read. Nothing waits on
    it there: the store holds no capture it could equal, and no other file of the reading could either."""
    if st.st_size < _fork.BIG or not _fork.can_fork():
        return False
    beside[path] = (_fork.Forked(file_identity, path), _tagged("", path, window))  # the sides as before the read
    return True


def _summarised(path: Path, window: Window | None) -> str:
    """A summary's identity: the capture's content and its reading's, as `summarize` wrote it — refused when
    another data version wrote it (what it holds would be another reader's aggregates) or through another window."""
    full, _key, _capture = summary.load(path)
    version = full.partition(_WINDOW_SEP)[2].split(";")[0]
    if version != _VERSION_TAG:
        raise BadInput(path, f"a summary written by another nvprof-wrap ({version or 'unknown'}; this one reads "
                             f"{_VERSION_TAG}): summarise the capture again with this version")
    summary.read(path, window)  # refused when summarised through another window than this reading's
    return full


def _pending_beside(path: Path) -> str:
    """Writes pending beside an SQLite capture (a hot journal, a WAL with commits) are part of what it reads as
    (timeline/recover.py): new commits in a WAL leave the file's size, mtime and inode as they were, so without
    this the store kept the aggregates of the capture before them."""
    from nvprof_wrap.timeline.recover import pending

    try:
        sides = pending(path)
    except (BadInput, OSError):
        return ""  # the read says what is wrong with them
    tags = []
    for side in sides:
        try:
            st = side.stat()
        except OSError:
            continue
        tags.append(f";{side.name.rpartition('-')[2]}{st.st_size}-{st.st_mtime_ns}")
    return "".join(tags)


def _tagged(content: str, path: Path, window: Window | None) -> str:
    """What was read, by which data version, through which window, under which per-step series limit, with which
    pending writes and hardware samples beside it: any other version of it is re-read."""
    return content + f"{_WINDOW_SEP}{_VERSION_TAG}" + (f";{window.key}" if window is not None else "") + \
        _series_limit() + _pending_beside(path) + _hardware_beside(path)


def _series_limit() -> str:
    """The per-step series' launch limit (timeline/series.limit) where it is not the default: a capture whose series
    one limit left out as too big is measured under another. Without it, NVPROF_WRAP_SERIES_MAX_LAUNCHES=-1 — what the
    note of a series left out says to set — re-read nothing of a run folder whose store already held the capture, and
    the note came again."""
    most = step_series.limit()
    return "" if most == step_series.MAX_LAUNCHES else f";series{most}"


def _first_time(store: Store, path: Path, identity: str, present: dict[str, Path], skipped: Skipped) -> bool:
    """Whether the capture is to be read: not the same content as another file of this reading (x.sqlite beside
    x.sqlite.gz, trace.json beside trace.json.gz: one capture, said in skipped), nor in the store already.
    present: the identity of every capture found so far → its first file."""
    if identity in present:
        skipped.append((str(path), f"the same capture as {present[identity].name} (identical content): read once"))
        return False
    present[identity] = path
    return not store.has(identity)


_WINDOW_SEP = "@"
# After _WINDOW_SEP in every identity: the data version that read the capture (the store's knob, DATA_VERSION).
_VERSION_TAG = f"data={DATA_VERSION}"


def ingest(store: Store, paths: list[Path], progress: Progress | None = None, workers: int | None = None,
           window: tuple[float, float] | None = None,
           steps: tuple[int, int] | None = None, dask: str | None = None,
           cut: int | None = None, warmup: bool = False) -> tuple[tuple[str, str], ...]:
    """Ingest every capture under ``paths``.

    A file named explicitly must be readable (BadInput otherwise); a file found inside a folder
    that cannot be read is skipped and returned as (path, why), so the good ones still report.
    Several big captures (one per process or rank) are read in parallel, one process each (workers: how many; 1
    reads here), or on the Dask cluster whose scheduler is at ``dask`` (pipeline/reading.py); the store is
    written from this process only, as the results arrive, in the order of the captures: the same store whichever
    way they were read. window=(start_s, end_s) / steps=(A, B): only that part of each capture's
    timeline (timeline/window.py); a format without a timeline is refused (or skipped, inside a folder). cut: a
    capture window's end, where nsys recorded on while it stopped (timeline/window.py Window.cut).
    """
    win = make(window, steps, cut, warmup)
    skipped: list[tuple[str, str]] = []
    present: dict[str, Path] = {}
    beside: Beside = {}  # fingerprints taken while the capture is read (_hashed_beside)
    try:
        return _ingest(store, paths, progress, workers, win, dask, skipped, present, beside)
    finally:
        for hashing, _tag in beside.values():
            hashing.cancel()


def _ingest(store: Store, paths: list[Path], progress: Progress | None, workers: int | None, win: Window | None,
            dask: str | None, skipped: Skipped, present: dict[str, Path],
            beside: Beside) -> tuple[tuple[str, str], ...]:
    todo = _pending(store, paths, skipped, present, win, hash_here=dask is None,
                    beside=beside if dask is None else None)
    failed: list[tuple[str, str]] = []  # captures (by their content) that could not be read
    if dask is not None:
        remote = reading.on_dask(dask, [(t[0], t[2] is None) for t in todo], win, progress)
        for got, (path, explicit, identity, st) in zip(remote, todo):  # the results first: run to their end
            if identity is None:
                if isinstance(got.result, BadInput) and got.identity is None:  # the worker could not see it
                    _store_one(store, path, explicit, "", st, got.result, failed, None)
                    continue
                assert got.identity is not None  # the worker fingerprinted it: only a file it could not see has none
                identity = _tagged(got.identity, path, win)
                if not _first_time(store, path, identity, present, skipped):
                    continue
            _store_one(store, path, explicit, identity, st, got.result, failed, None)
    else:
        if workers is None:  # asked for (--jobs), or where it pays
            big = sum(t[3].st_size for t in todo) >= PARALLEL_MIN_BYTES or len(todo) >= PARALLEL_MIN_CAPTURES
            workers = min(len(todo), _fork.cores()) if big else 1
        results = reading.locally([t[0] for t in todo], win, workers, progress)
        for result, (path, explicit, identity, st) in zip(results, todo):  # the results first: run to their end
            if identity is None:  # fingerprinted beside its read: the only capture, into an empty store
                hashing, tag = beside.pop(path)
                identity = _fingerprinted_beside(hashing, path, explicit, skipped)
                if identity is None:
                    continue
                identity += tag
                present[identity] = path
            _store_one(store, path, explicit, identity, st, result, failed, None)
    skipped += failed
    asked = win.asked() if win is not None else None
    _never_only_damage(store, paths, present, failed, asked)
    if win is not None and asked is not None and skipped and not any(store.has(i) for i in present):
        # nothing could be read through the window: an empty report would look like a job without GPU work
        raise BadInput(paths[0], f"{win.describe()}: none of its captures could be read through it "
                                 f"({len(skipped)} skipped; {Path(skipped[0][0]).name}: {skipped[0][1]})")
    if store.mirror is not None and [p.resolve() for p in paths] == [store.mirror.resolve()]:
        store.forget_except(present)  # the run folder's store holds exactly its captures: none overwritten since
    for p in paths:
        _ranks_from_manifest(store, p)
    return tuple(skipped)


def _fingerprinted_beside(hashing: _fork.Forked, path: Path, explicit: bool, skipped: Skipped) -> str | None:
    """The fingerprint taken beside the read; a file that could not be hashed is refused (or skipped) as where it
    is hashed before its read."""
    try:
        identity: str = hashing.result()
        return identity
    except BadInput as e:
        _refuse_or_skip(path, explicit, skipped, e.why)
    except OSError as e:
        _unreadable(path, explicit, skipped, e)
    return None


def _never_only_damage(store: Store, paths: list[Path], present: dict[str, Path], failed: list[tuple[str, str]],
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


def _store_one(store: Store, path: Path, explicit: bool, identity: str, st: os.stat_result, result: reading.Result,
               skipped: Skipped, progress: Progress | None) -> None:
    if progress:
        progress(path)
    if isinstance(result, (BadInput, ToolMissing)):
        if explicit:
            raise result
        skipped.append((str(path), getattr(result, "why", str(result))))
        return
    _one_version(store, identity)
    store.ingest(_ranked(result, path), identity, st, str(path.resolve()))
    store.spill()  # many ranks: the merged aggregates on disk, not in memory


# 'rank37-nsys.sqlite' (what `run` writes per rank), 'trace_rank_3.json', 'RUN/rank12/…': a capture of one process
# whose file or folder names its rank (torchrun/srun users name them so: nsys -o report_rank%q{RANK})
_RANK_IN_NAME = re.compile(r"(?:^|[^a-z0-9])rank[-_.]?(\d{1,7})(?![0-9])", re.IGNORECASE)


def _ranked(capture: Capture, path: Path) -> Capture:
    """The capture with its one process's rank from the file's (else its folder's) name, where the capture itself
    records no rank; a capture of several processes is left as it is (which of them would it be?)."""
    pids = {k.pid for k in capture.kernels} | {p.pid for p in capture.processes}
    if len(pids) != 1 or any(p.rank is not None for p in capture.processes):
        return capture
    for name in (path.name, path.parent.name):
        m = _RANK_IN_NAME.search(name)
        if m:
            pid = next(iter(pids))
            if pid is None:
                return capture
            rank = int(m.group(1))
            procs = [replace(p, rank=rank) for p in capture.processes] or [Process(pid, None, rank)]
            return replace(capture, processes=tuple(procs))
    return capture


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
        ranks = Run(folder).manifest().ranks
    except BadInput:  # none, unreadable, too big, not one `run` wrote: no ranks to label
        return
    if ranks:
        store.set_ranks(ranks)
