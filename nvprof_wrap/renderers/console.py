"""Terminal output with rich: the verdict first, then where GPU time went, per device and process,
then the top kernels. Renders to a string; the CLI decides where it goes."""
from __future__ import annotations

import io

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from nvprof_wrap.renderers import _compare, _doctor, _experiment, _ranks, _steps
from nvprof_wrap.renderers._fit import Col
from nvprof_wrap.renderers._fit import table as fitted
from nvprof_wrap.renderers._options import Options
from nvprof_wrap.renderers._rows import (
    BASES,
    mix_text,
    numbered_merged,
    one_after_another,
    shown_key,
    skipped_summary,
    split_label,
)
from nvprof_wrap.report import GroupRow, KernelRow, Report
from nvprof_wrap.report.compare import Comparison
from nvprof_wrap.report.headline import hardware_text, scope_text
from nvprof_wrap.report.kinds import Classifications, Doctor, Experiment, Kernels, Reports, Runs
from nvprof_wrap.text.names import inner, shorten_all, shorten_ops
from nvprof_wrap.text.sanitize import clean_lines, deep
from nvprof_wrap.text.units import duration as _ns
from nvprof_wrap.text.units import pct as _pct

NAME = "table"
EXTENSION = ".txt"
TC_MARK = {"yes": Text("✓", style="bold green"), "no": Text("✗", style="red"), "unknown": Text("?", style="yellow")}
VERDICT_STYLE = {"good": "bold green", "bad": "bold red", "partial": "bold yellow", "unknown": "bold yellow"}  # by tone


def _to_text(renderable, width: int, color: bool) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system="auto" if color else None, force_terminal=color,
                      no_color=not color, highlight=False, soft_wrap=False)
    console.print(renderable)
    return buf.getvalue()


def _bar(share: float, width: int = 20) -> str:
    n = round(share * width)
    return "█" * n + "·" * (width - n)


def _split(report: Report) -> Table:
    t = Table(title="Where GPU time went", title_justify="left", show_edge=False, pad_edge=False, **_caption("split"))
    for col, j in (("", "left"), ("time", "right"), ("share", "right"), ("count", "right"), ("", "left")):
        t.add_column(col, justify=j)
    for s in report.split:
        t.add_row(split_label(s), _ns(s.total_ns), _pct(s.share), f"{s.count:,}", _bar(s.share))
    return t


def _caption(table: str) -> dict:
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


def _kernel_table(rows: list[KernelRow], wide: bool = False, title: str = "Kernels", width: int = 120) -> Table:
    # rich squeezes no_wrap columns to nothing when a table is too wide: give every column a width.
    # Number columns are as wide as their widest value (never cut); the precision column as its longest value.
    prec_w = max([9] + [len(k.precision or "-") for k in rows])
    fixed = {"launches": max([8] + [len(f"{k.launches:,}") for k in rows]), "total": 8, "mean": 8, "% time": 6,
             "TC": 3, "precision": min(prec_w, 14)}
    if width < 140:  # mean = total / launches: the first column to go when names need the room
        del fixed["mean"]
    heads = {col: col for col in fixed}
    room = width - sum(fixed.values()) - 3 * (len(fixed) + 1)
    show_why = room >= 40  # on a narrow terminal the reason goes (it stays in --wide, JSON, CSV)
    if not show_why:
        room = room + 3
        if room < 24:  # narrower still: short headers, then the precision goes — numbers are never cut
            heads["launches"], heads["% time"] = "n", "%"
            fixed["launches"] = max([1] + [len(f"{k.launches:,}") for k in rows])
            room = width - sum(fixed.values()) - 3 * len(fixed)
        if room < 16:
            del fixed["precision"]
            room = width - sum(fixed.values()) - 3 * len(fixed)
        room = max(room, 12)
    name_w = min(62, max(24, int(room * 0.6))) if show_why else room
    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, show_lines=wide,
              **_caption("kernels"))
    t.add_column("kernel", overflow="fold" if wide else "ellipsis", no_wrap=not wide, width=name_w)
    for col, w in fixed.items():
        t.add_column(heads[col], justify="center" if col == "TC" else "left" if col == "precision" else "right",
                     no_wrap=True, width=w)
    if show_why:
        t.add_column("why", overflow="fold" if wide else "ellipsis", no_wrap=not wide, width=room - name_w)
    names = [k.name for k in rows] if wide else shorten_all([k.name for k in rows], name_w)
    for k, name in zip(rows, names):
        why = [escape(_counter_why(k) if k.evidence != "name" else k.reason)] if show_why else []
        mean = [_ns(k.mean_ns)] if "mean" in fixed else []
        prec = [k.precision or "-"] if "precision" in fixed else []
        t.add_row(escape(name), f"{k.launches:,}", _ns(k.total_ns),
                  *mean, _pct(k.share), TC_MARK[k.tensor_core], *prec, *why)
    return t


def _op_col(head: str, most: int) -> Col:
    """An op / range name column: framework wrappers dropped, cut in the middle, no two rows alike (text/names.py)."""
    return Col(head, justify="left", cut=12, most=most, names=shorten_ops, measure=inner)


def _op_table(rows, title: str, limit: int, width: int = 120, wide: bool = False) -> Table:
    cols = [_op_col("op / range", 48), Col("kernels", short="k", drop=1),
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


def render(subject, options: Options) -> str:
    """The subject as terminal text, ``options.width`` columns wide."""
    o = options
    match subject:
        case Report():
            return _report(subject, o.width, o.color, o.wide, o.limit or 15, o.per_step)
        case Comparison():
            return _comparison(subject, o.width, o.color, o.limit or 15, o.wide)
        case Kernels():
            return _kernels(list(subject.rows), o.width, o.color, o.wide)
        case Classifications():
            return _classifications(list(subject.items), o.width, o.color)
        case Experiment():
            return _experiment.as_table(list(subject.rows), o.width, o.color)
        case Doctor():
            return clean_lines("\n".join(_doctor.lines(subject.facts))) + "\n"  # paths, versions: the machine's text
        case Runs():
            return _runs(list(subject.rows), o.width, o.color)
        case Reports():
            return one_after_another(subject, lambda r: render(r, o))
    raise TypeError(f"the table renderer has no form for {type(subject).__name__}")


def _report(report: Report, width: int, color: bool, wide: bool, limit: int, per_step: bool = False) -> str:
    report = deep(report)  # no control character from a capture reaches the terminal (sanitize.py)
    v = report.verdict
    parts: list = [Text(line, style="bold red") for line in report.headline]
    parts.append(Text(v.message, style=VERDICT_STYLE[report.tone]))
    if report.scope:
        parts.append(Text(scope_text(report.scope), style="bold"))
    for hint in report.hints:
        parts.append(Text(f"  • {hint}"))
    parts.append(Text(""))
    if report.kernels or report.split:
        parts += [_split(report), Text("")]
    if report.series and len(report.series.rows) > 1:
        parts += [*_over_time(report, width, per_step), Text("")]
    if report.devices:
        parts += [_groups(report.devices, "Per device", "device", width, wide), Text("")]
    if report.ranks:
        parts += [*_ranks.console(report.ranks, width, wide), Text("")]
    if len(report.processes) > 1 and not _ranks.folds_processes(report):
        parts += [_groups(report.processes, "Per process", "pid", width, wide), Text("")]
    if report.hardware:
        parts += [_hardware(report, wide), Text("")]
    if report.kernels:
        shown = list(report.kernels[:limit])
        title = f"Top {len(shown)} of {len(report.kernels)} kernels by GPU time"
        parts += [_kernel_table(shown, wide, title, width), Text("")]
    if report.ops:
        parts += [_op_table(report.ops,
                            "Framework ops (NVTX or profiler ranges): which ran on tensor cores, in which precision",
                            limit, width, wide), Text("")]
    if report.scopes:
        parts += [_op_table(report.scopes, "Outer ranges (layers / modules)", limit, width, wide), Text("")]
    if report.disagreements:
        parts += [_kernel_table(list(report.disagreements), wide, "Counters disagree with the name rules", width),
                  Text("")]
    health = report.health
    if health:
        style = "green" if health.status == "healthy" else "bold red" if health.status != "unknown" else "yellow"
        text = Text(f"Training health: {health.status} ({health.counted})", style=style)
        for finding in health.findings:
            text.append(f"\n  {finding}", style="")
        parts += [text, Text("")]
    parts.append(_sources(report))
    return _to_text(Group(*parts), width, color)


def _over_time(report: Report, width: int, per_step: bool) -> list:
    """The series: a sparkline of step times and the median step's breakdown; --per-step: one row per step."""
    series = report.series
    head = f"Over time: {_steps.what(series)}, step time "
    spark = _steps.sparkline(series.rows, max(10, width - len(head) - 1))
    out: list = [Text(head + spark, style="bold")]
    line = _steps.steady_line(series)
    if line:
        out.append(Text(line))
    if series.notes:
        out.append(Text("  " + "; ".join(series.notes), style="dim"))
    if per_step:
        t = Table(show_edge=False, pad_edge=False, box=None)
        for i, col in enumerate(_steps.COLUMNS):
            t.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
        for row in _steps.table_rows(series):
            t.add_row(*row)
        out.append(t)
    return out


def _sources(report: Report) -> Text:
    fmts: dict[str, int] = {}
    for s in report.sources:
        fmts[s.format] = fmts.get(s.format, 0) + 1
    t = Text(f"Read {len(report.sources)} capture(s): " + ", ".join(f"{n} {f}" for f, n in fmts.items()), style="dim")
    for s in report.sources:
        for note in s.notes:
            t.append(f"\nnote: {s.path}: {note}", style="dim")
    shown, more = skipped_summary(report.skipped)
    for path, why in shown:
        t.append(f"\nskipped {path}: {why}", style="yellow")
    if more:
        t.append(f"\n{more}", style="yellow")
    return t


def _kernels(rows: list[KernelRow], width: int, color: bool, wide: bool) -> str:
    rows = deep(rows)
    return _to_text(_kernel_table(rows, wide, f"{len(rows)} kernels", width), width, color)


def _classifications(items: list, width: int, color: bool) -> str:
    items = deep(items)
    t = Table(show_edge=False, pad_edge=False)
    for col in ("kernel", "TC", "precision", "family", "reason"):
        t.add_column(col, overflow="fold")
    for c in items:
        t.add_row(escape(c.name), TC_MARK[c.tensor_core], c.precision or "-", c.family, escape(c.reason))
    return _to_text(t, width, color)


def _comparison(comparison, width: int, color: bool, limit: int, wide: bool = False) -> str:
    comparison = deep(comparison)
    parts: list = [Text(line) for line in _compare.headline(comparison)]
    parts += [Text(f, style="bold" if i == 0 else "") for i, f in enumerate(comparison.findings)]
    for key, what in _compare.TABLES:
        rows = getattr(comparison, key)
        if not rows:
            continue
        name = _op_col(what, 60) if key == "ops" else Col(what, justify="left", cut=12, most=60)
        cols = [name, *(Col(h, short=short, drop=drop) for h, short, drop in
                (("before", "", 0), ("after", "", 0), ("Δ time", "Δ", 0), ("before %", "b %", 1), ("after %", "a %", 1),
                 ("TC before", "TC b", 2), ("TC after", "TC a", 0)))]
        parts += [Text(""), fitted(cols, [_compare.cells(r) for r in rows[:limit]], width, wide,
                                   title=_compare.title(key, what), title_justify="left")]
    return _to_text(Group(*parts), width, color)


def _runs(rows: list[dict], width: int, color: bool) -> str:
    """The run history; on a narrow terminal the command, backend and precisions go first (they stay in
    --format json/csv)."""
    rows = deep(rows)
    cols = [Col("name", justify="left", cut=10, most=32), Col("recorded", justify="left", drop=2),
            Col("command", justify="left", cut=12, most=60, drop=5), Col("backend", justify="left", drop=4),
            Col("exit"), Col("TC?", justify="left"), Col("TC share", short="TC %"),
            Col("TC precisions", short="precisions", justify="left", cut=8, most=32, drop=3),
            Col("health", justify="left", cut=7)]
    return _to_text(fitted(cols, [_compare.run_cells(r) for r in rows], width,
                           title=f"{len(rows)} recorded runs (newest first)", title_justify="left"), width, color)
