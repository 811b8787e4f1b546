"""Store rows → Report: the typed, frozen result every command and the Python API return. Pure: no printing, no
files, no SQL (the store's named queries, store/queries.py); every number comes from an SQL aggregate.

The Report holds facts, not text: precision mixes, copy directions and training health are fields; renderers turn them
into words. Only the verdict sentence and the hints (report/hints.py) are text, written once for every renderer.
``str(report)``, ``report.to_dict()`` (exactly ``--format json``), ``report._repr_html_()`` (notebooks) and
``report.to_pandas()`` render through the renderers registered in ``DISPLAY`` (renderers/__init__.py fills it).
"""
from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, replace

from nvprof_wrap.classify import COMMUNICATION_FAMILIES, RULES_VERSION
from nvprof_wrap.classify.hardware import disagrees
from nvprof_wrap.classify.rank import gpu_facts
from nvprof_wrap.errors import BadInput, NvprofWrapError
from nvprof_wrap.model import NO_RANGE, HealthVerdict
from nvprof_wrap.report import ranks as ranks_mod
from nvprof_wrap.report import series as series_mod
from nvprof_wrap.report.ranks import RankOutlier, RankRow, Ranks, RankSpread  # noqa: F401 - part of the Report's types
from nvprof_wrap.report.series import Series, StepRow  # noqa: F401 - part of the Report's types
from nvprof_wrap.store import Store
from nvprof_wrap.system import bounded
from nvprof_wrap.text.names import shorten
from nvprof_wrap.text.units import pct_or_less as _pct_or_less

MEM_ORDER = ("HtoD", "DtoH", "DtoD", "PtoP", "HtoH", "other")
# Kinds of GPU time in the split, in the order reports show them.
SPLIT_KINDS = ("tensor_core", "cuda_core", "unknown", "communication", "memcpy", "memset")

# A "yes" reads as good only when tensor cores ran at least this share of the kernel time (Report.tone)
GOOD_SHARE = 0.5

# Renderers register themselves here (report → text is the renderers' job; this layer only calls them).
DISPLAY: dict[str, Callable] = {}


@dataclass(frozen=True)
class KernelRow:
    name: str
    launches: int
    total_ns: int
    mean_ns: float
    share: float  # of kernel time
    tensor_core: str
    precision: str
    family: str
    reason: str
    evidence: str  # counters | device | compiled code | name
    name_verdict: str
    counter_verdict: str | None = None
    counter_detail: str | None = None
    name_rule: str = ""
    flag: str = ""  # the name claims what its GPU cannot run (classify/rank.py)

    @property
    def short(self) -> str:
        return shorten(self.name, 48)


@dataclass(frozen=True)
class SplitRow:
    """One kind of GPU time: kind in SPLIT_KINDS; direction (HtoD, DtoH, …) for memcpy, else ''."""

    kind: str
    direction: str
    total_ns: int
    share: float  # of GPU operation time (kernels, copies, memsets)
    count: int


@dataclass(frozen=True)
class PrecisionShare:
    precision: str  # "unstated" when the names do not say
    share: float  # of the owner's kernel time


@dataclass(frozen=True)
class Gpu:
    device_id: int | None
    name: str | None
    cc: float | None  # compute capability (from the capture, else from the GPU's name)
    has_tensor_cores: bool


@dataclass(frozen=True)
class GroupRow:
    """Per device or per process: where kernel time went and how busy the GPU was."""

    key: str
    label: str
    launches: int
    kernel_ns: int
    tc_ns: int
    tc_share: float  # of this group's kernel time
    precisions: tuple[str, ...]  # tensor-core precisions, most time first
    busy_ns: int | None
    span_ns: int | None
    idle_share: float | None  # of the span


@dataclass(frozen=True)
class OpRow:
    """Kernels attributed to one framework op / layer (an NVTX or profiler range) and what ran on tensor cores."""

    op: str
    kernels: int
    launches: int
    total_ns: int
    share: float  # of attributed kernel time
    tc_share: float  # of this op's kernel time
    precisions: tuple[PrecisionShare, ...]  # of all its kernels, by time, most first
    # The hardware's tensor-pipe activity (% of SM time) of its kernels, weighted by their time in it; None where
    # less than half of its kernel time has samples (docs/hardware-truth.md)
    hw_tensor: float | None = None


@dataclass(frozen=True)
class Verdict:
    tensor_cores: str  # "yes" | "no" | "unknown" | "no-kernels"
    message: str
    tc_kernels: int
    kernels: int
    launches: int
    kernel_ns: int
    tc_ns: int
    unknown_ns: int
    tc_fraction: float
    precisions: tuple[str, ...]


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

    # "succeeded" | "failed" (exit code N) | "killed" (by a signal) | "running" (the manifest says so and the run still
    # holds its folder's lock) | "unrecorded" (no end in the manifest, and no run holds the folder)
    status: str
    exit_code: int | None  # as a shell reports it: 128+N for signal N
    signal_number: int | None  # the signal that ended the job (killed)
    signal: str | None  # its name, e.g. SIGKILL
    forwarded: str | None  # a signal nvprof-wrap received and passed on to the job (Ctrl-C: SIGINT)
    steps: int | None  # training steps recorded before the end; None when unknown
    steps_source: str | None  # "capture" (its 'step N' ranges) | "metrics.jsonl"
    rank: int | None = None  # of a distributed run: the rank whose end this is (the first that did not succeed)
    # of a run whose end was not recorded: whether a process still holds its folder's lock (None: no lock file, a run
    # of an earlier version; or it cannot be told); wrapper_pid: the nvprof-wrap process that ran it
    lock_held: bool | None = None
    wrapper_pid: int | None = None


@dataclass(frozen=True)
class JobGroup:
    """Captures of one job, among captures of different jobs summed in one report (report/jobs.py)."""

    paths: tuple[str, ...]
    command: str | None  # where the captures record it
    started_ns: int | None  # UTC, ns since the epoch
    label: str  # the run folder, or the first capture's path


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
    names_tc_share: float  # the device's kernel time on tensor-core kernels by the verdicts (0-1)
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
class Report:
    verdict: Verdict
    split: tuple[SplitRow, ...]
    devices: tuple[GroupRow, ...]
    processes: tuple[GroupRow, ...]
    kernels: tuple[KernelRow, ...]
    sources: tuple[Source, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    disagreements: tuple[KernelRow, ...] = ()
    ops: tuple[OpRow, ...] = ()
    scopes: tuple[OpRow, ...] = ()
    hints: tuple[str, ...] = ()
    gpus: tuple[Gpu, ...] = ()
    health: HealthVerdict | None = None
    rules_version: str = RULES_VERSION
    scope: Scope | None = None
    job: JobEnd | None = None  # of a run folder (its manifest): how the job ended
    different_jobs: tuple[JobGroup, ...] = ()  # captures of different jobs summed: one group per job
    hardware: tuple[HardwareRow, ...] = ()  # the hardware's tensor-pipe activity, where it was sampled
    hardware_checks: tuple[HardwareCheck, ...] = ()
    hardware_series: tuple[HardwarePoint, ...] = ()
    capture: CaptureScope | None = None  # of a run that recorded only a window of its job
    series: Series | None = None  # per step (or time bucket): report/series.py
    ranks: Ranks | None = None  # of a distributed run, per rank: report/ranks.py

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
        "headline")."""
        return tuple(line for line in (job_line(self.job, self.verdict), jobs_line(self.different_jobs),
                                       capture_line(self.capture)) if line)

    def to_dict(self) -> dict:
        """Exactly what ``--format json`` prints (docs/json.md)."""
        return _display("dict")(self)

    def __str__(self) -> str:
        return _display("table")(self)

    def _repr_html_(self) -> str:
        return _display("html")(self)

    def to_pandas(self) -> dict:
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


def _display(name: str) -> Callable:
    if name not in DISPLAY:  # this layer never imports the renderers (a layer above): they register when loaded
        raise NvprofWrapError("a Report is turned into text by nvprof_wrap.renderers, which is not loaded yet: "
                              "import nvprof_wrap.renderers (nvprof_wrap.analyze loads it)")
    return DISPLAY[name]




def _kernels(store: Store, total: int) -> tuple[KernelRow, ...]:
    return tuple(KernelRow(r["name"], r["launches"], r["total_ns"], r["total_ns"] / max(r["launches"], 1),
                           r["total_ns"] / total if total else 0.0, r["tensor_core"], r["precision"] or "",
                           r["family"], r["reason"], r["evidence"], r["name_verdict"], r["counter_verdict"],
                           r["counter_detail"], r["rule"] or "", r["flag"] or "") for r in store.kernel_rows())


def _split(store: Store, kernels: tuple[KernelRow, ...]) -> tuple[SplitRow, ...]:
    by: dict[str, list[int]] = {k: [0, 0] for k in SPLIT_KINDS[:4]}
    kind = {"yes": "tensor_core", "no": "cuda_core", "unknown": "unknown"}
    for k in kernels:
        key = "communication" if k.family in COMMUNICATION_FAMILIES else kind[k.tensor_core]
        by[key][0] += k.total_ns
        by[key][1] += k.launches
    mem = store.memop_totals()
    rows = [(key, "", *by[key]) for key in SPLIT_KINDS[:4]]
    for d in MEM_ORDER:
        rows += [("memcpy", d, m["ns"], m["n"]) for m in mem if m["kind"] == "memcpy" and m["direction"] == d]
    rows += [("memset", "", m["ns"], m["n"]) for m in mem if m["kind"] == "memset"]
    total = sum(r[2] for r in rows) or 1
    return tuple(SplitRow(kd, d, ns, ns / total, n) for kd, d, ns, n in rows if n)


def _groups(store: Store, key: str) -> tuple[GroupRow, ...]:
    """key: 'device_id' or 'pid'."""
    prec, act, labels = store.group_precisions(key), store.group_activity(key), _labels(store, key)
    out = []
    for r in store.group_rows(key):
        a = act.get(r["g"])
        busy, span = (min(a["busy"], a["span"]), a["span"]) if a and a["span"] else (None, None)
        # a capture that records no device (console summaries, nsys stats tables): key "None" (renderers show '-'),
        # said in words unless the capture's one GPU model labels it
        g = r["g"]
        label = labels.get(g, "" if g is not None else "not recorded in the capture")
        out.append(GroupRow(str(g), label, r["launches"], r["ns"], r["tc_ns"],
                            r["tc_ns"] / r["ns"] if r["ns"] else 0.0, tuple(prec.get(r["g"], ())),
                            busy, span, 1 - busy / span if span else None))
    return tuple(out)


def _labels(store: Store, key: str) -> dict:
    if key == "device_id":
        labels = {r["g"]: f"{r['name'] or 'GPU'}" + (f" (sm_{r['ma']}{r['mi'] or 0})" if r["ma"] is not None else "")
                  for r in store.devices()}
        if len(set(labels.values())) == 1:  # kernels of no recorded device (console summaries): of the one model
            labels.setdefault(None, next(iter(labels.values())))
        return labels
    return {r["g"]: " ".join(x for x in ((r["name"] or "")[:40], f"rank {r['rank']}" if r["rank"] is not None else "")
                             if x) for r in store.processes()}


def _gpus(store: Store) -> tuple[Gpu, ...]:
    out = []
    for r in store.devices():
        cc, has = gpu_facts(r["ma"] + (r["mi"] or 0) / 10 if r["ma"] is not None else None, r["name"])
        out.append(Gpu(r["g"], r["name"], cc, has))
    return tuple(out)


_UNTIMED = ("kernel time was not captured (the export has no duration), so no time shares: "
            "add gpu__time_duration.sum or the SpeedOfLight section, or read a timeline capture beside it")


def _untimed(v: Verdict) -> Verdict:
    """The verdict of kernels whose capture recorded launches but no durations: counts, never '0.0% of time'."""
    if v.tensor_cores == "yes":
        msg = (f"Tensor cores used: yes — {v.tc_kernels} of {v.kernels} kernels, "
               f"{' + '.join(v.precisions) or 'precision unstated'}; {_UNTIMED}")
    elif v.tensor_cores == "no":
        msg = f"Tensor cores used: no — none of the {v.kernels} kernels is a tensor-core kernel; {_UNTIMED}"
    elif v.tensor_cores == "unknown":
        n = v.kernels - v.tc_kernels
        msg = (f"Tensor cores used: not seen — no kernel is known to use them, but some of the {n} kernels carry no "
               f"evidence in their names; {_UNTIMED}")
    else:
        return v
    return Verdict(v.tensor_cores, msg, v.tc_kernels, v.kernels, v.launches, 0, 0, 0, 0.0, v.precisions)


def _verdict(kernels: tuple[KernelRow, ...]) -> Verdict:
    total = sum(k.total_ns for k in kernels)
    tc = [k for k in kernels if k.tensor_core == "yes"]
    tc_ns, unk_ns = sum(k.total_ns for k in tc), sum(k.total_ns for k in kernels if k.tensor_core == "unknown")
    prec: dict[str, int] = {}
    for k in tc:
        prec[k.precision or "unstated"] = prec.get(k.precision or "unstated", 0) + k.total_ns
    precisions = tuple(sorted(prec, key=lambda p: -prec[p]))
    frac = tc_ns / total if total else 0.0
    launches = sum(k.launches for k in kernels)
    if not kernels:
        status, msg = "no-kernels", ("No GPU kernels were recorded. Did the job run on the GPU? (Check that the "
                                     "framework sees a GPU, and that the profiler traced CUDA.)")
    elif tc:
        status, msg = "yes", (f"Tensor cores used: yes — {len(tc)} of {len(kernels)} kernels, "
                              f"{_pct_or_less(frac)} of GPU kernel time, {' + '.join(precisions)}")
    elif unk_ns or any(k.tensor_core == "unknown" for k in kernels):
        n = sum(k.tensor_core == "unknown" for k in kernels)
        status, msg = "unknown", (f"Tensor cores used: not seen — no kernel is known to use them, but {n} "
                                  f"{'kernel' if n == 1 else 'kernels'} "
                                  f"({_pct_or_less(unk_ns / total if total else 0)} of kernel time) carry no "
                                  "evidence in their names; nvprof-wrap verify measures them with counters")
    else:
        status, msg = "no", (f"Tensor cores used: no — none of the {len(kernels)} kernels is a tensor-core kernel; "
                             f"kernel time by precision: {_mix(kernels, total)}")
    return Verdict(status, msg, len(tc), len(kernels), launches, total, tc_ns, unk_ns, frac, precisions)


def _mix(kernels: tuple[KernelRow, ...], total: int) -> str:
    by: dict[str, int] = {}
    for k in kernels:
        by[k.precision or "unstated"] = by.get(k.precision or "unstated", 0) + k.total_ns
    top = sorted(by.items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"{p} {_pct_or_less(ns / total if total else 0)}" for p, ns in top)


def build(store: Store, skipped: tuple[tuple[str, str], ...] = ()) -> Report:
    """The report of a store whose evidence is ranked (pipeline.evidence.prepare, or .rank without the compiled-code
    lookup): the pipeline ranks, then builds. Hints and health are added by the pipeline (with_hints, with_health)."""
    damage = store.damage()
    if damage:
        raise BadInput(store.path, damage)
    if not store.has_verdicts():
        raise RuntimeError("report.build needs a store whose evidence is ranked: call "
                           "nvprof_wrap.pipeline.evidence.prepare(store) (or .rank(store)) first")
    total = store.timed_kernel_ns()
    kernels = _kernels(store, total)
    sources = tuple(Source(r["path"], r["format"], bool(r["partial"]), tuple(_json_list(r["notes"])))
                    for r in store.sources())
    disagreements = tuple(k for k in kernels if k.evidence in ("counters", "compiled code")
                          and k.name_verdict != "unknown" and k.tensor_core != k.name_verdict)
    ops, scopes = _ops(store, "op"), _ops(store, "scope")
    if [o.op for o in ops] == [o.op for o in scopes]:
        scopes = ()  # one level of ranges only: the scope table would repeat the op table
    verdict = _verdict(kernels)
    if store.untimed_kernels() and not total:
        verdict = _untimed(verdict)
    devices = _groups(store, "device_id")
    checks = _hardware_checks(store, kernels)
    return Report(verdict, _split(store, kernels), devices, _groups(store, "pid"), kernels,
                  sources, skipped, disagreements, ops, scopes, gpus=_gpus(store),
                  hardware=_hardware(store, devices, checks), hardware_checks=checks,
                  hardware_series=_hardware_series(store),
                  series=series_mod.build(store, kernels, COMMUNICATION_FAMILIES),
                  ranks=ranks_mod.build(store, COMMUNICATION_FAMILIES))


def _hardware(store: Store, devices: tuple[GroupRow, ...],
              checks: tuple[HardwareCheck, ...]) -> tuple[HardwareRow, ...]:
    share = {g.key: g.tc_share for g in devices}
    coverage = store.hardware_coverage()
    out = []
    for r in store.hardware_devices():
        ns, sampled = coverage.get(r["device_id"], (0, 0))
        out.append(HardwareRow(r["device_id"], r["source"], r["interval_ns"], r["samples"], r["busy_samples"],
                               None if r["sm_busy"] is None else round(r["sm_busy"], 2),
                               None if r["tensor_busy"] is None else round(r["tensor_busy"], 2),
                               share.get(str(r["device_id"]), 0.0),
                               sum(1 for c in checks if c.device_id == r["device_id"] and c.source == r["source"]),
                               round(1 - sampled / ns, 6) if ns else 0.0))
    return tuple(out)


def _hardware_checks(store: Store, kernels: tuple[KernelRow, ...]) -> tuple[HardwareCheck, ...]:
    """Kernels whose name says yes or no, and whose samples say the other (per device, all captures together)."""
    by_name = {k.name: k for k in kernels}
    out = []
    for r in store.hardware_kernels():
        k = by_name.get(r["name"])
        if k is None or k.evidence not in ("name",) or k.tensor_core not in ("yes", "no") or "fp16" in r["source"]:
            continue
        why = disagrees(k.tensor_core, r["tensor"], r["n"], r["interval_ns"])
        if why:
            out.append(HardwareCheck(k.name, r["device_id"], k.tensor_core, round(r["tensor"], 2), r["n"],
                                     r["interval_ns"], r["source"], why))
    return tuple(out)


def _hardware_series(store: Store) -> tuple[HardwarePoint, ...]:
    rows = store.hardware_series()
    first: dict[int, int] = {}
    for r in rows:
        first.setdefault(r["device_id"], r["t_ns"])
    return tuple(HardwarePoint(r["device_id"], round((r["t_ns"] - first[r["device_id"]]) / 1e9, 6),
                               round(r["dt_ns"] / 1e9, 6), r["sm"], r["tensor"]) for r in rows)


def job_line(job: JobEnd | None, verdict: Verdict | None = None) -> str | None:
    """'Job failed (exit 1) after 412 steps — report of what ran'; None for a job that succeeded."""
    if job is None or job.status == "succeeded":
        return None
    who = f"Rank {job.rank}'s job" if job.rank is not None else "Job"
    after = f" after {job.steps:,} step{'s' if job.steps != 1 else ''}" if job.steps else ""
    nothing = verdict is not None and verdict.tensor_cores == "no-kernels"
    tail = "" if nothing else " — report of what ran"  # the verdict says what was not recorded
    if job.status == "running":
        pid = f" (pid {job.wrapper_pid})" if job.wrapper_pid else ""
        so_far = "" if nothing else " — report of what it wrote so far"
        return (f"Run in progress: {who[0].lower() + who[1:]} is still running (its manifest says \"running\" and "
                f"nvprof-wrap{pid} or its job still holds the run folder){so_far}")
    if job.status == "unrecorded":
        why = {False: " (nvprof-wrap was killed: no process holds the run folder any more)",
               None: " (nvprof-wrap was killed, or the job is still running)"}.get(job.lock_held, "")
        return (f"{who}'s end was not recorded: its run's manifest still says \"running\"{why}{tail}"
                if job.rank is None else f"{who}'s end was not recorded: its manifest still says \"running\"{tail}")
    if job.status == "killed":
        passed = ", which nvprof-wrap received and passed on" if job.forwarded == job.signal else ""
        return f"{who} killed by signal {job.signal_number} ({job.signal}{passed}){after}{tail}"
    return f"{who} failed (exit {job.exit_code}){after}{tail}"


def capture_line(c: CaptureScope | None) -> str | None:
    """'Capture window: steps 100 to 119 (run --capture-steps 100:120, counted by optimizer steps; the job ran 1,000
    steps) — only what ran inside it was recorded …'; None for a run that recorded all of its job."""
    if c is None:
        return None
    if c.kind == "steps":
        lo = c.open_step if c.open_step is not None else int(c.start)
        hi = (c.close_step if c.close_step is not None else int(c.end or 0)) - 1
        if c.ended_inside and c.close_step is None:
            hi = c.last_step if c.last_step is not None else hi
            what = f"steps {lo} to {hi} (the job ended inside the window)"
        else:
            what = f"steps {lo} to {hi}"
        counted = f", counted by {c.source}" if c.source else ""
        job = f"; the job ran {c.job_steps:,} step{'s' if c.job_steps != 1 else ''}" if c.job_steps is not None \
            else ""
    else:
        what = f"{c.start:g} s to {c.end:g} s after the job started" if c.end is not None else \
            f"from {c.start:g} s after the job started to its end"
        counted = job = ""
    some = (f"; it opened in {c.opened} of {c.processes} processes" if 0 < c.opened < c.processes else "")
    problems = f"; {'; '.join(c.problems[:2])}" if c.problems else ""
    held = ""
    if c.held_s is not None and c.held_s >= 0.005:  # a seconds window opens and closes on its timer thread
        held = (f"; opening and closing it held the job {c.held_s:.2f} s" if c.kind == "steps" else
                f"; opening and closing it took {c.held_s:.2f} s on its timer thread")
    if c.stopped_aside and c.kind == "steps":
        took = f" ({c.stop_s:.1f} s)" if c.stop_s is not None else ""
        held += (f"; the profiler's stop{took} ran beside the job, what it recorded meanwhile from step "
                 f"{int(c.end or 0)} on is left out")
        if c.profiler_detached:
            held += ", then its CUPTI was detached from the job"
    return (f"Capture window: {what} (run {c.option}{counted}{job}{some}{problems}{held}) — only what ran inside it "
            "was recorded; the job's exit and health are of all of it")


def jobs_line(groups: tuple[JobGroup, ...]) -> str | None:
    """'3 captures of 2 different jobs summed: python a.py (2 captures); python b.py …'; None for one job."""
    if len(groups) < 2:
        return None
    n = sum(len(g.paths) for g in groups)

    def one(g: JobGroup) -> str:
        what = shorten(g.command, 60) if g.command else g.label
        when = f", started {_utc(g.started_ns)}" if g.started_ns is not None else ""
        return f"{what} ({len(g.paths)} capture{'s' if len(g.paths) != 1 else ''}{when})"
    shown = "; ".join(one(g) for g in groups[:3]) + (f"; and {len(groups) - 3} more" if len(groups) > 3 else "")
    return (f"{n} captures of {len(groups)} different jobs summed: {shown} — every figure below is of them all; "
            "report each job on its own")


def _utc(ns: int) -> str:
    try:
        return datetime.datetime.fromtimestamp(ns / 1e9, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):
        return "at an unreadable time"


def with_jobs(report: Report, job: JobEnd | None, groups: tuple[JobGroup, ...]) -> Report:
    """The job's end and the captures of different jobs; a job that did not succeed and left no kernel is not asked
    whether it ran on the GPU."""
    verdict = report.verdict
    if job is not None and job.status == "running" and verdict.tensor_cores == "no-kernels":
        verdict = replace(verdict, message="No GPU kernels recorded yet: the run is still in progress (its profiler "
                                           "may write its records when the job ends); report it again once it ended.")
    elif job is not None and job.status != "succeeded" and verdict.tensor_cores == "no-kernels":
        partial = any(s.partial for s in report.sources)
        why = (": its capture is partial — a process killed before its profiler wrote its records loses them"
               if partial else ": it ended before any GPU work was traced, or its profiler lost what it had")
        verdict = replace(verdict, message=f"No GPU kernels were recorded before the job ended{why}.")
    return replace(report, verdict=verdict, job=job, different_jobs=tuple(groups))


def with_capture(report: Report, capture: CaptureScope | None) -> Report:
    """The window a windowed run recorded; a window that opened but holds no kernel says so, not "did the job run on
    the GPU?" (measured on the H200: nanoGPT under cupti was still starting up 6.5 s to 8.5 s into the job)."""
    verdict = report.verdict
    if capture is not None and capture.opened and verdict.tensor_cores == "no-kernels":
        hint = (" — it may still have been starting up: --capture-steps A:B follows the training loop instead"
                if capture.kind == "seconds" else "")
        verdict = replace(verdict, message=f"No GPU kernels ran inside the capture window (run {capture.option}): "
                                           f"the job launched none then{hint}.")
    return replace(report, capture=capture, verdict=verdict)


def with_hints(report: Report, hints: tuple[str, ...]) -> Report:
    return replace(report, hints=tuple(hints))


def with_health(report: Report, health: HealthVerdict | None) -> Report:
    return replace(report, health=health)


def with_scope(report: Report, window: tuple[float, float] | None, steps: tuple[int, int] | None) -> Report:
    if window is not None:
        return replace(report, scope=Scope("window", float(window[0]), float(window[1])))
    if steps is not None:
        return replace(report, scope=Scope("steps", int(steps[0]), int(steps[1])))
    return report


def _ops(store: Store, column: str) -> tuple[OpRow, ...]:
    by: dict[str, dict] = {}
    hw: dict[str, list[float]] = {}
    for r in store.hardware_kernels():
        acc = hw.setdefault(r["name"], [0.0, 0])
        acc[0] += r["tensor"] * r["n"]
        acc[1] += r["n"]
    for r in store.op_kernels(column):
        g = by.setdefault(r["op"], {"kernels": 0, "launches": 0, "ns": 0, "tc": 0, "prec": {}, "hw": 0.0, "hw_ns": 0})
        if r["name"] in hw and r["ns"]:
            g["hw"] += hw[r["name"]][0] / hw[r["name"]][1] * r["ns"]
            g["hw_ns"] += r["ns"]
        g["kernels"] += 1
        g["launches"] += r["launches"]
        g["ns"] += r["ns"] or 0
        g["tc"] += (r["ns"] or 0) if r["tensor_core"] == "yes" else 0
        p = r["precision"] or "unstated"
        g["prec"][p] = g["prec"].get(p, 0) + (r["ns"] or 0)
    if set(by) <= {NO_RANGE}:  # not one kernel inside a range: a table of one row would say nothing
        return ()
    total = sum(g["ns"] for g in by.values()) or 1
    out = [OpRow(op, g["kernels"], g["launches"], g["ns"], g["ns"] / total, g["tc"] / g["ns"] if g["ns"] else 0.0,
                 tuple(PrecisionShare(p, ns / g["ns"] if g["ns"] else 0.0)
                       for p, ns in sorted(g["prec"].items(), key=lambda kv: -kv[1])),
                 round(g["hw"] / g["hw_ns"], 2) if g["hw_ns"] and g["hw_ns"] >= 0.5 * g["ns"] else None)
           for op, g in by.items()]
    return tuple(sorted(out, key=lambda o: -o.total_ns))


def _json_list(text: str | None) -> list[str]:
    try:
        v = bounded.loads(text or "[]")
        return [str(x) for x in v] if isinstance(v, list) else []
    except ValueError:
        return []
