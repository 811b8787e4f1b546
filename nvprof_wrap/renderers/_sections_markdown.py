"""Markdown's writing of each section of a report (renderers/_outline.py registers them; markdown.py walks them):
headings, bullet lists and pipe tables, every cell escaped so that a kernel name holding markup, pipes or HTML
renders as inert text. Each returns the section's pieces (joined by newlines), none when it has nothing."""
from __future__ import annotations

import html
from collections.abc import Sequence

from nvprof_wrap.renderers import _numerics, _ranks, _rows, _steps
from nvprof_wrap.renderers._shapes import Shown
from nvprof_wrap.report import GroupRow, KernelRow, OpRow, serialise
from nvprof_wrap.report.headline import hardware_text, scope_text
from nvprof_wrap.text.names import shorten_all, shorten_ops
from nvprof_wrap.text.sanitize import clean

_MD_SPECIAL = "\\`*_{}[]()#+-.!|<>~"
OPS_TITLE = "Framework ops (NVTX or profiler ranges): which ran on tensor cores, in which precision"
SCOPES_TITLE = "Outer ranges (layers / modules)"


def lead(s: Shown) -> list[str]:
    report = s.report
    scope = scope_text(report.scope)
    return [*[f"**{esc(line)}**\n" for line in report.headline], f"**{esc(report.verdict.message)}**\n",
            *([f"_{esc(scope)}_\n"] if scope else []), *[f"- {esc(h)}" for h in report.hints]]


def split(s: Shown) -> list[str]:
    return ["\n## Where GPU time went\n",
            table(["category", "ms", "% of GPU time (kernels, copies, sets)", "count"],
                  [[x["category"], f"{x['total_ns'] / 1e6:.3f}", f"{100 * x['share']:.1f}%", x["count"]]
                   for x in s.data["time_split"]])]


def over_time(s: Shown) -> list[str]:
    """--per-step: one row per step (the median step's line above them), or why there are none; nothing without it
    (the terminal's sparkline has no Markdown form)."""
    if not s.view.per_step:
        return []
    series = s.report.series
    if series is None or not series.rows:
        return ["\n## Over time\n", f"- {esc(_steps.none_line(s.report))}"]
    line = _steps.steady_line(series)
    note = _steps.processes_note(series)
    return [f"\n## Over time: {esc(_steps.what(series))}\n", *([f"- {esc(line)}\n"] if line else []),
            table(list(_steps.COLUMNS), [list(r) for r in _steps.table_rows(series)]),
            *([f"\n{esc(note)}\n"] if note else [])]


def devices(s: Shown) -> list[str]:
    return ["\n## Per device\n", _groups(s.report.devices, "device")] if s.report.devices else []


def ranks(s: Shown) -> list[str]:
    r = s.report.ranks
    if not r:
        return []
    heads, cells = (_ranks.ROW_HEADS, _ranks.row_cells(r)) if len(r.rows) <= _ranks.ALL_ROWS else \
        (_ranks.SPREAD_HEADS, _ranks.spread_cells(r))
    return [f"\n## {_ranks.title(r)}\n", table(list(heads), cells),
            *[f"\n- {esc(line)}" for line in _ranks.outlier_lines(r)]]


def processes(s: Shown) -> list[str]:
    r = s.report
    if len(r.processes) > 1 and not _ranks.folds_processes(r):
        return ["\n## Per process\n", _groups(r.processes, "pid")]
    return []


def hardware(s: Shown) -> list[str]:
    r, wide = s.report, s.view.wide
    if not r.hardware:
        return []
    return ["\n## Hardware: tensor-pipe activity sampled during the run\n",
            *[f"- {esc(hardware_text(h))}" for h in r.hardware],
            *[f"- ⚠ {esc(c.name if wide else shorten_all([c.name], 90)[0])}: {esc(c.message)} "
              f"({c.samples:,} samples)" for c in r.hardware_checks]]


def kernels(s: Shown) -> list[str]:
    r, limit = s.report, s.view.limit
    return [f"\n## Top {min(limit, len(r.kernels))} of {len(r.kernels)} kernels by GPU time\n",
            kernel_rows(list(r.kernels[:limit]), s.view.wide)]


def ops(s: Shown) -> list[str]:
    return _ops(OPS_TITLE, s.report.ops, s) if s.report.ops else []


def scopes(s: Shown) -> list[str]:
    rows = s.report.scopes
    if not rows:
        return []
    lone = _rows.lone_scope([o.op for o in rows], rows[0].kernels, rows[0].launches,
                            f"{rows[0].total_ns / 1e6:.3f} ms", s.view.wide)
    return [f"\n## {SCOPES_TITLE}\n", f"- {esc(lone)}"] if lone is not None else _ops(SCOPES_TITLE, rows, s)


def _ops(title: str, rows: tuple[OpRow, ...], s: Shown) -> list[str]:
    shown = _rows.numbered_merged(rows)[:s.view.limit]
    names = [o.op for o in shown] if s.view.wide else shorten_ops([o.op for o in shown], 60)
    hw = any(o.hw_tensor is not None for o in shown)
    return [f"\n## {title}\n",
            table(["op / range", "kernels", "launches", "ms", "% of kernel time", "tensor core (of its kernel time)",
                   *(["tensor pipes (hardware, % of SM time)"] if hw else []), "precision of its kernels"],
                  [[name, o.kernels, o.launches, f"{o.total_ns / 1e6:.3f}", f"{100 * o.share:.1f}%",
                    f"{100 * o.tc_share:.1f}%",
                    *([("-" if o.hw_tensor is None else f"{o.hw_tensor:.1f}%")] if hw else []),
                    _rows.mix_text(o.precisions)]
                   for o, name in zip(shown, names)])]


def disagreements(s: Shown) -> list[str]:
    r = s.report
    if not r.disagreements:
        return []
    return ["\n## Counters disagree with the name rules\n", kernel_rows(list(r.disagreements), s.view.wide)]


def health(s: Shown) -> list[str]:
    h = s.report.health
    if not h:
        return []
    numerics = _numerics.lines(serialise.to_json(h.numerics)) if h.numerics is not None else []
    return [f"\n**Training health: {esc(h.status)}** ({esc(h.counted)})\n",
            *[f"- {esc(f)}" for f in (*h.findings, *numerics)]]


def sources(s: Shown) -> list[str]:
    report = s.report
    fmts: dict[str, int] = {}
    for src in report.sources:
        fmts[src.format] = fmts.get(src.format, 0) + 1
    out = [f"\n_Read {len(report.sources)} capture(s): {esc(', '.join(f'{n} {f}' for f, n in fmts.items()))}_\n"
           if report.sources else "\n_No capture read: no profiler ran_\n"]
    out += [f"- note: {esc(src.path)}: {esc(note)}" for src in report.sources for note in src.notes]
    if report.skipped:
        shown, more = _rows.skipped_summary(report.skipped)
        out += ["\n## Skipped files\n", table(["file", "why"], [list(x) for x in shown])]
        out += [f"\n{esc(more)}\n"] if more else []
    return out


def esc(text: object) -> str:
    s = html.escape(clean(text), quote=False)  # controls shown escaped; <script> → &lt;script&gt; before markdown
    return "".join("\\" + c if c in _MD_SPECIAL and c not in "<>" else c for c in s)


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def kernel_rows(rows: list[KernelRow], wide: bool) -> str:
    names = [k.name for k in rows] if wide else shorten_all([k.name for k in rows], 90)
    return table(["kernel", "launches", "total ms", "% of kernel time", "tensor core", "precision", "evidence",
                   "reason"],
                  [[name, k.launches, f"{k.total_ns / 1e6:.3f}",
                    f"{100 * k.share:.1f}", k.tensor_core, k.precision or "-", k.evidence, k.reason]
                   for k, name in zip(rows, names)])


def _groups(rows: tuple[GroupRow, ...], key: str) -> str:
    return table([key, "", "launches", "kernel ms", "tensor core (of its kernel time)", "TC precision",
                   "GPU idle (of first kernel start to last kernel end)"],
                  [[_rows.shown_key(g.key), g.label, g.launches, f"{g.kernel_ns / 1e6:.3f}", f"{100 * g.tc_share:.1f}%",
                    " + ".join(g.precisions) or "-", "-" if g.idle_share is None else f"{100 * g.idle_share:.1f}%"]
                   for g in rows])
