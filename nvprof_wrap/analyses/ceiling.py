"""The speed-up a precision change can give a step at most: Amdahl over the time budget's parts and the GPU's peaks.

For a target precision (tf32, fp16, bf16, fp8: those the GPU's tensor cores run, analyses/peaks.toml), the step
would take at least:
- matrix math (GEMM, attention, convolution kernels) at the target's tensor-core rate: each kernel's time scaled by
  its current rate over the target's (never slower than now). Current rates: a tensor-core kernel's precision at its
  tensor-core rate (3xTF32 at a third of TF32's; a precision the evidence does not name at TF32's, the slowest float
  rate, so the bound stays a bound); matrix math on CUDA cores (or not settled) at the CUDA cores' FP32 rate (FP64's
  for fp64 kernels);
- the other kernels (elementwise, reductions, the optimizer: memory-bound) moving the target's bytes per value
  instead of theirs: 2 for fp16/bf16 (and for fp8, whose training keeps elementwise work in bf16), 4 for tf32; a
  kernel whose precision is not named counts as fp32;
- everything else as it is: copies, memsets, communication, and every part of the step the GPU was idle.
The factor is the step now over that step: a ceiling (each kernel at the peak ratio, nothing added such as casts),
which a measured speed-up stays under. Where it is small, the largest part that stays says why.
"""
from __future__ import annotations

from dataclasses import dataclass

from nvprof_wrap.analyses.budget import KERNEL_KINDS, LABELS, TimeBudget
from nvprof_wrap.analyses.peaks import Peak, tensor_peak

TARGETS = ("tf32", "fp16", "bf16", "fp8")
_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp16/bf16": 2, "fp8": 1, "int8": 1}
_TARGET_BYTES = {"tf32": 4, "fp16": 2, "bf16": 2, "fp8": 2}


@dataclass(frozen=True)
class Factor:
    precision: str
    factor: float  # the step now / the step at the target precision, at most
    step_s: float  # the step at the target precision, at least
    left: str  # the largest part of that step (a budget part's label): what keeps the factor down
    left_share: float  # its share of that step


@dataclass(frozen=True)
class Ceiling:
    """Per target precision, the speed-up ceiling of the mean step (docs/why-not-faster.md)."""

    gpu: str  # the peak table's row the rates come from
    factors: tuple[Factor, ...]

    def of(self, precision: str) -> Factor | None:
        return next((f for f in self.factors if f.precision == precision), None)


def _base(precision: str) -> str:
    return precision.split(" ")[0].lower()


def current_rate(kind: str, precision: str, peak: Peak) -> float | None:
    """The rate (TFLOP/s) a kernel of this kind and precision runs its math at, at best."""
    base = _base(precision)
    if kind == "tensor_core":
        if "3xtf32" in precision.lower():
            tf32 = tensor_peak(peak, "tf32")
            return tf32 / 3 if tf32 else None
        rate = tensor_peak(peak, "tf32" if base in ("fp32", "") else base)
        return rate if rate else tensor_peak(peak, "tf32")
    return peak.rates.get("fp64" if base == "fp64" else "fp32")


def ceiling(b: TimeBudget, peak: Peak) -> Ceiling | None:
    """The ceilings of a budget on a GPU; None where the budget has no GPU time to act on."""
    factors = []
    for target in TARGETS:
        rate = tensor_peak(peak, target)
        if not rate:
            continue
        new: dict[str, float] = {p.name: p.seconds for p in b.parts if p.name not in KERNEL_KINDS}
        for k in b.kernels:
            if k.kind == "other_kernels":
                was = _BYTES.get(_base(k.precision), 4)
                scaled = k.seconds * min(1.0, _TARGET_BYTES[target] / was)
            else:
                cur = current_rate(k.kind, k.precision, peak)
                scaled = k.seconds * min(1.0, cur / rate) if cur else k.seconds
            new[k.kind] = new.get(k.kind, 0.0) + scaled
        # the step less its kernels' time as it is, plus their time at the target: the parts add up to the step
        step = b.step_s - sum(k.seconds for k in b.kernels) + sum(new.get(k, 0.0) for k in KERNEL_KINDS)
        if step <= 0:
            return None
        name, most = max(new.items(), key=lambda kv: kv[1])
        factors.append(Factor(target, round(b.step_s / step, 3), round(step, 9), LABELS.get(name, name),
                              round(most / step, 4)))
    return Ceiling(peak.name, tuple(factors)) if factors else None
