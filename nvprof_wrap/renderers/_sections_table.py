"""The terminal's writing of each section of a report (renderers/_outline.py registers them; console.py walks
them): rich tables fitted to the width (renderers/_fit.py), lines styled by what they say. Each returns the section's
renderables, none when the report has nothing for it."""
from __future__ import annotations

import re
from typing import Any

from rich.console import JustifyMethod, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from nvprof_wrap.renderers import _numerics, _ranks, _steps
from nvprof_wrap.renderers._fit import Col
from nvprof_wrap.renderers._fit import table as fitted
from nvprof_wrap.renderers._rows import (
    BASES,
    lone_scope,
    mix_text,
    numbered_merged,
    shown_key,
    skipped_summary,
    split_label,
)
from nvprof_wrap.renderers._shapes import Shown
from nvprof_wrap.report import GroupRow, KernelRow, OpRow, Report, serialise
from nvprof_wrap.report.headline import hardware_text, scope_text
from nvprof_wrap.report.series import Series
from nvprof_wrap.text.names import inner, shorten_all, shorten_ops
from nvprof_wrap.text.units import duration as _ns
from nvprof_wrap.text.units import pct as _pct

TC_MARK = {"yes": Text("✓", style="bold green"), "no": Text("✗", style="red"), "unknown": Text("?", style="yellow")}
VERDICT_STYLE = {"good": "bold green", "bad": "bold red", "partial": "bold yellow", "unknown": "bold yellow"}  # by tone
OPS_TITLE = "Framework ops (NVTX or profiler ranges): which ran on tensor cores, in which precision"
SCOPES_TITLE = "Outer ranges (layers / modules)"


def lead(s: Shown) -> list[RenderableType]:
    """The headline lines, the verdict coloured by its tone, the scope, the hints."""
    report = s.report
    parts: list[RenderableType] = [Text(line, style="bold red") for line in report.headline]
    parts.append(Text(report.verdict.message, style=VERDICT_STYLE[report.tone]))
    if report.scope:
        parts.append(Text(scope_text(report.scope) or "", style="bold"))
    parts += [Text(f"  • {hint}") for hint in report.hints]
    return parts


def split(s: Shown) -> list[RenderableType]:
    return [_split(s.report)] if s.report.kernels or s.report.split else []


def over_time(s: Shown) -> list[RenderableType]:
    series = s.report.series
    if series and len(series.rows) > 1:
        return _over_time(series, s.view.width, s.view.per_step)
    if not s.view.per_step:
        return []
    if series and series.rows:  # one step: its row, no sparkline
        return [Text(f"Over time: {_steps.what(series)}", style="bold"), _step_table(series, s.view.width)]
    return [Text(_steps.none_line(s.report), style="bold")]  # asked for rows: why there are none


def devices(s: Shown) -> list[RenderableType]:
    v = s.view
    return [_groups(s.report.devices, "Per device", "device", v.width, v.wide)] if s.report.devices else []


def ranks(s: Shown) -> list[RenderableType]:
    return _ranks.console(s.report.ranks, s.view.width, s.view.wide) if s.report.ranks else []


def processes(s: Shown) -> list[RenderableType]:
    r, v = s.report, s.view
    if len(r.processes) > 1 and not _ranks.folds_processes(r):
        return [_groups(r.processes, "Per process", "pid", v.width, v.wide)]
    return []


def hardware(s: Shown) -> list[RenderableType]:
    return [_hardware(s.report, s.view.wide)] if s.report.hardware else []


def kernels(s: Shown) -> list[RenderableType]:
    r, v = s.report, s.view
    if not r.kernels:
        return []
    shown = list(r.kernels[:v.limit])
    return [kernel_table(shown, v.wide, f"Top {len(shown)} of {len(r.kernels)} kernels by GPU time", v.width)]


def ops(s: Shown) -> list[RenderableType]:
    v = s.view
    return [_op_table(s.report.ops, OPS_TITLE, v.limit, v.width, v.wide)] if s.report.ops else []


def scopes(s: Shown) -> list[RenderableType]:
    v, rows = s.view, s.report.scopes
    if not rows:
        return []
    lone = lone_scope([o.op for o in rows], rows[0].kernels, rows[0].launches, _ns(rows[0].total_ns), v.wide)
    if lone is not None:
        return [Text(SCOPES_TITLE, style="bold") + Text(f"\n  {lone}")]
    return [_op_table(rows, SCOPES_TITLE, v.limit, v.width, v.wide)]


def disagreements(s: Shown) -> list[RenderableType]:
    r, v = s.report, s.view
    if not r.disagreements:
        return []
    return [kernel_table(list(r.disagreements), v.wide, "Counters disagree with the name rules", v.width)]


def health(s: Shown) -> list[RenderableType]:
    h = s.report.health
    if not h:
        return []
    style = "green" if h.status == "healthy" else "bold red" if h.status != "unknown" else "yellow"
    text = Text(f"Training health: {h.status} ({h.counted})", style=style)
    for finding in h.findings:
        text.append(f"\n  {finding}", style="")
    if h.numerics is not None:
        for line in _numerics.lines(serialise.to_json(h.numerics)):
            text.append(f"\n  {line}", style="")
    return [text]


def sources(s: Shown) -> list[RenderableType]:
    return [_sources(s.report)]


def _bar(share: float, width: int = 20) -> str:
    n = round(share * width)
    return "█" * n + "·" * (width - n)


def _split(report: Report) -> Table:
    t = Table(title="Where GPU time went", title_justify="left", show_edge=False, pad_edge=False, **_caption("split"))
    cols: tuple[tuple[str, JustifyMethod], ...] = (("", "left"), ("time", "right"), ("share", "right"),
                                                   ("count", "right"), ("", "left"))
    for col, j in cols:
        t.add_column(col, justify=j)
    for s in report.split:
        t.add_row(split_label(s), _ns(s.total_ns), _pct(s.share), f"{s.count:,}", _bar(s.share))
    return t


def _caption(table: str) -> dict[str, Any]:
    return {"caption": BASES[table], "caption_justify": "left", "caption_style": "dim"}


def _groups(rows: tuple[GroupRow, ...], title: str, key: str, width: int = 120, wide: bool = False) -> Table:
    """Per device / per process, fitted to the width (renderers/_fit.py): numbers and the GPU's name whole when
    there is room; the precision mix is cut first (it stays whole in JSON)."""
    cols = [Col(key, justify="left"), Col("", justify="left", cut=12, drop=1), Col("launches"),
            Col("kernel time", short="kernel"), Col("tensor core", short="TC"),
            Col("TC precision", short="TC prec.", justify="left", cut=8, drop=2), Col("GPU idle", short="idle")]
    cells = [[shown_key(g.key), g.label, f"{g.launches:,}", _ns(g.kernel_ns), _pct(g.tc_share),
              " + ".join(g.precisions) or "-", _pct(g.idle_share)] for g in rows]
    return fitted(cols, cells, width, wide, title=title, title_justify="left", **_caption("groups"))


def kernel_table(rows: list[KernelRow], wide: bool = False, title: str = "Kernels", width: int = 120) -> Table:
    """The kernels fitted to ``width``: the verdict (TC), the precision and the evidence that decided (``why``) stay
    at any width down to 80 columns and below; the other columns give way in a fixed order — mean first (under 140
    columns), then launches, then the total — and numbers are never cut. A reason too long for its column is shown by
    its deciding part (``deciding``: "'ffma' in the name", "counters: 0 MMA"); --wide, JSON and CSV keep it whole."""
    # rich squeezes no_wrap columns to nothing when a table is too wide: give every column a width.
    # Number columns are as wide as their widest value (never cut); the precision column as its longest value.
    prec_w = max([9] + [len(k.precision or "-") for k in rows])
    fixed = {"launches": max([8] + [len(f"{k.launches:,}") for k in rows]), "total": 8, "mean": 8, "% time": 6,
             "TC": 3, "precision": min(prec_w, 14)}
    if width < 140:  # mean = total / launches: the first column to go when names need the room
        del fixed["mean"]
    heads = {col: col for col in fixed}
    for col, least in (("launches", 40), ("total", 34)):  # then these, while the name and the reason lack room
        if _room(fixed, width) < least:
            del fixed[col]
    room = _room(fixed, width)
    if room < 28:  # the narrowest terminals: short headers, and the reason shown by its deciding part only
        heads["% time"], heads["precision"] = "%", "prec."
    whole = [_counter_why(k) if k.evidence != "name" else k.reason for k in rows]
    parts = [deciding(k) for k in rows]
    if "launches" in fixed and room >= 40:  # room for a name of 24 or more and a reason beside it
        name_w = min(62, max(24, int(room * 0.6)))
    else:  # the name and the deciding part share what is left, the reason's part up to 45% of it
        why_w = min(max([3] + [len(p) for p in parts]), max(12, round(room * 0.45)))
        name_w = max(8, room - why_w)
    why_w = max(3, room - name_w)
    whys = [full if wide or len(full) <= why_w else part for full, part in zip(whole, parts)]
    caption = _caption("kernels")
    if whys != whole:
        caption["caption"] += " · why: what decided (whole: --wide)"
    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, show_lines=wide, **caption)
    t.add_column("kernel", overflow="fold" if wide else "ellipsis", no_wrap=not wide, width=name_w)
    for col, w in fixed.items():
        t.add_column(heads[col], justify="center" if col == "TC" else "left" if col == "precision" else "right",
                     no_wrap=True, width=w)
    t.add_column("why", overflow="fold" if wide else "ellipsis", no_wrap=not wide, width=why_w)
    names = [k.name for k in rows] if wide else shorten_all([k.name for k in rows], name_w)
    for k, name, why in zip(rows, names, whys):
        cells: dict[str, str | Text] = {
            "launches": f"{k.launches:,}", "total": _ns(k.total_ns), "mean": _ns(k.mean_ns), "% time": _pct(k.share),
            "TC": TC_MARK[k.tensor_core], "precision": k.precision or "-"}
        t.add_row(escape(name), *(cells[col] for col in fixed), escape(why))
    return t


def _room(fixed: dict[str, int], width: int) -> int:
    """What the name and the reason have between them: the width less the fixed columns and the rules between all."""
    return width - sum(fixed.values()) - 3 * (len(fixed) + 1)


_CUT_AT = re.compile(r": | \(|; | — | over ")
_PIPES = re.compile(r"tensor pipes ([\d.]+%)")
_MMA = re.compile(r"(no|[\d,]+) matrix instructions?")


def deciding(k: KernelRow) -> str:
    """The part of a kernel's reason that decided its verdict, for a column too narrow for the whole reason: the
    reason up to its first explanation ("'ffma' in the name", "SIMT kernel", "cuBLAS nvjet GEMM for Hopper"), or the
    measurement's figure ("counters: 8.4M MMA", "counters: 0 MMA", "HW: tensor 76.6%")."""
    if k.evidence == "name" or not k.counter_detail:
        return _CUT_AT.split(k.reason, maxsplit=1)[0]
    detail = k.counter_detail
    label = {"counters": "counters", "compiled code": "compiled code", "hardware": "hardware"}.get(k.evidence, "")
    busy = _PIPES.search(detail) if k.evidence == "hardware" else None
    if busy:  # "nsys gpu metrics: tensor pipes 76.6% active over …": the figure; its source in --wide / JSON
        return f"HW: tensor {busy[1]}"
    head = _CUT_AT.split(detail, maxsplit=1)[0]
    head = _MMA.sub(lambda m: f"{'0' if m[1] == 'no' else _compact(m[1])} MMA", head)
    return f"{label}: {head}" if label else head


def _compact(number: str) -> str:
    """'8,388,608' → '8.4M', '786,432' → '786k', '512' → '512'."""
    n = int(number.replace(",", ""))
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            x = n / div
            return f"{x:.1f}{unit}" if x < 10 else f"{x:.0f}{unit}"
    return str(n)


def op_col(head: str, most: int) -> Col:
    """An op / range name column: framework wrappers dropped, cut in the middle, no two rows alike (text/names.py)."""
    return Col(head, justify="left", cut=12, most=most, names=shorten_ops, measure=inner)


def _op_table(rows: tuple[OpRow, ...], title: str, limit: int, width: int = 120, wide: bool = False) -> Table:
    cols = [op_col("op / range", 48), Col("kernels", short="k", drop=1),
            Col("launches", short="n"),
            Col("GPU time", short="time"), Col("% time", short="%"), Col("tensor core", short="TC"),
            Col("precision of its kernels", short="precisions", justify="left", cut=10, drop=2)]
    shown = numbered_merged(rows)[:limit]
    hw = any(o.hw_tensor is not None for o in shown)  # the hardware's column only where it was sampled
    if hw:
        cols.insert(6, Col("tensor pipes (hardware)", short="HW", drop=3))
    cells = [[o.op, str(o.kernels), f"{o.launches:,}", _ns(o.total_ns), _pct(o.share), _pct(o.tc_share),
              *([_hw(o.hw_tensor)] if hw else []), mix_text(o.precisions)] for o in shown]
    return fitted(cols, cells, width, wide, title=title, title_justify="left", **_caption("ops"))


def _hw(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}%"


def _hardware(report: Report, wide: bool = False) -> Text:
    """The hardware's own tensor-pipe activity per device, and the kernels whose samples contradict their name."""
    t = Text("Hardware: tensor-pipe activity sampled during the run (% of SM time)", style="bold")
    for h in report.hardware:
        t.append(f"\n  {hardware_text(h)}", style="")
    for c in report.hardware_checks:
        name = c.name if wide else shorten_all([c.name], 70)[0]
        t.append(f"\n  ⚠ {name}: {c.message} ({c.samples:,} samples)", style="yellow")
    return t


def _counter_why(k: KernelRow) -> str:
    if k.evidence == "compiled code":
        return f"compiled code: {k.counter_detail}"
    if k.evidence == "device":
        return k.reason
    if k.evidence == "hardware":
        return k.counter_detail or k.reason
    return f"measured by counters: {k.counter_detail}"


def _over_time(series: Series, width: int, per_step: bool) -> list[RenderableType]:
    """The series: a sparkline of step times and the median step's breakdown; --per-step: one row per step."""
    head = f"Over time: {_steps.what(series)}, step time "
    spark = _steps.sparkline(series.rows, max(10, width - len(head) - 1))
    out: list[RenderableType] = [Text(head + spark, style="bold")]
    line = _steps.steady_line(series)
    if line:
        out.append(Text(line))
    if series.notes:
        out.append(Text("  " + "; ".join(series.notes), style="dim"))
    if per_step:
        out.append(_step_table(series, width))
        if note := _steps.processes_note(series):
            out.append(Text(note, style="dim"))
    return out


# --per-step's columns fitted to the width (renderers/_fit.py): the step, its time, GPU busy, kernels and tensor-core
# share always; the host's parts and the rarer GPU parts go first, in this order (highest first), and no number is cut.
STEP_DROP = {"allocs": 7, "comm": 6, "other calls": 5, "copies": 4, "copies+waits": 3, "launch calls": 2,
             "outside CUDA": 1}
STEP_SHORT = {"GPU busy": "busy", "tensor core": "TC", "launch calls": "launch", "copies+waits": "waits",
              "other calls": "other", "outside CUDA": "outside"}


def _step_table(series: Series, width: int) -> Table:
    cols = [Col(c, short=STEP_SHORT.get(c, ""), justify="left" if i == 0 else "right", drop=STEP_DROP.get(c, 0))
            for i, c in enumerate(_steps.COLUMNS)]
    return fitted(cols, [list(r) for r in _steps.table_rows(series)], width)


def _sources(report: Report) -> Text:
    fmts: dict[str, int] = {}
    for s in report.sources:
        fmts[s.format] = fmts.get(s.format, 0) + 1
    t = Text(f"Read {len(report.sources)} capture(s): " + ", ".join(f"{n} {f}" for f, n in fmts.items())
             if report.sources else "No capture read: no profiler ran", style="dim")
    for s in report.sources:
        for note in s.notes:
            t.append(f"\nnote: {s.path}: {note}", style="dim")
    shown, more = skipped_summary(report.skipped)
    for path, why in shown:
        t.append(f"\nskipped {path}: {why}", style="yellow")
    if more:
        t.append(f"\n{more}", style="yellow")
    return t
