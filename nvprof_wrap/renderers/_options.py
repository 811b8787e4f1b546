"""How to render: the one options value every renderer's ``render(subject, options)`` takes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Options:
    """How to render, the same for every format; a format ignores what it has no use for."""
    width: int = 120  # the terminal's columns (table)
    color: bool = False  # ANSI colour (table; never in a file)
    wide: bool = False  # whole kernel names and reasons
    limit: int | None = None  # rows per table; None: the format's own default (15 in the table and HTML, all in CSV)
    table: str = "kernels"  # CSV writes one table of a report: csv.TABLES
    per_step: bool = False  # one row per step of the series (table, Markdown); JSON and CSV always carry them
    gates: tuple[dict[str, Any], ...] | None = None  # the command line's gates with their results (JSON carries them)
