"""A bounded walk over protobuf wire format: the top-level fields of a message as (number, wire type, span),
without decoding them. It lets the xplane reader cut a big XSpace into planes and a plane into lines and chunks
of events, each then parsed by protobuf on its own, so memory stays bounded by a chunk, not by the file.

Every length is checked against the enclosing span: damaged input raises ValueError, never reads past the end.
"""
from __future__ import annotations

import mmap
from collections.abc import Iterator

# What the walk reads: a file mapped whole (xplane.py), or bytes read from its head
Buf = bytes | bytearray | memoryview | mmap.mmap

VARINT, I64, LEN, I32 = 0, 1, 2, 5


def varint(buf: Buf, pos: int, end: int) -> tuple[int, int]:
    """(value, position after it) of the varint at pos."""
    value, shift = 0, 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("truncated or overlong varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def fields(buf: Buf, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, start of the field's tag, start of its payload, end of its payload) of each
    field of the message in buf[start:end]. For a VARINT field the payload span holds the varint."""
    pos = start
    while pos < end:
        tag_at = pos
        key, pos = varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == VARINT:
            _, after = varint(buf, pos, end)
        elif wire == LEN:
            length, pos = varint(buf, pos, end)
            after = pos + length
        elif wire == I64:
            after = pos + 8
        elif wire == I32:
            after = pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if after > end:
            raise ValueError("field runs past the end of its message")
        yield number, wire, tag_at, pos, after
        pos = after


def text(buf: Buf, start: int, end: int) -> str:
    return bytes(buf[start:end]).decode("utf-8", errors="replace")
