"""Achieved TFLOP/s per precision, against the GPU's peak for it: the FLOPs of the framework ops that launched the
kernels (the shapes a torch.profiler trace recorded with record_shapes=True, or the NVTX ranges of `run --annotate
torch`: classify/flops.py, the store's op_flops;
for JAX, the dots of XLA's GEMM fusions in its HLO dump: classify/xla_flops.py) over those kernels' own time. A
precision's peak is its tensor-core rate where the kernels ran on tensor cores (an fp32 op on tensor cores ran as
TF32), else the CUDA cores' rate (analyses/peaks.toml). Of the whole capture, not a
window: the FLOPs are counted per kernel name, not per step."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from nvprof_wrap.analyses.peaks import Peak, tensor_peak

# a PyTorch job's two ways: the NVTX ranges of `run --annotate torch` carry each op's shapes (readers/_nvtx_flops.py)
HOW = ("record the ops' shapes: a PyTorch job run under `nvprof-wrap run --annotate torch`, or "
       "torch.profiler.profile(record_shapes=True) (a Kineto trace), gives each GEMM's FLOPs")
# a JAX job (XLA's execution ranges or warm-up in the capture) without a dump, and one with a dump whose GEMM kernels
# did not run one by one in the capture (XLA runs a step's kernels inside CUDA graphs, which Nsight Systems records
# as graph launches unless told to trace their nodes: readers/_nsys_graphs.py)
HOW_JAX = ("XLA's HLO dump gives each GEMM fusion's FLOPs: `nvprof-wrap run` records it; else run the job with "
           "XLA_FLAGS='--xla_dump_to=DIR --xla_dump_hlo_as_text' and report --xla-dump DIR")
NONE_IN_DUMP = ("XLA's dump gives the FLOPs of the GEMM kernels it generated, but none of them ran here one by one "
                "for a module the dump holds (inside CUDA graphs they do not, unless Nsight Systems traces the graphs' "
                "nodes: --cuda-graph-trace=node)")


@dataclass(frozen=True)
class Achieved:
    """One precision's FLOPs, its kernels' time, and the rate: JSON "achieved" {precision: this}."""

    flops: float
    seconds: float  # the kernel time of the kernels those ops launched
    tflops: float
    peak_tflops: float | None  # the GPU's rate for it (None: no peak table row, or no such rate)
    tensor_core_share: float  # of its kernel time on tensor cores: from half on, the peak is the tensor cores' rate
    kernels: int  # distinct kernel names
    coverage: float = 0.0  # of the run's kernel time, the share whose ops' FLOPs are known (all precisions)

    @property
    def of_peak(self) -> float | None:
        return self.tflops / self.peak_tflops if self.peak_tflops else None


def ran_as(precision: str, on_tensor_cores: bool, kernel_precision: str | None = None) -> str:
    """The precision an op's FLOPs ran in, where its kernels ran on tensor cores (any of them) or not: TF32 is
    a tensor-core format, so a tf32 op (an f32 dot or convolution that may use TF32: XLA's DEFAULT precision) none
    of whose kernels has a tensor-core instruction ran in fp32 on CUDA cores — cuDNN's direct convolution engine, or
    wgrad_alg0, for a convolution of one input channel. (An op with a tensor-core kernel keeps tf32 for all of its
    kernels: a split-K reduction's share of a GEMM's FLOPs is the GEMM's.) Counted as tf32, a float32 Keras convnet
    on JAX had under half its tf32 time on tensor cores, so no peak for tf32 and no MFU.
    kernel_precision: the kernel's own, where it ran on tensor cores: an fp32 op (PyTorch's float32 matmul with
    TF32 allowed) whose kernel is a TF32 tensor-core one ran as tf32 — counted as fp32, 25 TFLOP/s of an A100's
    cutlass_80_tensorop_s1688gemm kernels read as fp32, over the A100's 19.5 TFLOP/s fp32 peak. Per kernel, not per
    op: a trace's op ('aten::bmm') is every call of it, some of whose kernels ran on CUDA cores (ampere_sgemm_*); the
    op's helper kernels go with its GEMMs (ran_in)."""
    if precision == "fp32" and kernel_precision == "tf32":
        return "tf32"
    return "fp32" if precision == "tf32" and not on_tensor_cores else precision


# rules.toml's rules that name matrix math on CUDA cores (a GEMM, convolution or attention without tensor cores; a
# BLAS/cuDNN legacy engine: GEMV, level-1 BLAS, Winograd, FFT, cuDNN's alg0/alg1 and direct convolution engines —
# wgrad_alg0_engine_NHWC, a Keras convnet's first convolution on JAX, is that convolution's only kernel): a kernel of
# these is its op's own math, never a helper of another kernel's (tests/analyses/test_achieved.py checks each is a
# rule there)
CUDA_CORE_MATRIX = frozenset({"ffma", "simt", "universal-fma", "sgemm", "magma-sgemm", "fermi-complex-gemm",
                              "dgemm-cuda-cores", "scudnn", "mem-eff-attention-simt", "blas-engine"})


class KernelFacts(Protocol):
    """What a report knows of a kernel name that decides the precision its share of its op's FLOPs ran in
    (report/types.KernelRow)."""

    @property
    def name(self) -> str: ...
    @property
    def tensor_core(self) -> str: ...
    @property
    def precision(self) -> str: ...
    @property
    def name_verdict(self) -> str: ...
    @property
    def name_rule(self) -> str: ...


def ran_in(rows: Iterable[tuple[str, str, str, float, int]],
           kernel: Callable[[str], KernelFacts | None]) -> list[tuple[str, str, str, float, int]]:
    """(op, kernel name, the precision it ran its FLOPs in, FLOPs, ns) of each (op, kernel name, the op's precision,
    FLOPs, ns): ran_as's, and a helper's of its op's GEMMs. A helper — a kernel of no matrix math of its own that the
    op launches beside its GEMM (cuDNN's NCHW↔NHWC transforms, a split-K reduction, a workspace's set-up: the name
    says no tensor cores, and no GEMM on CUDA cores) — carries a share of the op's FLOPs at the op's rate; under a
    float32 op whose GEMMs ran as TF32 on tensor cores it ran in tf32 with them. Left fp32, ResNet-50's convolutions
    (PyTorch's float32 with cuDNN's TF32 on an H100) put 7.6 ms of layout transforms at 79 TFLOP/s in fp32: 118.7% of
    the CUDA cores' fp32 peak. An op name is every call of it, and some calls' GEMMs may have run on CUDA cores: a
    helper's row is split between tf32 and fp32 by the op's time on tensor-core GEMMs against its time on CUDA-core
    ones."""
    rows = list(rows)
    facts = {name: kernel(name) for _op, name, _p, _f, _ns in rows}
    on_tc = {op for op, name, _p, _f, _ns in rows if (k := facts[name]) is not None and k.tensor_core == "yes"}
    based: list[tuple[str, str, str, str, float, int]] = []
    tc_ns: dict[tuple[str, str], int] = defaultdict(int)  # (op, its precision): time of its tf32 tensor-core GEMMs
    cc_ns: dict[tuple[str, str], int] = defaultdict(int)  # ... and of its GEMMs on CUDA cores
    for op, name, precision, flops, ns in rows:
        k = facts[name]
        base = ran_as(precision, op in on_tc, k.precision if k is not None and k.tensor_core == "yes" else None)
        based.append((op, name, precision, base, flops, ns))
        if precision == "fp32" and base == "tf32":
            tc_ns[(op, precision)] += ns
        elif precision == "fp32" and k is not None and k.tensor_core == "no" and not _helper(k):
            cc_ns[(op, precision)] += ns
    out: list[tuple[str, str, str, float, int]] = []
    for op, name, precision, base, flops, ns in based:
        k, tc = facts[name], tc_ns.get((op, precision), 0)
        if precision != "fp32" or base != "fp32" or not tc or k is None or not _helper(k):
            out.append((op, name, base, flops, ns))
            continue
        share = tc / (tc + cc_ns.get((op, precision), 0))
        t = round(ns * share)
        out.append((op, name, "tf32", flops * share, t))
        if share < 1:
            out.append((op, name, base, flops - flops * share, ns - t))
    return out


def _helper(k: KernelFacts) -> bool:
    """A kernel of no matrix math of its own: its name says no tensor cores (and nothing said otherwise), and no GEMM
    or convolution on CUDA cores either."""
    return k.tensor_core == "no" and k.name_verdict == "no" and k.name_rule not in CUDA_CORE_MATRIX


def achieved(rows: Iterable[tuple[str, str, float, int]], verdict: Callable[[str], str],
             peak: Peak | None, kernel_ns: int) -> dict[str, Achieved]:
    """rows: (kernel name, precision of its ops, FLOPs, kernel ns); verdict: a kernel name's tensor-core verdict;
    kernel_ns: the run's kernel time (what the FLOPs' coverage is of)."""
    acc: dict[str, tuple[float, int, int, set[str]]] = {}
    for name, precision, flops, ns in rows:
        f, t, tc, names = acc.get(precision, (0.0, 0, 0, set()))
        names.add(name)
        acc[precision] = (f + flops, t + ns, tc + (ns if verdict(name) == "yes" else 0), names)
    out = {}
    covered = sum(t for _f, t, _tc, _n in acc.values()) / kernel_ns if kernel_ns else 0.0
    for precision, (flops, ns, tc_ns, names) in sorted(acc.items(), key=lambda kv: -kv[1][0]):
        if ns <= 0 or flops <= 0:
            continue
        share = tc_ns / ns
        out[precision] = Achieved(round(flops), round(ns / 1e9, 9), round(flops / ns / 1e3, 2),
                                  _peak(peak, precision, share >= 0.5), round(share, 4), len(names),
                                  round(min(covered, 1.0), 4))
    return out


def _peak(peak: Peak | None, precision: str, tc: bool) -> float | None:
    """The peak a precision's rate is set against: the tensor cores' where half or more of its time ran on them —
    tf32's always, a tensor-core format whose FLOPs ran_as and ran_in keep to ops with tensor-core GEMMs (the rest of
    its time: their helpers, cuDNN's layout transforms, say) —, else the CUDA cores' (fp32, fp64; none for the rest)."""
    if peak is None:
        return None
    if tc or precision == "tf32":
        return tensor_peak(peak, "tf32" if precision == "fp32" else precision)
    return peak.rates.get(precision) if precision in ("fp32", "fp64") else None


@dataclass(frozen=True)
class KernelRate:
    """One kernel name's achieved rate: the FLOPs of the ops that launched it over its time under them."""

    name: str
    precision: str
    flops: float
    seconds: float
    tflops: float


def own_flops(rows: Iterable[tuple[str, str, str, float, int]],
              kernel: Callable[[str], KernelFacts | None]) -> dict[tuple[str, str], tuple[float, int]]:
    """(kernel name, precision) → (FLOPs, ns) of each kernel of matrix math (rows as ran_in's): the FLOPs of its own
    math. A helper (_helper: a layout transform, a split-K reduction, a workspace's set-up) does none of its op's
    math: it gets no entry, and the share of the op's FLOPs its time took (readers/_kineto_flops.py splits an op's
    FLOPs among its kernels by time) goes to the op's math kernels of that precision, by their time — a GEMM's rate
    is then its op's FLOPs over the GEMMs' own time. Split among all of an op's kernels, a float32 Keras convnet's
    cuDNN workspace set-up kernel read 20.4 TFLOP/s and its NCHW→NHWC transform 3.3 TFLOP/s on an H100: rates of math
    they never did. Kernels with FLOPs of their own (XLA's GEMM fusions, from its dump) keep them. An op of only
    helpers in a precision (its math not seen) gives nothing there."""
    rows = list(rows)
    facts = {name: kernel(name) for _op, name, _p, _f, _ns in rows}
    helper = {name for name, k in facts.items() if k is not None and _helper(k)}
    lent: dict[tuple[str, str], float] = defaultdict(float)  # (op, precision ran in): its helpers' FLOPs
    math_ns: dict[tuple[str, str], int] = defaultdict(int)  # ... and its math kernels' time
    for op, name, precision, flops, ns in rows:
        if name in helper:
            lent[(op, precision)] += flops
        else:
            math_ns[(op, precision)] += ns
    acc: dict[tuple[str, str], tuple[float, int]] = {}
    for op, name, precision, flops, ns in rows:
        if name in helper:
            continue
        whole = math_ns[(op, precision)]
        f, t = acc.get((name, precision), (0.0, 0))
        acc[(name, precision)] = (f + flops + (lent.get((op, precision), 0.0) * ns / whole if whole else 0.0), t + ns)
    return acc


def per_kernel(rows: Iterable[tuple[str, str, str, float, int]], kernel: Callable[[str], KernelFacts | None],
               top: int = 20) -> tuple[KernelRate, ...]:
    """The ``top`` kernel names of matrix math by the FLOPs of their own math (own_flops; rows as ran_in's), each
    with its rate; a name under ops of several precisions once per precision."""
    acc = own_flops(rows, kernel)
    best = sorted(((k, v) for k, v in acc.items() if v[1] > 0 and v[0] > 0), key=lambda kv: -kv[1][0])[:top]
    return tuple(KernelRate(n, p, round(f), round(t / 1e9, 9), round(f / t / 1e3, 2)) for (n, p), (f, t) in best)


@dataclass(frozen=True)
class Mfu:
    """Model FLOPs utilisation: the FLOPs of a step's matrix ops (GEMM, attention, convolution: what MFU counts) over
    the mean step's wall time (analyses/budget.py), against the peak of the precision that holds most of them.
    JSON "mfu"."""

    flops_per_step: float
    step_s: float
    precision: str
    peak_tflops: float
    mfu: float
    # the FLOPs counted: None, the capture's over its steps; else the program whose executions are the steps (a JAX
    # job's 'jit_update#14586'), its own FLOPs over its executions — work between them (an accuracy pass) left out
    program: str | None = None


def mfu(found: dict[str, Achieved], steps: int, step_s: float, step_flops: float | None = None,
        program: str | None = None) -> Mfu | None:
    """From achieved's rows over ``steps`` steps and the mean step; None without a peak for the main precision.
    step_flops: the FLOPs of the steps' own program (``program``) in the capture, counted instead of every FLOP."""
    if not found or steps <= 0 or step_s <= 0 or step_flops is not None and step_flops <= 0:
        return None
    precision, main = max(found.items(), key=lambda kv: kv[1].flops)
    if not main.peak_tflops:
        return None
    per_step = (sum(a.flops for a in found.values()) if step_flops is None else step_flops) / steps
    return Mfu(round(per_step), step_s, precision, main.peak_tflops,
               round(per_step / step_s / 1e12 / main.peak_tflops, 4), program if step_flops is not None else None)
