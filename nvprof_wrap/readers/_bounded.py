"""JSON (plain or gzip) streamed to the parser with bounded work, whatever the file holds.

ijson builds a prefix string per nesting level for every event, so 300,000 nested arrays (345 bytes of gzip)
cost it tens of gigabytes; and one string spanning many reads costs it time quadratic in the string's length.
``open_json`` hands the parser the file through a filter that tracks, at C speed per 64 KiB chunk
(``bytes.translate`` and ``replace``, no Python per byte or per string): whether the stream is inside a string,
the nesting depth, and the length of the current string. Nesting past ``MAX_JSON_DEPTH`` is refused (BadInput); a string
past ``MAX_JSON_STRING_BYTES`` is cut in the stream (the rest of it never reaches the parser) and counted, so
the reader can say so in the capture's notes. gzip is decompressed as a stream, never whole; the last 256 KiB
of the stream are kept for keys written after the events (``tail``).

Non-finite numbers are not JSON, but profilers write them: Kineto's "memory bandwidth (GB/s)": inf for a copy of
duration 0 (pytorch/kineto#105), C++'s nan and -nan, Python's NaN and Infinity. With ``finite`` (a reader's second
attempt, after the parser stopped: looking for them in every chunk cost the filter 2.4x its time) each one outside
strings reaches the parser as null and is counted (``non_finite``), so one such value does not make the whole trace
unreadable.
"""
from __future__ import annotations

import collections
import itertools
import re
import zlib
from pathlib import Path
from typing import IO, NamedTuple, Protocol, Self, TypedDict, Unpack

from nvprof_wrap.errors import BadInput
from nvprof_wrap.system import limits as limit_values
from nvprof_wrap.system.bounded import Gunzip, open_bytes
from nvprof_wrap.system.limits import MAX_JSON_DEPTH, MAX_JSON_STRING_BYTES

CHUNK = 1 << 16
TAIL = 256 << 10
_QUOTED = re.compile(rb'"[^"]*"')
# A string's content as complete units: plain bytes, a surrogate pair of \u escapes, another \u escape, a lone high
# surrogate (with the six bytes after it in view: they are not a low one), a \u that four non-hex bytes follow
# (invalid: the parser stops there), or any other two-byte escape, valid or not; cutting between units never leaves
# a broken escape (possessive: no backtracking). Only a closing quote, or an escape cut by the end of what is in
# view (at most 11 bytes: a high surrogate and 5 bytes of what follows it) ends a match: whatever the bytes, the
# filter finds the string's end where the parser does, and never stops counting brackets.
_HEX4 = rb"[0-9a-fA-F]{4}"
_UNITS = re.compile(rb"(?:[^\"\\]++|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
                    rb"|\\u(?![dD][89abAB])" + _HEX4 + rb"|\\u[dD][89abAB][0-9a-fA-F]{2}(?=[\s\S]{6})"
                    rb"|\\u(?!" + _HEX4 + rb")(?=[\s\S]{4})|\\[^u])*+", re.DOTALL)
# At the end of the stream nothing more is to come: a lone high surrogate or an invalid \u needs no bytes in view.
_UNITS_AT_END = re.compile(rb"(?:[^\"\\]++|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
                           rb"|\\u(?![dD][89abAB])" + _HEX4 + rb"|\\u[dD][89abAB][0-9a-fA-F]{2}|\\u(?!" + _HEX4 +
                           rb")|\\[^u])*+", re.DOTALL)
MAX_OPEN_ESCAPE = 11  # bytes of an escape that the end of a chunk can leave unfinished
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_SPECIAL = bytes(b for b in range(256) if b not in b'"[]{}')
_SIGNS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
# A complete string (kept as it is), or a non-finite number outside one: nan, NaN, inf, Infinity, a sign before any
# (JSON has no other bare word than true, false and null, so outside strings these are numbers)
_NON_FINITE = re.compile(rb'"(?:[^"\\]++|\\.)*+"|[-+]?(?:nan|inf(?:inity)?)(?![0-9A-Za-z_])', re.IGNORECASE | re.DOTALL)
_WORD_END = re.compile(rb"[-+A-Za-z]{1,10}\Z")  # letters (and a sign) the chunk's end may cut from a bare word


class Mended(NamedTuple):
    """What the bounds changed in a stream: strings cut at MAX_JSON_STRING_BYTES, non-finite numbers read as null."""

    strings: int = 0
    non_finite: int = 0

    def plus(self, other: Mended) -> Mended:
        return Mended(self.strings + other.strings, self.non_finite + other.non_finite)

    def notes(self) -> tuple[str, ...]:
        """The capture's notes of them."""
        return ((f"{self.strings:,} JSON string(s) longer than {MAX_JSON_STRING_BYTES >> 20} MiB were cut there",)
                if self.strings else ()) + \
            ((f"{self.non_finite:,} non-finite number(s) (nan, inf: not JSON) read as null",)
             if self.non_finite else ())


class Source(Protocol):
    """What BoundedJSON reads: a binary file, or a range of one (_trace_events.py)."""

    def read(self, size: int = -1, /) -> bytes: ...
    def close(self) -> None: ...


BOM = b"\xef\xbb\xbf"


class BoundedJSON:
    """A read-only byte stream over a JSON file, for ijson (a UTF-8 byte-order mark before it passed over)."""

    def __init__(self, raw: Source, path: Path, max_depth: int = MAX_JSON_DEPTH,
                 max_string: int = MAX_JSON_STRING_BYTES, also_close: tuple[IO[bytes], ...] = (),
                 chunk: int | None = None, finite: bool = False, watch: bytes = b"") -> None:
        """watch: bytes whose occurrences in the filtered stream are counted (``watched``), in strings or not: one
        bytes.count a chunk, where a parse that tells keys from values would cost the parser's time again."""
        self._raw, self.path, self._also_close = raw, path, also_close
        self._watch, self.watched, self._edge = watch, 0, b""
        self.finite = finite  # non-finite numbers outside strings as null (the module's docstring)
        self.max_depth, self.max_string = max_depth, max_string
        self._chunk = min(chunk or CHUNK, max_string)  # a string inside one chunk is never longer than the limit
        self._depth = 0
        self._in_string = self._cutting = self._at_end = False
        self._string_len = 0
        self._carry = b""
        self.offset = 0  # bytes of the (decompressed) stream consumed so far
        self.cut_strings = 0
        self.non_finite = 0  # bare nan / inf values read as null
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_len = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._raw.close()
        for f in self._also_close:
            f.close()

    def read(self, size: int = -1) -> bytes:
        """The next filtered piece (any length; b"" only at the end, or when asked for 0 bytes: ijson asks
        read(0) to learn whether the stream gives bytes or text)."""
        while size:
            raw = self._raw.read(self._chunk)
            if self.offset == 0 and raw.startswith(BOM):  # a UTF-8 byte-order mark (Windows editors write one): no
                self.offset = len(BOM)                    # JSON's, which the parser refused as an invalid char
                raw = raw[len(BOM):]
                if not raw:
                    continue
            if not raw:  # the end: what an unfinished escape held back is scanned as the last piece
                buf, self._carry = self._carry, b""
                self._at_end = True
                return self._keep(self._scan(buf) if buf else b"")
            buf, self._carry = self._carry + raw, b""
            self.offset += len(raw)
            out = self._scan(buf)
            if out:
                return self._keep(out)
        return b""

    @property
    def mended(self) -> Mended:
        return Mended(self.cut_strings, self.non_finite)

    def tail(self) -> bytes:
        """The last 256 KiB of the stream read so far."""
        return b"".join(self._tail)[-TAIL:]

    def _keep(self, out: bytes) -> bytes:
        if self._watch and out:  # the edge: the bytes of the last piece an occurrence cut by the chunks may start in
            seen = self._edge + out
            self.watched += seen.count(self._watch)
            self._edge = seen[-(len(self._watch) - 1):] if len(self._watch) > 1 else b""
        self._tail.append(out)
        self._tail_len += len(out)
        while self._tail_len - len(self._tail[0]) >= TAIL:
            self._tail_len -= len(self._tail.popleft())
        return out

    def _scan(self, buf: bytes) -> bytes:
        out: list[bytes] = []
        pos, end = 0, len(buf)
        while pos < end:
            if self._in_string:
                pos, end = self._string(buf, pos, end, out)
            else:
                pos = self._structure(buf, pos, end, out)
        return b"".join(out)

    def _string(self, buf: bytes, pos: int, end: int, out: list[bytes]) -> tuple[int, int]:
        """Inside a string: up to its closing quote or the end of the chunk; returns (pos, end)."""
        units = (_UNITS_AT_END if self._at_end else _UNITS).match(buf, pos, end)  # matches the empty run too
        stop = units.end() if units else pos
        closed = stop < end and buf[stop] == 0x22
        if not closed and stop < end and self._at_end and end - stop == 1:
            stop += 1  # a lone backslash, the stream's last byte: the parser will say so
        elif not closed and stop < end:  # a backslash: an escape cut by the chunk's end, completed by the next one
            if end - stop > MAX_OPEN_ESCAPE or self._at_end:  # cannot happen (_UNITS); were it to: refuse
                raise BadInput(self.path, f"JSON string escape the bounds cannot follow at byte "
                                          f"{self.offset - len(buf) + stop:,}: not a profiler trace")
            self._carry, end = buf[stop:end], stop
        elif not closed and not self._at_end:
            stop = end = self._hold_partial_utf8(buf, pos, end)
        room = self.max_string - self._string_len
        if not self._cutting and stop - pos > room:
            units = _UNITS.match(buf, pos, pos + room)
            cut = units.end() if units else pos
            while cut > pos and buf[cut - 1] & 0xC0 == 0x80:  # never split a UTF-8 sequence
                cut -= 1
            if cut > pos and buf[cut - 1] >= 0xC0:
                cut -= 1
            out.append(buf[pos:cut])
            self._cutting = True
            self.cut_strings += 1
        elif not self._cutting:
            out.append(buf[pos:stop])
        self._string_len += stop - pos
        if not closed:
            return end, end
        out.append(b'"')
        self._in_string = self._cutting = False
        return stop + 1, end

    def _hold_partial_utf8(self, buf: bytes, pos: int, end: int) -> int:
        """A UTF-8 sequence cut by the chunk's end goes to the next chunk, so a cut never splits one."""
        i = end - 1
        while i > pos and end - i < 4 and buf[i] & 0xC0 == 0x80:
            i -= 1
        if i >= pos and buf[i] >= 0xC0 and end - i < (2 if buf[i] < 0xE0 else 3 if buf[i] < 0xF0 else 4):
            self._carry = buf[i:end] + self._carry
            return i
        return end

    def _structure(self, buf: bytes, pos: int, end: int, out: list[bytes]) -> int:
        """Outside strings: check the nesting up to the first string left open by the chunk's end."""
        rest = buf[pos:end]
        # Escaped backslashes and quotes masked, length kept: every quote left delimits a string, at its place.
        # (A regular expression that skips whole strings tried again at every quote of a string left open by the
        # chunk's end: quadratic in a string of escaped quotes.)
        masked = rest.replace(b"\\\\", b"\0\0").replace(b'\\"', b"\0\0") if b"\\" in rest else rest
        # Only quotes and brackets matter. Removing two adjacent quotes (an empty string, or the gap between two
        # strings with no bracket in it) changes no bracket's inside/outside; what is left are the strings that
        # hold brackets (few: "{lambda()#1}"), removed with their brackets.
        special = masked.translate(None, _NOT_SPECIAL).replace(b'""', b"")
        if b'"' in special:
            special = _QUOTED.sub(b"", special)
        quote = special.find(b'"')  # parity: a quote left means a string left open, at the last quote
        self._nesting(special if quote < 0 else special[:quote])
        if quote < 0 and not self.finite:
            out.append(rest)
            return end
        if quote < 0:
            word = None if self._at_end else _WORD_END.search(rest, max(len(rest) - 10, 0))
            if word is not None:  # a bare word (or sign) the chunk's end may have cut ('in|f', '-|nan'): read
                # again with the next chunk's bytes, whole (moving bytes to the next chunk changes nothing else)
                self._carry = rest[word.start():] + self._carry
                rest = rest[:word.start()]
            out.append(self._finite(rest))
            return end
        return self._open_string(buf, pos, pos + masked.rindex(b'"'), out)

    def _open_string(self, buf: bytes, pos: int, opening: int, out: list[bytes]) -> int:
        out.append(self._finite(buf[pos:opening]) + b'"' if self.finite else buf[pos:opening + 1])
        self._in_string, self._string_len = True, 0
        return opening + 1

    def _finite(self, text: bytes) -> bytes:
        """text (outside strings, its strings whole) with each non-finite number as null, counted."""
        low = text.lower()  # one copy and two searches: 40% of six searches' time
        if b"nan" not in low and b"inf" not in low:  # (``finite`` only)
            return text
        found = 0

        def null(m: re.Match[bytes]) -> bytes:
            nonlocal found
            if m.group().startswith(b'"'):
                return m.group()
            found += 1
            return b"null"
        text = _NON_FINITE.sub(null, text)
        self.non_finite += found
        return text

    def _nesting(self, text: bytes) -> None:
        brackets = text.translate(None, _NOT_BRACKETS)
        if not brackets:
            return
        opens = brackets.count(b"[") + brackets.count(b"{")
        if self._depth + opens > self.max_depth and self._peak(brackets) > self.max_depth:
            raise BadInput(self.path, f"JSON nested deeper than {self.max_depth} levels (within its first "
                                      f"{self.offset:,} bytes): not a profiler trace")
        self._depth += 2 * opens - len(brackets)

    def _peak(self, brackets: bytes) -> int:
        """The deepest level reached in ``brackets`` — exactly when it matters. Removing every adjacent "[]" (or
        every "{}": net zero) lowers the peak by at most one, so the peak of what is left plus the rounds bounds
        it; a trace's events ("{{}}" each) vanish in two rounds at C speed, where summing every bracket in
        Python cost half of this filter's time."""
        reduced, rounds, changed = brackets, 0, True
        while changed and rounds < 16:
            changed = False
            for pair in (b"[]", b"{}"):
                shorter = reduced.replace(pair, b"")
                if len(shorter) != len(reduced):
                    reduced, rounds, changed = shorter, rounds + 1, True
        bound = _max_level(reduced, self._depth) + rounds
        return bound if bound <= self.max_depth else _max_level(brackets, self._depth)


def _max_level(brackets: bytes, depth: int) -> int:
    return max(itertools.accumulate(memoryview(brackets.translate(_SIGNS)).cast("b"), initial=depth))


class JsonLimits(TypedDict, total=False):
    """BoundedJSON's limits a reader may set (its defaults otherwise)."""

    max_depth: int
    max_string: int
    chunk: int | None
    finite: bool
    watch: bytes


def open_json(path: Path, unpacked: int | None = None, **limits: Unpack[JsonLimits]) -> BoundedJSON:
    """A JSON file or a gzip of one, streamed through the bounds (and the gzip budget: system/bounded.py; unpacked:
    a limit on what the gzip unpacks to; finite: non-finite numbers as null)."""
    return BoundedJSON(open_bytes(path, unpacked, limit_values.GUNZIP_FREE_JSON_BYTES), path, **limits)


def _kept(dst: Path, written: int, limit: int) -> int | None:
    """The bytes written to dst, or None (and dst removed) where the unpacking stopped past limit."""
    if written > limit:
        dst.unlink(missing_ok=True)
        return None
    return written


def gunzip_to(src: Path, dst: Path, limit: int) -> int | None:
    """Unpack the gzip file src into dst, streaming; the bytes written, or None (and no dst) when it unpacks to more
    than limit bytes. A damaged gzip raises (OSError, EOFError, zlib.error), a gzip bomb BadInput; dst removed."""
    written = 0
    try:  # a gzip bomb is refused (BadInput) as it unpacks, whatever the limit
        with Gunzip(src, free=limit_values.GUNZIP_FREE_JSON_BYTES) as inp, open(dst, "wb") as out:
            while chunk := inp.read(1 << 20):
                written += len(chunk)
                if written > limit:
                    break
                out.write(chunk)
    except BaseException:
        dst.unlink(missing_ok=True)
        raise
    return _kept(dst, written, limit)


def inflate_to(src: Path, dst: Path, limit: int) -> int | None:
    """gunzip_to through zlib directly, ~2x faster (gzip.GzipFile inflates in small pieces and copies each): for a
    gzipped trace unpacked to be read in parts, whose caller reads it in one stream instead on any error. The same
    gzip-bomb refusal as system/bounded.py's Gunzip (BadInput); members one after another and zero padding as gzip
    takes them; a damaged or cut file raises (OSError, EOFError, zlib.error); dst removed on any of these."""
    written = packed = 0
    free, ratio = limit_values.GUNZIP_FREE_JSON_BYTES, limit_values.GUNZIP_MAX_RATIO
    try:
        with open(src, "rb") as inp, open(dst, "wb") as out:
            unz, data = zlib.decompressobj(31), b""
            while True:
                if not data:
                    data = inp.read(1 << 18)
                    packed += len(data)
                    if not data:
                        break
                if unz.eof:  # another member, or the zero padding gzip skips
                    data = data.lstrip(b"\0")
                    if not data:
                        continue
                    if data[:2] != b"\x1f\x8b":
                        raise OSError("Not a gzipped file")
                    unz = zlib.decompressobj(31)
                piece = unz.decompress(data, 1 << 20)  # bounded: a bomb is stopped a piece at a time
                data = unz.unconsumed_tail or unz.unused_data
                written += len(piece)
                if written > free and written > ratio * max(packed, 1):
                    raise BadInput(src, f"gzip unpacks to more than {ratio} times its size "
                                        f"({written / 2**20:,.1f} MiB from {packed / 2**20:,.1f} MiB): a gzip bomb?")
                if written > limit:
                    break
                out.write(piece)
            if written <= limit and not unz.eof:
                raise EOFError("Compressed file ended before the end-of-stream marker was reached")
    except BaseException:
        dst.unlink(missing_ok=True)
        raise
    return _kept(dst, written, limit)
