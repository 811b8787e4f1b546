"""The ``traceEvents`` of a Chrome-trace JSON (plain or gzip), streamed in batches, with the keys around them.

Fast path, for traces laid out as torch.profiler (Kineto) writes them — one object holding the header keys, then
``"traceEvents": [`` with a newline between events, then trailing keys: the bytes (through readers/_bounded.py's
filter, so every bound on depth and string length holds) are cut between events and each piece of ~1 MiB is parsed
by orjson, 3x faster than ijson's item builder. A cut is a '}' and the next event's '{' with a comma and a newline
between them: JSON strings hold no raw newline, so it is never inside a string; and a cut anywhere else (inside a
nested array of objects) leaves a piece orjson cannot parse. Anything the fast path does not expect — another
layout, a piece that does not parse, numbers orjson does not take, a run of 16 MiB without a cut — raises
``NotFast`` and the reader starts over on the general path: ijson items over the same filtered stream, whatever the
layout, and with its error messages for damaged files.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import ijson
import orjson

from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers._bounded import BoundedJSON, Mended, open_json
from nvprof_wrap.system.limits import MAX_JSON_DEPTH

CHUNK = 1 << 19
MAX_UNCUT = 16 << 20  # bytes held at most between two cuts (or before the events) on the fast path
_START = re.compile(rb'"traceEvents"\s*:\s*\[')
_CUT = re.compile(rb"\}[ \t\r]*(?:\n[ \t\r\n]*,|,[ \t\r]*\n)[ \t\r\n]*\{")


class NotFast(Exception):
    """The fast path cannot read this file: use the general one."""


class TraceEvents:
    """Iterate for batches (lists) of events; afterwards ``header`` holds the other top-level keys (on the fast
    path; the general path finds them with header_keys) and ``mended`` what the bounds changed. Events
    and header values are JSON values as orjson or ijson give them (Any: whatever the file holds)."""

    def __init__(self, path: Path, fast: bool, span: tuple[int, int | None] = (0, None), finite: bool = False) -> None:
        """span: the byte range [start, end) of an uncompressed file to read (a part; fast path only), cut points
        from split_points: the part from 0 holds the header, the part to the end (None) the trailing keys. finite:
        non-finite numbers read as null (readers/_bounded.py)."""
        self.path, self.fast, self.span, self.finite = path, fast, span, finite
        self.header: dict[str, Any] = {}
        self.mended = Mended()
        self.tail = b""

    def __iter__(self) -> Iterator[list[Any]]:
        return self._fast() if self.fast else self._general()

    def _general(self) -> Iterator[list[Any]]:
        items = "item" if top_level_array(self.path) else "traceEvents.item"
        with open_json(self.path, finite=self.finite, watch=KEY) as f:
            batch: list[Any] = []
            seen = 0
            for ev in ijson.items(f, items, use_float=True):
                batch.append(ev)
                seen += 1
                if len(batch) >= 4096:
                    yield batch
                    batch = []
            yield batch
            self.tail, self.mended = f.tail(), f.mended
        if f.watched > 1 and items != "item":
            once(self.path)
        if not seen and items != "item":
            self._a_list_or_refused()

    def _a_list_or_refused(self) -> None:
        """Refuse a file whose traceEvents is not a list (an object, null): its events were read as none — "no
        kernels", exit 0, for a file that says nothing. (Asked only where no event was read.)"""
        with open_json(self.path) as f:
            kind = next((event for prefix, event, _ in ijson.parse(f) if prefix == "traceEvents"), None)
        if kind not in (None, "start_array"):
            what = {"start_map": "an object", "number": "a number", "string": "a string", "boolean": "true or false"}
            raise BadInput(self.path, f"traceEvents is {what.get(kind, kind)}, not a list of events")

    def _fast(self) -> Iterator[list[Any]]:
        start, end = self.span
        with (open_json(self.path, chunk=CHUNK, finite=self.finite) if self.span == (0, None)
              else _part(self.path, start, end, self.finite)) as f:
            buf = self._prefix(f) if start == 0 else b""
            lead = start != 0  # a part after a cut starts with the rest of it: blanks, a comma, blanks
            while chunk := f.read(CHUNK):
                buf += chunk
                if lead:
                    buf = buf.lstrip(b" \t\r\n,")
                    lead = not buf
                cut = _last_cut(buf)
                if cut < 0:
                    if len(buf) > MAX_UNCUT:
                        raise NotFast("no cut between events")
                    continue
                yield _loads(b"".join((b"[", memoryview(buf)[:cut], b"]")))  # one copy of the piece, not two
                buf = buf[cut:].lstrip(b" \t\r\n,")
            if end is not None:  # a part that stops at a cut: whole events up to there
                yield _loads(b"[" + buf.lstrip(b" \t\r\n,") + b"]")
                self.mended = f.mended
                return
            if b'"traceEvents"' in buf:
                raise NotFast("traceEvents twice")
            rest = _loads(b'{"traceEvents": [' + buf)
            if not isinstance(rest, dict):
                raise NotFast("not an object")
            yield rest.pop("traceEvents")
            self.header.update(rest)
            self.mended = f.mended

    def _prefix(self, f: BoundedJSON) -> bytes:
        """Reads up to the events; the keys before them go to header. Returns what was read past '['."""
        buf = b""
        while (m := _START.search(buf)) is None:
            if buf.lstrip()[:1] not in (b"", b"{"):
                raise NotFast("not an object")
            chunk = f.read(CHUNK)
            if not chunk or len(buf) > MAX_UNCUT:
                raise NotFast("no traceEvents key")
            buf += chunk
        head = _loads(buf[:m.start()] + b'"traceEvents": []}')  # parses only if the key is at the top level
        if not isinstance(head, dict):
            raise NotFast("not an object")
        head.pop("traceEvents")
        self.header = head
        return buf[m.end():]


KEY = b'"traceEvents"'  # the key the streams count (BoundedJSON's watch)


def once(path: Path) -> None:
    """Refuse a trace whose top-level object has traceEvents twice (the stream names it more than once: asked only
    then). ijson streamed both arrays as one, where JSON's parsers — Python's json, Chrome's trace viewer — keep the
    last key's alone: the public Kineto trace of pytorch/kineto written so counted 8,772 kernels, where they see
    8,473. No profiler writes one; which array the writer meant is not in the file."""
    arrays: list[int] = []
    with open_json(path) as f:
        for prefix, event, value in ijson.parse(f):
            if prefix == "" and event == "map_key" and value == "traceEvents":
                arrays.append(0)
            elif prefix == "traceEvents.item" and event in ("start_map", "start_array") and arrays:
                arrays[-1] += 1
    if len(arrays) > 1:
        raise BadInput(path, f"its top-level object has traceEvents {len(arrays)} times "
                             f"({', '.join(f'{n:,}' for n in arrays)} events): JSON readers keep only the last one, "
                             "this one would read them all — not read; keep one array (two traces joined?)")


def top_level_array(path: Path) -> bool:
    """Whether the trace is the Trace Event Format's array form — its events as the top-level list, no object
    around them (Chrome's "JSON Array Format"; torch.profiler writes the object form). Read as "traceEvents" was:
    its events had been looked for under a key it does not have and the trace read as "no kernels", exit 0."""
    with open_json(path) as f:
        head = f.read(4096).lstrip(b" \t\r\n\xef\xbb\xbf")
    return head[:1] == b"["


def split_points(path: Path, parts: int) -> list[int] | None:
    """Byte offsets that cut an uncompressed trace into `parts` of about equal size between two events (just
    past an event's '}'), all after the start of traceEvents; None where that cannot be done."""
    size = path.stat().st_size
    cuts: list[int] = []
    with open(path, "rb") as f:
        m = _START.search(f.read(MAX_UNCUT))
        if m is None or parts < 2:
            return None
        for k in range(1, parts):
            at = max(size * k // parts, m.end(), cuts[-1] if cuts else 0)
            f.seek(at)
            found = _CUT.search(f.read(MAX_UNCUT))
            if found is None:
                return None
            cuts.append(at + found.start() + 1)
    return sorted(set(cuts))


def _part(path: Path, start: int, end: int | None, finite: bool = False) -> BoundedJSON:
    """Bytes [start, end) of a file through the bounds. A part after the first begins between two events, at the
    level of the events (two below the top): the depth bound is lowered by two to match."""
    f = open(path, "rb")  # noqa: SIM115 - owned by the returned stream, closed with it
    f.seek(start)
    return BoundedJSON(_Range(f, None if end is None else end - start), path,
                       max_depth=MAX_JSON_DEPTH - 2 if start else MAX_JSON_DEPTH, chunk=CHUNK, finite=finite)


class _Range:
    """The next `left` bytes of a file (all of the rest when None)."""

    def __init__(self, f: IO[bytes], left: int | None) -> None:
        self.f, self.left = f, left

    def read(self, size: int = -1) -> bytes:
        if self.left is None:
            return self.f.read(size)
        data = self.f.read(min(size, self.left) if size >= 0 else self.left)
        self.left -= len(data)
        return data

    def close(self) -> None:
        self.f.close()


def _last_cut(buf: bytes) -> int:
    """Where the last event that ends in buf ends (just past its '}'), or -1."""
    for lo in (max(0, len(buf) - (64 << 10)), 0):
        last = None
        for last in _CUT.finditer(buf, lo):
            pass
        if last is not None:
            return last.start() + 1
        if lo == 0:
            break
    return -1


def _loads(data: bytes) -> Any:  # a JSON value
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise NotFast(str(e)) from None
