"""The report over time: one row per step (or per fixed time bucket when the capture marks no steps) — where each
step's wall time went on the GPU (busy, kernels, tensor-core kernels, copies, communication) and on the host (time
inside CUDA calls by kind, time outside any CUDA call).

Readers measure it per capture (timeline/series.py: model.StepAgg, model.StepKernel); the store keeps it per
(capture, process, step); this module turns it into the Report's `series` (docs/json.md "series").
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

from nvprof_wrap.analyses import budget
from nvprof_wrap.report.fields import js
from nvprof_wrap.store import Store

# The host's CUDA calls, by what they do to a step's time (timeline/series.py maps callback ids / API names).
API_KINDS = ("launch", "sync", "alloc", "other")
API_LABELS = {"launch": "launches", "sync": "copies and waits", "alloc": "allocations", "other": "other calls"}


@dataclass(frozen=True)
class StepRow:
    """One step (or time bucket), summed over the processes that ran it (host times: their mean per process). JSON:
    one flat row (a CSV row, a DataFrame row), docs/json.md "series"."""

    JSON_ORDER: ClassVar[tuple[str, ...]] = (
        "step", "start_s", "duration_ns", "processes", "launches", "kernel_ns", "tensor_core_ns", "tensor_core_share",
        "unknown_ns", "copy_ns", "communication_ns", "exposed_communication_ns", "gpu_busy_ns", "gpu_idle_ns",
        *(f"api_{k}_ns" for k in API_KINDS), "outside_api_ns", "hw_tensor")

    step: int  # the step's number (kind "steps"), else the bucket's index from 0
    start_s: float = field(metadata=js(digits=9))  # from the series' first step start (the first capture's clock)
    duration_ns: int  # wall time: from this step's start to the next one's (the last: to its range's end)
    processes: int  # how many processes ran this step
    launches: int
    kernel_ns: int
    tc_ns: int = field(metadata=js("tensor_core_ns"))  # kernel time of tensor-core ("yes") kernels
    unknown_ns: int  # kernel time of kernels whose verdict is unknown
    copy_ns: int  # memcpy and memset time that started in the step
    comm_ns: int = field(metadata=js("communication_ns"))  # kernel time of communication kernels (NCCL)
    gpu_busy_ns: int  # union of the GPU's busy intervals inside the step (per process, mean)
    # host time inside CUDA API calls, by API_KINDS, and outside any CUDA call; None where the capture holds no
    # API records (then the host's side is not known)
    api_ns: dict[str, int] | None = field(default=None, metadata=js(omit=True))  # JSON: api_<kind>_ns each
    outside_api_ns: int | None = None
    hw_tensor: float | None = None  # mean tensor-pipe activity (%) of the hardware samples inside the step
    # GPU busy with communication (NCCL) and nothing else: not overlapped with compute
    exposed_comm_ns: int = field(default=0, metadata=js("exposed_communication_ns"))

    @property
    def tc_share(self) -> float:
        return self.tc_ns / self.kernel_ns if self.kernel_ns else 0.0

    @property
    def idle_ns(self) -> int:
        return max(self.duration_ns - self.gpu_busy_ns, 0)


@dataclass(frozen=True)
class Series:
    """JSON: its rows are the report's "series", the rest its "series_info" (Report.series is flattened)."""

    kind: str = field(metadata=js(group="series_info"))  # "steps" | "buckets"
    # what marked the steps: "step marks" | "optimizer steps" | "keras batches"; "time" for buckets
    source: str = field(metadata=js(group="series_info"))
    bucket_s: float | None = field(metadata=js(group="series_info"))  # a bucket's length (kind "buckets")
    rows: tuple[StepRow, ...] = field(metadata=js("series"))
    # where the host's split comes from: "runtime API records" | "none" (the capture has none)
    host: str = field(metadata=js(group="series_info"))
    # steps per row: more steps than timeline/series.MAX_STEPS are merged, consecutive ones
    folded: int = field(default=1, metadata=js("steps_per_row", group="series_info"))
    notes: tuple[str, ...] = field(default=(), metadata=js(group="series_info"))
    # the steps marked, one by one (rows × steps_per_row, the last row maybe fewer); None for time buckets, and
    # where a capture's reader does not count them
    marked: int | None = field(default=None, metadata=js("steps", group="series_info"))
    # steps by XLA's executions: the program executed ('jit_update#14586': its module and program id), where every
    # capture's steps are of one
    program: str | None = field(default=None, metadata=js(group="series_info"))


# which CUDA calls a capture recorded (StepSeries.host) → what the report says of the host's side
HOST_SAYS = {"all": "every CUDA call recorded", "launch, sync, alloc":
             "launches, copies, waits and allocations recorded (other CUDA calls count as outside)",
             "launch": "only kernel launch calls recorded: the time outside CUDA calls is not known",
             "none": "no CUDA API records: the host's side is not known"}


class Verdicted(Protocol):
    """What the series reads of a kernel row (report/types.py KernelRow, which this module's types are part of)."""

    @property
    def name(self) -> str: ...
    @property
    def tensor_core(self) -> str: ...
    @property
    def family(self) -> str: ...
    @property
    def precision(self) -> str: ...
    @property
    def total_ns(self) -> int: ...


def _chosen(store: Store) -> list[dict[str, Any]]:
    """The captures the series is of: those whose steps were marked, else the time-bucketed ones."""
    captures = store.series_kinds()
    return [c for c in captures if c["kind"] == "steps"] or captures


@dataclass(frozen=True)
class Read:
    """What the series and the time budget both read of the store, read once: the chosen captures (_chosen) and
    their step kernels' names by (capture, name id) (Store.step_kernel_names: the store sums the rows by id)."""

    chosen: tuple[dict[str, Any], ...]
    names: dict[tuple[int, int], str]

    @classmethod
    def of(cls, store: Store) -> Read:
        chosen = _chosen(store)
        ids = [c["capture_id"] for c in chosen]
        return cls(tuple(chosen), store.step_kernel_names(ids) if ids else {})


def build(store: Store, kernels: Iterable[Verdicted], communication: frozenset[str],
          read: Read | None = None) -> Series | None:
    """The Report's series from the run store: the captures whose steps were marked (else the time-bucketed
    ones), per step summed over processes. kernels: the Report's KernelRows (their verdicts and families); read:
    Read.of(store), where the caller reads it once for time_budget too."""
    read = read or Read.of(store)
    chosen = list(read.chosen)
    if not chosen:
        return None
    ids = [c["capture_id"] for c in chosen]
    rows = store.step_rows(ids)
    if not rows:
        return None
    verdict = {k.name: (k.tensor_core, k.family in communication) for k in kernels}
    flags = []  # per (capture, name id): whether its time is tensor-core time, of unknown kernels, communication
    for (capture, i), name in read.names.items():
        tc, comm = verdict.get(name, ("unknown", False))
        flags.append((capture, i, int(tc == "yes"), int(tc == "unknown"), int(comm)))
    per_step = store.step_kernel_sums(flags)
    hw = store.step_hardware(ids)
    hosts = {c["host"] for c in chosen}
    host = next((h for h in ("none", "launch", "launch, sync, alloc", "all") if h in hosts), "none")
    t0 = rows[0]["start_ns"]
    out = tuple(_row(r, per_step.get(r["step"], (0, 0, 0)), hw.get(r["step"]), t0, host) for r in rows)
    first = chosen[0]
    notes = (HOST_SAYS[host],) + (("steps of several captures summed by number",) if len(chosen) > 1 else ())
    folded = max(c["folded"] or 1 for c in chosen)
    # rows of one step each: as many steps as rows (of several captures summed by number, their steps' numbers);
    # folded: as many as the capture that marked most (0: not counted, none said)
    counted = max(c["marked"] or 0 for c in chosen)
    marked = None if first["kind"] != "steps" else len(out) if folded == 1 else counted or None
    programs = {c["program"] for c in chosen}
    return Series(first["kind"], first["source"], first["bucket_ns"] / 1e9 if first["bucket_ns"] else None, out,
                  host, folded, notes, marked, programs.pop() if len(programs) == 1 else None)


def _row(r: dict[str, Any], acc: Sequence[int], hw: float | None, t0: int, host: str) -> StepRow:
    api = None if host == "none" or r["launch"] is None else {k: r[k] or 0 for k in API_KINDS}
    outside = None if api is None or host == "launch" or r["api_union_ns"] is None else \
        max(r["mean_duration_ns"] - r["api_union_ns"], 0)
    return StepRow(r["step"], (r["start_ns"] - t0) / 1e9, r["duration_ns"], r["processes"], r["launches"],
                   r["kernel_ns"], acc[0], acc[1], r["copy_ns"], acc[2], min(r["busy_ns"], r["mean_duration_ns"]),
                   api, outside, hw, max(r["exposed_comm_ns"] or 0, 0))


SLOW = 3  # a step this many times the median step is an outlier the median hides (Steady.slow)


@dataclass(frozen=True)
class Steady:
    """The median step of the steady state (steps after the first, which holds the warm-up; every bucket that saw
    GPU work): what a step costs once the job runs. Medians field by field, so they need not add up exactly."""

    rows: int  # steps (buckets) it is the median of
    first: int  # their first and last step numbers
    last: int
    duration_ns: int
    gpu_busy_ns: int
    kernel_ns: int
    tc_ns: int
    copy_ns: int
    comm_ns: int
    launches: int
    api_ns: dict[str, int] | None
    outside_api_ns: int | None
    mean_duration_ns: int = 0  # the mean, outliers included: what the steps cost on average
    slow: tuple[int, ...] = ()  # steps over SLOW × the median (e.g. each epoch's last batch, holding validation);
    # of a folded series (slow_each > 1), every step of each row whose mean step is over it
    slow_ns: int = 0  # their time, in all
    slow_outside_api_ns: int | None = None  # of it, outside CUDA calls
    exposed_comm_ns: int | None = None  # median communication time not overlapped with compute
    slow_each: int = 1  # steps a series' row holds (StepSeries.folded): slow's steps come in runs of this many

    @property
    def idle_share(self) -> float:
        return max(self.duration_ns - self.gpu_busy_ns, 0) / self.duration_ns if self.duration_ns else 0.0

    @property
    def in_api_ns(self) -> int | None:
        return None if self.outside_api_ns is None else max(self.duration_ns - self.outside_api_ns, 0)


def steady_rows(series: Series | None) -> list[StepRow]:
    """The steady state's steps: after the first (the warm-up: compiling, allocating, loading), at least 2; of
    buckets, those with GPU work, at least 3. [] when there are fewer. Where the series folded its steps (more of
    them than it keeps: `folded` consecutive steps a row), each row as its mean step (per_step), the last row left
    out: it may hold fewer steps than the others."""
    if series is None:
        return []
    rows = [r for r in series.rows if r.launches or r.copy_ns or r.gpu_busy_ns] if series.kind == "buckets" else \
        list(series.rows[1:])
    if series.folded > 1:
        rows = [per_step(r, series.folded) for r in rows[:-1]]
    return rows if len(rows) >= (3 if series.kind == "buckets" else 2) else []


def per_step(row: StepRow, steps: int) -> StepRow:
    """A row of `steps` consecutive steps as their mean step: its times and launches over steps (processes and
    the hardware's activity, a share, as they are)."""
    def each(v: int) -> int:
        return round(v / steps)
    return replace(row, duration_ns=each(row.duration_ns), launches=each(row.launches), kernel_ns=each(row.kernel_ns),
                   tc_ns=each(row.tc_ns), unknown_ns=each(row.unknown_ns), copy_ns=each(row.copy_ns),
                   comm_ns=each(row.comm_ns), gpu_busy_ns=each(row.gpu_busy_ns),
                   api_ns=None if row.api_ns is None else {k: each(v) for k, v in row.api_ns.items()},
                   outside_api_ns=None if row.outside_api_ns is None else each(row.outside_api_ns),
                   exposed_comm_ns=each(row.exposed_comm_ns))


def time_budget(store: Store, series: Series | None, kernels: Iterable[Verdicted],
                communication: frozenset[str], read: Read | None = None) -> budget.TimeBudget | None:
    """The mean steady-state step's time budget (analyses/budget.py) over steady_rows, less the steps over SLOW ×
    the median (each epoch's last batch holding validation: a mean with them would describe no step). read: what
    build read (Read.of), else read here."""
    rows = steady_rows(series)
    if series is None or not rows:
        return None
    typical = sorted(r.duration_ns for r in rows)[len(rows) // 2]
    kept = [r for r in rows if r.duration_ns <= SLOW * typical]
    slow, rows = len(rows) - len(kept), kept
    read = read or Read.of(store)
    ids = [c["capture_id"] for c in read.chosen]
    wanted = {r.step for r in rows}
    parts: dict[int, dict[str, int]] = {}
    each = series.folded  # steps a row: steady_rows' rows are their mean steps, so the rows' parts are too
    for p in store.step_part_rows(ids):
        if p["step"] in wanted:
            parts.setdefault(p["step"], {})[p["part"]] = round(p["ns"] / each) if each > 1 else p["ns"]
    verdicted = list(kernels)
    verdict = {k.name: (k.tensor_core, k.precision) for k in verdicted if k.family not in communication}
    totals = store.step_kernel_totals(ids, wanted)
    weights = budget.kernel_weights(((name, totals[key]) for key, name in read.names.items()
                                     if key in totals and name in verdict),
                                    lambda name: verdict[name])
    found = budget.budget([budget.StepSpan(r.step, r.duration_ns, r.processes) for r in rows], parts, weights,
                          series.host, series.kind, slow)
    if found is not None and each > 1:  # the mean of the rows' mean steps: of every step in them
        found = replace(found, steps=found.steps * each, last=found.last + each - 1, slow_left_out=slow * each)
    if found is not None and found.gpu_s == 0 and any(k.total_ns for k in verdicted):
        return None  # the kernels ran outside the steps (an asynchronous loop queued them): no step holds them
    return found


def steady(series: Series | None) -> Steady | None:
    """The median step after the first (the warm-up: compiling, allocating, loading); None with fewer than 3 steps
    (buckets: those with GPU work, at least 3)."""
    rows = steady_rows(series)
    if not rows:
        return None

    def med(values: list[int]) -> int:
        values = sorted(values)
        n = len(values)
        return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) // 2

    apis = [r.api_ns for r in rows]
    api = None if any(a is None for a in apis) else {k: med([a[k] for a in apis if a is not None]) for k in API_KINDS}
    outs = [r.outside_api_ns for r in rows]
    outside = None if any(o is None for o in outs) else med([o for o in outs if o is not None])
    typical = med([r.duration_ns for r in rows])
    slow = [r for r in rows if r.duration_ns > SLOW * typical]
    each = series.folded if series is not None else 1  # steps a row (steady_rows: each row's mean step)
    # a folded row over SLOW × the median: its steps, its whole time (not the mean step's)
    return Steady(len(rows) * each, rows[0].step, rows[-1].step + each - 1, typical,
                  med([r.gpu_busy_ns for r in rows]), med([r.kernel_ns for r in rows]), med([r.tc_ns for r in rows]),
                  med([r.copy_ns for r in rows]), med([r.comm_ns for r in rows]), med([r.launches for r in rows]),
                  api, outside, sum(r.duration_ns for r in rows) // len(rows),
                  tuple(r.step + k for r in slow for k in range(each)), sum(r.duration_ns for r in slow) * each,
                  None if outside is None else sum(r.outside_api_ns or 0 for r in slow) * each,
                  med([r.exposed_comm_ns for r in rows]), each)
