"""The outline of a report's sections (renderers/_outline.py): one entry is enough for a new section to appear in
the terminal, in Markdown and on the HTML page — here a throwaway "copies by direction" section, registered only
while the test runs (the reports of tests/whole/test_same_reports.py stay as they are)."""
from __future__ import annotations

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.renderers import _outline, render
from nvprof_wrap.renderers._outline import Section
from nvprof_wrap.renderers._shapes import Lines, Shown, Table
from tests._paths import ROOT

SAMPLE = ROOT / "nvprof_wrap" / "samples" / "torch_ops"  # 5 copies host to device


@pytest.fixture
def outline(monkeypatch):
    """The outline as it is, restored after the test."""
    monkeypatch.setattr(_outline, "OUTLINE", list(_outline.OUTLINE))
    return _outline


def copies(s: Shown) -> Table | None:
    rows = tuple((x.direction, f"{x.count:,}", f"{x.total_ns:,} ns") for x in s.report.split if x.kind == "memcpy")
    return Table("Copies by direction", ("direction", "copies", "time"), rows, caption="time: of each direction's "
                 "copies", numeric=frozenset({1, 2})) if rows else None


def test_a_section_registered_once_appears_in_the_terminal_markdown_and_html(outline):
    report = analyze(SAMPLE, health=False)
    before = {fmt: render(fmt, report) for fmt in ("table", "markdown", "html")}
    outline.register(Section("copies", content=copies))
    after = {fmt: render(fmt, report) for fmt in ("table", "markdown", "html")}
    for fmt, text in after.items():
        assert "Copies by direction" not in before[fmt] and "Copies by direction" in text, fmt
        assert "HtoD" in text.split("Copies by direction", 1)[1], fmt
    # where the outline put it: before the sources in every format, after training health on the page
    assert after["table"].index("Copies by direction") < after["table"].index("\nRead ")
    assert "\n## Copies by direction\n\n| direction | copies | time |\n" in after["markdown"]
    assert after["markdown"].index("## Copies by direction") < after["markdown"].index("_Read ")
    page = after["html"]
    assert "<h2>Copies by direction</h2>" in page and page.index("Copies by direction") < page.index("<h2>Sources")
    assert '<th scope="col" class=n>copies</th>' in page
    assert all(len(text) > len(before[fmt]) for fmt, text in after.items())


def test_a_section_with_nothing_to_say_is_left_out_everywhere(outline):
    report = analyze(ROOT / "nvprof_wrap" / "samples" / "two_children", health=False)  # no copies
    before = [render(fmt, report) for fmt in ("table", "markdown", "html")]
    outline.register(Section("copies", content=copies))
    assert [render(fmt, report) for fmt in ("table", "markdown", "html")] == before


def test_lines_and_the_page_order(outline):
    outline.register(Section("note", content=lambda s: Lines("A note", (f"{len(s.report.kernels)} kernels",))),
                     before="lead")
    report = analyze(SAMPLE, health=False)
    assert render("table", report).startswith("A note\n  ")
    assert render("markdown", report).startswith("\n## A note\n\n- ")
    assert [s.id for s in outline.arranged("html")][:2] == ["note", "lead"]
    with pytest.raises(ValueError, match="already"):
        outline.register(Section("note"))


def test_every_section_is_written_by_some_format_and_ids_are_unique():
    ids = [s.id for s in _outline.OUTLINE]
    assert len(ids) == len(set(ids))
    assert all(s.content or s.table or s.markdown or s.html for s in _outline.OUTLINE)
    for fmt, order in _outline.ORDERS.items():
        assert set(order) <= set(ids) and len(order) == len(set(order)) and fmt in _outline.FORMATS
