"""Unpacking and parsing with bounded work, whatever the bytes: every gzip stream nvprof-wrap reads goes through
``Gunzip`` and every JSON record through ``loads``.

A gzip stream's budget is checked as the bytes come out, never after reading them: a gzip bomb costs one read's
worth of memory and the time to unpack the budget (``limits.GUNZIP_FREE_BYTES``, ``GUNZIP_MAX_RATIO``), and is
refused in one line. Python's JSON parser recurses once per nesting level: past its limit it raises RecursionError,
which no caller expects from bad input (a summary nested 200,000 levels deep ended a whole report, exit 70);
``loads`` turns it into the ValueError every caller already handles.
"""
from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

from nvprof_wrap.errors import BadInput
from nvprof_wrap.system import limits

GZIP_MAGIC = b"\x1f\x8b"


class Gunzip(io.RawIOBase):
    """What a gzip file unpacks to, refused (BadInput) once it passes ``limit`` bytes, or once it passes ``free``
    bytes at more than GUNZIP_MAX_RATIO times the compressed bytes read: real captures unpack 3-50x (SQLite 3-6x,
    JSON traces 15-30x, ncu CSV 40-50x), whitespace and blank lines ~1000x. ``free``: what its reader gets through
    in seconds (limits.py)."""

    def __init__(self, path: Path, limit: int | None = None, free: int | None = None) -> None:
        super().__init__()
        self.path, self.limit, self.unpacked = path, limit, 0
        self.free = limits.GUNZIP_FREE_BYTES if free is None else free  # looked up now: tests lower it
        self._file = open(path, "rb")  # noqa: SIM115 - owned by this stream, closed with it
        self._gz = gzip.GzipFile(fileobj=self._file, mode="rb")

    def readable(self) -> bool:
        return True

    def readinto(self, b: WriteableBuffer) -> int:
        n = self._gz.readinto(b)
        self.unpacked += n
        if self.unpacked > self.free or (self.limit is not None and self.unpacked > self.limit):
            self._check()
        return n

    def _check(self) -> None:
        if self.limit is not None and self.unpacked > self.limit:
            raise BadInput(self.path, f"gzip unpacks to more than {_size(self.limit)}: a gzip bomb, or not a file "
                                      "nvprof-wrap reads")
        packed = max(self._file.tell(), 1)
        if self.unpacked > self.free and self.unpacked > limits.GUNZIP_MAX_RATIO * packed:
            raise BadInput(self.path, f"gzip unpacks to more than {limits.GUNZIP_MAX_RATIO} times its size "
                                      f"({_size(self.unpacked)} from {_size(packed)}): a gzip bomb?")

    def close(self) -> None:
        try:
            self._gz.close()
        finally:
            self._file.close()
            super().close()


def _size(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n:,} bytes"


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def open_bytes(path: Path, limit: int | None = None, free: int | None = None) -> IO[bytes]:
    """A file, or what a gzip file unpacks to (streamed through Gunzip's budget); seeking is not offered."""
    if is_gzip(path):
        return io.BufferedReader(Gunzip(path, limit, free), buffer_size=1 << 16)
    return open(path, "rb")


def loads(data: str | bytes) -> Any:  # a JSON value
    """json.loads for a record of a file: nesting past the parser's recursion limit is a ValueError like any other
    damage, never a RecursionError (an integer of more than 4,300 digits is a ValueError already: catch ValueError,
    not only JSONDecodeError)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested deeper than the parser goes") from None
