"""The numerics recorder's records as the analysis takes them (analyses/numerics.py; the reader: report/numerics.py),
the formats' limits, and what one record shows in words."""
from __future__ import annotations

from dataclasses import dataclass

DTYPE_MAX = {"float16": 65504.0, "bfloat16": 3.3895e38, "float32": 3.4028e38, "float8_e4m3fn": 448.0,
             "float8_e5m2": 57344.0}
DTYPE_TINY = {"float16": 6.104e-05, "bfloat16": 1.175e-38, "float32": 1.175e-38, "float8_e4m3fn": 0.015625,
              "float8_e5m2": 6.104e-05}
LOW = frozenset({"float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"})
UNDERFLOW_SHARE = 0.9  # of a tensor's elements zero or subnormal ...
SUBNORMAL_SHARE = 0.5  # ... with most of its nonzero ones subnormal: values are being flushed, not just sparse
RATIO_HIGH = 3.0  # an update 3x its weight (a healthy step: 0.1 or less; a zero-initialised bias's first: 1; the
# seed's first step: 35-207 per layer, recorded)
NORMAL_RATIO = 0.1
GROWTH = 10.0  # a weight's or an activation's max |x| grown this much since its last record
NEAR_MAX = 0.5  # a finite value past this share of the format's max


@dataclass(frozen=True)
class Meta:
    pid: int
    framework: str | None
    backend: str | None
    policy: str | None
    every: int
    first_steps: int
    layers: tuple[str, ...]


@dataclass(frozen=True)
class TensorStat:
    pid: int
    step: int
    phase: str
    layer: str
    tensor: str
    name: str
    dtype: str
    n: int
    max_abs: float | None
    zeros: float
    subnormal: float
    nan: int
    inf: int
    ratio: float | None = None


@dataclass(frozen=True)
class LossStat:
    pid: int
    step: int
    loss: float | None
    finite: bool
    scale: float | None = None
    skipped: bool | None = None


@dataclass(frozen=True)
class End:
    pid: int
    steps: int
    records: int
    dropped: int


Record = Meta | TensorStat | LossStat | End

def below(t: TensorStat) -> float:
    """The share of a tensor's elements that are zero or below its format's smallest normal: all of them where its
    largest value is below it (whatever base its subnormal share is of)."""
    tiny = DTYPE_TINY.get(t.dtype)
    if tiny is not None and t.max_abs is not None and t.max_abs < tiny:
        return 1.0
    return t.zeros + (1.0 - t.zeros) * t.subnormal


def underflow(t: TensorStat) -> bool:
    tiny = DTYPE_TINY.get(t.dtype)
    if t.dtype not in LOW or not t.n or t.tensor not in ("optimizer_state", "gradient", "update"):
        return False
    return (tiny is not None and t.max_abs is not None and 0 < t.max_abs < tiny) or (
        below(t) >= UNDERFLOW_SHARE and t.subnormal >= SUBNORMAL_SHARE)


def fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def pct(x: float) -> str:
    return f"{x * 100:.0f}%" if x >= 0.01 else f"{x * 100:.2g}%"


def where(t: TensorStat) -> str:
    return f"step {t.step}" + (f" {t.phase}" if t.phase in ("forward", "backward") else "")


def words(t: TensorStat, kind: str, was: float | None = None) -> str:
    """What a record shows, as one link of a chain."""
    tiny, top = DTYPE_TINY.get(t.dtype), DTYPE_MAX.get(t.dtype)
    if kind == "underflow":
        what = {"optimizer_state": "optimizer state", "gradient": "gradient", "update": "update"}[t.tensor]
        return (f"step {t.step}, {t.layer}: {what} {t.name} {pct(below(t))} zero or below {t.dtype}'s smallest "
                f"normal ({tiny:.3g})")
    if kind == "large_update":
        return f"{t.name} update/weight ratio {fmt(t.ratio or 0.0)}× at step {t.step} (normal ≲ {NORMAL_RATIO:g})"
    if kind == "growth":
        return (f"{t.tensor} {t.name} of {t.layer} grew to {fmt(t.max_abs or 0.0)} at {where(t)} "
                f"(from {fmt(was or 0.0)})")
    if kind in ("near_max", "last_finite"):
        return (f"{t.tensor} {t.name} of {t.layer} max {fmt(t.max_abs or 0.0)} at {where(t)} "
                f"({t.dtype} max {fmt(top or 0.0)})")
    if t.tensor == "loss":
        return f"loss non-finite at step {t.step}"
    if kind == "overflow":
        return (f"{t.tensor} {t.name} of {t.layer} overflowed {t.dtype}'s max {fmt(top or 0.0)} at {where(t)} "
                f"(inf in {t.inf:,} of {t.n:,})")
    if kind == "collapsed":
        return f"{t.tensor} {t.name} of {t.layer} all zeros at {where(t)}"
    return f"{t.tensor} {t.name} of {t.layer} NaN at {where(t)} ({t.nan + t.inf:,} of {t.n:,} non-finite)"
