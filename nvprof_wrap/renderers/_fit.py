"""Fit a terminal table to the width it has: numbers and units are never cut.

rich squeezes every column of a table that is too wide, numbers included ("10,…", "77.8 …"). Here each column is
as wide as its widest cell; when the table does not fit, in this order: headers take their short form, text
columns that may be cut (kernel names, reasons, precision mixes) shrink to their minimum with an ellipsis, and
then whole columns go, least needed first (what goes stays in --format json/csv), and last the padding around
the column rules. Only a table that cannot fit even then is left to rich.
"""
from __future__ import annotations

from dataclasses import dataclass

SEPARATOR = 3  # " │ " between two columns (show_edge=False, pad_edge=False)


@dataclass(frozen=True)
class Col:
    head: str
    short: str = ""  # the header when room is tight ("" = the same)
    justify: str = "right"
    cut: int = 0  # > 0: text that may be cut with an ellipsis, down to this many characters
    most: int = 0  # > 0: never wider than this (a cut column that would take the whole width otherwise)
    drop: int = 0  # > 0: may go when the table does not fit, highest first; 0 = always shown


def _len(cell) -> int:
    return len(cell if isinstance(cell, str) else cell.plain)  # text, or a rich Text (styled)


def fit(cols: list[Col], rows: list[list], width: int, sep: int = SEPARATOR) -> tuple[list[int], list[str], list[int]]:
    """(indexes of the columns kept, their headers, their widths) for a table of ``width`` characters whose
    columns are ``sep`` characters apart."""
    keep = list(range(len(cols)))
    while True:
        heads, widths = _widths(cols, rows, keep, width, sep)
        if sum(widths) + sep * (len(keep) - 1) <= width:
            return keep, heads, widths
        droppable = [i for i in keep if cols[i].drop]
        if not droppable:
            return keep, heads, widths
        keep.remove(max(droppable, key=lambda i: cols[i].drop))


def _widths(cols: list[Col], rows: list[list], keep: list[int], width: int,
            sep: int) -> tuple[list[str], list[int]]:
    room = width - sep * (len(keep) - 1)
    heads, widths = _cut([cols[i].head for i in keep], cols, rows, keep, room)
    if sum(widths) > room:  # still too wide with the text cut: the short headers
        heads, widths = _cut([cols[i].short or cols[i].head for i in keep], cols, rows, keep, room)
    return heads, widths


def _cut(heads: list[str], cols: list[Col], rows: list[list], keep: list[int],
         room: int) -> tuple[list[str], list[int]]:
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
        k = max(cuttable, key=lambda k: widths[k])
        widths[k] -= 1
        over -= 1
    return heads, widths


def table(cols: list[Col], rows: list[list], width: int, **options):
    """A rich Table of ``rows`` fitted to ``width``; cells are plain text (escaped here) or rich Text; options go
    to Table (title, caption, …)."""
    from rich.markup import escape
    from rich.table import Table

    keep, heads, widths = fit(cols, rows, width)
    padding = (0, 1)
    if sum(widths) + SEPARATOR * (len(keep) - 1) > width:  # the narrowest terminals: no padding around "│"
        keep, heads, widths = fit(cols, rows, width, sep=1)
        padding = (0, 0)
    t = Table(show_edge=False, pad_edge=False, padding=padding, **options)
    for i, h, w in zip(keep, heads, widths):
        t.add_column(h, justify=cols[i].justify, no_wrap=True, overflow="ellipsis", width=w)
    for r in rows:
        t.add_row(*(escape(r[i]) if isinstance(r[i], str) else r[i] for i in keep))
    return t
