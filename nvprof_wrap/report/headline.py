"""The lines a reader must know first, in words written once for every renderer: the verdict sentence, how the
run's job ended, captures of different jobs summed, the capture window a windowed run recorded, the steady-state
scope, and each device's hardware tensor-pipe activity. Pure: records in, text out."""
from __future__ import annotations

import datetime

from nvprof_wrap.model import CUDA_GRAPH_KERNEL
from nvprof_wrap.report.types import (
    LATE,
    CaptureScope,
    HardwareRow,
    JobEnd,
    JobGroup,
    KernelRow,
    Report,
    Scope,
    Verdict,
)
from nvprof_wrap.run.steps import XLA_EXECUTIONS
from nvprof_wrap.text.names import shorten
from nvprof_wrap.text.units import pct_or_less as _pct_or_less

_UNTIMED = ("kernel time was not captured (the export has no duration), so no time shares: "
            "add gpu__time_duration.sum or the SpeedOfLight section, or read a timeline capture beside it")
# a timeline capture (nsys, Kineto, nvprof…) all of whose kernels' times are unusable: no counter tool's advice
_UNUSABLE = ("no kernel has a usable time (each missing, negative or longer than a week: a damaged capture?), so no "
             "time shares")


def untimed(v: Verdict, counters: bool = True) -> Verdict:
    """The verdict of kernels whose capture recorded launches but no durations: counts, never '0.0% of time'.
    counters: the kernels are a counter tool's (ncu: what to add to its export); else a timeline's whose every
    time was unusable."""
    said = _UNTIMED if counters else _UNUSABLE
    if v.tensor_cores == "yes":
        msg = (f"Tensor cores used: yes — {v.tc_kernels} of {v.kernels} kernels, "
               f"{' + '.join(v.precisions) or 'precision unstated'}; {said}")
    elif v.tensor_cores == "no":
        msg = f"Tensor cores used: no — none of the {v.kernels} kernels is a tensor-core kernel; {said}"
    elif v.tensor_cores == "unknown":
        n = v.kernels - v.tc_kernels
        msg = (f"Tensor cores used: not seen — no kernel is known to use them, but some of the {n} kernels carry no "
               f"evidence in their names; {said}")
    else:
        return v
    return Verdict(v.tensor_cores, msg, v.tc_kernels, v.kernels, v.launches, 0, 0, 0, 0.0, v.precisions)


def verdict(kernels: tuple[KernelRow, ...]) -> Verdict:
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
                                  f"({_pct_or_less(unk_ns / total if total else 0)} of kernel time) "
                                  f"{'carries' if n == 1 else 'carry'} no evidence in "
                                  f"{'its name' if n == 1 else 'their names'}; nvprof-wrap verify measures them with "
                                  "counters")
    else:
        status, msg = "no", (f"Tensor cores used: no — none of the {len(kernels)} kernels is a tensor-core kernel; "
                             f"kernel time by precision: {_mix(kernels, total)}")
    graphs = sum(k.total_ns for k in kernels if k.name == CUDA_GRAPH_KERNEL)
    if graphs:  # readers/_nsys_graphs.py: time whose kernels nobody saw, whatever the verdict of the rest
        msg += (f"; CUDA graphs ran {_pct_or_less(graphs / total if total else 0)} of kernel time with their kernels "
                "unrecorded (capture with nsys --cuda-graph-trace=node)")
    return Verdict(status, msg, len(tc), len(kernels), launches, total, tc_ns, unk_ns, frac, precisions)


def _mix(kernels: tuple[KernelRow, ...], total: int) -> str:
    by: dict[str, int] = {}
    for k in kernels:
        by[k.precision or "unstated"] = by.get(k.precision or "unstated", 0) + k.total_ns
    top = sorted(by.items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"{p} {_pct_or_less(ns / total if total else 0)}" for p, ns in top)


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
        if c.source == XLA_EXECUTIONS:  # counted live from the job's jitted calls; the capture numbers its own
            counted = (", counted by the job's calls of its most-called jitted function (XLA executions, numbered "
                       "from 0 in the capture)")
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
    """'3 captures of 2 different jobs summed (--sum): python a.py (2 captures); python b.py …'; None for one job."""
    if len(groups) < 2:
        return None
    n = sum(len(g.paths) for g in groups)

    def one(g: JobGroup) -> str:
        what = shorten(g.command, 60) if g.command else g.label
        when = f", started {_utc(g.started_ns)}" if g.started_ns is not None else ""
        return f"{what} ({len(g.paths)} capture{'s' if len(g.paths) != 1 else ''}{when})"
    shown = "; ".join(one(g) for g in groups[:3]) + (f"; and {len(groups) - 3} more" if len(groups) > 3 else "")
    return (f"{n} captures of {len(groups)} different jobs summed (--sum): {shown} — every figure below is of them "
            "all; `nvprof-wrap compare A B` puts two side by side")


def _utc(ns: int) -> str:
    try:
        return datetime.datetime.fromtimestamp(ns / 1e9, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):
        return "at an unreadable time"


def scope_text(scope: Scope | None) -> str | None:
    """The steady-state line of a report read through --window / --steps; None for whole captures."""
    if scope is None:
        return None
    what = (f"steps {int(scope.start)} to {int(scope.end) - 1}" if scope.kind == "steps" else
            f"{scope.start:g} s to {scope.end:g} s after the first GPU activity")
    return f"Steady state only: {what} ({scope.option}) — every time, share and idle figure is of what started in it."


def every(interval_ns: int) -> str:
    return f"{interval_ns / 1e6:g} ms" if interval_ns >= 1_000_000 else f"{interval_ns / 1e3:g} µs"


def hardware_text(h: HardwareRow) -> str:
    """One device's hardware tensor-pipe activity beside the names' share, in words (every renderer's line)."""
    if h.tensor_busy is None:
        return (f"device {h.device_id}, {h.source} ({h.samples:,} samples of {every(h.interval_ns)}): no sample "
                "fell while kernels ran")
    sm = f"; SMs {h.sm_busy:.1f}% active" if h.sm_busy is not None else ""
    agree = "consistent with the names" if not h.disagreements else \
        f"{h.disagreements} kernel{'s' if h.disagreements != 1 else ''} where it contradicts the names (below)"
    short = "" if h.unsampled_share < 0.005 else (
        f". {100 * h.unsampled_share:.1f}% of its kernel time is in kernels that never filled a {every(h.interval_ns)} "
        "sample alone (shorter, or always beside others): the hardware does not tell those apart"
        + (" — a higher --gpu-metrics-frequency resolves shorter kernels" if h.source.startswith("nsys") else ""))
    return (f"device {h.device_id}, {h.source}: tensor pipes {h.tensor_busy:.1f}% active over the "
            f"{h.busy_samples:,} samples of {every(h.interval_ns)} taken while kernels ran{sm}; the names put "
            f"{100 * h.names_tc_share:.1f}% of its kernel time on tensor cores — {agree}{short}")


def lines(report: Report) -> tuple[str, ...]:
    """Report.headline: the job's end, captures of different jobs, the capture window — those that apply."""
    return tuple(line for line in (job_line(report.job, report.verdict), jobs_line(report.different_jobs),
                                   capture_line(report.capture)) if line)


LATE.headline = lines
