"""Terminal output with rich: a report's sections as the outline orders them (renderers/_outline.py; the terminal's
writing of each, renderers/_sections_table.py), and the other subjects' tables. Renders to a string; the CLI decides
where it goes."""
from __future__ import annotations

import io
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table as RichTable
from rich.text import Text

from nvprof_wrap.model import Classification
from nvprof_wrap.renderers import _compare, _doctor, _experiment, _outline
from nvprof_wrap.renderers._fit import Col
from nvprof_wrap.renderers._fit import table as fitted
from nvprof_wrap.renderers._options import Options
from nvprof_wrap.renderers._rows import one_after_another
from nvprof_wrap.renderers._sections_table import TC_MARK, kernel_table, op_col
from nvprof_wrap.renderers._shapes import Content, Lines, Shown, Table, View
from nvprof_wrap.report import KernelRow, Report
from nvprof_wrap.report.compare import Comparison
from nvprof_wrap.report.kinds import Classifications, Doctor, Experiment, Kernels, Reports, Runs
from nvprof_wrap.store.history import HistoryRow
from nvprof_wrap.text.sanitize import clean_lines, deep

NAME = "table"
EXTENSION = ".txt"


def _to_text(renderable: RenderableType, width: int, color: bool) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system="auto" if color else None, force_terminal=color,
                      no_color=not color, highlight=False, soft_wrap=False)
    console.print(renderable)
    return buf.getvalue()


def render(subject: object, options: Options) -> str:
    """The subject as terminal text, ``options.width`` columns wide."""
    o = options
    match subject:
        case Report():
            return _report(subject, View(o.width, o.color, o.wide, o.limit or 15, o.per_step))
        case Comparison():
            return _comparison(subject, o.width, o.color, o.limit or 15, o.wide)
        case Kernels():
            return _kernels(list(subject.rows), o.width, o.color, o.wide)
        case Classifications():
            return _classifications(list(subject.items), o.width, o.color)
        case Experiment():
            return _experiment.as_table(list(subject.rows), o.width, o.color)
        case Doctor():
            return clean_lines("\n".join(_doctor.lines(subject.facts))) + "\n"  # paths, versions: the machine's text
        case Runs():
            return _runs(list(subject.rows), o.width, o.color)
        case Reports():
            return one_after_another(subject, lambda r: render(r, o))
    raise TypeError(f"the table renderer has no form for {type(subject).__name__}")


def _report(report: Report, view: View) -> str:
    """Every section of the outline the terminal writes, in its order, a blank line between them."""
    shown = Shown(deep(report), view)  # no control character from a capture reaches the terminal (sanitize.py)
    parts: list[RenderableType] = []
    for section in _outline.arranged("table"):
        drawn = section.table(shown) if section.table else _draw(section.content(shown) if section.content else None)
        if drawn:
            parts += [*([Text("")] if parts else []), *drawn]
    return _to_text(Group(*parts), view.width, view.color)


def _draw(content: Content | None) -> list[RenderableType]:
    """A section written once (renderers/_shapes.py), as the terminal draws its shapes."""
    if isinstance(content, Table):
        t = RichTable(title=content.title, title_justify="left", show_edge=False, pad_edge=False,
                      caption=content.caption or None, caption_justify="left", caption_style="dim")
        for i, col in enumerate(content.columns):
            t.add_column(col, justify="right" if i in content.numeric else "left")
        for row in content.rows:
            t.add_row(*(Text(cell) for cell in row))
        return [t]
    if isinstance(content, Lines):
        text = Text(content.title, style="bold")
        for line in content.lines:
            text.append(f"\n  {line}", style="")
        return [text]
    return []


def _kernels(rows: list[KernelRow], width: int, color: bool, wide: bool) -> str:
    rows = deep(rows)
    return _to_text(kernel_table(rows, wide, f"{len(rows)} kernels", width), width, color)


def _classifications(items: list[Classification], width: int, color: bool) -> str:
    items = deep(items)
    t = RichTable(show_edge=False, pad_edge=False)
    for col in ("kernel", "TC", "precision", "family", "reason"):
        t.add_column(col, overflow="fold")
    for c in items:
        t.add_row(escape(c.name), TC_MARK[c.tensor_core], c.precision or "-", c.family, escape(c.reason))
    return _to_text(t, width, color)


def _comparison(comparison: Comparison, width: int, color: bool, limit: int, wide: bool = False) -> str:
    comparison = deep(comparison)
    parts: list[Any] = [Text(line) for line in _compare.headline(comparison)]
    parts += [Text(f, style="bold" if i == 0 else "") for i, f in enumerate(comparison.findings)]
    for key, what in _compare.TABLES:
        rows = getattr(comparison, key)
        if not rows:
            continue
        name = op_col(what, 60) if key == "ops" else Col(what, justify="left", cut=12, most=60)
        cols = [name, *(Col(h, short=short, drop=drop) for h, short, drop in
                (("before", "", 0), ("after", "", 0), ("Δ time", "Δ", 0), ("before %", "b %", 1), ("after %", "a %", 1),
                 ("TC before", "TC b", 2), ("TC after", "TC a", 0)))]
        parts += [Text(""), fitted(cols, [_compare.cells(r) for r in rows[:limit]], width, wide,
                                   title=_compare.title(key, what), title_justify="left")]
    return _to_text(Group(*parts), width, color)


def _runs(rows: list[HistoryRow], width: int, color: bool) -> str:
    """The run history; on a narrow terminal the command, backend and precisions go first (they stay in
    --format json/csv)."""
    rows = deep(rows)
    cols = [Col("name", justify="left", cut=10, most=32), Col("recorded", justify="left", drop=2),
            Col("command", justify="left", cut=12, most=60, drop=5), Col("backend", justify="left", drop=4),
            Col("exit"), Col("TC?", justify="left"), Col("TC share", short="TC %"),
            Col("TC precisions", short="precisions", justify="left", cut=8, most=32, drop=3),
            Col("health", justify="left", cut=7)]
    return _to_text(fitted(cols, [_compare.run_cells(r) for r in rows], width,
                           title=f"{len(rows)} recorded runs (newest first)", title_justify="left"), width, color)
