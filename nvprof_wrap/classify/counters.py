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

``sm__inst_executed_pipe_tensor.sum`` (ncu: "# of warp instructions executed by tensor pipe") is every instruction
of the tensor pipe: on the H200 it equals hmma + imma + dmma on all 85 launches of fixtures/h200/ncu_tensor_metrics.csv
(hmma there holding HGMMA and HFMA2.MMA), and public A100 exports show it above zero in plain kernels (a random-number
kernel 320, an index kernel 1: fixtures/wild/ncu-metrics-bert-flashattn-a100.csv). So that total proves matrix
instructions only net of HFMA2 (the split in the same export), or on Volta (sm_70/72: no HFMA2.MMA); a total of 0
proves there were none — except on Blackwell sm_100/sm_110, where tcgen05 MMAs run on a pipe of their own
(``sm__inst_executed_pipe_tc``, ncu 2025.3 --query-metrics --chip gb100), so there a zero needs that pipe counted too.
Where the export has no HFMA2 split but counts fp16 FMA *thread* instructions
(``sm__sass_thread_inst_executed_op_hfma_pred_on.sum``, HFMA2.MMA among them), that count bounds the HFMA2 warp
instructions from above (a warp instruction with a thread on counts at least once): the pipe's total beyond it is
matrix instructions. The public A100 export shows the bound holding exactly where HFMA2.MMA alone ran (a random-number
kernel: pipe 320, HFMA threads 10,240 = 32 × 320; splitKreduce 960 and 30,720) and FMHA's loop kernel with pipe
2,048 and no HFMA at all. The bound proves a yes, never a no (HFMA2 on the FMA pipe counts there too); an HFMA2.MMA
whose every thread is predicated off would escape it — compilers emit it to materialise constants, unpredicated.
Metric names of other ncu versions map onto these: ``…_v2`` (Ada), ``…_subpipe_{hmma,imma,dmma}`` (Blackwell).

A launch is
- **yes** when it executed at least one matrix instruction: HMMA/HGMMA net of HFMA2, wgmma (GMMA), IMMA or DMMA,
  the tensor pipe's total net of HFMA2, or nvprof's ``tensor_precision_fu_utilization`` /
  ``tensor_int_fu_utilization`` above Idle (0);
- **no** when the instruction counts it has are all zero (HMMA counted net of HFMA2), when the tensor pipe executed
  no instruction at all (its total 0, on a GPU whose MMAs all run there), or, without instruction counts, when every
  tensor-pipe cycle metric is zero;
- **unknown** when the tensor pipe was busy but the export cannot say whether with matrix instructions
  (cycles only, or HMMA / the pipe's total without the HFMA2 split on a GPU that has HFMA2.MMA).
Cycles are kept as supporting detail in the reason.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nvprof_wrap.classify.counter_flops import METRICS as FLOP_METRICS
from nvprof_wrap.text.names import parameters_agree, spelling, template_parameters

HMMA_INST = "sm__inst_executed_pipe_tensor_op_hmma.sum"
HFMA2_INST = "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"
GMMA_INST = "sm__inst_executed_pipe_tensor_op_gmma.sum"
IMMA_INST = "sm__inst_executed_pipe_tensor_op_imma.sum"
DMMA_INST = "sm__inst_executed_pipe_tensor_op_dmma.sum"
INSTRUCTIONS = (HMMA_INST, HFMA2_INST, GMMA_INST, IMMA_INST, DMMA_INST)
PIPE_INST = "sm__inst_executed_pipe_tensor.sum"  # every tensor-pipe instruction, HFMA2.MMA included
TC_PIPE_INST = "sm__inst_executed_pipe_tc.sum"  # Blackwell sm_100/sm_110: tcgen05 (UTC*) instructions
HFMA_THREADS = "sm__sass_thread_inst_executed_op_hfma_pred_on.sum"  # fp16 FMA thread instructions, HFMA2.MMA too
# Other ncu versions' names of the same counts (ncu --query-metrics: ad102 '_v2'; gb100 / gb202 '_subpipe_')
ALIASES = {
    "sm__inst_executed_pipe_tensor_v2.sum": PIPE_INST,
    "sm__inst_executed_pipe_tensor_op_hmma_v2.sum": HMMA_INST,
    "sm__inst_executed_pipe_tensor_op_imma_v2.sum": IMMA_INST,
    "sm__inst_executed_pipe_tensor_subpipe_hmma.sum": HMMA_INST,
    "sm__inst_executed_pipe_tensor_subpipe_hmma_op_hmma.sum": HMMA_INST,
    "sm__inst_executed_pipe_tensor_subpipe_imma.sum": IMMA_INST,
    "sm__inst_executed_pipe_tensor_subpipe_imma_op_imma.sum": IMMA_INST,
    "sm__inst_executed_pipe_tensor_subpipe_dmma.sum": DMMA_INST,
    "sm__pipe_tensor_cycles_active_v2.sum": "sm__pipe_tensor_cycles_active.sum",
    "sm__pipe_tensor_op_hmma_cycles_active_v2.sum": "sm__pipe_tensor_op_hmma_cycles_active.sum",
    "sm__pipe_tensor_subpipe_hmma_cycles_active.sum": "sm__pipe_tensor_op_hmma_cycles_active.sum",
    "sm__pipe_tensor_subpipe_imma_cycles_active.sum": "sm__pipe_tensor_op_imma_cycles_active.sum",
    "sm__pipe_tensor_subpipe_dmma_cycles_active.sum": "sm__pipe_tensor_op_dmma_cycles_active.sum",
}
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
# The FLOP counters (classify/counter_flops.py) come along: verify's rate per kernel.
HOPPER_METRICS = (*INSTRUCTIONS, CYCLES[0], CYCLES[3], DURATION, *FLOP_METRICS)
PRE_HOPPER_METRICS = (HMMA_INST, HFMA2_INST, IMMA_INST, DMMA_INST, CYCLES[1], CYCLES[3], CYCLES[4], DURATION,
                      *FLOP_METRICS)
# Any of these in an export makes it usable for a verdict.
DECISIVE = (*INSTRUCTIONS, PIPE_INST, TC_PIPE_INST, *CYCLES, *NVPROF_UTILISATION, *ALIASES)
# GPUs whose tcgen05 MMAs run on the tc pipe, not the tensor pipe (compute capability 10.x and 11.x)
_TC_PIPE_SINCE, _TC_PIPE_UNTIL = 10.0, 12.0


_COUNTS = frozenset((*DECISIVE, HFMA_THREADS))  # counts launch_verdict reads (_canonical's names)


@dataclass(frozen=True)
class Evidence:
    """The counter verdict of one launch (or of a kernel name, combined over its launches)."""

    tensor_core: str  # "yes" | "no" | "unknown"
    metric: str  # what decided, in words a report can show
    value: float  # matrix instructions (or the utilisation level / cycles that decided)
    detail: str  # the numbers behind it


def impossible(metric: str, value: float) -> bool:
    """Whether a counter's value cannot be one: not a number, or a count below 0."""
    return not math.isfinite(value) or (value < 0 and _smsp_alias(metric) in _COUNTS)


def _smsp_alias(name: str) -> str:
    name = "sm__" + name[len("smsp__"):] if name.startswith("smsp__") else name
    return ALIASES.get(name, name)


def _canonical(metrics: Mapping[str, float | None]) -> dict[str, float]:
    """The metrics under one name each (smsp__ as sm__, other versions' names as ours); two names of one count keep
    the larger (gb202's subpipe_hmma, HMMA/QMMA/OMMA, holds its subpipe_hmma_op_hmma, HMMA)."""
    out: dict[str, float] = {}
    for k, v in metrics.items():
        if v is not None:
            key = _smsp_alias(k)
            out[key] = max(out.get(key, v), v)
    return out


def _n(x: float) -> str:
    return f"{x:,.0f}"


def _cc(cc: str | float | None) -> float | None:
    try:
        return float(cc) if cc not in (None, "") else None
    except (TypeError, ValueError):
        return None


def launch_verdict(metrics: Mapping[str, float | None], cc: str | float | None = None) -> Evidence:
    """The verdict for one kernel launch from its counters (``cc``: the GPU's compute capability, if known). A
    count that is negative or not a number (an edited or damaged export: an HFMA2 count of -1 made every kernel of
    the H200's ncu export a tensor-core one) decides nothing: unknown, naming it."""
    odd = next(((k, v) for k, v in metrics.items() if v is not None and impossible(k, v)), None)
    if odd is not None:
        return Evidence("unknown", odd[0], 0.0, f"{odd[0]} = {odd[1]:g}: a count is never negative or not a number "
                                                "(a damaged export?)")
    m = _canonical(metrics)
    gpu = _cc(cc)
    tc_pipe = gpu is not None and _TC_PIPE_SINCE <= gpu < _TC_PIPE_UNTIL  # tcgen05 MMAs off the tensor pipe
    cycles = {k: m[k] for k in CYCLES if k in m}
    cyc = f"; tensor-pipe cycles {_n(max(cycles.values()))}" if cycles else ""
    util = {k: m[k] for k in NVPROF_UTILISATION if k in m}
    if util:
        k, v = max(util.items(), key=lambda kv: kv[1])
        return Evidence("yes" if v > 0 else "no", k, v, f"{k} = {v:g} (0 = Idle)")
    hmma, hfma2 = m.get(HMMA_INST), m.get(HFMA2_INST)
    other = {k: m[k] for k in (GMMA_INST, IMMA_INST, DMMA_INST) if k in m}
    gmma, imma, dmma = (other.get(k, 0.0) for k in (GMMA_INST, IMMA_INST, DMMA_INST))
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
    pipe, tc = m.get(PIPE_INST), m.get(TC_PIPE_INST)
    if pipe is not None:
        parts.append(f"tensor pipe {_n(pipe)}" + (f" of which HFMA2 {_n(hfma2)}" if hfma2 is not None
                                                   and hmma is None else ""))
    if tc is not None:
        parts.append(f"tc pipe {_n(tc)}")
    counted = f" ({', '.join(parts)})" if parts else ""
    metric = "MMA instructions net of HFMA2"
    if mma > 0:
        return Evidence("yes", metric, mma, f"{_n(mma)} matrix instructions{counted}{cyc}")
    # The tensor pipe's total holds every MMA class and HFMA2.MMA: net of HFMA2 (none on Volta) it is the matrix
    # instructions — all of them, unless tcgen05 MMAs ran on the tc pipe (Blackwell sm_100/sm_110). An HFMA2 or wgmma
    # count places the export on GA100 / GH100, where no tc pipe exists.
    whole = tc == 0 or (gpu is not None and not tc_pipe) or hfma2 is not None or GMMA_INST in other
    pipe_mma = (None if pipe is None else max(pipe - hfma2, 0.0) if hfma2 is not None
                else pipe if pipe == 0 or (gpu is not None and gpu < 7.5) else None)
    if pipe_mma is None and pipe and hfma2 is None and (threads := m.get(HFMA_THREADS)) is not None \
            and pipe > threads:
        return Evidence("yes", metric, pipe - threads,
                        f"at least {_n(pipe - threads)} matrix instructions{counted}, HFMA thread instructions "
                        f"{_n(threads)}: HFMA2.MMA is at most that many of the pipe's{cyc}")
    if pipe_mma:
        # without HFMA2 counted, a pipe count is taken whole only on a GPU named below sm_75 (pipe_mma above)
        why = "" if hfma2 is not None or gpu is None else \
            f": the tensor pipe of sm_{gpu * 10:.0f} runs matrix instructions only"
        return Evidence("yes", metric, pipe_mma, f"{_n(pipe_mma)} matrix instructions{counted}{why}{cyc}")
    if pipe_mma == 0 and whole:
        why = (" — the tensor-pipe work was HFMA2.MMA (fp16x2 FMA), not matrix math" if pipe else
               " — nothing ran on the tensor pipe")
        return Evidence("no", metric, 0.0, f"no matrix instruction{counted}{why}{cyc}")
    pipe_idle = bool(cycles) and not any(cycles.values()) and (not tc_pipe or tc == 0)
    # "no" needs a zero count for every matrix-instruction class this GPU has (or an idle tensor pipe)
    missing = [k for k, since in ((IMMA_INST, 7.2), (DMMA_INST, 8.0), (GMMA_INST, 9.0))
               if k not in other and (gpu is None or gpu >= since)]
    if net is not None and (not missing or pipe_idle):
        why = (" — the tensor-pipe work was HFMA2.MMA (fp16x2 FMA), not matrix math"
               if hfma2 and hmma and hmma <= hfma2 else "")
        return Evidence("no", metric, 0.0, f"no matrix instruction{counted}{why}{cyc}")
    if pipe_idle:
        return Evidence("no", "tensor-pipe cycles", 0.0, f"tensor pipe idle{counted}{cyc}")
    if pipe_mma == 0:
        return Evidence("unknown", PIPE_INST, 0.0,
                        f"no matrix instruction on the tensor pipe{counted}{cyc}, but "
                        + (f"{_n(tc)} tc-pipe (tcgen05) instructions, MMAs and copies alike" if tc else
                           "this GPU runs its tcgen05 MMAs on the tc pipe, which the export does not count" if tc_pipe
                           else "the export names no GPU: on Blackwell (sm_100) tcgen05 MMAs run on the tc pipe, "
                           "which it does not count"))
    if pipe and pipe_mma is None and not (hmma is not None and hmma > 0 and net is None):
        return Evidence("unknown", PIPE_INST, pipe,
                        f"{_n(pipe)} tensor-pipe instructions without the HFMA2 split{counted}{cyc}: HFMA2.MMA "
                        "(plain fp16x2 math) runs on the tensor pipe too, so this does not show matrix instructions")
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


def alike(counted: Iterable[str], timeline: Iterable[tuple[int, str]]) -> dict[str, str]:
    """{a timeline capture's kernel name: the counter tool's name of the same kernel}, for names the two spell apart
    (text/names.spelling: Nsight Compute's 'at::vectorized_elementwise_kernel<8, …' is Nsight Systems'
    'at::native::vectorized_elementwise_kernel<(int)8, …'). timeline: (capture, name) of the captures whose kernels
    the report counts. Only where the spelling is one kernel's: one counted name has it, no timeline capture holds
    two names of it (two namespaces' kernels of one signature, a template's overloads, told apart by their own
    capture), and the two names' template parameters agree (text/names.parameters_agree: ncu's 'T2' for the
    profiler's type, never an 'int' for a 'long'); a name the counter tool spells exactly as the timeline does is
    matched as it is, not here."""
    counted, timeline = set(counted), list(timeline)
    tool: dict[str, list[str]] = defaultdict(list)
    for name in counted:
        tool[spelling(name)].append(name)
    names: dict[tuple[int, str], list[str]] = defaultdict(list)
    for capture, name in timeline:
        if name not in counted:
            names[(capture, spelling(name))].append(name)
    ambiguous = {key for (_capture, key), held in names.items() if len(held) > 1}
    # a capture holding the counted name itself and another of its spelling: two kernels there
    ambiguous |= {key for capture, name in timeline if name in counted for key in [spelling(name)]
                  if (capture, key) in names}
    return {name: tool[key][0] for (_capture, key), held in names.items()
            if len(tool.get(key, ())) == 1 and key not in ambiguous for name in held
            if parameters_agree(template_parameters(name), template_parameters(tool[key][0]))}
