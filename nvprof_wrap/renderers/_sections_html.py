"""The HTML page's writing of each section of a report (renderers/_outline.py registers them; html.py walks them),
drawn from the report's JSON form (docs/json.md), so that the page follows the contract every script reads. Every
text from a capture goes through ``_t`` (renderers/_frame.py). Each returns the section's markup, "" when it has
nothing."""
from __future__ import annotations

from typing import Any

from nvprof_wrap.model import counted
from nvprof_wrap.renderers import _numerics, _ranks, _timeview
from nvprof_wrap.renderers._frame import name_cell, prose_cell
from nvprof_wrap.renderers._frame import t as _t
from nvprof_wrap.renderers._html_tables import KERNEL_CHARS
from nvprof_wrap.renderers._html_tables import Raw as _Raw
from nvprof_wrap.renderers._html_tables import groups as _groups
from nvprof_wrap.renderers._html_tables import kernels as _kernels
from nvprof_wrap.renderers._html_tables import n as _n
from nvprof_wrap.renderers._html_tables import ops as _ops
from nvprof_wrap.renderers._html_tables import sources as _sources
from nvprof_wrap.renderers._html_tables import table as _table
from nvprof_wrap.renderers._rows import lone_scope
from nvprof_wrap.renderers._shapes import Shown
from nvprof_wrap.report.ranks import Ranks
from nvprof_wrap.text.names import shorten_all
from nvprof_wrap.text.units import duration as _ns
from nvprof_wrap.text.units import pct as _pct

# the verdict box's colour, by the report's tone (Report.tone: the share and the hints, not "yes" alone)
VERDICT_CLASS = {"good": "yes", "bad": "no", "partial": "unknown", "unknown": "unknown"}
# The colour (CSS class) of each kind of GPU time in the split (its `kind` and, for copies, its `direction` fields —
# never its label, which is words for people)
KIND_CLASS = {"tensor_core": "c-tc", "cuda_core": "c-cuda", "unknown": "c-unk", "communication": "c-comm",
              "memcpy": "c-mem", "memset": "c-mset"}
COPY_CLASS = {"HtoD": "c-h2d", "DtoH": "c-d2h", "DtoD": "c-d2d"}



def heading(s: Shown, text: str) -> str:
    level = s.view.level
    return f"<h{level}>{_t(text)}</h{level}>\n"


def lead(s: Shown) -> str:
    return _verdict(s.data)


def totals(s: Shown) -> str:
    return _totals(s.data)


def time_view(s: Shown) -> str:
    """The series over time as charts (renderers/_timeview.py), from the JSON form's series."""
    return _timeview.section(_timeview.series_of(s.data), s.view.ident, s.view.level)


def split(s: Shown) -> str:
    return heading(s, "Where GPU time went") + _chart(s.data["time_split"], s.view.ident) + _CHART_NOTE


def ops(s: Shown) -> str:
    d = s.data
    if not d["ops"]:
        return ""
    return (heading(s, "Framework ops (NVTX or profiler ranges): which ran on tensor cores, in which precision")
            + _ops(d["ops"], s.view.limit))


def scopes(s: Shown) -> str:
    rows = s.data["scopes"]
    if not rows:
        return ""
    lone = lone_scope([o["op"] for o in rows], rows[0]["kernels"], rows[0]["launches"], _ns(rows[0]["total_ns"]),
                      wide=True)
    return heading(s, "Outer ranges (layers / modules)") + (f"<p>{_t(lone)}</p>\n" if lone is not None
                                                             else _ops(rows, s.view.limit))


def devices(s: Shown) -> str:
    d = s.data
    return heading(s, "Per device") + _groups(d["devices"], "device_id", ("device", "GPU")) if d["devices"] else ""


def hardware(s: Shown) -> str:
    d = s.data
    if not d.get("hardware"):
        return ""
    return heading(s, "Hardware: tensor-pipe activity sampled during the run") + _hardware(d, s.view.ident)


def ranks(s: Shown) -> str:
    r = _ranks.from_dict(s.data)
    return heading(s, _ranks.title(r)) + _rank_table(r) if r else ""


def processes(s: Shown) -> str:
    d = s.data
    if d["processes"] and not (d.get("ranks") and len(d["processes"]) > _ranks.ALL_ROWS):
        return heading(s, "Per process") + _groups(d["processes"], "pid", ("pid", "process"))
    return ""


def kernels(s: Shown) -> str:
    d = s.data
    if not d["kernels"]:
        return ""
    return (heading(s, f"Kernels by GPU time ({len(d['kernels']):,}), with the evidence for each verdict")
            + _kernels(d["kernels"], s.view.limit))


def disagreements(s: Shown) -> str:
    d = s.data
    if not d["disagreements"]:
        return ""
    return heading(s, "Counters or compiled code disagree with the name rules") + _kernels(d["disagreements"],
                                                                                           s.view.limit)


def health(s: Shown) -> str:
    h = s.data.get("health")
    return heading(s, "Training health") + _health(h) if h else ""


def sources(s: Shown) -> str:
    return heading(s, "Sources") + _sources(s.data)


def _verdict(d: dict[str, Any]) -> str:
    hints = "".join(f"<li>{_t(h)}</li>" for h in d["hints"])
    return (f'<div class="verdict v-{VERDICT_CLASS.get(d.get("verdict_tone", ""), "unknown")}" role="status">'
            + "".join(f'<p class="headline">{_t(line)}</p>' for line in d.get("headline") or ())
            + f'<p class="message">{_t(d["message"])}</p>'
            + (f'<p class="scope"><strong>{_t(d["scope"]["description"])}</strong></p>' if d.get("scope") else "")
            + (f'<ul class="hints">{hints}</ul>' if hints else "")
            + "</div>\n")


def _totals(d: dict[str, Any]) -> str:
    items = (("GPU kernel time", _ns(d["kernel_time_ns"])), ("kernel launches", _n(d["launches"])),
             ("distinct kernels", _n(d["distinct_kernels"])), ("tensor-core kernels", _n(d["tensor_core_kernels"])),
             ("tensor-core share of kernel time", _pct(d["tensor_core_time_fraction"])),
             ("tensor-core precisions", " + ".join(d["tensor_core_precisions"]) or "-"))
    return '<dl class="totals">' + "".join(f"<div><dt>{_t(k)}</dt><dd>{_t(v)}</dd></div>" for k, v in items) + "</dl>\n"


def _kind_class(s: dict[str, Any]) -> str:
    """A time_split row's colour, from its kind and direction."""
    if s["kind"] == "memcpy" and s["direction"] in COPY_CLASS:
        return COPY_CLASS[s["direction"]]
    return KIND_CLASS.get(s["kind"], "c-other")


def _chart(split: list[dict[str, Any]], ident: str) -> str:
    """Horizontal bars, one per category, under one stacked bar of the whole; every bar has its numbers beside it
    and a tooltip."""
    if not split:
        return '<p class="muted">No GPU operations were recorded.</p>\n'
    # the labels' column holds the longest category ("communication kernels (NCCL, DeepEP, NVSHMEM)" ran under its
    # bar in a 250-px column)
    width, label_w, bar_w, row_h, top = 760, 350, 230, 24, 36
    height = top + row_h * len(split)
    summary = ", ".join(f"{s['category']} {_pct(s['share'])}" for s in split)
    out = [(f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-labelledby="{ident}-chart"><title id="{ident}-chart">Where GPU time '
            f'went: {_t(summary)}</title>')]
    x = 0.0
    for s in split:
        w, tip = s["share"] * width, f'{_t(s["category"])}: {_ns(s["total_ns"])}, {_pct(s["share"])}'
        out.append(f'<rect class="{_kind_class(s)}" x="{x:.1f}" y="0" width="{w:.1f}" height="22">'
                   f'<title>{tip}</title></rect>')
        x += w
    for i, s in enumerate(split):
        y, cls = top + i * row_h, _kind_class(s)
        w = max(s["share"] * bar_w, 1.0 if s["total_ns"] else 0.0)
        out.append(f'<text x="0" y="{y + 15}">{_t(s["category"])}</text>'
                   f'<rect class="{cls}" x="{label_w}" y="{y + 3}" width="{w:.1f}" height="16"><title>'
                   f'{_t(s["category"])}: {_n(s["count"])} operations</title></rect>'
                   f'<text class="v" x="{label_w + bar_w + 10}" y="{y + 15}">{_ns(s["total_ns"])} · '
                   f'{_pct(s["share"])} · {_n(s["count"])}×</text>')
    return "\n".join(out) + "\n</svg>\n"


def _hardware(d: dict[str, Any], ident: str) -> str:
    """Per device, the hardware's tensor-pipe activity in words, a line chart of it over time (SM activity behind
    it), and the kernels whose samples contradict their name."""
    out = "<ul>" + "".join(f"<li>{_t(h['message'])}</li>" for h in d["hardware"]) + "</ul>\n"
    for dev in sorted({p["device_id"] for p in d.get("hardware_series", [])}):
        out += _timeline([p for p in d["hardware_series"] if p["device_id"] == dev], f"{ident}-hw{dev}", dev)
    checks = d.get("hardware_checks") or []
    if checks:
        out += _table(("kernel", "device", "name says", "tensor pipes", "samples", "what the hardware says"),
                      [[("name", _Raw(name_cell(c["name"], n))), c["device_id"], c["name_verdict"],
                        f"{c['tensor']:.1f}%", _n(c["samples"]),
                        ("why", _Raw(prose_cell(_t(c["message"]), len(c["message"]))))]
                       for c, n in zip(checks, shorten_all([c["name"] for c in checks], KERNEL_CHARS))],
                      frozenset({1, 3, 4}), cls="kernels")
    return out


def _timeline(points: list[dict[str, Any]], ident: str, device: int) -> str:
    """Tensor-pipe activity (and SM activity, lighter) over the run: one self-contained SVG, 0-100%."""
    if not points:
        return ""
    width, height, left, bottom = 760, 160, 40, 24
    end = max(p["t_s"] + p["dt_s"] for p in points) or 1.0

    def x(t: float) -> float:
        return left + (width - left - 10) * t / end

    def y(v: float) -> float:
        return 8 + (height - bottom - 8) * (1 - min(max(v, 0.0), 100.0) / 100)

    def line(key: str) -> str:
        return " ".join(f"{x(p['t_s'] + p['dt_s'] / 2):.1f},{y(p[key]):.1f}" for p in points)

    mean = sum(p["tensor"] for p in points) / len(points)
    grid = "".join(f'<line x1="{left}" x2="{width - 10}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
                   f'<text class="v" x="0" y="{y(v) + 4:.1f}">{v}%</text>' for v in (0, 50, 100))
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-labelledby="{ident}"><title id="{ident}">Device {device}: tensor-pipe activity over '
            f'{end:.3g} s, mean {mean:.1f}% of SM time</title>{grid}'
            f'<polyline class="sm" fill="none" points="{line("sm")}"/>'
            f'<polyline class="tensor" fill="none" points="{line("tensor")}"/>'
            f'<text class="v" x="{left}" y="{height - 6}">0 s</text>'
            f'<text class="v" x="{width - 60}" y="{height - 6}">{end:.3g} s</text>'
            f'<text class="v" x="{left + 60}" y="{height - 6}">— tensor pipes  — SMs (lighter), % of SM time'
            '</text></svg>\n')


_CHART_NOTE = ('<p class="muted">Shares of summed GPU operation time (kernels, copies, memsets); × counts launches '
               "or operations.</p>\n")


def _health(h: dict[str, Any]) -> str:
    numerics = _numerics.lines(h["numerics"]) if h.get("numerics") else []
    findings = "".join(f"<li>{_t(f)}</li>" for f in (*h["findings"], *numerics))
    return (f"<p><strong>{_t(h['status'])}</strong> ({_t(counted(h['epochs'], h.get('unit', 'epoch')))})</p>"
            + (f"<ul>{findings}</ul>" if findings else "") + "\n")


def _rank_table(ranks: Ranks) -> str:
    """Every rank up to _ranks.ALL_ROWS (else the spread), then the ranks that stand out, each a line."""
    if len(ranks.rows) <= _ranks.ALL_ROWS:
        out = _table(_ranks.ROW_HEADS, _ranks.row_cells(ranks), frozenset(range(1, 8)) - {4})
    else:
        out = _table(_ranks.SPREAD_HEADS, _ranks.spread_cells(ranks), frozenset({1, 2, 3}))
    lines = _ranks.outlier_lines(ranks)
    if lines:
        cls = "hints" if ranks.outliers else "note"
        out += f'<ul class="{cls}">' + "".join(f"<li>{_t(line)}</li>" for line in lines) + "</ul>\n"
    return out
