"""Before and after: two reports side by side — did the GEMMs move to tensor cores, in which precision, and did the
step get faster? Pure: reports in, a typed Comparison out; renderers turn it into text.

Rows compare like with like: per kernel family (cuBLAS, cuDNN, flash-attn, ATen…), per framework op, per precision,
per kind of GPU time. Every row carries before, after and the difference, in nanoseconds and as shares of its own
report's kernel time (so runs of different lengths compare). Step time comes from the runs' metrics (the workloads'
JSON lines) when both have them.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nvprof_wrap.analyses.budget import ORDER, SHORT
from nvprof_wrap.report import KernelRow, Report, Scope
from nvprof_wrap.report.experiment import read_metrics
from nvprof_wrap.report.hints import host_bound
from nvprof_wrap.report.series import Series, StepRow, steady
from nvprof_wrap.run import Run
from nvprof_wrap.text.names import numbered_family
from nvprof_wrap.text.units import pct as _pct


@dataclass(frozen=True)
class Side:
    """One report's headline numbers."""

    label: str
    verdict: str
    kernel_ns: int
    launches: int
    tc_share: float  # of kernel time
    precisions: tuple[str, ...]  # tensor-core precisions, most time first
    step_ms: float | None  # wall time per training step: the median step (series), else the metrics JSONL
    steps: int | None
    step_from: str = "metrics"  # "median step" (the capture's series) | "metrics" (each run's metrics JSONL)
    spread: float | None = None  # the steps' own noise: median absolute deviation / median (series), None unknown
    idle: float | None = None  # GPU idle share of the steady state (median step), else first kernel to last
    host_bound: bool = False  # hints.host_bound says so
    window: str | None = None  # the part of the run compared (--steps / --window), None: all of it


@dataclass(frozen=True)
class DeltaRow:
    """One family / op / precision / kind of time: before and after, as time and as share of its report's time."""

    key: str
    before_ns: int
    after_ns: int
    before_share: float
    after_share: float
    before_tc_share: float | None  # of this row's time on tensor cores (kernel rows only)
    after_tc_share: float | None

    @property
    def delta_ns(self) -> int:
        return self.after_ns - self.before_ns


@dataclass(frozen=True)
class Predicted:
    """BEFORE's ceiling for AFTER's tensor-core precision (analyses/ceiling.py), and what AFTER measured: both of
    the budgets' mean steps."""

    precision: str
    at_most: float  # BEFORE's step / its step at that precision, at least
    measured: float  # BEFORE's mean step / AFTER's
    gpu: str


@dataclass(frozen=True)
class Comparison:
    before: Side
    after: Side
    families: tuple[DeltaRow, ...]
    ops: tuple[DeltaRow, ...]
    precisions: tuple[DeltaRow, ...]
    split: tuple[DeltaRow, ...]
    findings: tuple[str, ...]  # what changed, in words, most important first
    series: tuple[Series | None, Series | None] = (None, None)  # each report's series over time (report/series.py)
    # the mean step's time budget (analyses/budget.py) part by part: the deltas add up to the step's
    budget: tuple[DeltaRow, ...] = ()
    ceiling: Predicted | None = None  # BEFORE's speed-up ceiling at AFTER's precision, beside the measured speed-up

    @property
    def tc_share_delta(self) -> float:
        return self.after.tc_share - self.before.tc_share

    @property
    def speedup(self) -> float | None:
        """before / after step time (> 1: faster)."""
        b, a = self.before.step_ms, self.after.step_ms
        return b / a if b and a else None


def _side(label: str, r: Report, folder: Path | None) -> Side:
    steps, secs = read_metrics(Run(folder).metrics_file) if folder is not None else (None, None)
    v = r.verdict
    series = r.series
    s = steady(series) if series is not None and series.kind == "steps" else None
    idle = s.idle_share if s is not None else max((d.idle_share for d in r.devices if d.idle_share is not None),
                                                  default=None)
    bound, window = host_bound(r) is not None, _window(r.scope)
    if s is not None and series is not None:
        return Side(label, v.tensor_cores, v.kernel_ns, v.launches, v.tc_fraction, v.precisions,
                    s.duration_ns / 1e6, s.rows + 1, "median step", _spread(series.rows[1:]), idle=idle,
                    host_bound=bound, window=window)
    return Side(label, v.tensor_cores, v.kernel_ns, v.launches, v.tc_fraction, v.precisions,
                1000 * secs / steps if steps and secs else None, steps, idle=idle, host_bound=bound, window=window)


def _window(scope: Scope | None) -> str | None:
    if scope is None:
        return None
    what = f"steps {int(scope.start)} to {int(scope.end) - 1}" if scope.kind == "steps" else \
        f"{scope.start:g} s to {scope.end:g} s after the first GPU activity"
    return f"{what} of each run ({scope.option})"


def _spread(rows: Sequence[StepRow]) -> float | None:
    """The steps' noise: their median absolute deviation over their median."""
    d = sorted(r.duration_ns for r in rows)
    if len(d) < 3:
        return None
    mid = d[len(d) // 2]
    dev = sorted(abs(x - mid) for x in d)
    return dev[len(dev) // 2] / mid if mid else None


def _rows(before: dict[str, list[int]], after: dict[str, list[int]], b_total: int, a_total: int,
          with_tc: bool = True) -> tuple[DeltaRow, ...]:
    """{key: [ns, tc_ns]} per side → rows, the largest change first."""
    out = []
    for key in set(before) | set(after):
        b, a = before.get(key, [0, 0]), after.get(key, [0, 0])
        out.append(DeltaRow(key, b[0], a[0], b[0] / b_total if b_total else 0.0, a[0] / a_total if a_total else 0.0,
                            (b[1] / b[0] if b[0] else None) if with_tc else None,
                            (a[1] / a[0] if a[0] else None) if with_tc else None))
    return tuple(sorted(out, key=lambda r: (-abs(r.after_share - r.before_share), r.key)))


def _by(r: Report, key: Callable[[KernelRow], str]) -> dict[str, list[int]]:
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for k in r.kernels:
        g = acc[key(k)]
        g[0] += k.total_ns
        g[1] += k.total_ns if k.tensor_core == "yes" else 0
    return dict(acc)


def _ops(r: Report) -> dict[str, list[int]]:
    """Ops and NVTX ranges; ranges that differ only in a trailing number (step 0, step 1, …) are one row, step *:
    the two runs rarely number alike, and thirty rows of one step hide the ops that changed."""
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for o in r.ops:
        family = numbered_family(o.op)
        g = acc[f"{family} *" if family else o.op]
        g[0] += o.total_ns
        g[1] += round(o.total_ns * o.tc_share)
    return dict(acc)


def _split(r: Report) -> dict[str, list[int]]:
    return {(f"{s.kind} {s.direction}" if s.direction else s.kind): [s.total_ns, 0] for s in r.split}


def compare(before: Report, after: Report, labels: tuple[str, str] = ("before", "after"),
            folders: tuple[Path | None, Path | None] = (None, None)) -> Comparison:
    b, a = _side(labels[0], before, folders[0]), _side(labels[1], after, folders[1])
    bt, at = b.kernel_ns, a.kernel_ns
    families = _rows(_by(before, lambda k: k.family), _by(after, lambda k: k.family), bt, at)
    precisions = _rows(_by(before, lambda k: k.precision or "unstated"),
                       _by(after, lambda k: k.precision or "unstated"), bt, at)
    ops = _rows(_ops(before), _ops(after), sum(o.total_ns for o in before.ops), sum(o.total_ns for o in after.ops))
    bs, as_ = sum(s.total_ns for s in before.split), sum(s.total_ns for s in after.split)
    split = _rows(_split(before), _split(after), bs, as_, with_tc=False)
    parts, predicted = _budget(before, after), _predicted(before, after)
    findings = _findings(b, a, families) + _budget_findings(before, after, parts, predicted)
    return Comparison(b, a, families, ops, precisions, split, findings, (before.series, after.series), parts,
                      predicted)


def _budget(before: Report, after: Report) -> tuple[DeltaRow, ...]:
    """The two mean steps' budgets part by part (a part one side lacks is 0 there): the rows' deltas add up to the
    step's; largest change first."""
    b, a = before.time_budget, after.time_budget
    if b is None or a is None:
        return ()
    bp, ap = {p.name: p for p in b.parts}, {p.name: p for p in a.parts}
    rows = [DeltaRow(SHORT[n], round(bp[n].seconds * 1e9) if n in bp else 0, round(ap[n].seconds * 1e9) if n in ap
                     else 0, bp[n].share if n in bp else 0.0, ap[n].share if n in ap else 0.0, None, None)
            for n in ORDER if n in bp or n in ap]
    return tuple(sorted(rows, key=lambda r: (-abs(r.delta_ns), r.key)))


def _predicted(before: Report, after: Report) -> Predicted | None:
    """BEFORE's ceiling at AFTER's main tensor-core precision, where both have budgets and BEFORE a ceiling."""
    b, a, c = before.time_budget, after.time_budget, before.ceiling
    if b is None or a is None or c is None or not after.verdict.precisions or not a.step_s:
        return None
    main = after.verdict.precisions[0].split(" ")[0]
    factor = c.info.of("bf16" if main == "fp16/bf16" else main)
    if factor is None:
        return None
    return Predicted(factor.precision, factor.factor, round(b.step_s / a.step_s, 3), c.info.gpu)


def _budget_findings(before: Report, after: Report, parts: tuple[DeltaRow, ...],
                     predicted: Predicted | None) -> tuple[str, ...]:
    b, a = before.time_budget, after.time_budget
    if b is None or a is None or not parts:
        return ()
    delta = a.step_s - b.step_s
    shown = [r for r in parts if abs(r.delta_ns) >= 0.01 * max(b.step_s, a.step_s) * 1e9][:5]
    said = ", ".join(f"{r.key} {_signed(r.delta_ns)}" for r in shown)
    rest = sum(r.delta_ns for r in parts) - sum(r.delta_ns for r in shown)
    out = [f"mean step (time budget): {b.step_s * 1e3:.2f} → {a.step_s * 1e3:.2f} ms ({_signed(round(delta * 1e9))})"
           + (f": {said}" if said else "") + (f", the rest {_signed(rest)}" if shown and rest else "")]
    if predicted is not None:
        grew = [r for r in parts if r.delta_ns > 0 and r.delta_ns >= 0.01 * b.step_s * 1e9][:3]
        why = ("; what grew instead: " + ", ".join(f"{r.key} {_signed(r.delta_ns)}" for r in grew)) if grew else ""
        out.append(f"speed-up: measured {predicted.measured:.2f}× of a predicted ≤ {predicted.at_most:.2f}× "
                   f"({predicted.precision} on {predicted.gpu}, from the before run's budget){why}")
    return tuple(out)


def _signed(ns: int) -> str:
    return f"{'+' if ns >= 0 else '−'}{abs(ns) / 1e6:.2f} ms"




NOISE = 0.02  # step times closer than this (or than the steps' own spread) are "no change"


def _step_time(b: Side, a: Side, b_ms: float, a_ms: float) -> str:
    """'step time (median step): 35.70 → 50.10 ms (1.40× slower)'; within the noise: 'no change'."""
    ratio = b_ms / a_ms
    source = "median step of each capture" if b.step_from == a.step_from == "median step" else \
        "wall, from each run's metrics" if b.step_from == a.step_from else "median step / metrics"
    noise = max([NOISE] + [x.spread for x in (b, a) if x.spread is not None])
    if abs(ratio - 1) <= noise:
        how = f"no change: within ±{100 * noise:.0f}%" + (", the steps' own spread" if noise > NOISE else "")
    else:
        how = f"{ratio:.2f}× faster" if ratio >= 1 else f"{1 / ratio:.2f}× slower"
    return f"step time ({source}): {b_ms:.2f} → {a_ms:.2f} ms ({how})"


def _findings(b: Side, a: Side, families: tuple[DeltaRow, ...]) -> tuple[str, ...]:
    out = [(f"tensor-core share of kernel time: {_pct(b.tc_share)} → {_pct(a.tc_share)} "
            f"({'+' if a.tc_share >= b.tc_share else '−'}{abs(100 * (a.tc_share - b.tc_share)):.1f} points)")]
    gained, lost = set(a.precisions) - set(b.precisions), set(b.precisions) - set(a.precisions)
    if gained or lost:
        out.append("tensor-core precisions: " + (" + ".join(b.precisions) or "none") + " → "
                   + (" + ".join(a.precisions) or "none"))
    if b.window or a.window:
        same = b.window == a.window
        out.insert(0, "compared: " + ((b.window or "") if same else f"{b.window or 'all'} → {a.window or 'all'}"))
    if b.step_ms and a.step_ms:
        out.append(_step_time(b, a, b.step_ms, a.step_ms))
    if b.idle is not None and a.idle is not None:
        what = "GPU idle in the median step" if b.step_from == a.step_from == "median step" else \
            "GPU idle from the first kernel to the last"
        bound = {(True, True): "host-bound before and after", (True, False): "host-bound before, not after",
                 (False, True): "not host-bound before, host-bound after", (False, False): "not host-bound"}
        out.append(f"{what}: {_pct(b.idle)} → {_pct(a.idle)} ({bound[(b.host_bound, a.host_bound)]})")
    out.append(f"GPU kernel time: {b.kernel_ns / 1e6:.1f} → {a.kernel_ns / 1e6:.1f} ms "
               f"({b.launches:,} → {a.launches:,} launches)")
    moved = [f for f in families if f.before_tc_share is not None and f.after_tc_share is not None
             and f.after_tc_share - f.before_tc_share >= 0.25 and f.after_ns]
    for f in moved[:3]:
        out.append(f"{f.key} kernels moved to tensor cores: {_pct(f.before_tc_share or 0)} → "
                   f"{_pct(f.after_tc_share or 0)} of their time")
    return tuple(out)
