"""What an SQLite capture holds when writes are pending beside it: the committed content, never the half-written.

Captures are opened with ``immutable=1`` (timeline/sql.py uri_of): fast, fine in read-only folders, and nothing
written beside the file. But immutable ignores the side files where SQLite keeps what is not in the file yet: a hot
rollback journal (``X-journal``, a write interrupted before its commit: the file holds part of it) and a write-ahead
log (``X-wal``: commits not checkpointed into the file yet). Read immutable, the first gave the interrupted write as
if committed (launches per device {0: 57, 1: 3041} where the committed file has {0: 1549, 1: 1549}), the second
lost every commit in the log (3,098 launches of 6,196).

So while a capture is read (readable()), a capture with such a side file is copied with it into a private temporary
folder (system/tempdirs.py: removed when the read ends, or swept after a kill) and SQLite recovers the copy there
(rollback, or checkpoint) — the user's files are only read. Every opening of the capture (timeline/sql.py
connect_ro and uri_of, so the compiled helper and the forked workers too) then opens the copy: source().
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.system import tempdirs
from nvprof_wrap.system.storage import machine_failure

SQLITE_MAGIC = b"SQLite format 3\x00"
JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")  # the first bytes of a rollback journal's header
WAL_HEADER = 32  # a WAL of its header alone holds no commit

@dataclass
class _Held:
    copy: Path  # the capture's recovered copy
    reads: int = 0  # how many reads hold it


_held: dict[str, _Held] = {}  # by the capture's resolved path
_lock = threading.Lock()  # reads of one capture on threads (a Dask worker's) share one copy


@contextlib.contextmanager
def readable(path: Path) -> Iterator[Path]:
    """Within the block, the capture at `path` opens (source()) as its committed content: the file itself, or a
    recovered copy of it with its pending side files. Nested (or concurrent) reads of one capture share one copy."""
    key = _key(path)
    with _lock:
        held = _held.get(key)
        if held is None:
            sides = pending(path)
            if sides:
                held = _held[key] = _Held(_recovered(path, sides))
        if held is not None:
            held.reads += 1
    if held is None:
        yield Path(path)
        return
    try:
        yield held.copy
    finally:
        with _lock:
            held.reads -= 1
            if held.reads == 0:
                del _held[key]
                shutil.rmtree(held.copy.parent, ignore_errors=True)


def source(path: Path) -> Path:
    """The file to open for the capture at `path`: its recovered copy while a read holds one, else the file. A
    capture with writes pending beside it and no copy is refused: read as it is, it would be wrong."""
    held = _held.get(_key(path))
    if held is not None:
        return held.copy
    sides = pending(path)
    if sides:
        raise BadInput(path, f"{sides[0].name} appeared beside it while it was read (a write in progress): read it "
                             "again once the write is done")
    return Path(path)


def pending(path: Path) -> list[Path]:
    """The side files of an SQLite file at `path` that hold writes SQLite would apply on opening it: a hot rollback
    journal (its header not zeroed: a committed journal is emptied, truncated or zeroed) and a WAL with frames. A
    side file that is not a regular file (a link, a FIFO) is refused: SQLite would follow or block on it."""
    real = Path(path).resolve()  # SQLite finds the side files beside the file a link points to
    if not _starts_with(real, SQLITE_MAGIC):
        return []
    sides = []
    hot_when: tuple[tuple[str, Callable[[bytes, int], bool]], ...] = (
        ("-journal", lambda head, size: head[:8] == JOURNAL_MAGIC), ("-wal", lambda head, size: size > WAL_HEADER))
    for suffix, hot in hot_when:
        side = real.with_name(real.name + suffix)
        try:
            st = os.lstat(side)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise machine_failure(path, e) or BadInput(path, f"cannot check {side.name} beside it ({e.strerror})") \
                from None
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(path, f"{side.name} beside it is not a regular file: SQLite would apply it; remove it")
        if st.st_size and hot(_head_of(path, side, 8), st.st_size):
            sides.append(side)
    return sides


def _recovered(path: Path, sides: list[Path]) -> Path:
    """A copy of the capture, in a temporary folder of its own, with its pending writes rolled back (journal) or
    checkpointed (WAL) by SQLite, checked; refused in one line when SQLite cannot recover it, IOFailure when the
    temporary folder is full. The folder goes with the error."""
    tmp = Path(tempdirs.make("recover"))
    try:
        return _recover_in(path, sides, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _recover_in(path: Path, sides: list[Path], tmp: Path) -> Path:
    real = Path(path).resolve()
    copy = tmp / "capture.sqlite"
    try:
        _copy(real, copy)
        for side in sides:
            _copy(side, tmp / (copy.name + side.name[len(real.name):]), nofollow=True)
    except OSError as e:
        raise machine_failure(path, e) or BadInput(path, f"cannot copy it to recover the write pending in "
                                                         f"{sides[0].name} ({e.strerror})") from None
    names = " and ".join(s.name for s in sides)
    try:
        with contextlib.closing(sqlite3.connect(copy, isolation_level=None)) as conn:
            # Reading the schema rolls a hot journal back; a WAL is checkpointed into the file and removed, so that
            # the copy opens immutable like any capture.
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.execute("PRAGMA journal_mode=DELETE")
            check = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        raise machine_failure(path, e) or BadInput(path, f"the write pending in {names} beside it cannot be "
                                                         f"recovered ({e})") from None
    if check != "ok" or any(os.path.exists(tmp / (copy.name + s)) for s in ("-journal", "-wal")):
        raise BadInput(path, f"the write pending in {names} beside it does not recover to a sound database "
                             f"({check}): a journal of another file, or damaged")
    return copy


def _copy(src: Path, dst: Path, nofollow: bool = False) -> None:
    """Copy a regular file without blocking on a FIFO or following a link where nofollow; refused otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (getattr(os, "O_NOFOLLOW", 0) if nofollow else 0)
    with open(os.open(src, flags), "rb") as inp:
        if not stat.S_ISREG(os.fstat(inp.fileno()).st_mode):
            raise OSError(0, f"{src.name} is not a regular file")
        with open(dst, "xb") as out:
            shutil.copyfileobj(inp, out, 1 << 20)


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as f:
            return stat.S_ISREG(os.fstat(f.fileno()).st_mode) and f.read(len(magic)) == magic
    except OSError:
        return False  # the reader's own opening says what is wrong with it


def _head_of(path: Path, side: Path, n: int) -> bytes:
    try:
        with open(os.open(side, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)), "rb") as f:
            return f.read(n)
    except OSError as e:
        raise machine_failure(path, e) or BadInput(path, f"cannot read {side.name} beside it ({e.strerror})") \
            from None


def _key(path: Path) -> str:
    return str(Path(path).resolve())

