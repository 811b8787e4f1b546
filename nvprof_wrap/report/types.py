"""The one report model: typed, frozen records that every command and the Python API return (report/build.py makes
them from the run store). The Report holds facts, not text: precision mixes, copy directions and training health are
fields; renderers turn them into words. Only the verdict sentence, the headline (report/headline.py) and the hints
(report/hints.py) are text, written once for every renderer.

Its JSON (``--format json``, ``Report.to_dict()``, docs/json.md) is its serialisation: each field says its key and
shape once (``field(metadata=js(...))``, report/fields.py), report/serialise.py walks them, and the JSON Schema,
nvprof_wrap/json.schema.json, is made from the same. ``str(report)``, ``report._repr_html_()`` (notebooks) and
``report.to_pandas()`` render through the renderers registered in ``DISPLAY`` (renderers/__init__.py fills it).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from nvprof_wrap.analyses.achieved import Achieved, KernelRate, Mfu
from nvprof_wrap.analyses.budget import TimeBudget
from nvprof_wrap.analyses.ceiling import Ceiling
from nvprof_wrap.analyses.communication import Communication
from nvprof_wrap.analyses.warmup import Warmup
from nvprof_wrap.classify import RULES_VERSION
from nvprof_wrap.errors import NvprofWrapError
from nvprof_wrap.model import Gpu, HealthVerdict
from nvprof_wrap.report.counter_check import CounterCheck  # verify's counters against the names
from nvprof_wrap.report.fields import js
from nvprof_wrap.report.ranks import Ranks  # the per-rank records, beside what builds them
from nvprof_wrap.report.series import Series  # the per-step ones
from nvprof_wrap.text.names import shorten

MEM_ORDER = ("HtoD", "DtoH", "DtoD", "PtoP", "HtoH", "other")
# Kinds of GPU time in the split, in the order reports show them.
SPLIT_KINDS = ("tensor_core", "cuda_core", "unknown", "communication", "memcpy", "memset")
# What each kind of GPU time is called in every renderer and in JSON (time_split "category").
SPLIT_LABELS = {"tensor_core": "tensor-core kernels", "cuda_core": "other kernels (CUDA cores)",
                "unknown": "kernels of unknown kind",
                "communication": "communication kernels (NCCL, DeepEP, NVSHMEM)",
                "memcpy": "memcpy", "memset": "memset"}

# A "yes" reads as good only when tensor cores ran at least this share of the kernel time (Report.tone)
GOOD_SHARE = 0.5

# Renderers register themselves here (report → text is the renderers' job; this layer only calls them).
DISPLAY: dict[str, Callable[[Report], Any]] = {}


def json_id(key: str) -> int | str | None:
    """A group's key as JSON writes it: a device or process id as a number, null where the capture records none."""
    if key == "None":
        return None
    try:
        return int(key)
    except ValueError:
        return key


@dataclass(frozen=True)
class KernelRow:
    name: str
    launches: int
    total_ns: int
    mean_ns: float = field(metadata=js(digits=1))
    share: float = field(metadata=js(digits=6))  # of kernel time
    tensor_core: str
    precision: str
    family: str
    reason: str
    evidence: str  # counters | device | compiled code | name
    name_verdict: str
    counter_verdict: str | None = None
    counter_detail: str | None = None
    name_rule: str = field(default="", metadata=js(omit=True))
    # the name claims what its GPU cannot run (classify/rank.py)
    flag: str = field(default="", metadata=js(empty_none=True))

    @property
    def short(self) -> str:
        return shorten(self.name, 48)


@dataclass(frozen=True)
class SplitRow:
    """One kind of GPU time: kind in SPLIT_KINDS; direction (HtoD, DtoH, …) for memcpy, else ''."""

    JSON_ORDER: ClassVar[tuple[str, ...]] = ("category", "kind", "direction", "total_ns", "share", "count")

    kind: str
    direction: str = field(metadata=js(empty_none=True))
    total_ns: int
    share: float = field(metadata=js(digits=6))  # of GPU operation time (kernels, copies, memsets)
    count: int

    @property
    def category(self) -> str:
        """What every renderer calls it: 'memcpy HtoD', 'tensor-core kernels'."""
        return f"{SPLIT_LABELS[self.kind]} {self.direction}" if self.direction else SPLIT_LABELS[self.kind]


@dataclass(frozen=True)
class PrecisionShare:
    precision: str  # "unstated" when the names do not say
    share: float = field(metadata=js(digits=6))  # of the owner's kernel time


@dataclass(frozen=True)
class GpuRow:
    """A GPU of the report (model.Gpu, as the capture recorded it) and what the report concludes of it: its compute
    capability (the capture's, else the one its name tells) and whether it has tensor cores (classify/gpus.py)."""

    JSON_ORDER: ClassVar[tuple[str, ...]] = ("device_id", "name", "compute_capability", "has_tensor_cores")
    gpu: Gpu = field(metadata=js(omit=True))  # JSON: its device_id and name (COMPUTED, report/serialise.py)
    cc: float | None = field(metadata=js("compute_capability"))
    has_tensor_cores: bool

    @property
    def device_id(self) -> int:
        return self.gpu.device_id

    @property
    def name(self) -> str | None:
        return self.gpu.name


@dataclass(frozen=True)
class GroupRow:
    """Per device or per process: where kernel time went and how busy the GPU was."""

    key: str = field(metadata=js(convert=json_id))  # JSON: named by its owner, "device_id" or "pid"
    label: str
    launches: int
    kernel_ns: int
    tc_ns: int = field(metadata=js("tensor_core_ns"))
    tc_share: float = field(metadata=js("tensor_core_share", digits=6))  # of this group's kernel time
    precisions: tuple[str, ...] = field(metadata=js("tensor_core_precisions"))  # tensor-core ones, most time first
    busy_ns: int | None
    span_ns: int | None
    idle_share: float | None = field(metadata=js(digits=6))  # of the span


@dataclass(frozen=True)
class OpRow:
    """Kernels attributed to one framework op / layer (an NVTX or profiler range) and what ran on tensor cores."""

    op: str
    kernels: int
    launches: int
    total_ns: int
    share: float = field(metadata=js(digits=6))  # of attributed kernel time
    tc_share: float = field(metadata=js("tensor_core_share", digits=6))  # of this op's kernel time
    precisions: tuple[PrecisionShare, ...]  # of all its kernels, by time, most first
    # The hardware's tensor-pipe activity (% of SM time) of its kernels, weighted by their time in it; None where
    # less than half of its kernel time has samples (docs/hardware-truth.md)
    hw_tensor: float | None = field(default=None, metadata=js("hardware_tensor_pct"))


@dataclass(frozen=True)
class Verdict:
    """JSON: its fields are the report's own keys (Report.verdict is flattened)."""

    tensor_cores: str = field(metadata=js("verdict"))  # "yes" | "no" | "unknown" | "no-kernels"
    message: str
    tc_kernels: int = field(metadata=js("tensor_core_kernels"))
    kernels: int = field(metadata=js("distinct_kernels"))
    launches: int
    kernel_ns: int = field(metadata=js("kernel_time_ns"))
    tc_ns: int = field(metadata=js(omit=True))
    unknown_ns: int = field(metadata=js(omit=True))
    tc_fraction: float = field(metadata=js("tensor_core_time_fraction", digits=6))
    precisions: tuple[str, ...] = field(metadata=js("tensor_core_precisions"))


@dataclass(frozen=True)
class Source:
    path: str
    format: str
    partial: bool
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Scope:
    """The part of each capture's timeline a report covers (``--window`` / ``--steps``); a report without one covers
    whole captures. Every share and idle figure of a scoped report is of what falls inside it."""

    JSON_ORDER: ClassVar[tuple[str, ...]] = ("kind", "start", "end", "option", "description")

    kind: str  # "window": seconds from each capture's first GPU activity | "steps": steps start .. end-1
    start: float
    end: float

    @property
    def option(self) -> str:
        """The command-line option that gives this scope."""
        return f"--window {self.start:g}:{self.end:g}" if self.kind == "window" else \
            f"--steps {int(self.start)}:{int(self.end)}"


@dataclass(frozen=True)
class CaptureScope:
    """The window `run --capture-steps A:B` / `--capture-after S [--capture-for S]` recorded: the captures hold nothing
    from outside it (the profiler was idle there). From the run's manifest and its windows.jsonl."""

    kind: str  # "steps" | "seconds"
    start: float  # steps: A; seconds: from the job's start
    end: float | None  # steps: B (exclusive); seconds: when it closed (None: at the job's end)
    option: str  # the options of `run` that asked for it
    processes: int = 0  # processes that said anything of their window (0: no windows.jsonl)
    opened: int = 0  # of them, those whose window opened
    open_step: int | None = None  # the step it opened at (the first step at or after A that a process began)
    close_step: int | None = None  # the step that closed it (None: it closed when the job ended)
    ended_inside: int = 0  # processes that ended inside their window
    last_step: int | None = None  # the last step a process of the job began
    job_steps: int | None = None  # the steps the job ran (all of them, not the window's)
    source: str | None = None  # what counted the steps: "step marks" | "optimizer steps" | "keras batches"
    problems: tuple[str, ...] = ()
    # the longest a process was held opening and closing its window, in seconds (None: its processes did not say):
    # what the profiler cost at the window's edges, on the job's own thread for a steps window
    held_s: float | None = None
    # processes whose profiler stopped beside the job (nsys: cuProfilerStop on a helper thread): what it recorded
    # while stopping, from step B on, is cut from the report; stop_s, the longest such a stop took
    stopped_aside: int = 0
    stop_s: float | None = None
    # processes from which nsys' CUPTI was detached once it had stopped (nsys records nothing after its stop; left
    # attached, it slowed the job's later steps: docs/backends.md)
    profiler_detached: int = 0


@dataclass(frozen=True)
class JobEnd:
    """How the run's job ended, from its manifest (run/manifest.py)."""

    JSON_ORDER: ClassVar[tuple[str, ...]] = ("status", "exit_code", "signal", "signal_number", "forwarded_signal",
                                             "steps", "steps_source", "rank", "message")

    # "succeeded" | "failed" (exit code N) | "killed" (by a signal) | "running" (the manifest says so and the run still
    # holds its folder's lock) | "unrecorded" (no end in the manifest, and no run holds the folder)
    status: str
    exit_code: int | None  # as a shell reports it: 128+N for signal N
    signal_number: int | None  # the signal that ended the job (killed)
    signal: str | None  # its name, e.g. SIGKILL
    # a signal nvprof-wrap received and passed on to the job (Ctrl-C: SIGINT)
    forwarded: str | None = field(metadata=js("forwarded_signal"))
    steps: int | None  # training steps recorded before the end; None when unknown
    steps_source: str | None  # "capture" (its 'step N' ranges) | "metrics.jsonl"
    rank: int | None = None  # of a distributed run: the rank whose end this is (the first that did not succeed)
    # of a run whose end was not recorded: whether a process still holds its folder's lock (None: no lock file, a run
    # of an earlier version; or it cannot be told); wrapper_pid: the nvprof-wrap process that ran it
    lock_held: bool | None = field(default=None, metadata=js(omit=True))
    wrapper_pid: int | None = field(default=None, metadata=js(omit=True))


@dataclass(frozen=True)
class JobGroup:
    """Captures of one job, among captures of different jobs summed in one report (report/jobs.py)."""

    JSON_ORDER: ClassVar[tuple[str, ...]] = ("command", "started_ns", "label", "captures")

    paths: tuple[str, ...] = field(metadata=js("captures"))
    command: str | None  # where the captures record it
    started_ns: int | None  # UTC, ns since the epoch
    label: str  # the run folder, or the first capture's path


@dataclass(frozen=True)
class RunInfo:
    """What a report knows of the run it is of, for a page's header: the run folder or capture file given, the
    command (the run's manifest, else the captures' one command), when it started (UTC) and the GPU driver (the
    manifest's nvidia-smi list). What is not known is None."""

    JSON_ORDER: ClassVar[tuple[str, ...]] = ("run", "command", "started_ns", "driver")

    run: str
    command: str | None
    started_ns: int | None  # UTC, ns since the epoch
    driver: str | None


@dataclass(frozen=True)
class HardwareRow:
    """Per device and source: the hardware's own tensor-pipe activity beside the names' tensor-core share."""

    device_id: int
    source: str  # "nsys gpu metrics" | "nvml gpm"
    interval_ns: int
    samples: int
    busy_samples: int  # taken while kernels ran (launches covering at least half the sample)
    sm_busy: float | None  # mean SM activity, % of SM time, over the busy samples
    tensor_busy: float | None  # mean tensor-pipe activity, % of SM time, over the busy samples
    # the device's kernel time on tensor-core kernels by the verdicts (0-1)
    names_tc_share: float = field(metadata=js(digits=6))
    disagreements: int  # kernels whose samples contradict their name's yes/no (hardware_checks)
    # of the device's kernel time, the share in kernels that never filled a sample alone (shorter than a sample,
    # or always beside others): the hardware says nothing about them one by one
    unsampled_share: float = 0.0


@dataclass(frozen=True)
class HardwareCheck:
    """A kernel the names call yes or no whose samples say otherwise (classify/hardware.py disagrees)."""

    name: str
    device_id: int
    name_verdict: str
    tensor: float  # mean tensor-pipe activity (%) over the samples it filled alone
    samples: int
    interval_ns: int
    source: str
    message: str


@dataclass(frozen=True)
class HardwarePoint:
    """The hardware timeline, one bucket: mean SM and tensor activity (%) from t_s (seconds after the first
    sample of its device) for dt_s."""

    device_id: int
    t_s: float
    dt_s: float
    sm: float
    tensor: float


@dataclass(frozen=True)
class Ceilings:
    """The speed-up ceilings (analyses/ceiling.py) as the JSON has them: {precision: factor}, and the details."""

    factors: dict[str, float] = field(metadata=js("speedup_ceiling"))
    info: Ceiling = field(metadata=js("speedup_ceiling_info"))

    @classmethod
    def of(cls, c: Ceiling | None) -> Ceilings | None:
        return None if c is None else cls({f.precision: f.factor for f in c.factors}, c)


@dataclass(frozen=True)
class Report:
    """What every command and the Python API return; its JSON is report/serialise.py's walk of it (docs/json.md)."""

    JSON_ORDER: ClassVar[tuple[str, ...]] = (
        "schema", "rules_version", "tensor_cores_used", "verdict", "verdict_tone", "message", "hints",
        "tensor_core_time_fraction", "tensor_core_precisions", "kernel_time_ns", "launches", "distinct_kernels",
        "tensor_core_kernels", "time_split", "time_budget", "speedup_ceiling",
        "speedup_ceiling_info", "achieved", "achieved_kernels", "mfu", "warmup", "xla_modules", "xla_without_thunks",
        "memcpy", "devices", "processes", "kernels", "disagreements", "counter_check", "ops",
        "scopes", "sources", "skipped", "gpus", "health", "scope", "capture", "headline", "job", "different_jobs",
        "hardware", "hardware_checks", "hardware_series", "series", "ranks", "rank_spread", "rank_outliers",
        "communication", "series_info", "run_info")

    verdict: Verdict = field(metadata=js(flatten=True))
    split: tuple[SplitRow, ...] = field(metadata=js("time_split"))
    devices: tuple[GroupRow, ...] = field(metadata=js(rename={"key": "device_id"}))
    processes: tuple[GroupRow, ...] = field(metadata=js(rename={"key": "pid"}))
    kernels: tuple[KernelRow, ...]
    sources: tuple[Source, ...]
    skipped: tuple[tuple[str, str], ...] = field(default=(), metadata=js(pairs=("path", "why")))
    disagreements: tuple[KernelRow, ...] = ()
    ops: tuple[OpRow, ...] = ()
    scopes: tuple[OpRow, ...] = ()
    hints: tuple[str, ...] = ()
    gpus: tuple[GpuRow, ...] = ()
    health: HealthVerdict | None = None
    rules_version: str = RULES_VERSION
    scope: Scope | None = None
    job: JobEnd | None = None  # of a run folder (its manifest): how the job ended
    different_jobs: tuple[JobGroup, ...] = ()  # captures of different jobs summed: one group per job
    hardware: tuple[HardwareRow, ...] = ()  # the hardware's tensor-pipe activity, where it was sampled
    hardware_checks: tuple[HardwareCheck, ...] = ()
    hardware_series: tuple[HardwarePoint, ...] = ()
    capture: CaptureScope | None = None  # of a run that recorded only a window of its job
    # per step (or time bucket): report/series.py; JSON: its rows under "series", the rest under "series_info"
    series: Series | None = field(default=None, metadata=js(flatten=True,
                                                            when_none={"series": [], "series_info": None}))
    # of a distributed run, per rank: report/ranks.py; JSON: "ranks", "rank_spread", "rank_outliers"
    ranks: Ranks | None = field(default=None, metadata=js(
        flatten=True, when_none={"ranks": [], "rank_spread": [], "rank_outliers": []}))
    # a mean steady-state step's wall time in parts that add up to it: analyses/budget.py
    time_budget: TimeBudget | None = None
    run_info: RunInfo | None = None  # the run, its command, start and driver: a page's header
    # per target precision, the most a precision change can speed the step up (analyses/ceiling.py): JSON
    # "speedup_ceiling" {precision: factor}, the rest under "speedup_ceiling_info"
    ceiling: Ceilings | None = field(default=None, metadata=js(
        flatten=True, when_none={"speedup_ceiling": None, "speedup_ceiling_info": None}))
    # achieved TFLOP/s per precision against the GPU's peak, where the capture recorded the ops' shapes or XLA's
    # dump gave its kernels' FLOPs (analyses/achieved.py); None: no FLOPs in the run
    achieved: dict[str, Achieved] | None = None
    mfu: Mfu | None = None  # model FLOPs utilisation of the mean step, where FLOPs, steps and a peak are known
    achieved_kernels: tuple[KernelRate, ...] = ()  # the kernels of matrix math with the most FLOPs, each at its rate
    # a JAX job's compilation and autotuning, left out of everything above (analyses/warmup.py); JSON "warmup",
    # absent where nothing was left out
    warmup: Warmup | None = field(default=None, metadata=js(absent_none=True))
    # how many modules of optimized HLO the XLA dump folders it was given hold (their GEMM fusions' FLOPs count in
    # "achieved": classify/xla_flops.py); JSON "xla_modules", absent without a dump folder
    xla_modules: int | None = field(default=None, metadata=js(absent_none=True))
    # the dumped modules ('module_15251.jit_train_step') whose CUDA graphs ran cuBLAS or cuDNN calls that have no
    # FLOPs, their dump lacking the thunk files that place them (an XLA before those files); JSON
    # "xla_without_thunks", absent where there is none
    xla_without_thunks: tuple[str, ...] | None = field(default=None, metadata=js(absent_none=True))
    # verify's summary of what the counters said against the name rules (report/counter_check.py); JSON
    # "counter_check", absent from every other command's report
    counter_check: CounterCheck | None = field(default=None, metadata=js(absent_none=True))
    # communication kernels by collective, their overlap with compute, the ranks that arrived last at collectives
    # (analyses/communication.py); JSON "communication", absent without communication kernels
    communication: Communication | None = field(default=None, metadata=js(absent_none=True))

    @property
    def tone(self) -> str:
        """How the verdict should read at a glance — from the share and the hints, not from "yes" alone: "good"
        (tensor cores ran most of the kernel time, GOOD_SHARE, and no hint says why not), "partial" (they ran, but
        for less, or a hint stands: host-bound, copies, communication, matrix math off them), "bad" (they did not
        run), "unknown". Every renderer colours the verdict by it (docs/json.md "verdict_tone")."""
        v = self.verdict
        if v.tensor_cores == "no":
            return "bad"
        if v.tensor_cores != "yes":
            return "unknown"
        return "good" if v.tc_fraction >= GOOD_SHARE and not self.hints else "partial"

    @property
    def headline(self) -> tuple[str, ...]:
        """What a reader must know before the verdict: the job failed or was killed, captures of different jobs
        were summed, only a window of the job was recorded. Every renderer shows these lines first (docs/json.md:
        "headline"); report/headline.py writes them."""
        return _late().headline(self)

    def to_dict(self) -> dict[str, Any]:
        """Exactly what ``--format json`` prints (docs/json.md): report/serialise.py."""
        return _late().to_dict(self)

    def __str__(self) -> str:
        return _display("table")(self)

    def _repr_html_(self) -> str:
        return _display("html")(self)

    def to_pandas(self) -> dict[str, Any]:
        """The report's tables as pandas DataFrames (needs pandas): kernels, split, devices, processes, ops, scopes,
        the hardware's tensor-pipe activity: hardware (per device), hardware_checks, hardware_series, the
        per-step series (one row per step, docs/json.md "series") and the ranks (one row per rank, "ranks")."""
        try:
            import pandas as pd
        except ImportError:
            raise NvprofWrapError("to_pandas() needs pandas (pip install pandas)") from None
        d = self.to_dict()
        return {key: pd.DataFrame(d.get(key) or []) for key in
                ("kernels", "time_split", "devices", "processes", "ops", "scopes", "hardware", "hardware_checks",
                 "hardware_series", "series", "ranks", "rank_outliers")}


@dataclass
class Late:
    """Functions of the modules that read these types, which this module therefore cannot import (no import goes
    round in a circle: tests/whole/test_layers.py): report/headline.py and report/serialise.py fill them in when
    they load, and the package's __init__ loads both before anything can reach a Report."""

    headline: Callable[[Report], tuple[str, ...]] | None = None
    to_dict: Callable[[Report], dict[str, Any]] | None = None


LATE = Late()


@dataclass(frozen=True)
class _Loaded:
    headline: Callable[[Report], tuple[str, ...]]
    to_dict: Callable[[Report], dict[str, Any]]


def _late() -> _Loaded:
    if LATE.headline is None or LATE.to_dict is None:
        raise NvprofWrapError("nvprof_wrap.report.headline and .serialise are not loaded: import nvprof_wrap.report")
    return _Loaded(LATE.headline, LATE.to_dict)


def _display(name: str) -> Callable[[Report], str]:
    if name not in DISPLAY:  # this layer never imports the renderers (a layer above): they register when loaded
        raise NvprofWrapError("a Report is turned into text by nvprof_wrap.renderers, which is not loaded yet: "
                              "import nvprof_wrap.renderers (nvprof_wrap.analyze loads it)")
    return DISPLAY[name]

