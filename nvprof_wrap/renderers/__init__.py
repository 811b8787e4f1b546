"""Renderers: each turns one subject — a Report, a Comparison, or one of report/kinds.py's kinds (kernel rows,
classifications, an experiment's rows, doctor's facts, the run history, several reports) — into text. They return
values and never print or open files; renderers do not import each other (the underscore modules are shared
helpers: ``_outline`` the sections of a report that the terminal, Markdown and HTML walk, with ``_shapes`` and each
format's ``_sections_*``; ``_rows``, ``_compare``, ``_experiment``, ``_doctor``, ``_fit``, ``_frame``). A report's
JSON is its own serialisation (report/serialise.py).

How to add an output format: one module here with
    NAME = "yaml"          # the --format value
    EXTENSION = ".yaml"    # the extension that names it: `-o out.yaml` picks it, files it writes are named so
    ALIASES = (".yml",)    # optional: other extensions that pick it
    def render(subject, options: Options) -> str: ...   # a `match` over the kinds, one case each
and its name in RENDERERS below. Every command (report, kernels, classify, compare, runs, run, verify, demo,
experiment, doctor), `-o FILE`'s choice of format and the Report's own display methods use this one registry;
tests/whole/test_contracts.py renders every kind in every format, so a format missing a kind fails there.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from nvprof_wrap import report as _report
from nvprof_wrap.renderers._options import Options
from nvprof_wrap.report.compare import Comparison
from nvprof_wrap.report.kinds import KINDS, Classifications, Doctor, Experiment, Kernels, Named, Reports, Runs
from nvprof_wrap.system.lazy import Modules

Subject = _report.Report | Comparison | Kernels | Classifications | Experiment | Doctor | Runs | Reports


class Renderer(Protocol):
    NAME: str  # the --format value
    EXTENSION: str  # the extension of the files it writes; -o FILE with it picks this format

    def render(self, subject: Subject, options: Options) -> str: ...


# format → (its module here, EXTENSION, ALIASES): each module's own, repeated so that choosing a format imports no
# renderer (tests/whole/test_contracts.py checks they agree). A renderer is imported when first asked for: the
# terminal's pulls in rich and the report's outline, ~0.05 s of every `report --format json` that never uses them.
_FORMATS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "table": ("console", ".txt", ()), "json": ("json", ".json", ()), "csv": ("csv", ".csv", ()),
    "markdown": ("markdown", ".md", (".markdown",)), "html": ("html", ".html", (".htm",))}


# RENDERERS: format → its renderer module, imported on first use
RENDERERS: Mapping[str, Renderer] = Modules(__name__, {name: module for name, (module, _e, _a) in _FORMATS.items()})
# -o FILE / --save FILE without --format: the format its extension names (each renderer's EXTENSION and ALIASES)
BY_EXTENSION: dict[str, str] = {ext: name for name, (_m, extension, aliases) in _FORMATS.items()
                                for ext in (extension, *aliases)}


def render(fmt: str, subject: Subject, options: Options | None = None) -> str:
    """``subject`` in format ``fmt`` (a key of RENDERERS)."""
    return RENDERERS[fmt].render(subject, options or Options())


def _notebook(report: _report.Report) -> str:
    """The Report's _repr_html_: the page of the HTML renderer, in a frame of its own (renderers/_frame.py)."""
    from nvprof_wrap.renderers import _frame

    return _frame.notebook(render("html", report), f"nvprof-wrap report: {report.verdict.message}")


# The Report's str() and _repr_html_() (report.DISPLAY: the report layer calls down, never imports up).
_report.DISPLAY.update({"table": lambda r: render("table", r, Options(width=120)), "html": _notebook})
__all__ = ["BY_EXTENSION", "KINDS", "RENDERERS", "Classifications", "Doctor", "Experiment", "Kernels", "Named",
           "Options", "Renderer", "Reports", "Runs", "Subject", "render"]
