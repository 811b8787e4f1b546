"""Shared helpers for the text CSV formats: units, numbers with thousands separators, row streaming."""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.system.bounded import open_bytes
from nvprof_wrap.system.limits import MAX_LINE_BYTES

TIME_UNITS_NS = {"ns": 1, "nsecond": 1, "us": 1_000, "usecond": 1_000, "ms": 1_000_000, "msecond": 1_000_000,
                 "s": 1_000_000_000, "second": 1_000_000_000}
_PID = re.compile(r"^==(\d+)==")


def number(text: str | None) -> float | None:
    """'1,234.5' → 1234.5; '' / 'n/a' / '-' → None. Commas only as a locale's digit grouping (_GROUPED):
    '268,352834' (a decimal comma, or an edit) is no number — read as 268352834 it made one kernel of an nvprof
    summary 10^6 times longer."""
    if text is None:
        return None
    t = text.strip().replace('"', "")
    if "," in t:
        if not _GROUPED.fullmatch(t):
            return None
        t = t.replace(",", "")
    if t in ("", "-", "n/a", "N/A"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


# digits grouped by commas as locales group them: in threes, in fours (an East Asian locale's nsys stats: a Jetson's
# '44,0087,8248'), or Indian lakhs ('1,23,45,678')
_GROUPED = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d{1,4}(?:,\d{4})+|\d{1,2}(?:,\d{2})+,\d{3})(?:\.\d*)?"
                      r"(?:[eE][-+]?\d+)?")


def open_text(path: Path) -> io.TextIOWrapper:
    """A text file, or a gzipped one (decompressed as it is read, never whole, within the gzip budget)."""
    try:
        return io.TextIOWrapper(open_bytes(path), newline="", encoding="utf-8-sig", errors="replace")
    except OSError as e:
        raise BadInput(path, f"cannot open ({e.strerror})") from None


def split_preamble(f: io.TextIOBase, path: Path | None = None) -> tuple[list[str], Iterator[list[str]]]:
    """Skip '==PID==' / '==PROF==' lines and blank lines before the header; return the header and a row iterator.

    Profiler messages can also appear between rows (ncu prints ==PROF== lines as it goes); the
    iterator drops them.
    """
    reader = rows(bounded_lines(f, path), lambda first: bool(first.strip()) and not first.startswith("=="), path)
    header = next(reader, None)
    if header is None:
        raise BadInput(path, "empty CSV")
    return [h.strip() for h in header], _once(reader, header, path)


def _once(reader: Iterator[list[str]], header: list[str], path: Path | None) -> Iterator[list[str]]:
    """The rows after the header, refused where the header comes again: two exports joined into one file (`cat a.csv
    b.csv`, or two processes' output in one log), whose second header had been read as a kernel named after its
    column ('Kernel', 'Name') and the rest counted twice, or the second table dropped unsaid. No real export here
    repeats its header."""
    for n, row in enumerate(reader, 1):
        if row == header:
            raise BadInput(path, f"its header row comes again after {n:,} rows: two exports (or two processes' "
                                 "output) joined into one file? Give each as a file of its own: report A.csv B.csv")
        yield row


def rows(lines: Iterable[str], keep: Callable[[str], bool], path: Path | None = None, ragged: bool = False
         ) -> Iterator[list[str]]:
    """The CSV rows of ``lines`` as the csv module reads them (RFC 4180: a quoted field may hold line breaks, and
    its lines are one row), those whose first line ``keep`` accepts. Filtering lines before the parser (profiler
    messages, the program's output) dropped the second line of a quoted kernel name holding a line break, and the
    parser then took the rows after it into the name: half the launches lost. A field is bounded by the csv
    module's field size limit — a longer one within one line by MAX_LINE_BYTES (long_row) —, a line by the caller's
    line reader. The first row kept is the header: a row read over several lines must hold together with it
    (held_together) — a quote left open swallowed the rows after it into one field, silently, until a later quote
    closed it. Read strictly (RFC 4180: a quoted field ends at its closing quote): a quote lost at a name's end
    otherwise ended the field at the next field's opening quote and kept the text after it — ncu's `"name,"12"`
    became one field, every column after it one to the left, exit 0. ``ragged``: the format writes rows narrower
    than its header (ncu leaves a row's empty last columns out)."""
    source = _FirstLine(lines)
    reader = csv.reader(source, strict=True)
    width: int | None = None
    while True:  # once, unless a row is read again (long_row): csv's reader goes on with the line after it
        try:
            for row in reader:
                if source.first is not None and keep(source.first):  # a row read has its first line
                    if width is None:
                        width = len(row)
                    elif source.more:
                        held_together(row, width, ragged, source.more, reader.line_num, path)
                    yield row
                source.first, source.more = None, 0
            return
        except csv.Error as e:
            # a field past csv's limit: the row's first line alone, read again where it is the whole row (long_row;
            # were it not, csv would have ended the row there and read no further)
            again = long_row(source.first) if LIMIT_ERROR in str(e) and source.first is not None else None
            if again is None and STRICT_ERROR in str(e):
                first = reader.line_num - source.more
                raise BadInput(path, f"CSV not readable: a quote opened at line {first:,} closes at line "
                                     f"{reader.line_num:,} with more of its field after it (a stray or lost quote?)"
                               ) from None
            if again is None:
                raise BadInput(path, f"CSV not readable at line {reader.line_num:,} ({e})") from None
        if source.first is not None and keep(source.first):
            yield again
        source.first, source.more = None, 0


_BREAK = re.compile(r"\r\n|\r|\n")


def held_together(row: list[str], width: int, ragged: bool, more: int, last: int, path: Path | None) -> None:
    """Refuse a row read over several lines that does not hold together: its quoted field opened on one line and
    closed on a later one, but the row is wider than the header (the rest of the later line's fields joined it) or,
    unless the format is ragged, narrower, or a whole line inside the field has as many fields as a row (a row
    swallowed whole). A stray quote — a name cut short, a hand edit — would otherwise take the rows after it into
    one kernel's name: launches lost, a copy read as a kernel, exit 0. A kernel name holding a line break is kept
    (tests/readers/test_parse_bounds.py)."""
    first = last - more
    where = f"a quote opened at line {first:,} closes at line {last:,}"
    if len(row) > width or (len(row) < width and not ragged):
        raise BadInput(path, f"CSV not readable: {where}, leaving a row of {len(row)} fields where the header has "
                             f"{width} (a stray quote?)")
    for field in row:
        inner = _BREAK.split(field)[1:-1]  # the field's whole lines: neither the first's tail nor the last's head
        if any(line.count(",") >= width - 1 for line in inner):
            raise BadInput(path, f"CSV not readable: {where}, and holds a whole row between (a stray quote?)")


LIMIT_ERROR = "field larger than field limit"  # csv.Error's text for a field past csv.field_size_limit()
STRICT_ERROR = "expected after"  # csv.Error's text, strict, for a quoted field closed with more of it after the quote


def long_row(line: str) -> list[str] | None:
    """One line as a CSV row whose fields may reach MAX_LINE_BYTES, or None where it is not a whole row by itself:
    for a line that csv refused for a field past its limit (131,072 characters by default: a kernel name with a long
    template, which every other format reads and _validate cuts at MAX_NAME_CHARS with a note). Read strictly — every
    quote closed within the line, nothing after a closing quote — so that a quote left open, whose field would run
    over the lines after it, is still refused; and the process's csv limit is its own again afterwards (one for the
    whole process: a program that imports us keeps its own)."""
    before = csv.field_size_limit(MAX_LINE_BYTES)
    try:
        return next(csv.reader([line], strict=True), None)
    except csv.Error:
        return None
    finally:
        csv.field_size_limit(before)


class _FirstLine:
    """Lines for csv.reader, remembering the first line of the row being read (the reader asks for a line only
    when it needs one: after a row, the next line asked for starts the next row)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = iter(lines)
        self.first: str | None = None
        self.more = 0  # lines of the row after its first

    def __iter__(self) -> _FirstLine:
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        if self.first is None:
            self.first = line
        else:
            self.more += 1
        return line


def bounded_lines(f: io.TextIOBase, path: Path | None = None) -> Iterator[str]:
    """The lines of a text file, none longer than MAX_LINE_BYTES characters (a file with no line break must not
    be read into memory whole)."""
    for line in iter(lambda: f.readline(MAX_LINE_BYTES + 1), ""):
        if len(line) > MAX_LINE_BYTES:
            raise BadInput(path, f"a line longer than {MAX_LINE_BYTES >> 20} MiB: not a profiler export")
        yield line


def cut_lines(f: io.TextIOBase) -> Iterator[str]:
    """The lines of a text file, each cut at MAX_LINE_BYTES characters: the rest of a longer line is read in pieces
    and dropped, never held. For text where a profiler's short lines sit among a program's own output, which can
    hold a line of any length (console logs, ncu CSV after the program's output)."""
    limit = MAX_LINE_BYTES
    for line in iter(lambda: f.readline(limit + 1), ""):
        if len(line) > limit and not line.endswith(("\n", "\r")):
            while (rest := f.readline(limit)) and not rest.endswith(("\n", "\r")):
                pass
            line = line[:limit] + "\n"
        yield line


def pid_from_preamble(path: Path) -> int | None:
    with open_text(path) as f:
        for _, line in zip(range(50), bounded_lines(f, path)):
            m = _PID.match(line)
            if m:
                return int(m.group(1))
    return None
