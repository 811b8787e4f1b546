"""One verdict per kernel on one GPU, from every kind of evidence, ranked in one place.

Rank: hardware counters (Nsight Compute matrix instructions) > the GPU itself (no tensor cores before Volta) >
compiled code (PTX of the kernel) > name rules > the hardware's sampled tensor-pipe activity (nsys GPU metrics, NVML
GPM: only for a kernel the names leave unknown; classify/hardware.py) > unknown. A name that claims what its GPU
cannot run (bf16 before Ampere, fp8 before Ada, fp4 or tcgen05 before Blackwell, any tensor-core kernel before
Volta) is flagged: either the capture's device record or the name rule is wrong, and the report says so instead of
trusting either silently.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict

from nvprof_wrap.classify import gpus
from nvprof_wrap.model import Classification

# The first compute capability with each tensor-core precision (CUDA programming guide, PTX ISA).
_PRECISION_SINCE = {"fp16": 7.0, "fp16/bf16": 7.0, "int8": 7.2, "bf16": 8.0, "tf32": 8.0, "fp64": 8.0,
                    "fp32 (3xTF32)": 8.0, "fp8": 8.9, "fp6": 10.0, "fp4": 10.0}
_BLACKWELL_ONLY = re.compile(r"tcgen05|(?<![a-z])umma(?![a-z])|^nvjet_sm1\d\d|sm1\d\d[af]?$", re.IGNORECASE)
FIRST_TENSOR_CORE_CC = 7.0
# fp64 tensor cores (DMMA) exist on the datacenter chips only: GA100 (sm_80), GH100 (sm_90), GB100/GB110 (sm_100+);
# not on sm_86/87/89 or the sm_120 consumer Blackwell (A100/H100 whitepapers; PTX mma .f64). Elsewhere fp64 work is
# DFMA on CUDA cores, whatever its name.
_FP64 = re.compile(r"(?<![a-z])double(?![a-z])|(?<![a-z0-9])f64|fp64"
                   r"|(?<![a-z0-9])[dz](?:gemm|trsm|trsv|syrk|trmm|gemv)", re.IGNORECASE)
# Any other data type in the name: a kernel that takes floats beside a double scalar may be TF32 or fp16 math.
_NOT_FP64 = re.compile(r"float|half|bf16|bfloat|(?<![a-z0-9])(?:f16|f32|tf32|fp8|fp16|fp32|e4m3|e5m2|int8|i8|s8|u8)"
                       r"(?![a-z0-9])|__nv_fp|cucomplex(?!double)", re.IGNORECASE)


def has_dmma(cc: float) -> bool:
    """Whether a GPU of compute capability ``cc`` has fp64 tensor cores (DMMA)."""
    return round(cc * 10) in (80, 90) or 100 <= round(cc * 10) < 120


def _fp64_only(c: Classification) -> bool:
    """A name the rules leave unknown whose only data type is fp64 (rules.toml: fp64-undecided and fp64 GEMMs of
    the matrix family). A cut name is not: what is hidden may name another type."""
    return (c.tensor_core == "unknown" and c.precision == "fp64" and c.rule != "cut-name"
            and _FP64.search(c.name) is not None and _NOT_FP64.search(c.name) is None)


@dataclass(frozen=True)
class Verdict:
    """What a report shows for one kernel name on one device."""

    tensor_core: str  # "yes" | "no" | "unknown"
    precision: str
    family: str
    reason: str
    rule: str
    evidence: str  # "counters" | "device" | "compiled code" | "name" | "hardware"
    name_verdict: str
    counter_verdict: str | None = None
    counter_detail: str | None = None
    flag: str = ""  # the name claims something this GPU cannot run


class _FromName(TypedDict):
    """What every verdict of one kernel name on one GPU carries, whichever evidence decided it."""

    precision: str
    family: str
    name_verdict: str
    counter_verdict: str | None
    flag: str


def _sm(cc: float) -> str:
    return f"sm_{int(cc)}{round(cc * 10) % 10}"


def _flag(c: Classification, cc: float | None) -> str:
    if cc is None or c.tensor_core != "yes":
        return ""
    if cc < FIRST_TENSOR_CORE_CC:
        return f"the name says tensor cores, but the GPU ({_sm(cc)}) has none"
    since = _PRECISION_SINCE.get(c.precision)
    if since is not None and cc < since:
        return f"the name says {c.precision} tensor-core math, which needs sm_{int(since * 10)}+; the GPU is {_sm(cc)}"
    if cc < 10.0 and _BLACKWELL_ONLY.search(c.name):
        return f"the name is a Blackwell (sm_100+) kernel; the GPU is {_sm(cc)}"
    return ""


def gpu_facts(cc: float | None, name: str | None) -> tuple[float | None, bool]:
    """(compute capability, has tensor cores) from what a capture recorded: its compute capability, else what
    the GPU's name says (classify/gpus.toml); GTX 16xx (Turing TU116/TU117) has sm_75 but no tensor cores."""
    known = gpus.lookup(name)
    if cc is None and known:
        cc = known[0]
    has = cc is None or cc >= FIRST_TENSOR_CORE_CC
    if known and not known[1]:
        has = False
    return cc, has


def decide(c: Classification, cc: float | None = None, counter: tuple[str, str] | None = None,
           static: tuple[str, str] | None = None, gpu_name: str | None = None,
           hardware: tuple[str, str] | None = None, static_precision: str = "") -> Verdict:
    """The verdict for kernel name ``c`` on a GPU of compute capability ``cc`` named ``gpu_name`` (either may be
    None), given counter, compiled-code and sampled-hardware evidence as (tensor_core, detail); the compiled code's
    precision (XLA's HLO names it: classify/xla_hlo.py) replaces the name's when compiled code decides."""
    cc, has_tensor_cores = gpu_facts(cc, gpu_name)
    base: _FromName = {"precision": c.precision, "family": c.family, "name_verdict": c.tensor_core,
                "counter_verdict": counter[0] if counter else None,
                "flag": _flag(c, cc) or ("the name says tensor cores, but this GPU has none"
                                      if not has_tensor_cores and c.tensor_core == "yes" else "")}
    if counter and counter[0] in ("yes", "no"):
        return Verdict(counter[0], reason=c.reason, rule=c.rule, evidence="counters", counter_detail=counter[1],
                       **base)
    if not has_tensor_cores:
        # cc is known here: a GPU without tensor cores is one of a known compute capability (gpu_facts)
        sm = _sm(cc) if cc is not None else "sm_?"
        gpu = f"{gpu_name} ({sm})" if gpu_name and cc is not None else (gpu_name or sm)
        why = ("they arrived with Volta (sm_70)" if cc is not None and cc < FIRST_TENSOR_CORE_CC
               else "its chip (Turing TU116/TU117) has none")
        return Verdict("no", reason=f"the GPU, {gpu}, has no tensor cores: {why}", rule="device-no-tensor-cores",
                       evidence="device", counter_detail=counter[1] if counter else None, **base)
    if static and static[0] in ("yes", "no"):
        if static_precision:
            base["precision"] = static_precision
        return Verdict(static[0], reason=c.reason, rule=c.rule, evidence="compiled code", counter_detail=static[1],
                       **base)
    if cc is not None and not has_dmma(cc) and _fp64_only(c):
        gpu = f"{gpu_name} ({_sm(cc)})" if gpu_name else _sm(cc)
        return Verdict("no", reason=(f"no: fp64 on CUDA cores — the GPU, {gpu}, has no fp64 tensor cores (DMMA: "
                                     "A100, H100/H200 and B200-class GPUs only)"),
                       rule="device-no-fp64-tensor-cores", evidence="device", counter_detail=None, **base)
    # a graph launch's kernels are many and unseen (readers/_nsys_graphs.py): the samples of its time cannot
    # speak for each of them
    if c.tensor_core == "unknown" and hardware and hardware[0] in ("yes", "no") and c.rule != "cuda-graph-launch":
        return Verdict(hardware[0], reason=c.reason, rule=c.rule, evidence="hardware", counter_detail=hardware[1],
                       **base)
    detail = counter[1] if counter else (static[1] if static else hardware[1] if hardware else None)
    return Verdict(c.tensor_core, reason=c.reason, rule=c.rule, evidence="name", counter_detail=detail, **base)
