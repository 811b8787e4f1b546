"""The ranks of a distributed run, in words and tables every renderer shares (report/ranks.py has the numbers).

Up to ALL_ROWS ranks: one row each. More: the spread across ranks (median, lowest, highest and whose) — 256 rows
help nobody in a terminal; JSON and CSV (--table ranks) keep every rank. The ranks that stand out follow, named.
"""
from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from nvprof_wrap.renderers._fit import Col
from nvprof_wrap.renderers._fit import table as fitted
from nvprof_wrap.report import Report
from nvprof_wrap.report.ranks import (
    MIN_RANKS,
    OUTLIER_RATIO,
    OUTLIER_SHARE,
    WORDS,
    RankOutlier,
    RankRow,
    Ranks,
    RankSpread,
)
from nvprof_wrap.text.units import duration, pct

ALL_ROWS = 16  # ranks shown one row each; more: the spread
SHOWN_OUTLIERS = 10  # outlier lines in the terminal (all in JSON)
ROW_HEADS = ("rank", "launches", "kernel time", "tensor core", "TC precision", "communication", "GPU idle",
             "median step")


def title(ranks: Ranks) -> str:
    return f"Per rank ({len(ranks.rows)} ranks)" if len(ranks.rows) <= ALL_ROWS else \
        f"Across {len(ranks.rows)} ranks (every rank: --format json or --format csv --table ranks)"


def folds_processes(report: Report) -> bool:
    """The per-process table goes where the rank table already says it for many processes."""
    return report.ranks is not None and len(report.processes) > ALL_ROWS


def from_dict(d: dict[str, Any]) -> Ranks | None:
    """The ranks of a report in its JSON shape (renderers that work from it: HTML)."""
    if not d.get("ranks"):
        return None
    rows = tuple(RankRow(r["rank"], r["processes"], r["launches"], r["kernel_ns"], r["tensor_core_ns"],
                         r["tensor_core_share"], tuple(p for p in r["tensor_core_precisions"].split(" + ") if p), (),
                         r["communication_ns"], r["communication_share"], r["gpu_busy_ns"], r["span_ns"],
                         r["idle_share"], r["steps"], r["median_step_ns"]) for r in d["ranks"])
    return Ranks(rows, tuple(RankSpread(**s) for s in d.get("rank_spread", [])),
                 tuple(RankOutlier(**o) for o in d.get("rank_outliers", [])))


def row_cells(ranks: Ranks) -> list[list[str]]:
    return [[str(r.rank), f"{r.launches:,}", duration(r.kernel_ns), pct(r.tc_share), " + ".join(r.precisions) or "-",
             pct(r.comm_share), pct(r.idle_share), duration(r.step_ns)] for r in ranks.rows]


SPREAD_HEADS = ("measure", "median rank", "lowest", "highest")


def spread_cells(ranks: Ranks) -> list[list[str]]:
    def value(s: RankSpread, v: float) -> str:
        return pct(v) if s.measure.endswith("share") else duration(v)
    return [[WORDS[s.measure], value(s, s.median), f"{value(s, s.low)} (rank {s.low_rank})",
             f"{value(s, s.high)} (rank {s.high_rank})"] for s in ranks.spread]


def outlier_lines(ranks: Ranks, most: int | None = None) -> list[str]:
    """The outliers' messages; or why there is none."""
    if len(ranks.rows) < MIN_RANKS:
        return []
    if not ranks.outliers:
        return [(f"No rank stands out: every rank is within {100 * OUTLIER_SHARE:.0f} points (shares) or "
                 f"{OUTLIER_RATIO:g}x (times) of the median rank, or within its ranks' usual spread.")]
    lines = by_rank(ranks)
    shown = lines[:most] if most else lines
    more = len(lines) - len(shown)
    return shown + ([f"… and {more} more ranks (--format json: rank_outliers)"] if more else [])


def by_rank(ranks: Ranks) -> list[str]:
    """One line per rank that stands out, the worst first: its worst measure's message, then its others in short."""
    first: dict[int, list[Any]] = {}
    for o in ranks.outliers:
        first.setdefault(o.rank, []).append(o)
    out = []
    for found in first.values():
        also = [_short(o) for o in found[1:]]
        out.append(found[0].message + (f"; also {', '.join(also)}" if also else ""))
    return out


def _short(o: RankOutlier) -> str:
    if o.value is None:
        return o.message.split(": ", 1)[-1]
    if o.measure.endswith("share"):
        return f"{WORDS[o.measure]} {100 * o.value:.1f}% (median {100 * (o.median or 0.0):.1f}%)"
    ratio = f", {o.value / o.median:.2f}x" if o.median else ""
    return f"{WORDS[o.measure]} {duration(o.value)} (median {duration(o.median)}{ratio})"


def console(ranks: Ranks, width: int, wide: bool) -> list[Any]:
    if len(ranks.rows) <= ALL_ROWS:
        cols = [Col("rank", justify="left"), Col("launches"), Col("kernel time", short="kernel"),
                Col("tensor core", short="TC"), Col("TC precision", short="TC prec.", justify="left", cut=8, drop=2),
                Col("communication", short="comm."), Col("GPU idle", short="idle"),
                Col("median step", short="step", drop=1)]
        cells = row_cells(ranks)
        if all(r.step_ns is None for r in ranks.rows):  # no rank marked steps: the column says nothing
            cols, cells = cols[:-1], [c[:-1] for c in cells]
        table: Table = fitted(cols, cells, width, wide, title=title(ranks), title_justify="left")
    else:
        cols = [Col(h, justify="left" if i == 0 else "right") for i, h in enumerate(SPREAD_HEADS)]
        table = fitted(cols, spread_cells(ranks), width, wide, title=title(ranks), title_justify="left")
    out: list[Any] = [table]
    lines = outlier_lines(ranks, SHOWN_OUTLIERS)
    if lines:
        style = "yellow" if ranks.outliers else "dim"
        out.append(Text("\n".join(("  ! " if ranks.outliers and not ln.startswith("…") else "  ") + ln
                                  for ln in lines), style=style))
    return out
