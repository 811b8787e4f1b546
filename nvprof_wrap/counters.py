"""Tensor-core verdicts from hardware counters (Nsight Compute metrics, nvprof metrics).

Measured on an H200 (fixtures/h200/ncu_tensor_metrics.csv, 85 launches, 20 of them tensor-core):
the metrics below in ``DECISIVE`` separate tensor-core kernels exactly. ``sm__pipe_tensor_cycles_active``,
``sm__inst_executed_pipe_tensor``, ``..._tensor_op_hmma_cycles_active`` and
``..._inst_executed_pipe_tensor_op_hmma`` are NOT decisive: they also count HFMA2 — plain fp16
elementwise math in RNG, copy and reduction kernels (40 false positives there).
"""
from __future__ import annotations

from collections.abc import Mapping

DECISIVE = (
    "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.sum",
    "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum",
    "sm__pipe_tensor_op_dmma_cycles_active.sum",
    "sm__pipe_tensor_op_imma_cycles_active.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__inst_executed_pipe_tensor_op_dmma.sum",
    "sm__inst_executed_pipe_tensor_op_imma.sum",
    # nvprof (Volta/Turing) metrics: utilisation levels 0..10 of the tensor units
    "tensor_precision_fu_utilization",
    "tensor_int_fu_utilization",
)
HMMA_INST = "sm__inst_executed_pipe_tensor_op_hmma.sum"
HFMA2_INST = "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"
DURATION = "gpu__time_duration.sum"
# Metrics to ask ncu for on sm_90 (decisive ones plus the HFMA2 pair, and the duration).
HOPPER_METRICS = (*DECISIVE[:7], HMMA_INST, HFMA2_INST, DURATION)


def _smsp_alias(name: str) -> str:
    return "sm__" + name[len("smsp__"):] if name.startswith("smsp__") else name


def launch_verdict(metrics: Mapping[str, float | None]) -> tuple[str, str, float]:
    """(tensor_core, metric that decided, its value) for one kernel launch."""
    m = {_smsp_alias(k): v for k, v in metrics.items() if v is not None}
    seen = [k for k in DECISIVE if k in m]
    for k in seen:
        if m[k] > 0:
            return "yes", k, m[k]
    if HMMA_INST in m and HFMA2_INST in m:
        real = m[HMMA_INST] - m[HFMA2_INST]
        if real > 0:
            return "yes", f"{HMMA_INST} - hfma2", real
        if not seen:
            return "no", f"{HMMA_INST} - hfma2", real
    if seen:
        return "no", seen[0], 0.0
    return "unknown", "", 0.0


def combine(verdicts: list[tuple[str, str, float]]) -> tuple[str, str, float]:
    """A kernel name is tensor-core if any launch was; 'no' only if every launch said no."""
    yes = [v for v in verdicts if v[0] == "yes"]
    if yes:
        return max(yes, key=lambda v: v[2])
    if verdicts and all(v[0] == "no" for v in verdicts):
        return verdicts[0]
    return "unknown", "", 0.0

# Candidates for Volta to Ada (compute capability 7.0–8.9). Not verified on those GPUs by this project:
# only what `ncu --query-metrics` confirms on the machine is asked for, and without an HFMA2-free
# metric the verdict stays "unknown" (docs/verdict-rules.md).
PRE_HOPPER_METRICS = (
    "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum",
    "sm__pipe_tensor_op_dmma_cycles_active.sum", "sm__pipe_tensor_op_imma_cycles_active.sum",
    "sm__inst_executed_pipe_tensor_op_dmma.sum", "sm__inst_executed_pipe_tensor_op_imma.sum",
    HMMA_INST, HFMA2_INST, DURATION,
)


def metrics_for(cc: float, available: set[str] | None) -> list[str]:
    """The tensor-pipe metrics to collect on a GPU of compute capability ``cc``, keeping only those that
    ``ncu --query-metrics`` lists (by base name) when that list is known."""
    wanted = HOPPER_METRICS if cc >= 9.0 else PRE_HOPPER_METRICS
    if available is None:
        return list(wanted)
    return [m for m in wanted if m.rsplit(".", 1)[0] in available]
