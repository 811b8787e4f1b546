"""Which job a report is of, and how it ended: run folders found inside a folder, the job's end from its run's
manifest, and captures of different jobs among those summed.

- ``manifests``: the run folders (a manifest.json each; run/manifest.py) among the paths, and their manifests.
  Ranks of one job (RUN/rank0, RUN/rank1, …) are one run (run/folder.py finds them).
- ``job_end``: how the run's job ended (exit code, the signal that ended it, the manifest still saying "running"),
  and after how many steps (the 'step N' ranges of the captures, else the run's metrics.jsonl).
- ``different_jobs``: the captures grouped by job where they are not of one run, when there is evidence that they
  are of different jobs: different command lines (our CUPTI tracer records each process's, nsys the one it
  launched; a rank's own argument such as --local_rank=1 set aside), or one ended an hour or more before the other
  started (nsys records its session's start and length, the tracer its process's). Captures whose processes are
  parent and child, or siblings, are of one job whatever their commands. Without evidence, nothing is said: the
  captures of one job's processes are summed silently. ``not_summed``: why such captures are not summed unless
  asked (`--sum`), and what to do instead.
- ``capture_scope``: the window a windowed run recorded (`run --capture-steps` / `--capture-after`), and
  ``never_opened`` why such a run holds nothing.
"""
from __future__ import annotations

import re
import shlex
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nvprof_wrap.errors import BadInput
from nvprof_wrap.report import CaptureScope, JobEnd, JobGroup, RunInfo
from nvprof_wrap.run import Manifest, Run, held, is_run, rank_folders, runs_inside
from nvprof_wrap.run.manifest import NO_PROFILER
from nvprof_wrap.run.names import MANIFEST, METRICS, STORE
from nvprof_wrap.run.steps import OPTIMIZER
from nvprof_wrap.store.queries import CaptureGpuRow, CaptureJobRow
from nvprof_wrap.text.names import shorten

# Captures whose spans are this far apart (the end of one to the start of the other) are of different jobs.
APART_S = 3600
# The arguments a launcher gives each rank of one job its own value in (torch.distributed.launch's --local_rank=N,
# scripts' --rank N): set aside when commands are compared, so that the ranks of one job are one job.
_RANK_ARGUMENT = re.compile(r"\s--(?:local[-_]|node[-_]|global[-_])?rank(?:=|\s+)\d+(?=\s|$)")


def manifests(paths: list[Path]) -> list[tuple[Path, Manifest]]:
    """(run folder, manifest) of the run among ``paths``: a run folder, the rank folders of a RUN, or the one run a
    folder holds. A manifest that cannot be read says nothing of the job (ingest reads the captures all the same)."""
    out = []
    for p in paths:
        inside = [] if is_run(p) or not p.is_dir() else runs_inside(p)  # (the pipeline refused several)
        for run in [p] if is_run(p) else inside:
            for folder in [run] if is_run(run) else rank_folders(run):
                try:
                    out.append((folder, Run(folder).manifest()))
                except BadInput:
                    continue
    return out


def profiler_free(runs: list[tuple[Path, Manifest]]) -> bool:
    """Whether the run ran without a profiler (`run --backend none`): no capture is then what it should hold."""
    return bool(runs) and all(m.backend == NO_PROFILER for _, m in runs)


def in_progress(paths: list[Path]) -> str | None:
    """'run in progress (…)' when the run among ``paths`` is still running: its manifest says so and a process
    holds its folder's lock (run/lock.py) — what its folder holds so far said too; None otherwise."""
    for folder, m in manifests(paths):
        if (m.status == "running" or m.exit_code is None) and held(folder):
            pid = f"nvprof-wrap pid {m.wrapper_pid}" if m.wrapper_pid else "nvprof-wrap"
            try:
                there = sorted(p.name for p in folder.iterdir() if not p.name.startswith((".", STORE))
                               and p.name != MANIFEST)
            except OSError:
                there = []
            shown = ", ".join(there[:4]) + (f" and {len(there) - 4} more" if len(there) > 4 else "")
            return f"run in progress ({pid} or its job still holds the folder; so far: {shown or 'its manifest'})"
    return None


def job_end(runs: list[tuple[Path, Manifest]], steps: int | None) -> JobEnd | None:
    """How the run's job ended (of a distributed run, the first rank that did not succeed); None without a
    manifest. ``steps``: the steps the captures mark (None: read the run's metrics.jsonl)."""
    if not runs:
        return None
    folder, m = next(((f, m) for f, m in runs if m.status == "running" or m.exit_code), runs[0])
    rank = m.rank if len(runs) > 1 else None
    source = "capture" if steps else None
    if not steps:
        steps = _metric_steps(Run(folder).metrics_file)
        source = METRICS if steps else None
    if m.status == "running" or m.exit_code is None:
        lock = held(folder)
        return JobEnd("running" if lock else "unrecorded", None, None, None, m.signal, steps, source, rank,
                      lock_held=lock, wrapper_pid=m.wrapper_pid)
    if m.exit_code == 0:
        return JobEnd("succeeded", 0, None, None, m.signal, steps, source, rank)
    number = m.exit_code - 128
    name = _signal_name(number) if m.exit_code > 128 else None
    if name:
        return JobEnd("killed", m.exit_code, number, name, m.signal, steps, source, rank)
    return JobEnd("failed", m.exit_code, None, None, m.signal, steps, source, rank)


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def _metric_steps(path: Path) -> int | None:
    from nvprof_wrap.report.health import metric_steps

    try:
        return metric_steps(path) if path.is_file() else None
    except OSError:
        return None


@dataclass
class _Unit:
    """Captures known to be of one job (a run's, or one loose capture), and what tells jobs apart."""

    ids: list[int]
    commands: set[str]
    pids: set[int]
    ppids: set[int]
    span: tuple[float, float] | None  # ns
    label: str
    # device id → (its name, lower case, without 'NVIDIA ', or None; its compute capability 'major.minor' or None)
    gpus: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)


def different_jobs(captures: Sequence[CaptureJobRow], paths: list[Path], runs: list[tuple[Path, Manifest]],
                   gpus: Sequence[CaptureGpuRow] = ()) -> tuple[JobGroup, ...]:
    """The captures (store.capture_jobs() rows) grouped by job, when some are not of the run among ``paths`` and
    there is evidence that they are of different jobs; () otherwise. gpus: store.capture_gpus(): captures that
    state one device id as two GPUs (names or compute capabilities) are of two machines — an RTX 2080 Ti's Kineto
    trace and an A100's, or an nvprof capture's V100 and an H200's ncu export, were summed as one job's, on one
    device named by one and numbered by the other."""
    stated = _stated(gpus)
    roots = [p.resolve() for p, _ in runs]
    of_run = [c for c in captures if any(_under(c["file"], r) for r in roots)]
    run_ids = {c["id"] for c in of_run}
    loose = [c for c in captures if c["id"] not in run_ids]
    if not loose or len(loose) + (1 if of_run else 0) < 2:
        return ()
    units: list[_Unit] = []
    if of_run:  # the run is one job: its manifest says what it was, its captures which processes it had
        ms = [m for _, m in runs]
        procs = [p for m in ms for p in m.processes]
        units.append(_Unit([c["id"] for c in of_run],
                           {" ".join([Path(ms[0].command[0]).name, *ms[0].command[1:]])} if ms[0].command else set(),
                           {p.pid for p in procs} | {c["pid"] for c in of_run if c["pid"] is not None},
                           {p.ppid for p in procs if p.ppid is not None}
                           | {c["ppid"] for c in of_run if c["ppid"] is not None},
                           _span([m.started for m in ms], [m.ended for m in ms], 1e9), str(runs[0][0]),
                           _gpus_of([c["id"] for c in of_run], stated)))
    units += [_Unit([c["id"]], {c["command"]} if c["command"] else set(),
                    {c["pid"]} if c["pid"] is not None else set(),
                    {c["ppid"]} if c["ppid"] is not None else set(),
                    _span([c["started_ns"]], [c["ended_ns"]], 1), c["path"], _gpus_of([c["id"]], stated))
              for c in loose]
    # one job: processes that are parent and child or siblings; then the groups left, and evidence between them
    groups = _linked(units)
    if len(groups) < 2 or not any(_apart(a, b) for i, a in enumerate(groups) for b in groups[i + 1:]):
        return ()
    by_id = {c["id"]: c for c in captures}
    return tuple(JobGroup(tuple(by_id[i]["path"] for i in g.ids), min(g.commands) if g.commands else None,
                          int(g.span[0]) if g.span else None, g.label) for g in groups)


def _under(file: str | None, root: Path) -> bool:
    return bool(file) and Path(file or "").is_relative_to(root)


def _span(starts: list[Any], ends: list[Any], scale: float) -> tuple[float, float] | None:
    """(start, end) in ns; the end is the start when not recorded; None when no start is."""
    s = [x * scale for x in starts if isinstance(x, (int, float))]
    if not s:
        return None
    e = [x * scale for x in ends if isinstance(x, (int, float))]
    return min(s), max(e + s)


def _linked(units: list[_Unit]) -> list[_Unit]:
    """Units merged while two are of one process tree: one's parent is the other, or they share a parent (a number
    among the pids and parent pids of both; a pid of another host taken for one of this tree links, never parts).
    Union-find: a folder of a thousand captures (one per process) is linked in one pass."""
    parent = list(range(len(units)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[int, int] = {}
    for i, u in enumerate(units):
        for pid in u.pids | u.ppids:
            j = first.setdefault(pid, i)
            if pid in u.pids and pid in units[j].pids and (_commands_differ(u, units[j]) or _gpus_differ(u, units[j])):
                continue  # one pid, two command lines (or GPUs): two machines or containers (pid 1 in each)
            parent[find(i)] = find(j)
    groups: dict[int, _Unit] = {}
    for i, u in enumerate(units):
        g = groups.get(find(i))
        if g is None:
            groups[find(i)] = replace(u, ids=list(u.ids), commands=set(u.commands), gpus=dict(u.gpus))
        else:
            g.ids += u.ids
            g.commands |= u.commands
            g.span = _union(g.span, u.span)
            _merge(g.gpus, u.gpus)
    return list(groups.values())


def _union(a: tuple[float, float] | None, b: tuple[float, float] | None) -> tuple[float, float] | None:
    if a is None or b is None:
        return a or b
    return min(a[0], b[0]), max(a[1], b[1])


def _commands_differ(a: _Unit, b: _Unit) -> bool:
    return bool(a.commands and b.commands
                and not {job_command(c) for c in a.commands} & {job_command(c) for c in b.commands})


def job_command(command: str) -> str:
    """A command line as the job's: 'python train.py --local_rank=1' → 'python train.py' (each rank its own)."""
    return _RANK_ARGUMENT.sub("", command).strip()


GpuOf = dict[int, tuple[str | None, str | None]]


def _stated(gpus: Sequence[CaptureGpuRow]) -> dict[int, GpuOf]:
    """capture id → its devices as _Unit.gpus holds them."""
    out: dict[int, GpuOf] = {}
    for g in gpus:
        name = " ".join((g["name"] or "").lower().removeprefix("nvidia ").split()) or None
        cc = f"{g['cc_major']}.{g['cc_minor'] or 0}" if g["cc_major"] is not None else None
        if name or cc:
            out.setdefault(g["capture_id"], {})[g["device_id"]] = (name, cc)
    return out


def _gpus_of(ids: list[int], stated: dict[int, GpuOf]) -> GpuOf:
    out: GpuOf = {}
    for i in ids:
        _merge(out, stated.get(i, {}))
    return out


def _merge(into: GpuOf, more: GpuOf) -> None:
    """into's devices, each with the name and capability more states where into states none."""
    for d, (name, cc) in more.items():
        was = into.get(d, (None, None))
        into[d] = (was[0] or name, was[1] or cc)


def _gpus_differ(a: _Unit, b: _Unit) -> bool:
    """Whether the two state one device id as two GPUs: two names, or two compute capabilities."""
    for d in a.gpus.keys() & b.gpus.keys():
        (na, ca), (nb, cb) = a.gpus[d], b.gpus[d]
        if (na and nb and na != nb) or (ca and cb and ca != cb):
            return True
    return False


def gpus_said(group: JobGroup, captures: Sequence[CaptureJobRow], gpus: Sequence[CaptureGpuRow]) -> str | None:
    """The GPUs a group's captures state, as not_summed names a job without a command ('Tesla V100-SXM2-16GB,
    sm_70'); None where they state none."""
    ids = {c["id"] for c in captures if c["path"] in group.paths}
    said = dict.fromkeys(", ".join(x for x in (g["name"], f"sm_{g['cc_major']}{g['cc_minor'] or 0}"
                                                 if g["cc_major"] is not None else None) if x)
                         for g in gpus if g["capture_id"] in ids)
    said.pop("", None)
    return "; ".join(list(said)[:2]) or None


def _apart(a: _Unit, b: _Unit) -> bool:
    """Evidence that two groups of captures are of different jobs."""
    if _commands_differ(a, b) or _gpus_differ(a, b):
        return True
    if a.span and b.span:
        first, second = sorted((a.span, b.span))
        return second[0] - first[1] >= APART_S * 1e9
    return False


def not_summed(groups: tuple[JobGroup, ...], paths: list[Path], on: dict[str, str] | None = None) -> str:
    """Why captures of different jobs given together make no report, and what to do: `compare` (two of them side by
    side) or `--sum` (one report of them all, said so); then the jobs, by what tells them apart (the command lines'
    common start said once)."""
    words = [g.command.split() if g.command else [] for g in groups]
    said = [w for w in words if w]
    common = 0
    while len(said) > 1 and all(len(w) > common + 1 for w in said) and len({w[common] for w in said}) == 1 \
            and not said[0][common].startswith("-"):  # the program, not its options
        common += 1
    head = f"{' '.join(said[0][:common])} with " if common else ""
    shown = []
    for g, w in list(zip(groups, words))[:3]:
        if w:  # the common start said once, before the first command
            shown.append(head + shorten(" ".join(w[common:]), 60))
            head = ""
        else:
            gpu = (on or {}).get(g.label)
            shown.append(f"{Path(g.label).name} ({f'on {gpu}' if gpu else 'no command recorded'})")
    jobs = "; ".join(shown) + (f"; {len(groups) - 3} more" if len(groups) > 3 else "")
    for two in ([" ".join(str(p) for p in paths)] if len(paths) == 2 else []) + ["A B"]:
        line = (f"{sum(len(g.paths) for g in groups)} captures of {len(groups)} different jobs, not summed into one "
                f"verdict: `nvprof-wrap compare {two}` puts two side by side, --sum sums them ({jobs})")
        if len(line) <= 300:  # BadInput's one line: the paths given, where they fit
            break
    return line


def capture_scope(runs: list[tuple[Path, Manifest]]) -> CaptureScope | None:
    """The window a windowed run recorded (its manifest's capture and what its processes said in windows.jsonl,
    over every rank folder); None for a run that recorded all of its job."""
    from nvprof_wrap.timeline import windows

    asked = next((m.capture for _, m in runs if m.capture is not None), None)
    if asked is None:
        return None
    seen = [s for s in (windows.summary(Run(folder).windows_file) for folder, _ in runs) if s is not None]
    scope = CaptureScope(asked.kind, asked.start, asked.end, asked.option)
    if not seen:
        return scope
    last = max((s.last_step for s in seen if s.last_step is not None), default=None)
    source = next((s.source for s in seen if s.source), None)
    opens = [s.open_step for s in seen if s.open_step is not None]
    closes = [s.close_step for s in seen if s.close_step is not None]
    held = [s.held_ms for s in seen if s.held_ms is not None]
    # optimizer step N begins when the N-th optimizer.step() returns: N steps ran; 'step N' and batch N: N + 1
    steps = None if last is None else last if source == OPTIMIZER else last + 1
    return replace(scope, processes=sum(s.processes for s in seen), opened=sum(s.opened for s in seen),
                   open_step=min(opens) if opens else None, close_step=max(closes) if closes else None,
                   ended_inside=sum(s.ended_inside for s in seen), last_step=last, job_steps=steps, source=source,
                   problems=tuple(dict.fromkeys(p for s in seen for p in s.problems)),
                   held_s=round(max(held) / 1e3, 4) if held else None,
                   stopped_aside=sum(s.aside for s in seen),
                   stop_s=max((round(s.stop_ms / 1e3, 4) for s in seen if s.stop_ms is not None), default=None),
                   profiler_detached=sum(s.detached for s in seen))


def capture_cut(scope: CaptureScope | None) -> int | None:
    """Step B of a steps window whose profiler stopped beside the job (it recorded on while stopping): the report
    keeps nothing from that step's start on (timeline/window.py Window.cut); None otherwise."""
    if scope is None or scope.kind != "steps" or not scope.stopped_aside or scope.end is None:
        return None
    return int(scope.end)


def never_opened(scope: CaptureScope | None) -> str | None:
    """Why a windowed run holds nothing: its window never opened in any process (None when it did, or cannot be
    told)."""
    if scope is None or scope.opened or not scope.processes:
        return None
    if scope.problems:
        return f"the capture window (run {scope.option}) could not open: {scope.problems[0]}"
    if scope.kind == "seconds":
        return (f"the capture window (run {scope.option}) never opened: the job ended before {scope.start:g} s")
    if scope.last_step is None:
        return (f"the capture window (run {scope.option}) never opened: the job marked no step (no NVTX 'step N', "
                "no torch optimizer step, no Keras training batch, no call of a function made by jax.jit)")
    return (f"the capture window (run {scope.option}) never opened: the job's last step was {scope.last_step:,} "
            f"({scope.source or 'steps'}), before step {int(scope.start):,}")


def run_info(paths: list[Path], runs: list[tuple[Path, Manifest]], captures: Sequence[CaptureJobRow]) -> RunInfo:
    """What a page's header says of the run: the folders or files given; the command, start and driver from the
    run's manifest, else the command and start the captures record when they all record the same one."""
    where = ", ".join(str(p) for p in paths)
    if runs:
        m = runs[0][1]
        drivers = sorted({g.driver for g in m.gpus if g.driver})
        return RunInfo(where, shlex.join(m.command) if m.command else None,
                       int(m.started * 1e9) if m.started is not None else None, ", ".join(drivers) or None)
    commands = {c["command"] for c in captures if c["command"]}
    starts = [c["started_ns"] for c in captures if c["started_ns"] is not None]
    return RunInfo(where, commands.pop() if len(commands) == 1 else None, min(starts) if starts else None, None)
