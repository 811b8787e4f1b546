"""Markdown: a report's sections as the outline orders them (renderers/_outline.py; Markdown's writing of each,
renderers/_sections_markdown.py), and the other subjects' tables. Every cell is escaped so a kernel name holding
markup, pipes or HTML renders as inert text."""
from __future__ import annotations

from nvprof_wrap.renderers import _compare, _doctor, _experiment, _outline, _rows
from nvprof_wrap.renderers._options import Options
from nvprof_wrap.renderers._sections_markdown import esc, kernel_rows, table
from nvprof_wrap.renderers._shapes import Content, Lines, Shown, Table, View
from nvprof_wrap.report import Report
from nvprof_wrap.report.compare import Comparison
from nvprof_wrap.report.kinds import Classifications, Doctor, Experiment, Kernels, Reports, Runs

NAME = "markdown"
EXTENSION = ".md"
ALIASES = (".markdown",)


def render(subject: object, options: Options) -> str:
    """The subject as Markdown: headings, bullet lists and pipe tables, every cell escaped."""
    o = options
    match subject:
        case Report():
            return _report(subject, View(wide=o.wide, limit=o.limit or 20, per_step=o.per_step))
        case Comparison():
            return _comparison(subject)
        case Kernels():
            return kernel_rows(list(subject.rows), o.wide)
        case Classifications():
            return table(["name", "tensor core", "precision", "family", "reason"],
                          [[c.name, c.tensor_core, c.precision or "-", c.family, c.reason] for c in subject.items])
        case Experiment():
            return _experiment.as_markdown(list(subject.rows))
        case Doctor():
            return "\n".join(f"- {esc(line)}" for line in _doctor.lines(subject.facts)) + "\n"
        case Runs():
            return table(list(_compare.RUN_HEAD), [_compare.run_cells(r) for r in subject.rows])
        case Reports():
            return _rows.one_after_another(subject, lambda r: render(r, o), mark="# ")
    raise TypeError(f"the markdown renderer has no form for {type(subject).__name__}")


def _report(report: Report, view: View) -> str:
    """Every section of the outline Markdown writes, in its order (renderers/_outline.py)."""
    shown, out = Shown(report, view), []
    for section in _outline.arranged("markdown"):
        out += section.markdown(shown) if section.markdown else _draw(section.content(shown) if section.content
                                                                       else None)
    return "\n".join(out)


def _draw(content: Content | None) -> list[str]:
    """A section written once (renderers/_shapes.py), as Markdown draws its shapes."""
    if isinstance(content, Table):
        return [f"\n## {esc(content.title)}\n", table(list(content.columns), [list(r) for r in content.rows]),
                *([f"_{esc(content.caption)}_\n"] if content.caption else [])]
    if isinstance(content, Lines):
        return [f"\n## {esc(content.title)}\n", *[f"- {esc(line)}" for line in content.lines]]
    return []


def _comparison(comparison: Comparison) -> str:
    out = [f"- {esc(line)}" for line in _compare.headline(comparison)] + [""]
    out += [f"**{esc(f)}**" if i == 0 else f"- {esc(f)}" for i, f in enumerate(comparison.findings)]
    for key, what in _compare.TABLES:
        rows = getattr(comparison, key)
        if rows:
            head = [h.format(what=what) for h in _compare.HEAD]
            out += ["", f"## {esc(_compare.title(key, what))}", "", table(head, [_compare.cells(r) for r in rows])]
    return "\n".join(out) + "\n"
