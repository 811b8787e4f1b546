"""The "and if not, why?" part: short, evidence-based hints from a report's numbers and its GPUs. Pure: no I/O.

Advice names only settings that reach tensor cores on the report's GPUs (``report.gpus``: the compute capability the
capture recorded, else what the GPU's name says, classify/gpus.toml):

- no tensor cores (every GPU before Volta, Turing's TU116/TU117 — GTX 16xx —, Jetson TX1/Nano/TX2): one line says
  so, and nothing else is advised for tensor cores, since no setting reaches them;
- Volta and Turing (sm_70, sm_72, sm_75): fp16 is their only floating-point tensor-core precision: mixed precision
  with fp16; TF32 and bf16 (both from Ampere, sm_80) are not advised, and bf16 time is pointed at;
- Ampere and newer (sm_80+): TF32, fp16 or bf16;
- a GPU of unknown capability (the capture names none, or a name the table does not know): the advice says which
  GPUs each setting needs — unless a kernel's name shows code built for sm_80 or newer (``ampere_*``, ``sm90_*``,
  ``*_sm80``, ``cutlass_80_*``, ``nvjet_*``), which runs there only: then the GPU is Ampere or newer.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from nvprof_wrap.analyses import peaks
from nvprof_wrap.analyses.budget import TimeBudget
from nvprof_wrap.analyses.ceiling import Factor
from nvprof_wrap.analyses.communication import EXPOSED_DOMINATES
from nvprof_wrap.report import GpuRow, GroupRow, KernelRow, Report, SplitRow
from nvprof_wrap.report.series import steady
from nvprof_wrap.text.units import duration as _ns
from nvprof_wrap.text.units import pct_whole as _pct

# Rules of the classifier whose "no" means matrix math on CUDA cores (rules.toml ids).
_CUDA_CORE_MATRIX = {"ffma", "simt", "sgemm", "scudnn"}
_MIN_SHARE = 0.05  # below 5% of kernel time a finding is not worth a line
_TF32_SINCE = 8.0  # TF32 and bf16 tensor cores: Ampere (classify/rank.py _PRECISION_SINCE)
# Code built for sm_80 or newer: it runs on such a GPU only. Looked for in a name's first 400 characters (where the
# arch is named: 'sm80_xmma_…', '…_dropout_sm80(…', 'cutlass::Kernel2<cutlass_80_simt_…'): the cost stays bounded on
# names of 100,000 characters
_SM80_CODE = re.compile(r"^(?:ampere|nvjet)_|sm(?<![a-z0-9]sm)_?(?:8\d|9\d|1[0-2]\d)[a-f]?(?!\d)"
                        r"|cutlass_(?:8\d|9\d|1[0-2]\d)_", re.IGNORECASE)
_ARCH_WITHIN = 400
_IDLE = 0.8  # GPU idle in the steady state at or above this: host-bound (a capture without a time budget)
_HOST_SHARE = 0.5  # GPU idle (the host busy elsewhere) at or above this share of the mean step's budget: host-bound
_MIN_BUSY_NS = 50_000_000  # without steps, less GPU work than this is too little to call host-bound
# A GPU busy over at least this share of the time from its first kernel to its last was not held up by the host,
# whatever the host's step ranges say: an asynchronous loop queues its kernels, which then run after the step that
# launched them (20 bf16 8192³ matmuls on the H200: each ProfilerStep 37 µs on the host, the GPU busy 99.9% of 28 ms)
_KEPT_BUSY = 0.5
_COMM_SHARE = 0.2  # communication at or above this share of GPU time: a line
_FP16_ADVICE = "Keras mixed_float16; PyTorch torch.autocast('cuda', dtype=torch.float16) with a GradScaler"


def hints(report: Report) -> tuple[str, ...]:
    """The "if not, why?" lines of a report, from its numbers and its GPUs only."""
    kernels, split = list(report.kernels), list(report.split)
    total = sum(k.total_ns for k in kernels) or 1
    out: list[str] = []
    gpus = _job_gpus(report)
    without = [g for g in gpus if not g.has_tensor_cores]
    tc_gpus = [g for g in gpus if g.has_tensor_cores]
    if without:
        out.append(_no_tensor_cores(without, others=bool(tc_gpus)))
    flagged = [k for k in kernels if getattr(k, "flag", "")]
    if flagged:
        out.append(f"{len(flagged)} kernel name(s) claim what the GPU cannot run (e.g. {flagged[0].short}: "
                   f"{flagged[0].flag}): the capture's device record or the name is wrong — check which GPU ran it.")
    if report.verdict.launches and not report.verdict.kernel_ns:
        return tuple(out)  # no kernel time (none recorded, or none usable): no share of it to speak of
    gen = _generation(report, gpus, tc_gpus)
    if gen != "none":
        out += _matrix_hints(kernels, total, gen, tc_gpus)
    ops = sum(s.total_ns for s in split) or 1
    copies = sum(s.total_ns for s in split if s.kind == "memcpy") / ops
    if copies >= 0.5:
        out.append(f"{_pct(copies)} of GPU time is memory copies, mostly {_top_copy(split)}: tensor cores cannot "
                   "speed that up; keep data on the GPU or make the copies asynchronous (pinned memory).")
    out += [line for line in (_host_bound(report), _communication(report, split), _stragglers(report),
                               _ranks(report)) if line]
    return tuple(out)


def _ranks(report: Report) -> str | None:
    """Ranks that stand out (report/ranks.py): one rank slower, off tensor cores or in another precision holds
    every other rank back at each collective."""
    ranked = report.ranks
    found = ranked.outliers if ranked else ()
    if not found or ranked is None:
        return None
    ranks = sorted({o.rank for o in found})
    shown = ", ".join(str(r) for r in ranks[:8]) + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")
    return (f"{len(ranks)} of {len(ranked.rows)} ranks stand out ({'rank' if len(ranks) == 1 else 'ranks'} "
            f"{shown}): {found[0].message}" + ("; the others under Ranks" if len(found) > 1 else "") +
            " — in a synchronous job every rank waits for the slowest at each collective.")


def host_bound(report: Report) -> tuple[float, str] | None:
    """(the GPU's idle share, what it was measured over) where the job's steady state shows it host-bound: the GPU
    idle at least _HOST_SHARE of the mean step's time budget (analyses/budget.py: steps, or time buckets with at
    least _MIN_BUSY_NS of GPU work), else — a capture without a budget — idle at least _IDLE of the median step or
    of the span from the first kernel to the last. None: not host-bound, or too little to tell."""
    series, b = report.series, report.time_budget
    spans = [d for d in report.devices if d.idle_share is not None and d.busy_ns]
    if b is not None and series is not None and (series.kind == "steps" or _busy_enough(spans)):
        if b.idle_s < _HOST_SHARE * b.step_s or _kept_busy(spans):
            return None
        return b.idle_s / b.step_s, _mean_step(b)
    s = steady(series)
    if s is not None and series is not None and series.kind == "steps":
        unit = "step" if s.first == s.last else f"steps {s.first}-{s.last}"
        if s.idle_share < _IDLE or _kept_busy(spans):
            return None
        return s.idle_share, f"the median step ({unit})"
    if not _busy_enough(spans):
        return None
    idle = max(d.idle_share or 0.0 for d in spans)  # every span has its idle share
    return (idle, "the time from its first kernel to its last") if idle >= _IDLE else None


def _busy_enough(spans: list[GroupRow]) -> bool:
    return bool(spans) and sum(d.busy_ns or 0 for d in spans) >= _MIN_BUSY_NS


def _mean_step(b: TimeBudget) -> str:
    slow = (f", {b.slow_left_out} slow {'one' if b.slow_left_out == 1 else 'ones'} left out"
            if b.slow_left_out else "")
    return (f"the mean step (steps {b.first}-{b.last}{slow})" if b.kind == "steps"
            else f"the mean of {b.steps} time buckets with GPU work{slow}")


def _kept_busy(spans: list[GroupRow]) -> bool:
    """Whether the GPUs were busy over _KEPT_BUSY of their spans (first kernel to last), all together."""
    span = sum(d.span_ns or 0 for d in spans)
    return bool(span) and sum(d.busy_ns or 0 for d in spans) / span >= _KEPT_BUSY


# what the host did while the GPU sat idle (a time budget's idle parts) → the advice that fits it
_HOST_DID = {
    "outside_cuda": "outside CUDA calls (Python, the framework, data loading)",
    "api_launch": "launching kernels (many small ones: fewer, larger kernels or a CUDA graph cut it)",
    "api_sync": "in synchronising copies and waits (.item(), .cpu(), blocking copies)",
    "api_alloc": "allocating and freeing GPU memory",
    "api_other": "in other CUDA calls",
    "idle_unknown": "on what the capture does not show (not every CUDA call was recorded)",
}


def _host_bound(report: Report) -> str | None:
    found = host_bound(report)
    if found is None:
        return None
    idle, over = found
    within = f", within {report.scope.option}" if report.scope else ""
    b = report.time_budget
    if b is not None and over.startswith("the mean"):
        parts = sorted((p for p in b.parts if not p.gpu), key=lambda p: -p.seconds)
        did = " and ".join(f"{_ns(round(p.seconds * 1e9))} {_HOST_DID.get(p.name, p.label)}" for p in parts[:2]
                           if p.share >= 0.05)
        ceiling = _ceiling(report)
        bound = (f" ({ceiling.precision} can make it at most {ceiling.factor:.2f}× faster)"
                 if ceiling is not None else "")
        what = "step" if b.kind == "steps" else "run"
        return (f"Host-bound: in {over}{within} of {_ns(round(b.step_s * 1e9))} the GPU is idle "
                f"{_ns(round(b.idle_s * 1e9))} ({_pct(idle)}): the host spends {did} — it sets the pace, so faster "
                f"kernels, fp16 included, will not make the {what} much faster{bound}.")
    s = steady(report.series) if over.startswith("the median step") else None
    if s is not None:
        outside = f"; {_ns(s.outside_api_ns)} of it outside any CUDA call" if s.outside_api_ns is not None else ""
        said = (f"the median step ({over[len('the median step ('):-1]}{within}) takes {_ns(s.duration_ns)} and the "
                f"GPU is busy {_ns(s.gpu_busy_ns)} of it ({_pct(1 - idle)}){outside}")
    else:
        busy = sum(d.busy_ns or 0 for d in report.devices)
        said = f"the GPU was busy {_ns(busy)} and idle {_pct(idle)} of {over} (start-up excluded{within})"
    return (f"Host-bound: {said} — the host (Python, data loading, framework overhead) sets the pace, so faster "
            "kernels — fp16 included — will not make it faster.")


def _ceiling(report: Report) -> Factor | None:
    """The bf16 (else fp16) speed-up ceiling, where it is of the report's GPUs (every one that model, with tensor
    cores): a ceiling is never quoted for a GPU it was not worked out for."""
    c = report.ceiling
    if c is None or not report.gpus or not all(g.has_tensor_cores for g in report.gpus):
        return None
    if any((p := peaks.lookup(g.gpu.name or "")) is None or p.name != c.info.gpu for g in report.gpus):
        return None
    return c.info.of("bf16") or c.info.of("fp16")


# the communication families (classify/rules.toml) as the line names them
_COMM_NAMES = {"nccl": "NCCL", "deepep": "DeepEP", "nvshmem": "NVSHMEM"}
# the advice for exposed communication, by what it is: gradients' collectives (NCCL) or expert parallelism's token
# exchange (DeepEP's dispatch and combine), which no DDP or FSDP setting touches
_BUCKETS = ("bucket gradients and overlap them with the backward pass (DDP's bucket_cap_mb, FSDP's prefetch), or "
            "communicate less often (gradient accumulation)")
_EXPERTS = ("overlap the experts' dispatch and combine with compute (DeepEP's hook-based overlap, two micro-batches "
            "in flight), or send fewer tokens across GPUs")


def _communication(report: Report, split: Sequence[SplitRow]) -> str | None:
    """The communication kernels' share of GPU time, named by what they are (NCCL, DeepEP, NVSHMEM); per step and
    process, how much of it the GPU spent on nothing else (exposed). The advice only where the evidence supports
    it: exposed communication a large part of the step (EXPOSED_DOMINATES), or its overlap not measured (no
    steps); for what the communication is (NCCL's collectives: gradient buckets; DeepEP's alone: its overlap)."""
    ops = sum(x.total_ns for x in split) or 1
    comm = sum(x.total_ns for x in split if x.kind == "communication")
    if comm / ops < _COMM_SHARE:
        return None
    by_family = Counter[str]()
    for k in report.kernels:
        if k.family in _COMM_NAMES:
            by_family[k.family] += k.total_ns
    names = [_COMM_NAMES[f] for f, _ns_ in by_family.most_common()] or ["NCCL"]
    advice = _BUCKETS if "nccl" in by_family or not by_family else _EXPERTS
    nothing = "no bucket or precision change advised" if advice is _BUCKETS else "no change advised"
    line = f"{_pct(comm / ops)} of GPU time is communication ({', '.join(names)} kernels)"
    series = report.series
    s = steady(series)
    o = report.communication.overlap if report.communication is not None else None
    if o is not None and series is not None and series.kind == "steps":
        line += (f"; in the mean step {_ns(o.comm_ns)} of it per process, {_ns(o.exposed_ns)} exposed (the GPU doing "
                 f"nothing else: {_pct(o.exposed_step_share)} of the step), {_ns(max(o.comm_ns - o.exposed_ns, 0))} "
                 "overlapped with compute")
        waited = _waited_for(report)
        if waited:
            return line + waited
        if o.exposed_step_share < EXPOSED_DOMINATES:
            return line + (f": under {_pct(EXPOSED_DOMINATES)} of the step, exposed communication is not what the "
                           f"step waits on most — {nothing}.")
    elif s is not None and series is not None and s.comm_ns and s.exposed_comm_ns is not None:
        unit = "step" if series.kind == "steps" else f"{_ns((series.bucket_s or 0) * 1e9)} bucket with GPU work"
        line += (f"; in the median {unit} {_ns(s.comm_ns)} of it, {_ns(s.exposed_comm_ns)} exposed (the GPU doing "
                 f"nothing else), {_ns(max(s.comm_ns - s.exposed_comm_ns, 0))} overlapped with compute")
    elif series is not None and series.kind == "steps" and (rows := [r for r in series.rows if r.comm_ns]):
        # too few steps for a steady state (a trace of one step): what the steps measured, all of them
        each = [r.comm_ns // max(r.processes, 1) for r in rows]
        exposed, held = sum(r.exposed_comm_ns for r in rows), sum(r.duration_ns for r in rows)
        line += (f"; in the capture's {'one step' if len(rows) == 1 else f'{len(rows)} steps'} "
                 f"{_ns(sum(each))} of it per process, {_ns(exposed)} exposed (the GPU doing nothing else: "
                 f"{_pct(exposed / held if held else 0)} of the time), {_ns(max(sum(each) - exposed, 0))} overlapped "
                 "with compute")
        if held and exposed / held < EXPOSED_DOMINATES:
            return line + (f": under {_pct(EXPOSED_DOMINATES)} of the time, exposed communication is not what the "
                           f"steps wait on most — {nothing}.")
    return line + f": {advice}."


def _waited_for(report: Report) -> str | None:
    """Where a rank arrived late at the collectives by at least half the exposed time a step, that wait — not the
    buckets or the precision — is the evidence: the advice is about that rank."""
    c = report.communication
    if c is None or c.overlap is None or not c.straggler_ranks:
        return None
    top = c.straggler_ranks[0]
    if top.late_ns / max(top.steps, 1) < 0.5 * c.overlap.exposed_ns:
        return None
    return (f": much of it waiting for rank {top.rank}, late at the collectives — make that rank keep up before "
            "changing buckets or precision.")


def _stragglers(report: Report) -> str | None:
    """The rank the others waited for at the collectives (analyses/communication.py), with its own cause."""
    c = report.communication
    if c is None or not c.straggler_ranks:
        return None
    top = c.straggler_ranks[0]
    cause = next((x.cause for x in c.stragglers if x.rank == top.rank and x.cause), "")
    return (f"rank {top.rank} started {top.collectives} collective(s) last, in {top.steps} steady step(s), "
            f"{_ns(top.late_ns)} after the first rank in all"
            + (f" — {cause}" if cause else "") + "; the other ranks waited for it inside their collectives.")


def _job_gpus(report: Report) -> list[GpuRow]:
    """The GPUs that ran the report's kernels: of those the captures name, the devices with kernels — a trace that
    lists the machine's 8 GPUs of which the job used one is of that one —, or all when the kernels' devices are not
    recorded (console summaries)."""
    ran = {d.key for d in report.devices}
    return [g for g in report.gpus if str(g.device_id) in ran] or list(report.gpus)


def _generation(report: Report, gpus: list[GpuRow], tc_gpus: list[GpuRow]) -> str:
    """What the GPUs that may have tensor cores can run there: "none" (no GPU has any), "volta" (fp16 only: sm_70
    to sm_75), "ampere" (TF32, fp16, bf16: sm_80+) or "unknown"."""
    if gpus and not tc_gpus:
        return "none"
    ccs = [g.cc for g in tc_gpus if g.cc is not None]
    if ccs and len(ccs) == len(tc_gpus):
        return "ampere" if min(ccs) >= _TF32_SINCE else "volta"
    if any(_SM80_CODE.search(k.name[:_ARCH_WITHIN]) for k in report.kernels):
        return "ampere"
    return "unknown"


def _matrix_hints(kernels: list[KernelRow], total: int, gen: str, tc_gpus: list[GpuRow]) -> list[str]:
    """fp32 and 16-bit matrix math off the tensor cores: what reaches them on these GPUs."""
    out = []
    fp32 = [k for k in kernels if k.tensor_core == "no" and k.precision == "fp32" and k.name_rule in _CUDA_CORE_MATRIX]
    share = sum(k.total_ns for k in fp32) / total
    if share >= _MIN_SHARE:
        head = f"{_pct(share)} of kernel time is fp32 matrix math on CUDA cores (e.g. {fp32[0].short}): "
        if gen == "volta":
            unnamed = any(g.name is None and g.cc == 7.5 for g in tc_gpus)  # a GTX 16xx would be told by its name
            out.append(head + f"on {_these(tc_gpus)} only fp16 reaches the tensor cores (TF32 needs compute "
                       f"capability 8.0+, and so does bf16): use mixed precision with fp16 — {_FP16_ADVICE}"
                       + (" (unless the GPU is a GTX 16xx: the capture does not name it, and Turing's TU116/TU117 "
                          "chips have no tensor cores)" if unnamed else "") + ".")
        elif gen == "ampere":
            out.append(head + "TF32 is off. PyTorch: torch.backends.cuda.matmul.allow_tf32 = True; Keras/any "
                       "framework: mixed precision (mixed_float16 or mixed_bfloat16) puts these GEMMs on tensor cores.")
        else:
            out.append(head + "the capture does not say what this GPU can run. On Ampere or newer (sm_80+) TF32 is "
                       "off — PyTorch: torch.backends.cuda.matmul.allow_tf32 = True; from Volta (sm_70) mixed "
                       "precision (mixed_float16; mixed_bfloat16 from Ampere) puts these GEMMs on tensor cores; "
                       "GPUs before Volta have none.")
    blas = _CUDA_CORE_MATRIX | {"blas-engine", "blas-helper"}
    half = [k for k in kernels if k.tensor_core == "no" and k.precision in ("fp16", "bf16", "fp16/bf16")
            and k.name_rule in blas and "gemm" in k.name.lower() + k.family
            and not (gen == "volta" and k.precision == "bf16")]
    share = sum(k.total_ns for k in half) / total
    if share >= _MIN_SHARE:
        out.append(f"{_pct(share)} of kernel time is 16-bit matrix math that is not on tensor cores "
                   f"(e.g. {half[0].short}): matrix-vector products, K=1 or shapes not multiple of 8 fall back to "
                   "CUDA cores — '16-bit in the name' is not 'tensor core'.")
    bf16 = [k for k in kernels if k.precision == "bf16"]
    share = sum(k.total_ns for k in bf16) / total
    if gen == "volta" and share >= _MIN_SHARE:
        top = max(bf16, key=lambda k: k.total_ns)
        out.append(f"{_pct(share)} of kernel time is bf16 (e.g. {top.short}): {_these(tc_gpus)} "
                   f"{'has' if len(tc_gpus) == 1 else 'have'} no bf16 tensor cores (bf16 needs compute capability "
                   f"8.0+), so bf16 matrix math runs on CUDA cores there: use fp16 instead — {_FP16_ADVICE}.")
    return out


def _no_tensor_cores(gpus: list[GpuRow], others: bool) -> str:
    """The one line for GPUs without tensor cores: no setting reaches them."""
    turing = all(g.cc is not None and g.cc >= 7.0 for g in gpus)  # sm_75 without them: TU116/TU117
    why = (" — its Turing chip (TU116/TU117, as in the GTX 16xx) was built without them" if turing and len(gpus) == 1
           else " — their Turing chips (TU116/TU117, as in the GTX 16xx) were built without them" if turing else "")
    need = ("the other GPUs of the job have them" if others else
            "a GPU with tensor cores (Volta or newer, not a GTX 16xx) is needed" if turing else
            "a Volta or newer GPU is needed")
    subject = _these(gpus)
    return (f"{subject[0].upper()}{subject[1:]} {'has' if len(gpus) == 1 else 'have'} no tensor cores{why}: "
            f"no setting uses them{' there' if others else ''}; {need}.")


def _these(gpus: list[GpuRow]) -> str:
    """'this GPU (Tesla K80, sm_37)', 'these GPUs (2× Tesla K80, sm_37)'."""
    counts = Counter(_label(g) for g in gpus)
    labels = "; ".join(f"{n}× {label}" if n > 1 else label for label, n in counts.items())
    return f"this GPU ({labels})" if len(gpus) == 1 else f"these GPUs ({labels})"


def _label(g: GpuRow) -> str:
    """'Tesla K80, sm_37'; 'sm_75' (a capture that records no name); 'GPU 0' (neither)."""
    sm = f"sm_{int(g.cc)}{round(g.cc * 10) % 10}" if g.cc is not None else None
    return ", ".join(x for x in (g.name, sm) if x) or f"GPU {g.device_id}"


def _top_copy(split: Sequence[SplitRow]) -> str:
    copies = [s for s in split if s.kind == "memcpy"]
    return max(copies, key=lambda s: s.total_ns).direction if copies else "copies"
