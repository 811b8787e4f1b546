"""The report over time: one row per step (or per fixed time bucket when the capture marks no steps) — where each
step's wall time went on the GPU (busy, kernels, tensor-core kernels, copies, communication) and on the host (time
inside CUDA calls by kind, time outside any CUDA call).

Readers measure it per capture (readers/_series.py: model.StepAgg, model.StepKernel); the store keeps it per
(capture, process, step); this module turns it into the Report's `series` (docs/json.md "series").
"""
from __future__ import annotations

from dataclasses import dataclass

# The host's CUDA calls, by what they do to a step's time (readers/_series.py maps callback ids / API names).
API_KINDS = ("launch", "sync", "alloc", "other")
API_LABELS = {"launch": "kernel launches", "sync": "synchronising copies and waits", "alloc": "allocations",
              "other": "other CUDA calls"}


@dataclass(frozen=True)
class StepRow:
    """One step (or time bucket), summed over the processes that ran it (host times: their mean per process)."""

    step: int  # the step's number (kind "steps"), else the bucket's index from 0
    start_s: float  # from the series' first step start (the first capture's clock)
    duration_ns: int  # wall time: from this step's start to the next one's (the last: to its range's end)
    processes: int  # how many processes ran this step
    launches: int
    kernel_ns: int
    tc_ns: int  # kernel time of tensor-core ("yes") kernels
    unknown_ns: int  # kernel time of kernels whose verdict is unknown
    copy_ns: int  # memcpy and memset time that started in the step
    comm_ns: int  # kernel time of communication kernels (NCCL)
    gpu_busy_ns: int  # union of the GPU's busy intervals inside the step (per process, mean)
    # host time inside CUDA API calls, by API_KINDS, and outside any CUDA call; None where the capture holds no
    # API records (then the host's side is not known)
    api_ns: dict[str, int] | None = None
    outside_api_ns: int | None = None
    hw_tensor: float | None = None  # mean tensor-pipe activity (%) of the hardware samples inside the step

    @property
    def tc_share(self) -> float:
        return self.tc_ns / self.kernel_ns if self.kernel_ns else 0.0

    @property
    def idle_ns(self) -> int:
        return max(self.duration_ns - self.gpu_busy_ns, 0)


@dataclass(frozen=True)
class Series:
    kind: str  # "steps" | "buckets"
    source: str  # what marked the steps: "step marks" | "optimizer steps" | "keras batches"; "time" for buckets
    bucket_s: float | None  # a bucket's length (kind "buckets")
    rows: tuple[StepRow, ...]
    host: str  # where the host's split comes from: "runtime API records" | "none" (the capture has none)
    folded: int = 0  # steps beyond the cap (MAX_STEPS) merged into their neighbours' rows; 0: one row per step
    notes: tuple[str, ...] = ()
