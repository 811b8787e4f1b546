"""Side-by-side precision experiments: one row per precision from its report, metrics and health. Pure."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nvprof_wrap.model import HealthVerdict
from nvprof_wrap.report import Report
from nvprof_wrap.report.health import lines_of
from nvprof_wrap.report.series import steady
from nvprof_wrap.run import Manifest, Run
from nvprof_wrap.system import bounded


@dataclass(frozen=True)
class ExperimentRow:
    precision: str
    exit_code: int | None  # None: the manifest recorded no end
    wall_s: float | None
    steps: int | None
    wall_per_step_ms: float | None
    kernel_ns: int
    tc_share: float
    tc_precisions: str
    memcpy_share: float
    idle_share: float | None
    launches: int
    launches_per_step: float | None
    final_loss: float | None
    final_accuracy: float | None
    final_val_accuracy: float | None
    health: str
    findings: tuple[str, ...]
    folder: str
    # the median step after the first, from the capture's per-step series (report/series.py): where its time went
    step_ms: float | None = None
    step_gpu_busy_ms: float | None = None
    step_kernel_ms: float | None = None
    step_in_cuda_ms: float | None = None  # the host inside CUDA calls (any thread)
    step_outside_cuda_ms: float | None = None  # the host outside every CUDA call: Python, framework, data loading
    step_launch_ms: float | None = None
    step_sync_ms: float | None = None  # copies and waits
    steps_counted_by: str | None = None
    step_mean_ms: float | None = None  # outliers included
    slow_steps: int = 0  # steps over 3x the median (report/series.SLOW)
    slow_steps_ms: float | None = None  # their time in all
    slow_steps_outside_cuda_ms: float | None = None
    slow_step_numbers: tuple[int, ...] = ()  # the first of them
    slow_steps_per_row: int = 1  # >1: the series folded its steps this many a row; slow ones are rows' steps
    # the mean steady step of the time budget (analyses/budget.py), and the speed-up ceiling of this run's budget
    # per target precision (analyses/ceiling.py): the fp32 row's predicts the others'
    budget_step_ms: float | None = None
    speedup_ceiling: dict[str, float] | None = None
    # where the run's numerics name a cause (`--numerics`): its root in a few words, for the health column
    cause: str | None = None


def read_metrics(path: Path) -> tuple[int | None, float | None]:
    """(train steps, seconds spent in epochs) from the workload's JSON lines, if it wrote them."""
    if not path.is_file():
        return None, None
    steps, secs = 0, 0.0
    for line in lines_of(path):  # streamed, each line bounded: the job wrote it
        try:
            rec = bounded.loads(line)
        except ValueError:  # damage of any kind, a number past Python's, nesting past the parser's
            continue
        if isinstance(rec, dict) and "epoch" in rec:
            try:
                steps += int(rec.get("steps") or 0)
                secs += float(rec.get("epoch_time_s") or 0.0)
            except (TypeError, ValueError, OverflowError):
                continue  # not numbers: the job wrote something else under these keys
    return (steps or None), (secs or None)


def row(precision: str, folder: Path, manifest: Manifest, report: Report, health: HealthVerdict) -> ExperimentRow:
    steps, epoch_s = read_metrics(Run(folder).metrics_file)
    v = report.verdict
    memcpy = sum(s.share for s in report.split if s.kind == "memcpy")
    spans = [d for d in report.devices if d.span_ns]
    idle = (1 - sum(d.busy_ns or 0 for d in spans) / sum(d.span_ns or 0 for d in spans)) if spans else None
    final = health.final
    s = steady(report.series)

    def ms(ns: float | None) -> float | None:
        return None if ns is None else round(ns / 1e6, 3)

    per_step: dict[str, Any] = {} if s is None else {
        "step_ms": ms(s.duration_ns), "step_gpu_busy_ms": ms(s.gpu_busy_ns), "step_kernel_ms": ms(s.kernel_ns),
        "step_in_cuda_ms": ms(s.in_api_ns), "step_outside_cuda_ms": ms(s.outside_api_ns),
        "step_launch_ms": ms((s.api_ns or {}).get("launch")), "step_sync_ms": ms((s.api_ns or {}).get("sync")),
        "steps_counted_by": report.series.source if report.series else None, "step_mean_ms": ms(s.mean_duration_ns),
        "slow_steps": len(s.slow),
        "slow_steps_ms": ms(s.slow_ns), "slow_steps_outside_cuda_ms": ms(s.slow_outside_api_ns),
        "slow_step_numbers": s.slow[:8], "slow_steps_per_row": s.slow_each}
    return ExperimentRow(
        precision, manifest.exit_code, manifest.wall_s, steps,
        1000 * epoch_s / steps if steps and epoch_s else None,
        v.kernel_ns, v.tc_fraction, " + ".join(v.precisions), memcpy, idle, v.launches,
        v.launches / steps if steps else None,
        getattr(final, "loss", None), getattr(final, "accuracy", None), getattr(final, "val_accuracy", None),
        health.status, (*health.findings, *numerics_findings(health)), str(folder), **per_step,
        budget_step_ms=ms(report.time_budget.step_s * 1e9) if report.time_budget else None,
        speedup_ceiling=report.ceiling.factors if report.ceiling else None, cause=short_cause(health))


def short_cause(health: HealthVerdict) -> str | None:
    """The numerics' root in a few words ('dense optimizer state underflow, step 0'): the first record on the way to
    the first bad tensor that shows more than its last finite value; None where nothing broke."""
    n = health.numerics
    if n is None or n.first_bad is None:
        return None
    root = next((e for e in n.evidence if e.kind not in ("last_finite", "spread")), None)
    if root is None:
        b = n.first_bad
        return f"{b.layer} {b.tensor.replace('_', ' ')} {b.kind}, step {b.step}"
    return f"{root.layer} {root.tensor.replace('_', ' ')} {root.kind.replace('_', ' ')}, step {root.step}"


def numerics_findings(health: HealthVerdict) -> tuple[str, ...]:
    """What the run's numerics records say (`--numerics`): the cause and the first fix, or that nothing broke."""
    n = health.numerics
    if n is None:
        return ()
    if n.cause is None:
        return (f"numerics: {n.status}, nothing went non-finite",)
    return (f"numerics: {n.cause}", *(f"fix: {f}" for f in n.fix[:1]))


def fix_precision(health: HealthVerdict) -> str | None:
    """The precision (of the workloads' --precision) whose run would check the numerics verdict's first fix
    (`experiment --try-fix`): mixed (float32 master weights and optimizer state, loss scaling) for a root in the
    optimizer, the update or the gradients; bf16 (float32's range) for a forward pass past the format's max, or for a
    run that already was mixed or loss-scaled. None where nothing broke."""
    n = health.numerics
    if n is None or n.first_bad is None:
        return None
    root = next((e for e in n.evidence if e.kind not in ("last_finite", "spread")), None)
    forward = root is not None and root.tensor == "activation" or root is None and n.first_bad.tensor == "activation"
    if forward or n.loss_scale is not None or "mixed" in (n.policy or ""):
        return "bf16"
    return "mixed"


def where_the_time_went(rows: list[ExperimentRow]) -> list[str]:
    """Each precision's median step against the first row's (the baseline), part by part: "Where the step time
    went, fp16 vs fp32: +14.4 ms
    per step (50.1 vs 35.7 ms): outside CUDA calls +13.9 ms, in CUDA calls +0.6 ms; GPU busy -0.2 ms, kernels
    -0.2 ms". Only rows whose captures had steps."""
    base = next((r for r in rows if r.step_ms is not None), None)
    out = []
    for r in rows:
        if base is None or base.step_ms is None or r is base or r.step_ms is None or r.exit_code:
            continue
        parts = [(label, getattr(r, f), getattr(base, f)) for label, f in (
            ("outside CUDA calls", "step_outside_cuda_ms"), ("in CUDA calls", "step_in_cuda_ms"),
            ("of them copies and waits", "step_sync_ms"), ("GPU busy", "step_gpu_busy_ms"),
            ("kernels", "step_kernel_ms"))]
        said = [f"{label} {a - b:+.2f} ms" for label, a, b in parts if a is not None and b is not None]
        d = r.step_ms - base.step_ms
        line = (f"Where the step time went, {r.precision} vs {base.precision}: median step {d:+.2f} ms "
                f"({r.step_ms:.2f} "
                f"vs {base.step_ms:.2f} ms, after the first)" + (": " + ", ".join(said) if said else ""))
        if r.step_mean_ms is not None and base.step_mean_ms is not None:
            line += f"; mean step {r.step_mean_ms - base.step_mean_ms:+.2f} ms ({r.step_mean_ms:.2f} vs " \
                    f"{base.step_mean_ms:.2f} ms)"
        out.append(line)
        target = "bf16" if r.precision.startswith("bf16") else "fp16" if r.precision in ("fp16", "mixed") else None
        ceiling = (base.speedup_ceiling or {}).get(target or "")
        if ceiling is not None and r.budget_step_ms and base.budget_step_ms:
            out.append(f"  {r.precision}: measured {base.budget_step_ms / r.budget_step_ms:.2f}× faster (mean step, "
                       f"time budget) of at most {ceiling:.2f}× that {base.precision}'s budget predicts at {target}")
        for x in (base, r):
            if x.slow_steps and x.slow_steps_ms:
                outside = f", {x.slow_steps_outside_cuda_ms:,.0f} ms of it outside CUDA calls" \
                    if x.slow_steps_outside_cuda_ms is not None else ""
                which = ", ".join(map(str, x.slow_step_numbers)) + (", …" if x.slow_steps > len(x.slow_step_numbers)
                                                                     else "")
                over = "over 3x its median" if x.slow_steps_per_row == 1 else \
                    f"in rows of {x.slow_steps_per_row} whose mean step is over 3x its median"
                out.append(f"  {x.precision}: {x.slow_steps} step(s) {over} took {x.slow_steps_ms:,.0f} ms "
                           f"in all{outside} (steps {which}): the median leaves them out")
    return out
