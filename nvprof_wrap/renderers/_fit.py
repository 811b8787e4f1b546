"""Fit a terminal table to the width it has: numbers and units are never cut.

rich squeezes every column of a table that is too wide, numbers included ("10,…", "77.8 …"). Here each column is
as wide as its widest cell; when the table does not fit, in this order: headers take their short form, text
columns that may be cut (kernel names, reasons, precision mixes) shrink to their minimum with an ellipsis, and
then whole columns go, least needed first (what goes stays in --format json/csv), and last the padding around
the column rules. Only a table that cannot fit even then is left to rich.

A name column (``Col.names``) is measured by its names as the table will show them (framework wrappers dropped) and
shortened to the width it gets by its own function (text/names.py: cut in the middle, rows kept apart). With
``wide`` nothing is cut: every text column that could be takes the room there is and wraps its whole text.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is loaded when a table is drawn, not when this module is
    from rich.console import JustifyMethod
    from rich.table import Table
    from rich.text import Text

SEPARATOR = 3  # " │ " between two columns (show_edge=False, pad_edge=False)


@dataclass(frozen=True)
class Col:
    head: str
    short: str = ""  # the header when room is tight ("" = the same)
    justify: JustifyMethod = "right"
    cut: int = 0  # > 0: text that may be cut with an ellipsis, down to this many characters
    most: int = 0  # > 0: never wider than this (a cut column that would take the whole width otherwise)
    drop: int = 0  # > 0: may go when the table does not fit, highest first; 0 = always shown
    # a name column: (the names, the width) → the cells; ``measure`` gives the text a name's width is judged by
    names: Callable[[list[str], int], list[str]] | None = None
    measure: Callable[[str], str] | None = None


def _len(cell: str | Text) -> int:
    return len(cell if isinstance(cell, str) else cell.plain)  # text, or a rich Text (styled)


def fit(cols: list[Col], rows: list[list[Any]], width: int, sep: int = SEPARATOR,
        names_last: bool = False) -> tuple[list[int], list[str], list[int]]:
    """(indexes of the columns kept, their headers, their widths) for a table of ``width`` characters whose
    columns are ``sep`` characters apart; ``names_last``: other text gives up its room before name columns do."""
    keep = list(range(len(cols)))
    while True:
        heads, widths = _widths(cols, rows, keep, width, sep, names_last)
        if sum(widths) + sep * (len(keep) - 1) <= width:
            return keep, heads, widths
        droppable = [i for i in keep if cols[i].drop]
        if not droppable:
            return keep, heads, widths
        keep.remove(max(droppable, key=lambda i: cols[i].drop))


def _widths(cols: list[Col], rows: list[list[Any]], keep: list[int], width: int, sep: int,
            names_last: bool) -> tuple[list[str], list[int]]:
    room = width - sep * (len(keep) - 1)
    heads, widths = _cut([cols[i].head for i in keep], cols, rows, keep, room, names_last)
    if sum(widths) > room:  # still too wide with the text cut: the short headers
        heads, widths = _cut([cols[i].short or cols[i].head for i in keep], cols, rows, keep, room, names_last)
    return heads, widths


def _cut(heads: list[str], cols: list[Col], rows: list[list[Any]], keep: list[int],
         room: int, names_last: bool = False) -> tuple[list[str], list[int]]:
    """Natural widths, then text that may be cut gives up room, the widest first, down to its minimum."""
    widths = []
    for i, h in zip(keep, heads):
        w = max([len(h)] + [_len(r[i]) for r in rows])
        widths.append(min(w, cols[i].most) if cols[i].most else w)
    over = sum(widths) - room
    while over > 0:
        cuttable = [k for k, i in enumerate(keep) if cols[i].cut and widths[k] > max(cols[i].cut, len(heads[k]))]
        if not cuttable:
            break
        k = max(cuttable, key=lambda k: (names_last and cols[keep[k]].names is None, widths[k]))
        widths[k] -= 1
        over -= 1
    return heads, widths


def table(cols: list[Col], rows: list[list[Any]], width: int, wide: bool = False, **options: Any) -> Table:
    """A rich Table of ``rows`` fitted to ``width``; cells are plain text (escaped here) or rich Text; options go
    to Table (title, caption, …). ``wide``: whole texts, wrapped (a rule between rows), none cut."""
    from rich.markup import escape
    from rich.table import Table

    if wide:
        cols = [replace(c, most=0) for c in cols]
    measured = [[c.measure(r[i]) if c.measure and not wide else r[i] for i, c in enumerate(cols)] for r in rows]
    keep, heads, widths = fit(cols, measured, width, names_last=wide)
    padding = (0, 1)
    if sum(widths) + SEPARATOR * (len(keep) - 1) > width:  # the narrowest terminals: no padding around "│"
        keep, heads, widths = fit(cols, measured, width, sep=1, names_last=wide)
        padding = (0, 0)
    rows = _named(cols, rows, dict(zip(keep, widths))) if not wide else rows
    t = Table(show_edge=False, pad_edge=False, padding=padding, show_lines=wide, **options)
    for i, h, w in zip(keep, heads, widths):
        fold = wide and cols[i].cut > 0
        t.add_column(h, justify=cols[i].justify, no_wrap=not fold, overflow="fold" if fold else "ellipsis", width=w)
    for r in rows:
        t.add_row(*(escape(r[i]) if isinstance(r[i], str) else r[i] for i in keep))
    return t


def _named(cols: list[Col], rows: list[list[Any]], widths: dict[int, int]) -> list[list[Any]]:
    """The rows with each shown name column's cells made by its own function for the width it got."""
    rows = [list(r) for r in rows]
    for i, c in enumerate(cols):
        if c.names and i in widths and rows:
            for r, cell in zip(rows, c.names([r[i] for r in rows], widths[i])):
                r[i] = cell
    return rows
