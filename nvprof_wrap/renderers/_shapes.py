"""What a section of a report is handed, and the shapes its content takes (renderers/_outline.py walks the sections).

A section written once gives its content as a shape — a Table (title, caption, columns, rows of cells) or Lines
(title, lines) — and every format (terminal, Markdown, HTML) draws the shapes its own way. A section whose formats
say different things keeps one writing per format (the terminal's tables fitted to its width, the page's charts),
each registered beside the others in the outline."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nvprof_wrap.report import Report, serialise


@dataclass(frozen=True)
class View:
    """How a format was asked to write the report (renderers/_options.py Options, less what sections need not see)."""

    width: int = 120  # the terminal's columns
    color: bool = False
    wide: bool = False  # whole names and reasons
    limit: int = 15  # rows per table
    per_step: bool = False  # one row per step of the series
    ident: str = "r1"  # HTML: the report's id on its page (several reports share one page)
    level: int = 2  # HTML: its sections' heading level


@dataclass
class Shown:
    """One report being written: the report, how, and its JSON form, made once when a section first asks. The HTML
    page is drawn from the JSON form alone (docs/json.md): a page can be made from JSON read back, without the
    Report (``source`` None), and then only the sections written from the JSON appear."""

    source: Report | None
    view: View = field(default_factory=View)
    _data: dict[str, Any] | None = None

    @property
    def report(self) -> Report:
        if self.source is None:
            raise ValueError("this section is written from the Report, and this page from its JSON alone")
        return self.source

    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            self._data = serialise.to_dict(self.report)
        return self._data


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""  # what the percentages are of
    numeric: frozenset[int] = frozenset()  # the columns of numbers (right-aligned)


@dataclass(frozen=True)
class Lines:
    title: str
    lines: tuple[str, ...]


Content = Table | Lines
