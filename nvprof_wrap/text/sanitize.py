"""Text from captures, logs and file names on its way to a terminal or a document: control characters shown
escaped, never passed through.

A kernel name can hold ESC sequences (clear the screen, set the window title, hide text), a file name a newline
that splits a one-line error. Every renderer (table, Markdown, CSV) and the error printer pass text through
here: C0 controls, DEL, C1 controls, the Unicode bidirectional controls and the invisible marks (zero-width space,
BOM…) become visible escapes (``\\x1b``, ``\\n``, ``\\u202e``). JSON keeps the exact text, escaped the JSON way
(``json_safe``). CSV cells a spreadsheet would run as a formula are quoted as text (``csv_cell``).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any

# C0 (U+0000-U+001F), DEL (U+007F), C1 (U+0080-U+009F); bidi embeddings/overrides/isolates (Trojan Source), the
# Arabic letter mark and the invisible marks: zero-width space/non-joiner/joiner, left-to-right/right-to-left marks,
# line/paragraph separators, word joiner and the invisible operators, BOM / zero-width no-break space.
_INVISIBLE = "\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def clean(text: object) -> str:
    """One line, no control character: each becomes its escape."""
    s = str(text)
    return _CONTROL.sub(_escape, s) if _CONTROL.search(s) else s


_FORMULA = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")  # and their full-width forms


def csv_cell(value: object) -> object:
    """A CSV cell: text cleaned, and prefixed with ' where a spreadsheet would run it as a formula — it starts with
    = + - @ after any whitespace (spreadsheets skip leading blanks: ' =1+1' is a formula too)."""
    if not isinstance(value, str):
        return value
    v = clean(value)  # a tab or line break becomes '\t', '\n': judged on the text as given too
    return "'" + v if v.lstrip()[:1] in _FORMULA or value.lstrip()[:1] in _FORMULA else v


def clean_lines(text: str) -> str:
    """Multi-line text whose line breaks are ours (plain-text command output): each line cleaned."""
    return "\n".join(clean(line) for line in text.split("\n"))


_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{_INVISIBLE}]")


def json_safe(text: str) -> str:
    """JSON text with C1 controls, DEL and bidi overrides escaped as \\uXXXX (json.dumps with ensure_ascii=False
    escapes only C0): the same JSON value, inert on a terminal."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def deep(obj: Any) -> Any:
    """A copy of a report (frozen dataclasses, tuples, lists, dicts) with every string cleaned."""
    if isinstance(obj, str):
        return clean(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **{f.name: deep(getattr(obj, f.name))
                                          for f in dataclasses.fields(obj) if f.init})
    if isinstance(obj, tuple):
        return tuple(deep(x) for x in obj)
    if isinstance(obj, list):
        return [deep(x) for x in obj]
    if isinstance(obj, dict):
        return {deep(k): deep(v) for k, v in obj.items()}
    return obj
