"""The report over time (report/series.py's Series) as charts for the HTML page: where each step's wall time went on
the GPU (busy / idle) and on the host (CUDA calls by kind, time outside them), the tensor-core share of each step's
kernel time (with the hardware's tensor-pipe activity where sampled), and each step's GPU work (kernels by verdict,
communication, copies). Also the compare page's before/after charts. Drawn by _svg.py; this module only chooses
what to draw.

More than MAX_BARS rows are binned (consecutive rows, each bar the mean row of its bin) and the caption says so.
The hardware line is the series' own hw_tensor (samples inside each step, aligned by the reader); the Report's
hardware_series is on each device's own clock and keeps its own chart in the page's hardware section.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from nvprof_wrap.renderers import _svg
from nvprof_wrap.renderers._frame import t as _t
from nvprof_wrap.report.series import API_KINDS, API_LABELS, Series, StepRow
from nvprof_wrap.text.units import duration as _ns
from nvprof_wrap.text.units import pct as _pct

MAX_BARS = 300
Spans = tuple[tuple[float, float], ...]  # _svg.Chart's spans and xticks
Ticks = tuple[tuple[float, str], ...]
P = _svg.PALETTE
BEFORE, AFTER = P["c-cuda"], P["c-h2d"]
HOST_COLOURS = {"launch": P["c-h2d"], "sync": P["c-unk"], "alloc": P["c-mset"], "other": P["c-comm"]}

CSS = """
.timeview{margin:.4rem 0 1.2rem}.ts-grid{display:grid;gap:.4rem 1.4rem;margin:.3rem 0;
grid-template-columns:repeat(auto-fit,minmax(min(100%,30rem),1fr))}.ts-fig{margin:0;min-width:0}
.ts-fig figcaption{color:var(--muted);font-size:.8rem;margin:.1rem 0 .4rem}
svg.ts{display:block;width:100%;height:auto}svg.ts text{fill:var(--fg)}svg.ts text.v{fill:var(--muted)}
svg.ts line.grid{stroke:var(--line)}
"""


def series_of(d: dict[str, Any]) -> Series | None:
    """The series of a report's JSON form (docs/json.md "series", "series_info"): the page is made from the JSON
    contract alone."""
    info, rows = d.get("series_info"), d.get("series") or []
    if not info:
        return None
    steps = tuple(StepRow(r["step"], r["start_s"], r["duration_ns"], r["processes"], r["launches"], r["kernel_ns"],
                          r["tensor_core_ns"], r["unknown_ns"], r["copy_ns"], r["communication_ns"], r["gpu_busy_ns"],
                          None if r["api_launch_ns"] is None else {k: r[f"api_{k}_ns"] or 0 for k in API_KINDS},
                          r["outside_api_ns"], r["hw_tensor"], r["exposed_communication_ns"]) for r in rows)
    return Series(info["kind"], info["source"], info["bucket_s"], steps, info["host"], info["steps_per_row"],
                  tuple(info["notes"]), info.get("steps"))


def usable(series: Series | None) -> TypeGuard[Series]:
    return series is not None and len(series.rows) >= 2


@dataclass(frozen=True)
class Bin:
    """Consecutive rows drawn as one bar: `row` is their mean row (times in ns, shares weighted by time)."""

    first: int  # step number (or bucket index) of its first row
    last: int
    start_s: float
    end_s: float
    row: StepRow


def _mean(values: list[int]) -> int:
    return round(sum(values) / len(values)) if values else 0


def _bin(rows: tuple[StepRow, ...]) -> Bin:
    if len(rows) == 1:
        r = rows[0]
        return Bin(r.step, r.step, r.start_s, r.start_s + r.duration_ns / 1e9, r)

    def m(key: str) -> int:
        return _mean([getattr(r, key) for r in rows])

    api = [r.api_ns for r in rows if r.api_ns is not None]
    outside = [r.outside_api_ns for r in rows if r.outside_api_ns is not None]
    hw = [(r.hw_tensor, r.duration_ns or 1) for r in rows if r.hw_tensor is not None]
    row = StepRow(rows[0].step, rows[0].start_s, m("duration_ns"), max(r.processes for r in rows), m("launches"),
                  m("kernel_ns"), m("tc_ns"), m("unknown_ns"), m("copy_ns"), m("comm_ns"), m("gpu_busy_ns"),
                  {k: _mean([a.get(k, 0) for a in api]) for k in API_KINDS} if api else None,
                  _mean(outside) if outside else None,
                  sum(h * w for h, w in hw) / sum(w for _, w in hw) if hw else None)
    last = rows[-1]
    return Bin(rows[0].step, last.step, rows[0].start_s, last.start_s + last.duration_ns / 1e9, row)


def bins(rows: tuple[StepRow, ...], size: int | None = None) -> tuple[tuple[Bin, ...], int]:
    """(the bars, rows per bar): one per row up to MAX_BARS rows, else bins of the smallest size that fits."""
    size = size or max(1, math.ceil(len(rows) / MAX_BARS))
    return tuple(_bin(rows[i:i + size]) for i in range(0, len(rows), size)), size


def _label(b: Bin) -> str:
    return str(b.first) if b.first == b.last else f"{b.first}-{b.last}"


def _axis(series: Series, bars: tuple[Bin, ...], size: int) -> tuple[Spans, Ticks, str]:
    """(spans, ticks, x axis name): steps side by side labelled with their numbers, buckets in seconds."""
    if series.kind == "buckets":
        end = max((b.end_s for b in bars), default=1.0) - bars[0].start_s if bars else 1.0
        spans = tuple((b.start_s - bars[0].start_s, b.end_s - bars[0].start_s) for b in bars)
        ticks = tuple((v, _svg.seconds_label(v)) for v in _svg.ticks(end, 6) if v <= end * 1.001)
        return spans, ticks, "seconds from the first bucket's start"
    spans, ticks = _positions([str(b.first) for b in bars])
    return spans, ticks, "step" + (f" (the first of each bin of {size})" if size > 1 else "")


def _positions(labels: list[str]) -> tuple[Spans, Ticks]:
    """Positions side by side, one a unit wide; about 8 of them labelled, at a round stride."""
    every = max(1, math.ceil(len(labels) / 8))
    every = int(_svg.nice_step(every, 1)) if every > 2 else every
    return (tuple((float(i), i + 1.0) for i in range(len(labels))),
            tuple((i + 0.5, label) for i, label in enumerate(labels) if i % every == 0))


def _each(series: Series) -> str:
    return "step" if series.kind == "steps" else "bucket"


def _where(b: Bin, kind: str) -> str:
    return f"{'step' if kind == 'steps' else 'bucket'} {_label(b)}"


def wall_chart(series: Series, bars: tuple[Bin, ...], size: int, ident: str, title: str = "",
               y_max: float | None = None) -> _svg.Chart:
    spans, ticks, xlabel = _axis(series, bars, size)
    busy = tuple(min(b.row.gpu_busy_ns, b.row.duration_ns) for b in bars)
    tips = tuple(f"{_where(b, series.kind)}: wall {_ns(b.row.duration_ns)}, GPU busy {_ns(busy[i])} "
                 f"({_pct(busy[i] / b.row.duration_ns if b.row.duration_ns else 0)}), idle {_ns(b.row.idle_ns)}"
                 for i, b in enumerate(bars))
    wall = sum(b.row.duration_ns for b in bars)
    desc = (f"Wall time of each of {len(bars)} bars, split into GPU busy and idle; the GPU was busy "
            f"{_pct(sum(busy) / wall if wall else 0)} of it.")
    title = title or ("Step wall time" if series.kind == "steps" else "Wall time per bucket") + ": GPU busy and idle"
    return _svg.Chart(ident, title, desc, spans, ticks, xlabel,
                      layers=(_svg.Layer("GPU busy", P["c-h2d"], busy),
                              _svg.Layer("GPU idle", P["c-other"], tuple(b.row.idle_ns for b in bars))),
                      tips=tips, y_max=y_max)


def host_chart(series: Series, bars: tuple[Bin, ...], size: int, ident: str) -> _svg.Chart | None:
    """The host's time per step by kind of CUDA call and outside them; None where the capture holds no API records."""
    if not any(b.row.api_ns is not None for b in bars):
        return None
    spans, ticks, xlabel = _axis(series, bars, size)

    def api(b: Bin, k: str) -> int:
        return (b.row.api_ns or {}).get(k, 0)

    layers = tuple(_svg.Layer(API_LABELS[k], HOST_COLOURS[k], tuple(api(b, k) for b in bars)) for k in API_KINDS)
    outside = _svg.Layer("outside CUDA calls", P["c-other"], tuple(b.row.outside_api_ns or 0 for b in bars))
    tips = tuple(f"{_where(b, series.kind)}: " + ", ".join(f"{lay.label} {_ns(lay.values[i])}"
                                                          for lay in (*layers, outside)) for i, b in enumerate(bars))
    return _svg.Chart(ident, f"The host's time per {_each(series)}: CUDA calls and outside them",
                      "The host's wall time of each bar by kind of CUDA runtime call (kernel launches, synchronising "
                      "copies and waits, allocations, other calls) and the time outside any CUDA call.",
                      spans, ticks, xlabel, layers=(*layers, outside), tips=tips)


def tc_chart(series: Series, bars: tuple[Bin, ...], size: int, ident: str) -> _svg.Chart:
    spans, ticks, xlabel = _axis(series, bars, size)
    lines = [_svg.Line("tensor-core share of kernel time", P["c-tc"], tuple(b.row.tc_share for b in bars), area=True)]
    if any(b.row.hw_tensor is not None for b in bars):
        lines.append(_svg.Line("tensor pipes (hardware, % of SM time)", P["c-d2d"],
                               tuple(None if b.row.hw_tensor is None else b.row.hw_tensor / 100 for b in bars),
                               dashed=True))
    tips = tuple(f"{_where(b, series.kind)}: tensor-core share {_pct(b.row.tc_share)} of "
                 f"{_ns(b.row.kernel_ns)} kernel time" + ("" if b.row.hw_tensor is None else
                                                          f", tensor pipes {b.row.hw_tensor:.1f}%")
                 for b in bars)
    kernel = sum(b.row.kernel_ns for b in bars)
    desc = (f"Share of each bar's kernel time in tensor-core kernels; over all of them "
            f"{_pct(sum(b.row.tc_ns for b in bars) / kernel if kernel else 0)}.")
    return _svg.Chart(ident, f"Tensor-core share of kernel time per {_each(series)}", desc, spans, ticks, xlabel,
                      unit="share", lines=tuple(lines), tips=tips)


def work_chart(series: Series, bars: tuple[Bin, ...], size: int, ident: str) -> _svg.Chart:
    spans, ticks, xlabel = _axis(series, bars, size)

    def other(r: StepRow) -> int:
        return max(r.kernel_ns - r.tc_ns - r.unknown_ns - r.comm_ns, 0)

    parts: tuple[tuple[str, str, Callable[[StepRow], int]], ...] = (
        ("tensor-core kernels", P["c-tc"], lambda r: r.tc_ns), ("other kernels", P["c-cuda"], other),
        ("kernels of unknown kind", P["c-unk"], lambda r: r.unknown_ns),
        ("communication", P["c-comm"], lambda r: r.comm_ns), ("copies and memsets", P["c-mem"], lambda r: r.copy_ns))
    layers = tuple(_svg.Layer(label, colour, tuple(get(b.row) for b in bars)) for label, colour, get in parts)
    tips = tuple(f"{_where(b, series.kind)}: " + ", ".join(f"{lay.label} {_ns(lay.values[i])}" for lay in layers)
                 + f", {b.row.launches:,} launches" for i, b in enumerate(bars))
    return _svg.Chart(ident, f"GPU work per {_each(series)}: kernels, communication, copies",
                      "Summed GPU time of each bar's kernels (by verdict), communication kernels and copies.",
                      spans, ticks, xlabel, layers=layers, tips=tips)


def caption(series: Series, size: int) -> str:
    rows = series.rows
    if series.kind == "buckets":
        what = f"No steps were marked: {len(rows):,} buckets of {series.bucket_s or 0:g} s of the capture's time"
    else:
        what = f"{len(rows):,} steps ({series.source}), steps {rows[0].step}-{rows[-1].step}"
    parts = [what + (f", in bins of {size}: each bar is the mean of its bin" if size > 1 else "")]
    if series.folded > 1:
        parts.append(f"{series.folded:,} consecutive steps per row (more steps than the series keeps): the x axis "
                     "labels each row's first step")
    if max(r.processes for r in rows) > 1:
        parts.append("GPU busy and the host's times are the mean of the processes; kernel times their sum")
    if series.host == "none":
        parts.append("the captures hold no CUDA API records, so the host's side is not shown")
    return " ".join(f"{p[0].upper()}{p[1:]}{'' if p.endswith('.') else '.'}" for p in parts + list(series.notes) if p)


def cap(totals: Sequence[float]) -> float | None:
    """An axis top that keeps the typical steps readable when a few (the first: start-up, compilation) are many
    times longer: the round tick above 1.25 × the tallest bar within 4 × the median; None when none stands out."""
    vals = sorted(v for v in totals if v > 0)
    if len(vals) < 5:
        return None
    normal = [v for v in vals if v <= 4 * vals[len(vals) // 2]]
    return None if len(normal) == len(vals) else _svg.ticks(normal[-1] * 1.25)[-1]


def _totals(chart: _svg.Chart) -> list[float]:
    """Each position's height: its stacked bars, else its highest line."""
    if chart.layers:
        return _svg.stacks(chart)
    return [max((_svg.finite(v) for v in vals), default=0.0) for vals in zip(*(line.values for line in chart.lines))]


def _cut(chart: _svg.Chart, labels: list[str], y_cap: float | None) -> tuple[_svg.Chart, str]:
    """The chart with its axis capped, and the sentence naming the positions cut at its top."""
    if y_cap is None:
        return chart, ""
    cut = [(label, v) for label, v in zip(labels, _totals(chart)) if v > y_cap]
    named = ", ".join(f"{label} ({_ns(v)})" for label, v in cut[:3]) + (f" and {len(cut) - 3:,} more"
                                                                        if len(cut) > 3 else "")
    how = "cut at its top (two white strokes)" if chart.layers else "drawn at its top"
    return replace(chart, y_cap=y_cap), f"Taller than the axis, {how}: {named}." if cut else ""


def _figure(chart: _svg.Chart | None, labels: list[str], note: str = "", y_cap: float | None = None,
            own_cap: bool = True) -> str:
    """The chart in a <figure>, its axis capped (its own cap, or the one given) with a caption naming what was cut."""
    if chart is None:
        return ""
    if own_cap and y_cap is None:
        y_cap = cap(_totals(chart))
    chart, cut = _cut(chart, labels, y_cap)
    note = " ".join(x for x in (cut, note) if x)
    return (f'<figure class="ts-fig">{_svg.render(chart)}'
            + (f"<figcaption>{_t(note)}</figcaption>" if note else "") + "</figure>\n")


def section(series: Series | None, ident: str = "r1", level: int = 2) -> str:
    """The "Over time" section of one report; empty without a series of two rows or more."""
    if not usable(series):
        return ""
    bars, size = bins(series.rows)
    labels = [_where(b, series.kind) for b in bars]
    figs = [_figure(wall_chart(series, bars, size, f"{ident}-ts-wall"), labels),
            _figure(host_chart(series, bars, size, f"{ident}-ts-host"), labels),
            _figure(tc_chart(series, bars, size, f"{ident}-ts-tc"), labels, own_cap=False),
            _figure(work_chart(series, bars, size, f"{ident}-ts-work"), labels,
                    "Summed over streams and processes: it can exceed the step's wall time.")]
    return (f'<section class="timeview" id="{ident}-over-time"><h{level}>Over time</h{level}>\n'
            f'<p class="muted ts-caption">{_t(caption(series, size))}</p>\n<div class="ts-grid">\n{"".join(figs)}'
            "</div></section>\n")


def _overlay(sides: tuple[tuple[str, tuple[Bin, ...]], ...], size: int, ident: str, title: str, unit: str,
             get: Callable[[StepRow], float]) -> _svg.Chart:
    """A line per side over the n-th step of each run (the runs' own step numbers may differ)."""
    n = max(len(bs) for _, bs in sides)
    spans, ticks = _positions([str(i * size + 1) for i in range(n)])
    lines = tuple(_svg.Line(label, colour, tuple(get(b.row) for b in bs) + (None,) * (n - len(bs)), dashed=dashed)
                  for (label, bs), colour, dashed in zip(sides, (BEFORE, AFTER), (True, False)))
    tips = tuple(f"step {i * size + 1}" + "".join(
        f", {label} {_ns(get(bs[i].row)) if unit == 'ns' else _pct(get(bs[i].row))}" for label, bs in sides
        if i < len(bs)) for i in range(n))
    desc = f"{title}, one line per run, over the n-th step of each run" + (f" in bins of {size}" if size > 1 else "")
    return _svg.Chart(ident, title, desc + ".", spans, ticks, "the n-th step of each run" +
                      (f" (the first of each bin of {size})" if size > 1 else ""), unit=unit, lines=lines, tips=tips)


def compare_section(before: Series | None, after: Series | None, labels: tuple[str, str]) -> str:
    """Before and after over time: step wall time and tensor-core share of both runs on one axis each (runs of
    steps), then each run's busy / idle bars on one shared scale. Empty unless both runs have a series."""
    if not usable(before) or not usable(after):
        return ""
    size = max(1, math.ceil(max(len(before.rows), len(after.rows)) / MAX_BARS))
    (bb, _), (ab, _) = bins(before.rows, size), bins(after.rows, size)
    sides = ((f"before: {labels[0]}", bb), (f"after: {labels[1]}", ab))
    walls = [b.row.duration_ns for b in bb + ab]
    shared = cap(walls)  # one scale for both runs, cut alike
    figs = []
    if before.kind == after.kind == "steps":
        nth = [f"step {i * size + 1}" for i in range(max(len(bb), len(ab)))]
        figs += [_figure(_overlay(sides, size, "cmp-ts-wall", "Step wall time, before and after", "ns",
                                  lambda r: r.duration_ns), nth, y_cap=shared, own_cap=False),
                 _figure(_overlay(sides, size, "cmp-ts-tc", "Tensor-core share of kernel time, before and after",
                                  "share", lambda r: r.tc_share), nth, own_cap=False)]
    for (label, bs), series, key in zip(sides, (before, after), ("before", "after")):
        chart = wall_chart(series, bs, size, f"cmp-ts-{key}", f"{label[0].upper()}{label[1:]}: GPU busy and idle",
                           y_max=max(walls))
        figs.append(_figure(chart, [_where(b, series.kind) for b in bs], caption(series, size), shared, False))
    return (f'<section class="timeview" id="over-time"><h2>Over time</h2>\n<div class="ts-grid">\n{"".join(figs)}'
            "</div></section>\n")
