"""The one outline of a report's sections, in order, that every format walks (console.py, markdown.py, html.py).

A section is one entry: its id, and either its content written once (``content``: the report → a Table or Lines,
renderers/_shapes.py, which each format draws its own way) or each format's own writing of it (``table``,
``markdown``, ``html``) where the formats say different things. A format without a writing of a section, and the
section without content, leaves it out (the terminal's sparkline over time, the page's charts and totals).

A new section is one entry here (or one ``register`` call) and its content function: it then appears in the
terminal, Markdown and the HTML page alike (tests/renderers/test_outline.py shows it).

The sections written per format, and why: each format's text of them is pinned byte for byte by
tests/whole/test_same_reports.py, and their formats differ in more than drawing — the terminal fits its tables to
its width (renderers/_fit.py: short headers, columns dropped, names cut) and colours the verdict; Markdown writes
times in ms and headers that name each percentage's base; the page draws from the JSON form (docs/json.md) with its
own columns (mean time, family, evidence), SVG charts and rows past the limit a click away.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.console import RenderableType

from nvprof_wrap.renderers import _budget as B
from nvprof_wrap.renderers import _communication as N
from nvprof_wrap.renderers import _counter_check as C
from nvprof_wrap.renderers import _sections_html as H
from nvprof_wrap.renderers import _sections_markdown as M
from nvprof_wrap.renderers import _sections_table as T
from nvprof_wrap.renderers import _warmup as W
from nvprof_wrap.renderers._shapes import Content, Shown

FORMATS = ("table", "markdown", "html")


@dataclass(frozen=True)
class Section:
    id: str
    content: Callable[[Shown], Content | None] | None = None  # written once: None when the report has nothing for it
    table: Callable[[Shown], list[RenderableType]] | None = None  # the terminal's own writing
    markdown: Callable[[Shown], list[str]] | None = None  # Markdown's own: pieces joined by newlines
    html: Callable[[Shown], str] | None = None  # the page's own


OUTLINE: list[Section] = [
    Section("lead", table=T.lead, markdown=M.lead, html=H.lead),  # headline lines, verdict, scope, hints
    Section("counter_check", content=C.content),  # verify: the counters against the names, what it was run for
    Section("totals", html=H.totals),
    Section("time_view", html=H.time_view),  # the series as charts
    Section("split", table=T.split, markdown=M.split, html=H.split),  # where GPU time went
    Section("warmup", content=W.content),  # a JAX job's compile and autotuning, left out: analyses/warmup.py
    Section("budget", content=B.content, html=B.html),  # a step's wall time in parts: analyses/budget.py
    Section("communication", content=N.content),  # collectives, overlap, stragglers: analyses/communication.py
    Section("over_time", table=T.over_time, markdown=M.over_time),  # the series as a sparkline; --per-step rows
    Section("devices", table=T.devices, markdown=M.devices, html=H.devices),
    Section("ranks", table=T.ranks, markdown=M.ranks, html=H.ranks),
    Section("processes", table=T.processes, markdown=M.processes, html=H.processes),
    Section("hardware", table=T.hardware, markdown=M.hardware, html=H.hardware),
    Section("kernels", table=T.kernels, markdown=M.kernels, html=H.kernels),
    Section("ops", table=T.ops, markdown=M.ops, html=H.ops),
    Section("scopes", table=T.scopes, markdown=M.scopes, html=H.scopes),
    Section("disagreements", table=T.disagreements, markdown=M.disagreements, html=H.disagreements),
    Section("health", table=T.health, markdown=M.health, html=H.health),
    Section("sources", table=T.sources, markdown=M.sources, html=H.sources),  # and the files skipped
]

# A format that orders the sections its own way: the page puts the framework ops under the split, and the hardware
# beside the devices (docs/html.md). A section not named here follows the one before it in OUTLINE.
ORDERS: dict[str, tuple[str, ...]] = {
    "html": ("lead", "totals", "time_view", "split", "budget", "ops", "scopes", "devices", "hardware", "ranks",
             "processes",
             "kernels", "disagreements", "health", "sources"),
}


def arranged(fmt: str) -> list[Section]:
    """The outline in the order format ``fmt`` writes it."""
    order = ORDERS.get(fmt)
    if order is None:
        return list(OUTLINE)
    by_id = {s.id: s for s in OUTLINE}
    placed = [by_id[i] for i in order if i in by_id]
    for i, section in enumerate(OUTLINE):
        if section not in placed:
            before = OUTLINE[i - 1] if i else None
            placed.insert(placed.index(before) + 1 if before in placed else 0, section)
    return placed


def register(section: Section, before: str = "sources") -> None:
    """Add a section to the outline, ahead of the section ``before`` (the end, but the sources)."""
    if any(s.id == section.id for s in OUTLINE):
        raise ValueError(f"the outline has a section {section.id!r} already")
    OUTLINE.insert(next(i for i, s in enumerate(OUTLINE) if s.id == before), section)
