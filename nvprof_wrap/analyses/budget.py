"""The time budget of a step: its wall time split into parts that add up to it.

The readers measure each step's parts (timeline/series.py, model.StepAgg.parts_ns): every GPU interval and CUDA call
cut at step boundaries, then exclusive time by priority — a nanosecond in which the GPU ran a kernel and a copy is
the kernel's, and the host's CUDA calls claim only the time the GPU was idle. What no part claims is the time the
host spent outside CUDA calls (Python, the framework, data loading) — or, where the capture did not record every
call that can block, idle time whose cause is not known.

This module turns the parts of the steady-state steps into the budget of one mean step: the kernels' part split by
what the kernels are (tensor-core kernels, matrix math on CUDA cores, matrix math the evidence cannot settle, the
rest: elementwise, reductions, optimizer, copies inside kernels) in proportion to their kernel time in those steps
(exact where kernels do not overlap one another, the usual one-stream case), then each part's mean over the steps.
Means, not medians: means add up, so the parts sum to the mean step exactly.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from nvprof_wrap.classify.engine import matrix_math
from nvprof_wrap.model import CUDA_GRAPH_KERNEL

# the kernels' part, split by what each kernel is (kind_of)
KERNEL_KINDS = ("tensor_core", "other_math", "math_unknown", "other_kernels")
GPU = (*KERNEL_KINDS, "communication", "copy_htod", "copy_dtoh", "copy_dtod", "copy_other", "memset")
HOST = ("api_launch", "api_sync", "api_alloc", "api_other", "outside_cuda", "idle_unknown")
ORDER = GPU + HOST
LABELS = {
    "tensor_core": "tensor-core kernels",
    "other_math": "matrix math on CUDA cores",
    "math_unknown": "matrix math, tensor cores unknown",
    "other_kernels": "elementwise, reductions, optimizer, other kernels",
    "communication": "communication kernels",
    "copy_htod": "copies host to device",
    "copy_dtoh": "copies device to host",
    "copy_dtod": "copies device to device",
    "copy_other": "other copies",
    "memset": "memsets",
    "api_launch": "GPU idle, host launching kernels",
    "api_sync": "GPU idle, host in copies and waits",
    "api_alloc": "GPU idle, host allocating memory",
    "api_other": "GPU idle, host in other CUDA calls",
    "outside_cuda": "GPU idle, host outside CUDA calls (Python, framework, data loading)",
    "idle_unknown": "GPU idle, host not recorded",
}
# the same, short: table keys and one-line lists (compare's rows, the terminal's lines)
SHORT = {
    "tensor_core": "tensor-core kernels", "other_math": "math on CUDA cores", "math_unknown": "math, TC unknown",
    "other_kernels": "other kernels", "communication": "communication", "copy_htod": "copies HtoD",
    "copy_dtoh": "copies DtoH", "copy_dtod": "copies DtoD", "copy_other": "other copies", "memset": "memsets",
    "api_launch": "idle: launching", "api_sync": "idle: copies, waits", "api_alloc": "idle: allocating",
    "api_other": "idle: other calls", "outside_cuda": "idle: outside CUDA", "idle_unknown": "idle: not recorded",
}
# which CUDA calls the capture recorded (model.StepSeries.host) → whether the rest of a step is outside CUDA calls
_REST = {"all": "outside_cuda", "launch, sync, alloc": "outside_cuda"}


@dataclass(frozen=True)
class StepSpan:
    """One step (or bucket) of the budget: its wall time and how many processes ran it (parts are their mean)."""

    step: int
    duration_ns: int
    processes: int


@dataclass(frozen=True)
class BudgetPart:
    name: str  # ORDER's id, stable for JSON readers
    label: str
    seconds: float
    share: float  # of the step

    @property
    def gpu(self) -> bool:
        return self.name in GPU


@dataclass(frozen=True)
class KernelTime:
    """Of a mean step's kernels part: the time of one kind (KERNEL_KINDS) in one precision ("" where the evidence
    names none) — what a precision change would act on (analyses/ceiling.py)."""

    kind: str
    precision: str
    seconds: float


@dataclass(frozen=True)
class TimeBudget:
    """A mean steady-state step's wall time in parts that add up to it (docs/why-not-faster.md)."""

    step_s: float
    steps: int  # how many steps (buckets) it is the mean of
    first: int
    last: int
    kind: str  # "steps" | "buckets"
    parts: tuple[BudgetPart, ...]
    host: str  # which CUDA calls the capture recorded (model.StepSeries.host)
    kernels: tuple[KernelTime, ...] = ()  # the kernels' parts by precision too
    slow_left_out: int = 0  # steady steps left out as outliers (report/series.py time_budget)

    def seconds(self, *names: str) -> float:
        return sum(p.seconds for p in self.parts if p.name in names)

    @property
    def gpu_s(self) -> float:
        return sum(p.seconds for p in self.parts if p.gpu)

    @property
    def idle_s(self) -> float:
        return self.step_s - self.gpu_s


def kind_of(name: str, tensor_core: str) -> str:
    """A kernel's kind in the budget from its final verdict ("yes" | "no" | "unknown") and its name."""
    if tensor_core == "yes":
        return "tensor_core"
    if matrix_math(name) or name == CUDA_GRAPH_KERNEL:  # a graph's kernels unseen: maybe GEMMs, so a ceiling's
        return "other_math" if tensor_core == "no" else "math_unknown"  # at-most counts them as math
    return "other_kernels"


def kernel_weights(kernels: Iterable[tuple[str, int]],
                   verdict: Callable[[str], tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Kernel time by (KERNEL_KINDS, precision) of (name, ns) pairs of the steps' kernels, communication kernels
    already left out (their part is apart); verdict: a name's (tensor core verdict, precision). Each distinct name
    looked at once."""
    by_name: dict[str, int] = {}
    for name, ns in kernels:
        by_name[name] = by_name.get(name, 0) + ns
    out: dict[tuple[str, str], int] = {}
    for name, ns in by_name.items():
        tc, precision = verdict(name)
        k = (kind_of(name, tc), precision)
        out[k] = out.get(k, 0) + ns
    return out


def budget(steps: Sequence[StepSpan], parts: Mapping[int, Mapping[str, int]],
           weights: Mapping[tuple[str, str], int], host: str, kind: str, slow: int = 0) -> TimeBudget | None:
    """The mean step's budget over ``steps``: parts (step → part → ns summed over its processes, PARTS' ids of
    timeline/series_tables.py), weights (kernel time by (KERNEL_KINDS, precision) in those steps, kernel_weights).
    None without steps or time."""
    total = sum(s.duration_ns for s in steps)
    if not steps or total <= 0:
        return None
    sums: dict[str, float] = {}
    for s in steps:
        for part, ns in parts.get(s.step, {}).items():
            sums[part] = sums.get(part, 0.0) + ns / max(s.processes, 1)
    kernels = sums.pop("kernels", 0.0)
    weight = sum(ns for (k, _p), ns in weights.items() if k in KERNEL_KINDS)
    split = {kp: kernels * ns / weight for kp, ns in weights.items() if kp[0] in KERNEL_KINDS} if weight else \
        {("other_kernels", ""): kernels}
    for (k, _p), s_ in split.items():
        sums[k] = sums.get(k, 0.0) + s_
    for part in list(sums):
        if part.startswith("api_") and part not in HOST:
            sums["api_other"] = sums.get("api_other", 0.0) + sums.pop(part)
    rest = total - sum(sums.values())
    sums[_REST.get(host, "idle_unknown")] = max(rest, 0.0)
    n = len(steps)
    step_s = total / n / 1e9
    out = tuple(BudgetPart(p, LABELS[p], round(sums[p] / n / 1e9, 9), round(sums[p] / total, 6))
                for p in ORDER if sums.get(p, 0) > 0)
    by_precision = tuple(KernelTime(k, p, round(s_ / n / 1e9, 9)) for (k, p), s_ in
                         sorted(split.items(), key=lambda kv: (KERNEL_KINDS.index(kv[0][0]), -kv[1])) if s_ > 0)
    return TimeBudget(round(step_s, 9), n, steps[0].step, steps[-1].step, kind, out, host, by_precision, slow)
