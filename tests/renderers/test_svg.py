"""The SVG chart renderer (renderers/_svg.py): well-formed, self-contained, escaped, bars and lines to scale, ticks in
human units, and the edge cases (nothing, zeros, one bar, huge and non-finite values)."""
from __future__ import annotations

import dataclasses
import math
import re
import xml.etree.ElementTree as ET

import pytest

from nvprof_wrap.renderers import _svg, html
from nvprof_wrap.renderers._svg import Chart, Layer, Line

NS = {"s": "http://www.w3.org/2000/svg"}
HOSTILE = '<script>alert(1)</script> & "quotes" \x1b[31m'


def steps(n: int) -> tuple[tuple[float, float], ...]:
    return tuple((float(i), i + 1.0) for i in range(n))


def chart(values=(1e6, 2e6, 3e6), **kw) -> Chart:
    base = Chart("c", "wall time", "per step", steps(len(values)), tuple((i + 0.5, str(i)) for i in range(len(values))),
                 "step", layers=(Layer("busy", "#2f7fd1", tuple(values)),))
    return dataclasses.replace(base, **kw)


def parse(c: Chart) -> ET.Element:
    return ET.fromstring(_svg.render(c))


def texts(root: ET.Element, cls: str) -> list[str]:
    return [t.text or "" for t in root.iterfind(".//s:text", NS) if cls in t.get("class", "").split()]


def test_well_formed_self_contained_and_accessible():
    svg = _svg.render(chart(layers=(Layer("a", "#2e9d4e", (1, 2, 3)), Layer("b", "#b0b7c0", (3, 2, 1))),
                            lines=(Line("l", "#1d5fa3", (0.5, None, 1.0)),)))
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("role") == "img"
    assert root.get("viewBox") == f"0 0 {_svg.WIDTH} {_svg.HEIGHT}" and root.get("width") == "100%"
    assert root.get("aria-label") == "wall time" and root.find("s:title", NS).text == "wall time"
    assert root.find(f"s:desc[@id='{root.get('aria-describedby')}']", NS).text == "per step"
    everything = list(root.iter())
    assert not [e for e in everything if e.tag.endswith(("script", "foreignObject", "image", "a", "style", "use"))]
    assert not [a for e in everything for a, v in e.attrib.items() if "href" in a or a.startswith("on")
                or "url(" in v]
    assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_one_bar_group_per_position_heights_to_scale():
    values = (1e6, 2.5e6, 4e6, 0, 7e6)
    root = parse(chart(values))
    bars = root.findall(".//s:g[@class='bar']", NS)
    assert len(bars) == len(values)
    rects = [r for b in bars for r in b.findall("s:rect", NS)]
    assert len(rects) == 4  # a zero draws nothing, but keeps its place
    per_ns = [float(r.get("height")) / float(r.get("data-value")) for r in rects]
    assert max(per_ns) == pytest.approx(min(per_ns), rel=1e-3)  # one scale: height ∝ value
    bottom = _svg.HEIGHT - _svg.BOTTOM
    assert all(float(r.get("y")) + float(r.get("height")) == pytest.approx(bottom, abs=0.02) for r in rects)
    xs = [float(r.get("x")) for r in rects]
    assert xs == sorted(xs) and xs[0] >= _svg.LEFT and xs[-1] + float(rects[-1].get("width")) <= _svg.WIDTH


def test_stacked_layers_sit_on_each_other():
    root = parse(chart(layers=(Layer("a", "#111111", (2e6,)), Layer("b", "#222222", (3e6,))), spans=steps(1),
                       xticks=()))
    a, b = root.findall(".//s:g[@class='bar']/s:rect", NS)
    assert float(b.get("y")) + float(b.get("height")) == pytest.approx(float(a.get("y")), abs=0.02)
    assert float(b.get("height")) / float(a.get("height")) == pytest.approx(1.5, rel=1e-3)


@pytest.mark.parametrize("top, labels", [
    (9e6, ["0", "2.5 ms", "5 ms", "7.5 ms", "10 ms"]),
    (740e3, ["0", "200 µs", "400 µs", "600 µs", "800 µs"]),
    (3.2e9, ["0", "1 s", "2 s", "3 s", "4 s"]),
    (40, ["0", "10 ns", "20 ns", "30 ns", "40 ns"]),
])
def test_time_ticks_are_round_in_the_unit_of_the_top(top, labels):
    assert texts(parse(chart((top / 2, top))), "ytick") == labels


def test_share_axis_is_percent_and_lines_scale_to_it():
    root = parse(chart(layers=(), unit="share", lines=(Line("tc", "#2e9d4e", (0.0, 0.5, 1.0), area=True),)))
    assert texts(root, "ytick") == ["0%", "25%", "50%", "75%", "100%"]
    (poly,) = root.findall(".//s:polyline", NS)
    ys = [float(p.split(",")[1]) for p in poly.get("points").split()]
    assert ys[0] - ys[1] == pytest.approx(ys[1] - ys[2], abs=0.1) and ys[0] == _svg.HEIGHT - _svg.BOTTOM
    assert root.find(".//s:polygon[@class='area']", NS) is not None


def test_a_missing_value_breaks_the_line():
    root = parse(chart(layers=(), lines=(Line("hw", "#1d5fa3", (1e6, 2e6, None, 3e6, 4e6), dashed=True),),
                       spans=steps(5), xticks=()))
    polys = root.findall(".//s:polyline", NS)
    assert [len(p.get("points").split()) for p in polys] == [2, 2]
    assert all(p.get("stroke-dasharray") for p in polys)


def test_every_text_is_escaped():
    svg = _svg.render(chart(title=HOSTILE, desc=HOSTILE, xlabel=HOSTILE, xticks=((0.5, HOSTILE),),
                            layers=(Layer(HOSTILE, "#2e9d4e", (1, 2, 3)),), tips=(HOSTILE,) * 3))
    assert "<script" not in svg and "\x1b" not in svg
    root = ET.fromstring(svg)
    shown = HOSTILE.replace("\x1b", "\\x1b")
    assert root.get("aria-label") == shown and root.find("s:title", NS).text == shown
    assert texts(root, "xtick") == [shown] and texts(root, "xlabel") == [shown]
    assert {t.text for t in root.iterfind(".//s:g[@class='bar']/s:title", NS)} == {shown}
    assert [t.text for t in root.iterfind(".//s:g[@class='legend-item']/s:text", NS)] == [shown]


def test_nothing_to_draw():
    root = parse(chart((), spans=(), xticks=()))
    assert root.findall(".//s:g[@class='bar']", NS) == [] and "no data" in texts(root, "v")


def test_zeros_draw_no_bar_and_no_nan():
    svg = _svg.render(chart((0, 0, 0)))
    root = ET.fromstring(svg)
    assert len(root.findall(".//s:g[@class='bar']", NS)) == 3 and root.findall(".//s:rect[@data-value]", NS) == []
    assert texts(root, "ytick") == ["0"] and "nan" not in svg.lower() and "inf" not in svg.lower()


def test_one_bar():
    root = parse(chart((5e6,)))
    (rect,) = root.findall(".//s:g[@class='bar']/s:rect", NS)
    assert 0 < float(rect.get("width")) < _svg.WIDTH - _svg.LEFT - _svg.RIGHT and float(rect.get("height")) > 0


def test_huge_and_non_finite_values():
    svg = _svg.render(chart((1e15, math.nan, math.inf, -5.0, 3e14)))
    root = ET.fromstring(svg)
    assert texts(root, "ytick")[-1] == "1,000,000 s"  # grouped, never 1e+06
    assert "nan" not in svg.lower() and "inf" not in svg.lower() and "e+" not in svg
    assert len(root.findall(".//s:rect[@data-value]", NS)) == 2  # NaN, inf and negatives draw nothing
    for r in root.iterfind(".//s:rect[@data-value]", NS):
        assert 0 <= float(r.get("y")) and float(r.get("y")) + float(r.get("height")) <= _svg.HEIGHT


def test_a_cap_cuts_taller_bars_and_marks_them():
    root = parse(chart((1e6, 2e6, 50e6), y_cap=4e6))
    assert texts(root, "ytick")[-1] == "4 ms"
    bars = root.findall(".//s:g[@class='bar']", NS)
    assert [len(b.findall("s:path[@class='cut']", NS)) for b in bars] == [0, 0, 1]
    top = min(float(r.get("y")) for r in root.iterfind(".//s:rect[@data-value]", NS))
    assert top == pytest.approx(min(float(g.get("y1")) for g in root.iterfind(".//s:line[@class='grid']", NS)))


def test_a_shared_scale_reaches_y_max():
    assert texts(parse(chart((1e6,), spans=steps(1), xticks=(), y_max=9e6)), "ytick")[-1] == "10 ms"


def test_legend_wraps_inside_the_width():
    labels = [f"a rather long legend label number {i}" for i in range(6)]
    root = parse(chart(layers=tuple(Layer(label, "#2e9d4e", (1, 2, 3)) for label in labels)))
    items = root.findall(".//s:g[@class='legend-item']/s:text", NS)
    assert [t.text for t in items] == labels
    assert all(float(t.get("x")) + _svg.CHAR_W * len(t.text) <= _svg.WIDTH for t in items)
    assert len({t.get("y") for t in items}) >= 3
    plot_top = min(float(g.get("y1")) for g in root.iterfind(".//s:line[@class='grid']", NS))
    assert max(float(t.get("y")) for t in items) < plot_top


@pytest.mark.parametrize("span, step", [(10, 2.5), (1, 0.25), (0.3, 0.1), (7, 2), (1234, 500), (0, 1)])
def test_nice_steps(span, step):
    assert _svg.nice_step(span) == pytest.approx(step)


def test_labels():
    assert _svg.ticks(9) == (0, 2.5, 5, 7.5, 10)
    assert (_svg.time_label(0, 1e6), _svg.time_label(1.5e6, 2e6), _svg.time_label(500e3, 2e6)) == \
        ("0", "1.5 ms", "0.5 ms")
    assert (_svg.seconds_label(0), _svg.seconds_label(2.5), _svg.seconds_label(12_345)) == ("0", "2.5 s", "12,345 s")


def test_palette_is_the_pages():
    assert dict(re.findall(r"\.(c-[a-z0-9]+)\{fill:(#[0-9a-f]{6})\}", html.CSS)) == _svg.PALETTE
