"""Charts as self-contained SVG text: stacked bars and lines over one x axis, with a title, a legend, axis ticks in
human units (ns / µs / ms / s, %), an accessible name (<title>, <desc>, aria-label) and a viewBox, so the chart scales
to its box. No script, no style sheet, no font or link: every colour is an attribute (a page may restyle the text and
grid through the classes `ts`, `grid`, `v`).

Why our own and not a plotting library: the page must stay one file that runs nothing and fetches nothing, and the
project depends on numpy, psutil, sqlite-utils and rich only. matplotlib's SVG backend would do (no script), but it
is a large new dependency for a few bar charts, writes its text as glyph paths or with font references unless
configured, and gives fixed-size drawings with ids that collide when several charts share a page. Pygal and Bokeh
emit scripts. What the report needs — bars, lines, ticks, a legend — is a couple of hundred lines, tested in
tests/renderers/test_svg.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from nvprof_wrap.renderers._frame import t as _t

# The page's palette (renderers/html.py CSS .c-*), by its class names; tests check the two agree.
PALETTE = {"c-tc": "#2e9d4e", "c-cuda": "#7b8797", "c-unk": "#e0a21b", "c-comm": "#8b5cc7", "c-h2d": "#2f7fd1",
           "c-d2h": "#5aa6e8", "c-d2d": "#1d5fa3", "c-mem": "#8fc3f0", "c-mset": "#a0704a", "c-other": "#b0b7c0",
           # the time budget's parts (renderers/_budget.py): matrix math on CUDA cores, then the GPU idle while the
           # host launched, copied or waited, allocated, made other calls, ran outside CUDA calls, or was not recorded
           "c-om": "#4d5866", "c-il": "#f0b27a", "c-is": "#e07b53", "c-ia": "#d9a066", "c-ix": "#e8c9a8",
           "c-io": "#efe2d0", "c-iu": "#dcdcdc"}
FG, MUTED, LINE = "#1d232b", "#5c6673", "#d9dee5"
WIDTH, HEIGHT = 640, 270  # the viewBox; the page scales it to its box
LEFT, RIGHT, BOTTOM = 62, 14, 40  # plot margins: y tick labels, a little air, x tick labels and the x axis' name
FONT, CHAR_W = 12, 7.0  # a conservative width per character at FONT (system-ui is narrower), for the legend's layout
TIME_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))


@dataclass(frozen=True)
class Layer:
    """One part of stacked bars: a value per bar (time in ns, or a share 0..1), drawn in a colour of PALETTE."""

    label: str
    colour: str
    values: tuple[float, ...]


@dataclass(frozen=True)
class Line:
    """A value per bar position (None: no value there, the line breaks); area: filled down to zero."""

    label: str
    colour: str
    values: tuple[float | None, ...]
    area: bool = False
    dashed: bool = False


@dataclass(frozen=True)
class Chart:
    ident: str  # unique in the page: ids of the <title> and <desc>
    title: str
    desc: str  # what the chart shows, in words, for people who cannot see it
    spans: tuple[tuple[float, float], ...]  # each position's x extent in data units (a step: i..i+1; a bucket: s..s)
    xticks: tuple[tuple[float, str], ...]  # (x in data units, label)
    xlabel: str
    unit: str = "ns"  # of the y axis: "ns" (times) | "share" (0..1, shown as %)
    layers: tuple[Layer, ...] = ()
    lines: tuple[Line, ...] = ()
    tips: tuple[str, ...] = ()  # a tooltip per position
    y_max: float | None = None  # at least this high (a scale shared by before and after); None: from the data
    y_cap: float | None = None  # the axis' top whatever the data: taller bars are cut there and marked


def finite(x: float | None) -> float:
    return x if x is not None and math.isfinite(x) and x > 0 else 0.0


def nice_step(span: float, count: int = 4) -> float:
    """A round tick step (1, 2, 2.5 or 5 × 10^k) that covers span in about `count` steps."""
    if span <= 0:
        return 1.0
    raw = span / count
    power: float = 10 ** math.floor(math.log10(raw))  # an int from 10^0 up, as it always was
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))


def ticks(top: float, count: int = 4) -> tuple[float, ...]:
    """0, step, 2·step … up to the first tick at or above top."""
    step = nice_step(top, count)
    n = max(1, math.ceil(top / step - 1e-9))
    return tuple(round(i * step, 12) for i in range(n + 1))


def _num(v: float) -> str:
    return f"{v:,.0f}" if v >= 10_000 else f"{v:.4g}"


def time_label(ns: float, top: float) -> str:
    """A tick of a time axis, in the unit of its largest tick: '2.5 ms'."""
    if ns == 0:
        return "0"
    unit, scale = next(((u, s) for u, s in TIME_UNITS if top >= s), TIME_UNITS[-1])
    return f"{_num(ns / scale)} {unit}"


def seconds_label(s: float) -> str:
    return "0" if s == 0 else f"{_num(s)} s"


def stacks(chart: Chart) -> list[float]:
    """Each position's stacked total."""
    return [sum(finite(lay.values[i]) for lay in chart.layers) for i in range(len(chart.spans))]


def _y_ticks(chart: Chart) -> tuple[tuple[float, str], ...]:
    if chart.unit == "share":
        return tuple((v / 100, f"{v}%") for v in (0, 25, 50, 75, 100))
    top = finite(chart.y_cap) or max([finite(chart.y_max), *stacks(chart)]
                                     + [finite(v) for line in chart.lines for v in line.values])
    if top <= 0:
        return ((0.0, "0"), (1.0, ""))  # nothing to scale: an empty axis
    vals = ticks(top)
    return tuple((v, time_label(v, vals[-1])) for v in vals)


def _legend(chart: Chart) -> tuple[list[str], float]:
    """Swatch and label per layer and line, in rows that fit the width; (SVG parts, the y below the legend)."""
    items = [(lay.label, lay.colour, None) for lay in chart.layers] + \
            [(ln.label, ln.colour, ln) for ln in chart.lines]
    out, x, y = [], float(LEFT), 42.0
    for label, colour, line in items:
        w = 18 + CHAR_W * len(label) + 16
        if x > LEFT and x + w > WIDTH - RIGHT:
            x, y = float(LEFT), y + 18
        dash = ' stroke-dasharray="4 2"' if line and line.dashed else ""
        mark = (f'<line x1="{x:.1f}" x2="{x + 14:.1f}" y1="{y - 4:.1f}" y2="{y - 4:.1f}" stroke="{colour}" '
                f'stroke-width="3"{dash}/>' if line else
                f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<g class="legend-item">{mark}<text x="{x + 18:.1f}" y="{y:.1f}" fill="{FG}" '
                   f'font-size="{FONT}">{_t(label)}</text></g>')
        x += w
    return out, y + 12


class _Frame:
    """Data units → the viewBox's pixels, for one chart."""

    def __init__(self, chart: Chart, top: float, y_top: float) -> None:
        self.x0 = min((a for a, _ in chart.spans), default=0.0)
        x1 = max((b for _, b in chart.spans), default=1.0)
        self.sx = (WIDTH - LEFT - RIGHT) / ((x1 - self.x0) or 1.0)
        self.top, self.bottom, self.y_top = top, HEIGHT - BOTTOM, y_top or 1.0

    def x(self, v: float) -> float:
        return LEFT + (v - self.x0) * self.sx

    def y(self, v: float) -> float:
        return self.bottom - (self.bottom - self.top) * min(v, self.y_top) / self.y_top


def _axes(chart: Chart, f: _Frame, yticks: tuple[tuple[float, str], ...]) -> list[str]:
    out = [f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{f.y(v):.1f}" y2="{f.y(v):.1f}" '
           f'stroke="{LINE}"/><text class="v ytick" x="{LEFT - 6}" y="{f.y(v) + 4:.1f}" text-anchor="end" '
           f'fill="{MUTED}" font-size="11">{_t(label)}</text>' for v, label in yticks if label]
    out += [f'<text class="v xtick" x="{f.x(v):.1f}" y="{f.bottom + 15}" text-anchor="middle" fill="{MUTED}" '
            f'font-size="11">{_t(label)}</text>' for v, label in chart.xticks]
    out.append(f'<text class="v xlabel" x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle" '
               f'fill="{MUTED}" font-size="11">{_t(chart.xlabel)}</text>')
    return out


def _bars(chart: Chart, f: _Frame) -> list[str]:
    """One <g class="bar"> per position (its tooltip, one <rect> per non-zero layer), stacked from zero."""
    out = []
    for i, (a, b) in enumerate(chart.spans):
        w = (b - a) * f.sx
        gap = w * 0.18 if w > 4 else 0.0
        x, base, rects = f.x(a) + gap / 2, 0.0, []
        for lay in chart.layers:
            v = finite(lay.values[i])
            if v:
                y0, y1 = f.y(base), f.y(base + v)
                rects.append(f'<rect x="{x:.2f}" y="{y1:.2f}" width="{max(w - gap, 0.5):.2f}" '
                             f'height="{y0 - y1:.2f}" fill="{lay.colour}" data-value="{v:f}"/>')
            base += v
        if base > f.y_top * (1 + 1e-9):  # cut at the axis' top: two light strokes across the bar say so
            rects.append(f'<path class="cut" d="M{x:.2f},{f.top + 7:.2f}l{w - gap:.2f},-4M{x:.2f},{f.top + 12:.2f}'
                         f'l{w - gap:.2f},-4" stroke="#ffffff" stroke-width="2"/>')
        tip = f"<title>{_t(chart.tips[i])}</title>" if i < len(chart.tips) else ""
        out.append(f'<g class="bar">{tip}{"".join(rects)}</g>')
    return out


def _lines(chart: Chart, f: _Frame) -> list[str]:
    """Each line as polylines over its runs of values (None breaks it); an area line also fills down to zero."""
    out = []
    for line in chart.lines:
        for run in _runs([((a + b) / 2, v) for (a, b), v in zip(chart.spans, line.values)]):
            pts = " ".join(f"{f.x(x):.1f},{f.y(finite(v)):.1f}" for x, v in run)
            if line.area:
                out.append(f'<polygon class="area" points="{f.x(run[0][0]):.1f},{f.bottom:.1f} {pts} '
                           f'{f.x(run[-1][0]):.1f},{f.bottom:.1f}" fill="{line.colour}" fill-opacity="0.22"/>')
            dash = ' stroke-dasharray="5 3"' if line.dashed else ""
            out.append(f'<polyline class="line" points="{pts}" fill="none" stroke="{line.colour}" '
                       f'stroke-width="2"{dash}/>')
    return out


def _runs(points: list[tuple[float, float | None]]) -> list[list[tuple[float, float]]]:
    runs: list[list[tuple[float, float]]] = [[]]
    for x, v in points:
        if v is None:
            runs.append([])
        else:
            runs[-1].append((x, v))
    return [r for r in runs if r]


def render(chart: Chart) -> str:
    """The chart as one <svg> element."""
    legend, top = _legend(chart)
    yticks = _y_ticks(chart)
    f = _Frame(chart, top + 6, yticks[-1][0])
    title, desc = f"{chart.ident}-title", f"{chart.ident}-desc"
    head = (f'<svg class="ts" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
            f'preserveAspectRatio="xMidYMid meet" role="img" aria-label="{_t(chart.title)}" '
            f'aria-describedby="{desc}" font-family="system-ui, sans-serif">')
    shown = (f'<text class="ts-title" x="{LEFT}" y="18" fill="{FG}" font-size="14" font-weight="600">'
             f"{_t(chart.title)}</text>")
    body = [head, f'<title id="{title}">{_t(chart.title)}</title><desc id="{desc}">{_t(chart.desc)}</desc>', shown,
            *legend, *_axes(chart, f, yticks)]
    if not chart.spans:
        body.append(f'<text class="v" x="{(LEFT + WIDTH) / 2:.0f}" y="{(f.top + f.bottom) / 2:.0f}" '
                    f'text-anchor="middle" fill="{MUTED}" font-size="{FONT}">no data</text>')
    body += _bars(chart, f) + _lines(chart, f)
    body.append(f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{f.bottom}" y2="{f.bottom}" '
                f'stroke="{MUTED}"/></svg>')
    return "\n".join(body) + "\n"
