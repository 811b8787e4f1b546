"""Per-rank truth of a distributed run: each rank's kernel time, tensor-core share and precisions, GPU idle,
communication share and median step; the spread across ranks; and the ranks that stand out, named with why.

A rank is every process its launcher gave that rank (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK; the
captures, the run's manifest, or the capture's file name say it). Outliers are judged robustly, against the median
rank and the ranks' own spread (the median absolute deviation), so that one straggler among 256 ranks stands out
and ordinary jitter does not; a rank stands out only by a margin that matters on its own (OUTLIER_*).
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from nvprof_wrap.report.fields import js
from nvprof_wrap.store import Store
from nvprof_wrap.text.names import shorten
from nvprof_wrap.text.units import duration as fmt_ns

MIN_RANKS = 3  # fewer: each rank is shown, none called an outlier (two ranks have no majority to differ from)
OUTLIER_SHARE = 0.10  # a share (tensor-core, idle, communication) at least 10 points from the median rank's ...
OUTLIER_RATIO = 1.25  # ... a time (kernel time, median step) at least 1.25x (or at most 1/1.25x) the median's ...
MAD_K = 3.0  # ... and more than 3 scaled median absolute deviations from the median (the ranks' own spread)
_MAD_SCALE = 1.4826  # MAD x this estimates the standard deviation of normally spread values


def joined(precisions: tuple[str, ...]) -> str:
    """'fp16 + bf16'."""
    return " + ".join(precisions)


def mix_text(mix: tuple[tuple[str, float], ...]) -> str:
    """'fp16 78.0% + fp32 22.0%'."""
    return " + ".join(f"{p} {100 * s:.1f}%" for p, s in mix)


@dataclass(frozen=True)
class RankRow:
    """JSON: one flat row (a CSV row, a DataFrame row), docs/json.md "ranks"."""

    rank: int
    processes: int
    launches: int
    kernel_ns: int
    tc_ns: int = field(metadata=js("tensor_core_ns"))
    tc_share: float = field(metadata=js("tensor_core_share", digits=6))  # of the rank's kernel time
    # tensor-core precisions, most time first
    precisions: tuple[str, ...] = field(metadata=js("tensor_core_precisions", convert=joined))
    # (precision, share of the rank's kernel time), all kernels, most first
    mix: tuple[tuple[str, float], ...] = field(metadata=js("precision_mix", convert=mix_text))
    comm_ns: int = field(metadata=js("communication_ns"))
    # of the rank's kernel time: NCCL and other collectives (waiting in them included)
    comm_share: float = field(metadata=js("communication_share", digits=6))
    busy_ns: int | None = field(metadata=js("gpu_busy_ns"))
    span_ns: int | None
    idle_share: float | None = field(metadata=js(digits=6))  # of the span
    steps: int  # steps of its series (0: no steps marked)
    step_ns: int | None = field(metadata=js("median_step_ns"))  # its median step


@dataclass(frozen=True)
class RankSpread:
    """One measure across ranks: the median rank's value, the lowest and highest and whose."""

    measure: str  # "tc_share" | "idle_share" | "comm_share" | "kernel_ns" | "step_ns"
    median: float
    low: float
    low_rank: int
    high: float
    high_rank: int


@dataclass(frozen=True)
class RankOutlier:
    rank: int
    measure: str  # as RankSpread's, or "precision"
    value: float | None
    median: float | None
    message: str  # "rank 37: tensor-core share 2.0% vs median 41.0% — …"


@dataclass(frozen=True)
class Ranks:
    """JSON: the report's "ranks", "rank_spread" and "rank_outliers" (Report.ranks is flattened)."""

    rows: tuple[RankRow, ...] = field(metadata=js("ranks"))
    spread: tuple[RankSpread, ...] = field(metadata=js("rank_spread"))
    outliers: tuple[RankOutlier, ...] = field(metadata=js("rank_outliers"))


MEASURES = ("tc_share", "idle_share", "comm_share", "kernel_ns", "step_ns")
_SHARES = ("tc_share", "idle_share", "comm_share")
WORDS = {  # each measure in words (every renderer's too)
    "tc_share": "tensor-core share", "idle_share": "GPU idle", "comm_share": "communication",
    "kernel_ns": "kernel time", "step_ns": "median step"}


def build(store: Store, communication: Iterable[str]) -> Ranks | None:
    """The ranks of the store's processes; None when fewer than two ranks are known."""
    communication = tuple(communication)
    store.index_ranks()
    base = store.rank_rows(communication)
    if len(base) < 2:
        return None
    mix: dict[int, dict[str, int]] = {}
    tc_prec: dict[int, list[str]] = {}
    for r in store.rank_precisions():
        mix.setdefault(r["rank"], {}).setdefault(r["precision"], 0)
        mix[r["rank"]][r["precision"]] += r["ns"]
        if r["tensor_core"] == "yes" and r["precision"] != "unstated" and r["precision"] not in tc_prec.get(
                r["rank"], []):
            tc_prec.setdefault(r["rank"], []).append(r["precision"])
    act = store.rank_activity()
    steps: dict[int, list[int]] = {}
    for r in store.rank_step_times():
        steps.setdefault(r["rank"], []).append(r["ns"])
    rows = []
    for r in base:
        rank, ns = r["rank"], r["ns"]
        a = act.get(rank)
        busy, span = (min(a["busy"], a["span"]), a["span"]) if a and a["span"] else (None, None)
        m = mix.get(rank, {})
        own = steps.get(rank, [])
        rows.append(RankRow(rank, r["processes"], r["launches"], ns, r["tc_ns"], r["tc_ns"] / ns if ns else 0.0,
                            tuple(tc_prec.get(rank, ())),
                            tuple((p, t / ns) for p, t in sorted(m.items(), key=lambda kv: (-kv[1], kv[0])) if ns),
                            r["comm_ns"], r["comm_ns"] / ns if ns else 0.0, busy, span,
                            1 - busy / span if span else None, len(own),
                            int(statistics.median(own)) if own else None))
    rows_t = tuple(rows)
    spread = tuple(s for s in (_spread(rows_t, m) for m in MEASURES) if s is not None)
    return Ranks(rows_t, spread, outliers(rows_t, spread, store, communication))


def _spread(rows: tuple[RankRow, ...], measure: str) -> RankSpread | None:
    have = [(getattr(r, measure), r.rank) for r in rows if getattr(r, measure) is not None]
    if len(have) < 2:
        return None
    low, high = min(have), max(have, key=lambda vr: (vr[0], -vr[1]))
    return RankSpread(measure, statistics.median(v for v, _ in have), low[0], low[1], high[0], high[1])


def outliers(rows: tuple[RankRow, ...], spread: tuple[RankSpread, ...], store: Store | None = None,
             communication: tuple[str, ...] = ()) -> tuple[RankOutlier, ...]:
    """The ranks that stand out, the farthest past its margin first. Needs MIN_RANKS ranks. store and
    communication (the communication families) name each one's biggest kernel off tensor cores."""
    if len(rows) < MIN_RANKS:
        return ()
    found: list[tuple[float, RankOutlier]] = []
    for s in spread:
        values = [getattr(r, s.measure) for r in rows if getattr(r, s.measure) is not None]
        mad = _MAD_SCALE * statistics.median(abs(v - s.median) for v in values)
        for r in rows:
            v = getattr(r, s.measure)
            if v is None or not _stands_out(s.measure, v, s.median, mad):
                continue
            found.append((_how_far(s.measure, v, s.median),
                          RankOutlier(r.rank, s.measure, v, s.median, _message(r, s, rows, store, communication))))
    found += [(1.0, o) for o in _precision_outliers(rows)]
    found.sort(key=lambda fo: (-fo[0], fo[1].rank, fo[1].measure))
    return tuple(o for _, o in found)


def _how_far(measure: str, v: float, median: float) -> float:
    """How far past its margin a value is (1: at the margin), to put the worst outliers first."""
    if measure in _SHARES:
        return abs(v - median) / OUTLIER_SHARE
    if median <= 0:
        return float("inf")
    ratio = v / median if v >= median else median / max(v, 1e-9)
    return (ratio - 1) / (OUTLIER_RATIO - 1)


def _stands_out(measure: str, v: float, median: float, mad: float) -> bool:
    if abs(v - median) <= MAD_K * mad:
        return False
    if measure in _SHARES:
        return abs(v - median) >= OUTLIER_SHARE
    if median <= 0:
        return v > 0
    return v >= median * OUTLIER_RATIO or v <= median / OUTLIER_RATIO


def _message(r: RankRow, s: RankSpread, rows: tuple[RankRow, ...], store: Store | None,
             communication: tuple[str, ...]) -> str:
    v = getattr(r, s.measure)
    word = WORDS[s.measure]
    if s.measure in _SHARES:
        head = f"rank {r.rank}: {word} {100 * v:.1f}% vs median {100 * s.median:.1f}%"
    else:
        head = f"rank {r.rank}: {word} {fmt_ns(int(v))} vs median {fmt_ns(int(s.median))} ({v / s.median:.2f}x)" \
            if s.median else f"rank {r.rank}: {word} {fmt_ns(int(v))} vs median 0"
    return head + _why(r, s, rows, store, communication)


def _why(r: RankRow, s: RankSpread, rows: tuple[RankRow, ...], store: Store | None,
         communication: tuple[str, ...]) -> str:
    """What the rank's own numbers say beside the one that stands out."""
    if s.measure == "tc_share" and r.tc_share < s.median:
        typical = _typical_mix(rows)
        top = r.mix[0] if r.mix else None
        text = ""
        if top:
            text = f" — {top[0]} {100 * top[1]:.0f}% of its kernel time"
            if typical and typical[0] != top[0]:
                text += f" (the other ranks: mostly {typical[0]})"
        k = store.rank_top_kernel(r.rank, "no", communication) if store is not None else None
        if k:
            text += f"; its biggest kernel off tensor cores: {shorten(k['name'], 60)} ({k['precision'] or 'unstated'})"
        comm = statistics.median(x.comm_share for x in rows)
        if r.comm_share - comm >= OUTLIER_SHARE:
            text += f"; its communication took {100 * r.comm_share:.1f}% of its kernel time (median {100 * comm:.1f}%)"
        return text
    if s.measure == "comm_share":
        return " — its collectives took longer than the other ranks' (a slow link or NIC on its node; time in a " \
               "collective includes waiting for the slowest rank)" if r.comm_share > s.median else \
               " — it waits less in collectives than the others: they may be waiting for it"
    if s.measure == "idle_share" and r.idle_share is not None and r.idle_share > s.median:
        return " — its GPU waited on its host (data loading, Python, a slow node)"
    return ""


def _typical_mix(rows: tuple[RankRow, ...]) -> tuple[str, float] | None:
    """The precision with the most kernel time on most ranks."""
    tops = [r.mix[0][0] for r in rows if r.mix]
    if not tops:
        return None
    best = max(set(tops), key=lambda p: (tops.count(p), p))
    return best, tops.count(best) / len(tops)


def _precision_outliers(rows: tuple[RankRow, ...]) -> list[RankOutlier]:
    """Ranks whose main tensor-core precision is not the one most ranks ran (fp16 where the others ran bf16)."""
    mains = [r.precisions[0] for r in rows if r.precisions]
    if len(mains) < MIN_RANKS:
        return []
    common = max(set(mains), key=lambda p: (mains.count(p), p))
    if mains.count(common) <= len(mains) / 2:
        return []
    return [RankOutlier(r.rank, "precision", None, None,
                        f"rank {r.rank}: its tensor-core kernels ran mostly {r.precisions[0]}; "
                        f"{mains.count(common)} of the {len(mains)} ranks with tensor-core kernels ran mostly {common}")
            for r in rows if r.precisions and r.precisions[0] != common]
