"""Frozen dataclasses: the contract between readers, the store, the classifier and the report.

Readers never hand over per-launch objects: a capture becomes aggregates per
(process, device, kernel name) and per (process, device, memory operation), so memory
does not grow with the number of launches.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

# The name a CUDA graph launch gets where a capture has the launch but not its kernels (readers/_nsys_graphs.py):
# one kernel of unknown kind wherever kernels count, decided by nothing but a capture of its kernels.
CUDA_GRAPH_KERNEL = "CUDA graph launch (kernels not traced one by one)"
# The name of a kernel an Nsight Systems export names by StringIds id 0 — nsys' own first string ('GpuMetrics',
# '[Unknown]', 'QnxKernelTrace'), never a kernel's: the name was lost (its import reported errors: "StringStorage …
# GetKeyForExteriorId", H200, a Keras-on-JAX job under nsys 2025.3).
LOST_NAME_KERNEL = "(a kernel whose name nsys lost)"

# The op of kernels launched outside any NVTX / profiler range.
NO_RANGE = "(no NVTX range)"


@dataclass(frozen=True)
class KernelAgg:
    """All launches of one kernel name in one process on one device."""

    pid: int | None
    device_id: int | None
    name: str
    launches: int
    total_ns: int | None  # None: the format records launches but no durations (e.g. ncu metrics only)
    min_ns: int | None = None
    max_ns: int | None = None


@dataclass(frozen=True)
class MemAgg:
    """Memory copies or sets of one kind and direction in one process on one device."""

    pid: int | None
    device_id: int | None
    kind: str  # "memcpy" | "memset"
    direction: str  # "HtoD" | "DtoH" | "DtoD" | "HtoH" | "PtoP" | "" (memset) | "other"
    count: int
    total_ns: int
    bytes: int | None = None


@dataclass(frozen=True)
class Activity:
    """When a device was busy, per process: first start, last end and the union of busy intervals."""

    pid: int | None
    device_id: int | None
    first_ns: int
    last_ns: int
    busy_ns: int


@dataclass(frozen=True)
class Gpu:
    """One GPU, the package's one record of it: a device a capture recorded (the readers), one nvidia-smi lists on
    this machine (launch/gpus.py; the run manifest writes device_id as "index"), the device a report row names
    (report/types.py GpuRow). What its source does not say is None."""

    device_id: int
    name: str | None = None
    cc_major: int | None = None
    cc_minor: int | None = None
    sm_count: int | None = None
    driver: str | None = None  # the driver's version, where nvidia-smi gave it

    @classmethod
    def listed(cls, index: int, name: str, compute_capability: str, driver: str) -> Gpu:
        """A GPU as nvidia-smi lists it and the run manifest records it: compute capability "9.0" (one that does
        not read as major.minor is unknown)."""
        major, _, minor = compute_capability.strip().partition(".")
        if not (major.isdigit() and (minor.isdigit() or not minor)):
            return cls(index, name, driver=driver)
        return cls(index, name, int(major), int(minor) if minor else None, driver=driver)

    def as_listed(self) -> dict[str, object]:
        """``listed``'s keys and values: a machine's GPU in the run manifest and in `doctor`'s facts."""
        return {"index": self.device_id, "name": self.name or "", "compute_capability": self.compute_capability or "",
                "driver": self.driver or ""}

    @property
    def compute_capability(self) -> str | None:
        """The compute capability as text, "9.0"; None when unknown."""
        if self.cc_major is None:
            return None
        return f"{self.cc_major}.{self.cc_minor or 0}"

    @property
    def cc(self) -> float | None:
        """The compute capability as a number (9.0); None when unknown."""
        return self.cc_major + (self.cc_minor or 0) / 10 if self.cc_major is not None else None


@dataclass(frozen=True)
class Process:
    pid: int
    name: str | None = None
    rank: int | None = None
    host: str | None = None


@dataclass(frozen=True)
class CounterVerdict:
    """Hardware-counter evidence for one kernel name (from Nsight Compute)."""

    name: str
    tensor_core: str  # "yes" | "no" | "unknown"
    launches: int
    metric: str
    value: float
    detail: str


@dataclass(frozen=True)
class OpAgg:
    """Kernels attributed to a framework op or layer through NVTX ranges on the launching thread.

    op: the innermost enclosing range (e.g. 'aten::addmm'); scope: the innermost layer range that --annotate
    added ('keras:dense_1 (Dense)'), else the outermost range.
    """

    pid: int | None
    scope: str
    op: str
    name: str
    launches: int
    total_ns: int


@dataclass(frozen=True)
class OpFlops:
    """The FLOPs of the framework ops that launched one kernel name, from the shapes the profiler recorded
    (classify/flops.py), and that kernel name's launches and time under those ops: flops / total_ns is the rate the
    kernel achieved. Each op's FLOPs counted once, split among its kernels by their time (readers/_kineto_flops.py).

    op: the innermost op with FLOPs that launched it ('aten::mm'); precision: of the op's operands ('bf16', 'fp16',
    'fp32', 'fp8', …, 'mixed', 'unknown'), as recorded — an fp32 op may run its GEMM in TF32."""

    pid: int | None
    op: str
    name: str
    precision: str
    flops: float  # a share of the ops' FLOPs: fractional where an op launched several kernels
    launches: int
    total_ns: int


@dataclass(frozen=True)
class HwDevice:
    """The hardware's tensor-pipe activity on one device over a capture (timeline/hardware.py): percentages of SM
    time, as the source measures them (nsys GPU metrics' "Tensor Active", NVML GPM's ANY_TENSOR_UTIL)."""

    device_id: int
    source: str  # "nsys gpu metrics" | "nvml gpm"
    interval_ns: int  # one sample's length
    samples: int
    busy_samples: int  # taken while launches covered at least half the interval
    sm_busy: float | None  # mean SM activity (%) over the busy samples
    tensor_busy: float | None  # mean tensor-pipe activity (%) over the busy samples


@dataclass(frozen=True)
class HwKernel:
    """Tensor-pipe activity of the samples one kernel name filled alone (its launches covering most of them)."""

    device_id: int
    name: str
    source: str
    interval_ns: int
    samples: int
    tensor: float  # mean %
    hmma: float | None = None  # GPM tells the pipes apart: half-precision MMA (fp16, bf16, tf32, fp8)
    imma: float | None = None  # integer MMA
    dfma: float | None = None  # fp64 MMA


@dataclass(frozen=True)
class HwPoint:
    """One bucket of the hardware timeline: mean SM and tensor activity (%) from t_ns for dt_ns."""

    device_id: int
    t_ns: int
    dt_ns: int
    sm: float
    tensor: float


@dataclass(frozen=True)
class StepAgg:
    """One step (or time bucket) of one process: its span on the host's clock, what the GPU did that started in
    it, and the host's time inside CUDA calls (timeline/series.py)."""

    pid: int | None
    step: int
    start_ns: int
    end_ns: int
    launches: int = 0
    kernel_ns: int = 0
    copy_ns: int = 0  # memcpy and memset
    # union of the GPU's intervals inside the step: those that started in it, and what those of earlier steps ran on
    # into it (the sum of parts_ns' GPU parts)
    busy_ns: int = 0
    compute_busy_ns: int = 0  # the same union without the communication kernels (NCCL): busy - this is exposed comm
    api_ns: tuple[tuple[str, int], ...] = ()  # (kind, union of that kind's calls inside the step): text/cuda_calls
    api_union_ns: int | None = None  # union of every recorded CUDA call inside the step; None: not all recorded
    # the step's time budget: (part, ns) in timeline/series_tables.PARTS order, each part's own time (where parts
    # overlap, the earlier part's): GPU busy by kind, then the host's CUDA calls while the GPU was idle; the rest of
    # the step is outside CUDA calls. Parts with no time are left out.
    parts_ns: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class StepKernel:
    """Launches of one kernel name that started in one step of one process."""

    pid: int | None
    step: int
    name: str
    launches: int
    total_ns: int


@dataclass(frozen=True)
class StepKernels:
    """A series' kernels per (process, step, name) — StepKernel's rows — held as columns, one tuple each: a long
    series has tens of thousands of rows (60 time buckets x ~1,000 names at 1M launches), which as an object each
    cost a few µs apiece at every stage (made, sent back from the series' worker, checked, stored). names: the
    distinct names, each once, in the order the rows first name them; name: each row's index into names."""

    names: tuple[str, ...] = ()
    pid: tuple[int | None, ...] = ()
    step: tuple[int, ...] = ()
    name: tuple[int, ...] = ()
    launches: tuple[int, ...] = ()
    total_ns: tuple[int, ...] = ()

    @classmethod
    def of(cls, rows: Iterable[StepKernel]) -> StepKernels:
        """The columns of StepKernel rows, in their order."""
        index: dict[str, int] = {}
        pid, step, name, launches, total_ns = [], [], [], [], []
        for r in rows:
            pid.append(r.pid)
            step.append(r.step)
            name.append(index.setdefault(r.name, len(index)))
            launches.append(r.launches)
            total_ns.append(r.total_ns)
        return cls(tuple(index), tuple(pid), tuple(step), tuple(name), tuple(launches), tuple(total_ns))

    def __len__(self) -> int:
        return len(self.step)

    def rows(self) -> Iterator[StepKernel]:
        """The rows as StepKernel records, one at a time."""
        return map(StepKernel, self.pid, self.step, map(self.names.__getitem__, self.name), self.launches,
                   self.total_ns)

    __iter__ = rows  # `for k in series.kernels` gives StepKernel records, as when they were held one each

    def named(self) -> Iterator[tuple[int | None, int, str, int, int]]:
        """The rows as (pid, step, name, launches, total_ns) tuples: the store's columns, no record made."""
        return zip(self.pid, self.step, map(self.names.__getitem__, self.name), self.launches, self.total_ns)


@dataclass(frozen=True)
class StepCollective:
    """The nth (from 0) communication kernel (NCCL …) that started in one step of one process, and when (the
    capture's own clock: nsys's is from its session's start): timeline/collectives.py."""

    pid: int | None
    step: int
    nth: int
    start_ns: int
    name: str


PROGRAMS = " + "  # between the programs of StepSeries.program ('jit_train_step#7953 + jit_train_step#241347')


@dataclass(frozen=True)
class StepSeries:
    """A capture's per-step series: steps as the capture marks them, else fixed time buckets."""

    kind: str  # "steps" | "buckets"
    source: str  # "step marks" | "optimizer steps" | "keras batches" | "time"
    bucket_ns: int | None
    host: str  # which CUDA calls were recorded: "all" | "launch, sync, alloc" | "launch" | "none"
    steps: tuple[StepAgg, ...]
    kernels: StepKernels  # per (process, step, name)
    folded: int = 1  # steps per row: consecutive steps merged when there are more than timeline/series.MAX_STEPS
    collectives: tuple[StepCollective, ...] = ()  # the communication kernels' starts per step: stragglers
    marked: int = 0  # the steps marked, one by one (folded rows hold fewer rows); 0: as many as rows
    # the programs XLA executed for the steps, 'module#program_id', several joined by PROGRAMS (timeline/window.Marked)
    program: str | None = None


@dataclass(frozen=True)
class WarmupAgg:
    """Launches of one kernel name a capture ran before its steady state — before the first execution of the
    program a JAX job runs most (XLA compiles and autotunes there): left out of every share (readers/_xla_warmup.py)."""

    pid: int | None
    device_id: int | None
    name: str
    launches: int
    total_ns: int | None
    program: str  # the program whose first execution ends the warm-up ('jit_update')


@dataclass(frozen=True)
class GraphNodeAgg:
    """Launches of one kernel name at one place of a CUDA graph XLA ran (its command buffer), per process and
    graph (readers/_xla_graphs.py): the node of the graph's own (slot; child None), or a node of a graph nested in
    the node after slot (child: that kernel node's id) — the graph cuBLAS's and cuDNN's calls were captured into.
    With XLA's dump the node's command, and so the custom call a cuBLAS kernel ran for, is known
    (classify/xla_flops.py per_graph_node)."""

    pid: int | None
    module: str  # XLA's execution range the graph was launched in ('XlaModule:#hlo_module=jit_update,program_id=…#')
    graph: int
    slot: int
    child: int | None
    name: str
    launches: int
    total_ns: int


@dataclass(frozen=True)
class Capture:
    """What a reader extracted from one profiler file."""

    path: str
    format: str
    kernels: tuple[KernelAgg, ...]
    memops: tuple[MemAgg, ...] = ()
    activity: tuple[Activity, ...] = ()
    devices: tuple[Gpu, ...] = ()
    processes: tuple[Process, ...] = ()
    counters: tuple[CounterVerdict, ...] = ()
    ops: tuple[OpAgg, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    partial: bool = False
    # Which job it is of, where the capture records it (nsys: the session's start; our CUPTI tracer: the process's
    # start, end, command line and parent): captures of different jobs summed in one report are said to be so.
    started_ns: int | None = None  # UTC, ns since the epoch
    ended_ns: int | None = None
    command: str | None = None
    ppid: int | None = None
    # The hardware's own tensor-pipe activity, where the capture (nsys GPU metrics) or its run (NVML GPM) has it.
    hw_devices: tuple[HwDevice, ...] = ()
    hw_kernels: tuple[HwKernel, ...] = ()
    hw_series: tuple[HwPoint, ...] = ()
    series: StepSeries | None = None  # per step (or time bucket): timeline/series.py
    op_flops: tuple[OpFlops, ...] = ()  # FLOPs per kernel name from the ops' recorded shapes (torch.profiler)
    warmup: tuple[WarmupAgg, ...] = ()  # what ran before the steady state, left out of kernels (a JAX job's compile)
    graph_nodes: tuple[GraphNodeAgg, ...] = ()  # where in XLA's CUDA graphs each kernel ran (nsys node traces)


@dataclass(frozen=True)
class Classification:
    name: str
    tensor_core: str  # "yes" | "no" | "unknown"
    # "fp16", "bf16", "tf32", "fp32", "fp64", "fp8", "int8", "fp16/bf16" or "" when the name says nothing
    precision: str
    family: str
    reason: str
    rule: str
    evidence: str = "name"  # "counters" > "sass" > "name"


@dataclass(frozen=True)
class EpochMetrics:
    """One epoch (or logging interval) of a training job, from its metrics JSONL or its Keras log lines."""

    epoch: int
    loss: float | None = None
    accuracy: float | None = None
    val_loss: float | None = None
    val_accuracy: float | None = None


@dataclass(frozen=True)
class HealthVerdict:
    """Did training work? (report/health.py)"""

    status: str  # healthy | no-learning | collapsed | nan | diverged | unknown
    findings: tuple[str, ...]
    epochs: int  # the records judged: epochs, or logged steps where unit is "step"
    final: EpochMetrics | None
    unit: str = "epoch"  # "step": from per-step loss lines (nanoGPT's "iter N: loss L"), no epochs in the job's output
    numerics: NumericsVerdict | None = None  # what the job's numerics records say (`run --numerics`), where it has some

    @property
    def counted(self) -> str:
        return counted(self.epochs, self.unit)


@dataclass(frozen=True)
class NumericsBad:
    """The first tensor that went wrong (analyses/numerics.py): its step, layer, which tensor and how."""

    step: int
    layer: str
    tensor: str  # activation | gradient | weight | update | optimizer_state | loss
    kind: str  # nonfinite | overflow | underflow | collapsed


@dataclass(frozen=True)
class NumericsEvidence:
    """One numerics record on the way to the first bad tensor, with what it shows in words."""

    step: int
    phase: str  # forward | backward | update | loss
    layer: str
    tensor: str
    name: str
    dtype: str
    kind: str  # underflow | large_update | growth | near_max | last_finite | overflow | nonfinite | collapsed | spread
    max_abs: float | None
    zeros: float
    subnormal: float
    nonfinite: int
    ratio: float | None
    text: str


@dataclass(frozen=True)
class LossScaleSummary:
    """A loss-scaled run's scale over its steps (GradScaler, LossScaleOptimizer)."""

    first: float
    last: float
    min: float
    decreases: int  # times the scale fell (a scaler halves it on each overflow)
    skipped: int  # steps whose update the scaler skipped
    first_skipped: int | None
    steps: int  # loss records with a scale
    collapsed: bool  # the scale fell to 1 or below, or the scaler skipped the last steps it recorded
    history: tuple[tuple[int, float], ...]  # (step, scale) where the scale changed, the first ones
    gradient_underflow: float | None  # mean share of a float16 gradient's nonzero values below the smallest normal
    text: str


@dataclass(frozen=True)
class NumericsVerdict:
    """Why training broke, from the numbers themselves (analyses/numerics.py, docs/numerics.md)."""

    status: str  # healthy | flagged (something to watch, nothing broke) | broken
    first_bad: NumericsBad | None
    evidence: tuple[NumericsEvidence, ...]
    cause: str | None  # one line: the chain from the root to the first bad tensor and on
    fix: tuple[str, ...]  # changes that can work for that cause, in the job's framework's words
    loss_scale: LossScaleSummary | None
    notes: tuple[str, ...]  # what else the records show (flagged tensors, argmax of NaN rows)
    framework: str | None
    policy: str | None
    processes: int
    steps: int  # the last step recorded + 1
    records: int
    damaged: int  # lines skipped: not a record of the format
    dropped: int  # records the recorder did not write (its budget) or the reader did not keep (its limits)


def counted(n: int, unit: str) -> str:
    """What a health verdict judged: '20 epochs', '1,001 steps logged'."""
    return f"{n:,} {unit}{'s' * (n != 1)}" + (" logged" if unit != "epoch" else "")


def merge_kernels(aggs: Iterable[KernelAgg]) -> tuple[KernelAgg, ...]:
    """Combine aggregates with the same (pid, device, name): demangling can map two raw names to one."""
    merged: dict[tuple[int | None, int | None, str], KernelAgg] = {}
    for a in aggs:
        key = (a.pid, a.device_id, a.name)
        b = merged.get(key)
        if b is None:
            merged[key] = a
            continue
        merged[key] = KernelAgg(
            a.pid, a.device_id, a.name, a.launches + b.launches,
            add_ns(a.total_ns, b.total_ns), _pick(min, a.min_ns, b.min_ns), _pick(max, a.max_ns, b.max_ns))
    return tuple(merged.values())


def merge_memops(aggs: Iterable[MemAgg]) -> tuple[MemAgg, ...]:
    """Combine memory-operation aggregates with the same (pid, device, kind, direction): several CUPTI copy
    kinds map to one direction (HtoD and HtoA are both host-to-device)."""
    merged: dict[tuple[int | None, int | None, str, str], MemAgg] = {}
    for a in aggs:
        key = (a.pid, a.device_id, a.kind, a.direction)
        b = merged.get(key)
        merged[key] = a if b is None else MemAgg(a.pid, a.device_id, a.kind, a.direction, a.count + b.count,
                                                 a.total_ns + b.total_ns, add_ns(a.bytes, b.bytes))
    return tuple(merged.values())


def add_ns(a: int | None, b: int | None) -> int | None:
    """Two totals that may be unknown (None) added: None only where both are."""
    return None if a is None and b is None else (a or 0) + (b or 0)


def _pick(f: Callable[[list[int]], int], a: int | None, b: int | None) -> int | None:
    vals = [v for v in (a, b) if v is not None]
    return f(vals) if vals else None
