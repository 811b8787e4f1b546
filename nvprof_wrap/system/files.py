"""Every file nvprof-wrap writes into a run folder (its store and SQLite's side files, manifest, logs, windows,
metrics, exports, the tracer's captures, the history) goes through here, so that no writer follows a symlink out of
the folder, blocks on a FIFO or writes a device: a name that is anything but absent or a regular file is refused
with one line (CannotWrite, exit 2), and what is created is created with O_NOFOLLOW (temporaries with O_EXCL, then
renamed over a name checked again with lstat). A dangling ``run.sqlite`` link made ``report RUN_DIR`` create the
store where it pointed.

Outputs the user names on the command line (``-o FILE``) are the exception, in cli/_write.py: a device, FIFO or
link named there is written through on purpose (``-o /dev/stdout``), but its temporary is still made here.

Reading side: ``open_regular`` opens a file to scan (the Triton cache's PTX) only when it is a regular file under a
size cap, without following a link or blocking on a FIFO."""
from __future__ import annotations

import fcntl
import os
import stat
import urllib.parse
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, TextIO, overload

from nvprof_wrap.errors import BadInput, CannotWrite

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "something else"


def _refusal(what: str, mode: int) -> str:
    return f"the {what} is not a regular file but {_kind(mode)}: nvprof-wrap writes nothing through it (remove it)"


def refuse_odd(path: Path | str, what: str = "file") -> None:
    """CannotWrite unless ``path`` is absent or a regular file (lstat: a link is refused, never followed)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise CannotWrite(path, f"cannot write the {what} ({e.strerror or e})") from None
    if not stat.S_ISREG(mode):
        raise CannotWrite(path, _refusal(what, mode))


def _checked_fd(path: Path | str, fd: int, what: str) -> int:
    """``fd`` when it is a regular file (else closed and refused), blocking again."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise CannotWrite(path, _refusal(what, mode))
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
    return fd


def open_fd(path: Path | str, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode: int = 0o644,
            what: str = "file") -> int:
    """os.open of a file to write without following a link (O_NOFOLLOW), without blocking on a FIFO (O_NONBLOCK:
    a FIFO without a reader fails, one with a reader is refused by fstat) and refusing a device. O_TRUNC is
    applied only once the file is known to be regular. OSErrors other than those stay OSErrors."""
    trunc = flags & os.O_TRUNC
    try:
        fd = os.open(path, (flags & ~os.O_TRUNC) | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    except OSError as e:
        refuse_odd(path, what)  # a link (ELOOP), a FIFO without a reader (ENXIO): say what it is
        raise e from None
    fd = _checked_fd(path, fd, what)
    if trunc:
        os.ftruncate(fd, 0)
    return fd


@overload
def open_file(path: Path | str, how: Literal["w", "a"] = "w", what: str = "file", **kwargs: Any) -> TextIO: ...
@overload
def open_file(path: Path | str, how: Literal["wb", "ab", "r+b"], what: str = "file", **kwargs: Any) -> BinaryIO: ...
def open_file(path: Path | str, how: str = "w", what: str = "file", **kwargs: Any) -> IO[Any]:
    """open(path, how) through open_fd: "w", "wb", "a", "ab", "r+b" (with ``buffering`` etc. in kwargs)."""
    flags = {"w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
             "r+": os.O_RDWR}[how.replace("b", "")]
    return os.fdopen(open_fd(path, flags, what=what), how, **kwargs)


def temp_beside(path: Path | str, tag: str = "tmp") -> tuple[int, Path]:
    """A new temporary file beside ``path`` (O_CREAT|O_EXCL|O_NOFOLLOW: never one that was there): (fd, name)."""
    path = Path(path)
    for n in range(100):
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{n}.{tag}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644), tmp
        except FileExistsError:
            continue
    raise CannotWrite(path, "cannot make a temporary file beside it (100 names taken)")


def replace(tmp: Path | str, path: Path | str, what: str = "file") -> None:
    """os.replace(tmp, path), never over a link, FIFO, device or folder (checked with lstat just before)."""
    refuse_odd(path, what)
    os.replace(tmp, path)


def write_whole(path: Path | str, data: bytes, what: str = "file", sync: bool = False) -> None:
    """``data`` as ``path``, whole or not at all: a temporary beside it, renamed over it. OSError stays OSError."""
    refuse_odd(path, what)
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        replace(tmp, path, what)
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def sqlite_uri(path: Path | str, what: str = "database", **params: str) -> str:
    """The URI to open an SQLite file that we write: the file and its side files checked with lstat first, and
    ``nofollow=1`` (SQLITE_OPEN_NOFOLLOW, SQLite ≥ 3.31) so that SQLite itself refuses a link too."""
    refuse_sqlite_names(path, what)
    query = urllib.parse.urlencode({**params, "nofollow": "1"})
    return f"file:{urllib.parse.quote(os.path.abspath(path))}?{query}"


def refuse_sqlite_names(path: Path | str, what: str = "database") -> None:
    for suffix in ("", *SQLITE_SIDE_FILES):
        refuse_odd(f"{path}{suffix}", what)


def open_regular(path: Path | str, max_bytes: int, follow: bool = False) -> int:
    """A file descriptor to read ``path`` when it is a regular file of at most ``max_bytes``: never blocks on a
    FIFO, never opens a device, and follows a link only when ``follow`` (a scan never does). BadInput says why
    not."""
    try:
        fd = os.open(path, os.O_RDONLY | (0 if follow else _NOFOLLOW) | _NONBLOCK | _CLOEXEC)
    except OSError as e:
        raise BadInput(path, "a symbolic link, not read" if not follow and _is_link(path) else
                       f"cannot read ({e.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
        os.close(fd)
        kind = _kind(st.st_mode)
        raise BadInput(path, f"not a regular file but {kind}; not read" if not stat.S_ISREG(st.st_mode) else
                       f"{st.st_size:,} bytes, over the {max_bytes:,} read from one such file; not read")
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
    return fd


def read_regular(path: Path | str, max_bytes: int, follow: bool = False) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (open_regular), read with a bound."""
    with os.fdopen(open_regular(path, max_bytes, follow), "rb") as f:
        return f.read(max_bytes + 1)[:max_bytes]


def _is_link(path: Path | str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False
