"""Tensor-core verdicts from hardware counters (Nsight Compute metrics, nvprof metrics).

The truth is **matrix instructions, net of HFMA2**. On Turing and later the compiler issues ``HFMA2.MMA`` — a plain
fp16x2 fused multiply-add executed on the tensor pipe, often only to materialise constants — inside kernels that do
no matrix math at all. Every tensor-pipe *cycle* metric counts it, so cycles alone call plain kernels tensor-core
work. Measured on an H200 (sm_90, 2026-11): fp32 ``vectorized_layer_norm_kernel`` had
``sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.sum`` = 7,488 and
``sm__inst_executed_pipe_tensor_op_hmma.sum`` = 557,056, all of it ``..._hmma_type_hfma2.sum``; RNG, copy and
reduce kernels show the same (fixtures/h200/ncu_tensor_metrics.csv). On that GPU ``..._hmma.sum`` also counts the
warpgroup instructions (``nvjet_sm90_hsh``: hmma 262,144 = gmma 262,144), so the count reported here is
``max(hmma − hfma2, gmma) + imma + dmma`` — never the two added.

A launch is
- **yes** when it executed at least one matrix instruction: HMMA/HGMMA net of HFMA2, wgmma (GMMA), IMMA or DMMA,
  or nvprof's ``tensor_precision_fu_utilization`` / ``tensor_int_fu_utilization`` above Idle (0);
- **no** when the instruction counts it has are all zero (HMMA counted net of HFMA2), or, without instruction
  counts, when every tensor-pipe cycle metric is zero;
- **unknown** when the tensor pipe was busy but the export cannot say whether with matrix instructions
  (cycles only, or HMMA without the HFMA2 split on a GPU that has HFMA2.MMA).
Cycles are kept as supporting detail in the reason.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

HMMA_INST = "sm__inst_executed_pipe_tensor_op_hmma.sum"
HFMA2_INST = "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"
GMMA_INST = "sm__inst_executed_pipe_tensor_op_gmma.sum"
IMMA_INST = "sm__inst_executed_pipe_tensor_op_imma.sum"
DMMA_INST = "sm__inst_executed_pipe_tensor_op_dmma.sum"
INSTRUCTIONS = (HMMA_INST, HFMA2_INST, GMMA_INST, IMMA_INST, DMMA_INST)
# Supporting detail only: every one of these also counts HFMA2.MMA (except the DMMA pipe).
CYCLES = (
    "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.sum",
    "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.sum",
    "sm__pipe_tensor_op_dmma_cycles_active.sum",
    "sm__pipe_tensor_op_imma_cycles_active.sum",
    "sm__pipe_tensor_cycles_active.sum",
)
# nvprof (Volta/Turing): utilisation levels 0 (Idle) .. 10 (Max) of the tensor units.
NVPROF_UTILISATION = ("tensor_precision_fu_utilization", "tensor_int_fu_utilization")
DURATION = "gpu__time_duration.sum"
# Metrics `verify` asks ncu for (only those `ncu --query-metrics` lists are kept): the instruction counts decide.
HOPPER_METRICS = (*INSTRUCTIONS, CYCLES[0], CYCLES[3], DURATION)
PRE_HOPPER_METRICS = (HMMA_INST, HFMA2_INST, IMMA_INST, DMMA_INST, CYCLES[1], CYCLES[3], CYCLES[4], DURATION)
# Any of these in an export makes it usable for a verdict.
DECISIVE = (*INSTRUCTIONS, *CYCLES, *NVPROF_UTILISATION)


@dataclass(frozen=True)
class Evidence:
    """The counter verdict of one launch (or of a kernel name, combined over its launches)."""

    tensor_core: str  # "yes" | "no" | "unknown"
    metric: str  # what decided, in words a report can show
    value: float  # matrix instructions (or the utilisation level / cycles that decided)
    detail: str  # the numbers behind it


def _smsp_alias(name: str) -> str:
    return "sm__" + name[len("smsp__"):] if name.startswith("smsp__") else name


def _n(x: float) -> str:
    return f"{x:,.0f}"


def _cc(cc: str | float | None) -> float | None:
    try:
        return float(cc) if cc not in (None, "") else None
    except (TypeError, ValueError):
        return None


def launch_verdict(metrics: Mapping[str, float | None], cc: str | float | None = None) -> Evidence:
    """The verdict for one kernel launch from its counters (``cc``: the GPU's compute capability, if known)."""
    m = {_smsp_alias(k): v for k, v in metrics.items() if v is not None}
    cycles = {k: m[k] for k in CYCLES if k in m}
    cyc = f"; tensor-pipe cycles {_n(max(cycles.values()))}" if cycles else ""
    util = {k: m[k] for k in NVPROF_UTILISATION if k in m}
    if util:
        k, v = max(util.items(), key=lambda kv: kv[1])
        return Evidence("yes" if v > 0 else "no", k, v, f"{k} = {v:g} (0 = Idle)")
    hmma, hfma2 = m.get(HMMA_INST), m.get(HFMA2_INST)
    other = {k: m[k] for k in (GMMA_INST, IMMA_INST, DMMA_INST) if k in m}
    gmma, imma, dmma = (other.get(k, 0.0) for k in (GMMA_INST, IMMA_INST, DMMA_INST))
    gpu = _cc(cc)
    net = None  # HMMA (HGMMA too on Hopper) net of HFMA2; Volta (7.0) has no HFMA2.MMA, so there HMMA is enough
    if hmma is not None and hfma2 is not None:
        net = max(hmma - hfma2, 0.0)
    elif hmma is not None and gpu is not None and gpu < 7.5:
        net = hmma
    mma = max(net or 0.0, gmma) + imma + dmma
    parts = []
    if hmma is not None:
        parts.append(f"HMMA {_n(hmma)}" + (f" of which HFMA2 {_n(hfma2)}" if hfma2 is not None else ""))
    parts += [f"{label} {_n(other[k])}" for k, label in
              ((GMMA_INST, "wgmma"), (IMMA_INST, "IMMA"), (DMMA_INST, "DMMA")) if k in other]
    counted = f" ({', '.join(parts)})" if parts else ""
    metric = "MMA instructions net of HFMA2"
    if mma > 0:
        return Evidence("yes", metric, mma, f"{_n(mma)} matrix instructions{counted}{cyc}")
    pipe_idle = bool(cycles) and not any(cycles.values())
    # "no" needs a zero count for every matrix-instruction class this GPU has (or an idle tensor pipe)
    missing = [k for k, since in ((IMMA_INST, 7.2), (DMMA_INST, 8.0), (GMMA_INST, 9.0))
               if k not in other and (gpu is None or gpu >= since)]
    if net is not None and (not missing or pipe_idle):
        why = (" — the tensor-pipe work was HFMA2.MMA (fp16x2 FMA), not matrix math"
               if hfma2 and hmma and hmma <= hfma2 else "")
        return Evidence("no", metric, 0.0, f"no matrix instruction{counted}{why}{cyc}")
    if pipe_idle:
        return Evidence("no", "tensor-pipe cycles", 0.0, f"tensor pipe idle{counted}{cyc}")
    if hmma is not None and hmma > 0 and net is None:
        return Evidence("unknown", HMMA_INST, hmma,
                        f"{_n(hmma)} HMMA-pipe instructions without the HFMA2 split{counted}{cyc}: "
                        "HFMA2.MMA (plain fp16x2 math) counts there too, so this does not show matrix instructions")
    if cycles or parts:
        return Evidence("unknown", "tensor-pipe cycles" if cycles else metric, max(cycles.values(), default=0.0),
                        f"the export cannot rule out matrix instructions{counted}{cyc}: "
                        + (f"no count of {', '.join(k.split('_op_')[-1].split('.')[0].upper() for k in missing)}"
                           if missing else "HFMA2.MMA keeps the tensor pipe busy in plain kernels too"))
    return Evidence("unknown", "", 0.0, "no tensor-pipe metric in the export")


def combine(per_launch: list[Evidence]) -> Evidence:
    """A kernel name is tensor-core if any launch was (the largest count is shown); "no" only if every launch said
    no; otherwise unknown."""
    yes = [e for e in per_launch if e.tensor_core == "yes"]
    if yes:
        best = max(yes, key=lambda e: e.value)
        n = len(per_launch)
        launches = "" if n == 1 else (f" (the largest of {n} launches)" if len(yes) == n
                                      else f" (the largest; {len(yes)} of {n} launches used tensor cores)")
        return Evidence("yes", best.metric, best.value, best.detail + launches)
    if per_launch and all(e.tensor_core == "no" for e in per_launch):
        return per_launch[0]
    unknown = [e for e in per_launch if e.tensor_core == "unknown"]
    return unknown[0] if unknown else Evidence("unknown", "", 0.0, "no launch measured")


def metrics_for(cc: float, available: set[str] | None) -> list[str]:
    """The tensor-pipe metrics to collect on a GPU of compute capability ``cc``, keeping only those that
    ``ncu --query-metrics`` lists (by base name) when that list is known."""
    wanted = HOPPER_METRICS if cc >= 9.0 else PRE_HOPPER_METRICS
    if available is None:
        return list(wanted)
    return [m for m in wanted if m.rsplit(".", 1)[0] in available]


def can_decide(metrics: list[str]) -> bool:
    """Whether these metrics can give a yes: an HMMA count with its HFMA2 split, or another matrix instruction
    count (cycles alone cannot: HFMA2.MMA keeps the tensor pipe busy in plain kernels)."""
    have = set(metrics)
    return {HMMA_INST, HFMA2_INST} <= have or bool(have & {GMMA_INST, IMMA_INST, DMMA_INST})
