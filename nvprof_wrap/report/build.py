"""Store rows → Report (report/types.py): pure, no printing, no files, no SQL (the store's named queries,
store/queries.py); every number comes from an SQL aggregate. The pipeline then adds what the store does not hold:
the job's end, the capture window, hints and health (the with_* functions)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from nvprof_wrap.analyses import achieved, ceiling, peaks, warmup
from nvprof_wrap.analyses.achieved import Achieved
from nvprof_wrap.analyses.budget import TimeBudget
from nvprof_wrap.classify import COMMUNICATION_FAMILIES, counters, xla_flops
from nvprof_wrap.classify.counter_flops import COUNTERS_OP
from nvprof_wrap.classify.hardware import disagrees
from nvprof_wrap.classify.rank import gpu_facts
from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import CUDA_GRAPH_KERNEL, NO_RANGE, PROGRAMS, Gpu, HealthVerdict
from nvprof_wrap.report import communication, headline
from nvprof_wrap.report import ranks as ranks_mod
from nvprof_wrap.report import series as series_mod
from nvprof_wrap.report.types import (
    MEM_ORDER,
    SPLIT_KINDS,
    CaptureScope,
    Ceilings,
    GpuRow,
    GroupRow,
    HardwareCheck,
    HardwarePoint,
    HardwareRow,
    JobEnd,
    JobGroup,
    KernelRow,
    OpRow,
    PrecisionShare,
    Report,
    Scope,
    Source,
    SplitRow,
)
from nvprof_wrap.store import Store
from nvprof_wrap.store.queries import COUNTER_ONLY_FORMATS, OpFlopsRow
from nvprof_wrap.system import bounded


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
    rows: list[tuple[str, str, int, int]] = [(key, "", by[key][0], by[key][1]) for key in SPLIT_KINDS[:4]]
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


def _labels(store: Store, key: str) -> dict[Any, str]:
    if key == "device_id":
        labels = {r["g"]: f"{r['name'] or 'GPU'}" + (f" (sm_{r['ma']}{r['mi'] or 0})" if r["ma"] is not None else "")
                  for r in store.devices()}
        if len(set(labels.values())) == 1:  # kernels of no recorded device (console summaries): of the one model
            labels.setdefault(None, next(iter(labels.values())))
        return labels
    return {r["g"]: " ".join(x for x in ((r["name"] or "")[:40], f"rank {r['rank']}" if r["rank"] is not None else "")
                             if x) for r in store.processes()}


def unmatched(store: Store) -> dict[int, tuple[int, int]]:
    """{counter tool's capture read beside a timeline capture: (its kernel names, how many of them ran in no timeline
    capture — their counters decide nothing)}; a name the two tools spell apart is one kernel
    (classify/counters.alike), as pipeline/evidence.rank attaches its counters."""
    timeline = store.timeline_kernel_names()
    counted = store.counted_kernel_names()
    if not timeline or not counted:
        return {}
    ran = {name for _capture, name in timeline}
    ran |= set(counters.alike(set().union(*counted.values()), timeline).values())
    return {capture: (len(names), len(names - ran)) for capture, names in counted.items()}


def _unmatched(counts: tuple[int, int] | None) -> tuple[str, ...]:
    """A counter tool's capture beside a timeline: the note where some of its kernels ran in no timeline capture —
    their counters decide nothing, which had gone unsaid (an H200's ncu export beside another job's nsys capture of
    the same GPU: 24 kernels' counters, none of them counted)."""
    if counts is None or not counts[1]:
        return ()
    names, n = counts
    if n == names:
        return ((f"none of its {names} kernels ran in the timeline captures read with it: their counters decide "
                 "nothing here (a capture of another job or run?)"),)
    return ((f"{n} of its {names} kernels ran in no timeline capture read with it: their counters decide nothing "
             "here (kernels of another run, or of the part of it the timeline left out?)"),)


def _gpus(store: Store) -> tuple[GpuRow, ...]:
    out = []
    for r in store.devices():
        gpu = Gpu(r["g"], r["name"], r["ma"], r["mi"])
        out.append(GpuRow(gpu, *gpu_facts(gpu.cc, gpu.name)))
    return tuple(out)


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
    counted = unmatched(store)
    sources = tuple(Source(r["path"], r["format"], bool(r["partial"]),
                           tuple(_json_list(r["notes"])) + _unmatched(counted.get(r["id"])))
                    for r in store.sources())
    disagreements = tuple(k for k in kernels if k.evidence in ("counters", "compiled code")
                          and k.name_verdict != "unknown" and k.tensor_core != k.name_verdict)
    ops, scopes = _ops(store, "op"), _ops(store, "scope")
    if [o.op for o in ops] == [o.op for o in scopes]:
        scopes = ()  # one level of ranges only: the scope table would repeat the op table
    verdict = headline.verdict(kernels)
    if not total and (store.untimed_kernels() or any(k.launches for k in kernels)):
        # no kernel time: none recorded (a counter tool's export), or every kernel's unusable (counted without it)
        verdict = headline.untimed(verdict, counters=all(s.format in COUNTER_ONLY_FORMATS for s in sources))
    devices = _groups(store, "device_id")
    checks = _hardware_checks(store, kernels)
    read = series_mod.Read.of(store)  # the series and the budget read the step kernels once
    series = series_mod.build(store, kernels, COMMUNICATION_FAMILIES, read)
    budget = series_mod.time_budget(store, series, kernels, COMMUNICATION_FAMILIES, read)
    gpus = _gpus(store)
    # the counters' FLOPs (verify: classify/counter_flops.py) are timed under Nsight Compute, not in the trace: the
    # counter check shows them beside the trace's, never added to them
    flop_rows = [r for r in store.op_flops_rows() if r["op"] != COUNTERS_OP]
    by_name = {k.name: k for k in kernels}
    ran = achieved.ran_in(((r["op"], r["name"], r["precision"], r["flops"], r["total_ns"]) for r in flop_rows),
                          by_name.get)
    flops = [(name, precision, f, ns) for _op, name, precision, f, ns in ran]
    done = _achieved(flops, kernels, gpus)
    return Report(verdict, _split(store, kernels), devices, _groups(store, "pid"), kernels,
                  sources, skipped, disagreements, ops, scopes, gpus=gpus,
                  hardware=_hardware(store, devices, checks), hardware_checks=checks,
                  hardware_series=_hardware_series(store),
                  series=series, ranks=ranks_mod.build(store, COMMUNICATION_FAMILIES),
                  time_budget=budget, ceiling=_ceiling(budget, gpus), achieved=done,
                  mfu=achieved.mfu(done, series.marked, budget.step_s, *_step_flops(flop_rows, series.program))
                  if done and budget and series and series.kind == "steps" and series.marked
                  and _flops_cover_the_math(flops, kernels) else None,
                  achieved_kernels=achieved.per_kernel(ran, by_name.get) if done else (),
                  warmup=warmup.of(store.warmup_rows(), total),
                  communication=communication.build(store, ((k.name, k.family, k.launches, k.total_ns)
                                                            for k in kernels), series, COMMUNICATION_FAMILIES))


def _achieved(flops: list[tuple[str, str, float, int]], kernels: tuple[KernelRow, ...],
              gpus: tuple[GpuRow, ...]) -> dict[str, Achieved] | None:
    """Achieved TFLOP/s per precision (analyses/achieved.py) where the captures hold FLOPs (the store's op_flops as
    (kernel name, precision, FLOPs, ns)); None where none does."""
    if not flops:
        return None
    verdict = {k.name: k.tensor_core for k in kernels}
    return achieved.achieved(flops, lambda name: verdict.get(name, "unknown"), _peak(gpus),
                             sum(k.total_ns for k in kernels)) or None


# MFU counts a step's matrix FLOPs: from FLOPs known for part of the tensor-core work it would read low, and look
# true (a Keras-on-JAX GPT: XLA's dump gave its Triton GEMMs' FLOPs, 1.2% of kernel time, not cuBLAS's or cuDNN's)
MFU_MIN_COVER = 0.9


def _step_flops(rows: list[OpFlopsRow], program: str | None) -> tuple[float | None, str | None]:
    """(the FLOPs of the steps' own programs, them) where XLA executed programs for the steps (timeline/window.py
    Marked.program: the one whose executions are the steps, or those executed only inside the steps' ranges; the
    op_flops rows of their ops from XLA's dump: classify/xla_flops.program_of); else (None, None): every FLOP
    counts."""
    if program is None:
        return None, None
    ours = set(program.split(PROGRAMS))
    return sum(r["flops"] for r in rows if xla_flops.program_of(r["op"]) in ours), program


def _flops_cover_the_math(flops: list[tuple[str, str, float, int]], kernels: tuple[KernelRow, ...]) -> bool:
    """Whether FLOPs are known for at least MFU_MIN_COVER of the tensor-core kernels' time, and no kernel time is
    hidden in CUDA graph launches (whose kernels, tensor-core ones among them, were not traced: jax's MNIST runs its
    step as graphs, and the cuBLAS GEMMs of its accuracy pass alone would pass for the step's math)."""
    if any(k.name == CUDA_GRAPH_KERNEL and k.total_ns for k in kernels):
        return False
    known = {name for name, _p, _f, _ns in flops}
    tc = sum(k.total_ns for k in kernels if k.tensor_core == "yes")
    covered = sum(k.total_ns for k in kernels if k.tensor_core == "yes" and k.name in known)
    return tc > 0 and covered >= MFU_MIN_COVER * tc


def _peak(gpus: tuple[GpuRow, ...]) -> peaks.Peak | None:
    """The peak table's row of the run's GPUs: one model only, with a row; else None (never a neighbour's)."""
    found = {peaks.lookup(g.gpu.name or "") for g in gpus}
    return next(iter(found)) if len(found) == 1 else None


def _ceiling(budget: TimeBudget | None, gpus: tuple[GpuRow, ...]) -> Ceilings | None:
    """The budget's speed-up ceilings on the run's GPU: one model only (a peak table row), else none."""
    peak = _peak(gpus)
    return Ceilings.of(ceiling.ceiling(budget, peak)) if budget is not None and peak is not None else None


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


def without_profiler(report: Report) -> Report:
    """A run without a profiler (`run --backend none`) holds no capture by design: said so, not "did the job run on
    the GPU?"."""
    if report.verdict.tensor_cores != "no-kernels":
        return report
    return replace(report, verdict=replace(report.verdict, message=(
        "No profiler capture (--backend none): the job ran without a profiler; what it recorded is its log, its "
        "training health and, with --numerics, its numbers.")))


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


@dataclass
class _OpSum:
    """One op's kernels, summed (_ops)."""

    kernels: int = 0
    launches: int = 0
    ns: int = 0
    tc: int = 0
    prec: dict[str, int] = field(default_factory=dict)
    hw: float = 0.0  # hardware tensor activity x time, over its kernels that have samples
    hw_ns: int = 0


def _ops(store: Store, column: str) -> tuple[OpRow, ...]:
    by: dict[str, _OpSum] = {}
    hw: dict[str, list[float]] = {}
    for h in store.hardware_kernels():
        acc = hw.setdefault(h["name"], [0.0, 0])
        acc[0] += h["tensor"] * h["n"]
        acc[1] += h["n"]
    for r in store.op_kernels(column):
        g = by.setdefault(r["op"], _OpSum())
        if r["name"] in hw and r["ns"]:
            g.hw += hw[r["name"]][0] / hw[r["name"]][1] * r["ns"]
            g.hw_ns += r["ns"]
        g.kernels += 1
        g.launches += r["launches"]
        g.ns += r["ns"] or 0
        g.tc += (r["ns"] or 0) if r["tensor_core"] == "yes" else 0
        p = r["precision"] or "unstated"
        g.prec[p] = g.prec.get(p, 0) + (r["ns"] or 0)
    if set(by) <= {NO_RANGE}:  # not one kernel inside a range: a table of one row would say nothing
        return ()
    total = sum(g.ns for g in by.values()) or 1
    out = [OpRow(op, g.kernels, g.launches, g.ns, g.ns / total, g.tc / g.ns if g.ns else 0.0,
                 tuple(PrecisionShare(p, ns / g.ns if g.ns else 0.0)
                       for p, ns in sorted(g.prec.items(), key=lambda kv: -kv[1])),
                 round(g.hw / g.hw_ns, 2) if g.hw_ns and g.hw_ns >= 0.5 * g.ns else None)
           for op, g in by.items()]
    return tuple(sorted(out, key=lambda o: -o.total_ns))


def _json_list(text: str | None) -> list[str]:
    try:
        v = bounded.loads(text or "[]")
        return [str(x) for x in v] if isinstance(v, list) else []
    except ValueError:
        return []
