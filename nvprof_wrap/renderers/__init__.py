"""Renderers: each turns a Report (or kernel rows, classifications, an experiment's rows, doctor's facts) into text.
They return values and never print or open files; renderers do not import each other (``_rows``, ``_experiment`` and
``_doctor`` are shared helpers). A renderer is one module implementing ``Renderer``, listed once in ``RENDERERS``;
every command (report, kernels, classify, run, verify, demo, experiment, doctor) and the Report's own display
methods use this one registry.
"""
from __future__ import annotations

from typing import Protocol

from nvprof_wrap import report as _report
from nvprof_wrap.renderers import _rows, console, csv, html, json, markdown


class Renderer(Protocol):
    NAME: str  # the --format value
    EXTENSION: str  # for files written with -o

    def render_report(self, report: _report.Report, **common: object) -> str: ...
    def render_kernels(self, rows: list, **common: object) -> str: ...
    def render_classifications(self, items: list, **common: object) -> str: ...
    def render_experiment(self, rows: list, **common: object) -> str: ...
    def render_doctor(self, facts: dict, **common: object) -> str: ...
    def render_compare(self, comparison, **common: object) -> str: ...
    def render_runs(self, rows: list[dict], **common: object) -> str: ...


RENDERERS: dict[str, Renderer] = {m.NAME: m for m in (console, json, csv, markdown, html)}

# The Report's str(), to_dict() and _repr_html_() (report.DISPLAY: the report layer calls down, never imports up).
_report.DISPLAY.update({"table": lambda r: console.render_report(r, width=120), "dict": _rows.report,
                        "html": html.render_notebook})
__all__ = ["RENDERERS", "Renderer"]
