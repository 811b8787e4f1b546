"""Steady state: the part of a capture's timeline a report reads (``--window START:END``, ``--steps A:B``).

A window is [lo, hi) in the capture's own clock (integer ns). Given in seconds it is counted from the capture's first
GPU activity (kernel, copy or set); given as steps A:B it runs from the start of step A to the start of step B (to
the end of step B-1 when B is the last step's successor and was not recorded). Steps are ranges on the CPU side:
NVTX ranges named 'step N' (workloads/_torch_common.py, nvprof_wrap.profile, the Keras callback), torch.profiler's
'ProfilerStep#N'; else the 'optimizer step N' ranges `run` adds to every PyTorch process (annotate.py: from one
optimizer.step() to the next, so unmodified scripts, the HF Trainer and Lightning have steps); else Keras batches when
the job ran with --annotate keras (each call of the model — the Keras layer most often called outside any other —
opens a batch: batch N is the N-th, counted from 0). The job's own marks win: they say what its author calls a step.

What a window keeps: kernels, copies and sets that START inside it (each counted whole, so adjacent windows split
launches and kernel time exactly), and the GPU busy time inside it (intervals cut at its edges). Readers apply it
in SQL (SQLite formats) or to the rows streamed (Kineto).
"""
from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple, overload

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import PROGRAMS
from nvprof_wrap.run import steps as step_names
from nvprof_wrap.run.steps import BATCHES, KERAS_PREFIX, OPTIMIZER, OWN
from nvprof_wrap.run.steps import XLA_EXECUTIONS as XLA

# (name, tid, start, end) of an NVTX or annotation range that may mark a step, as a capture holds it (NULLs too)
Range = tuple[str | None, object, int | None, int | None]

NS = 1_000_000_000
_STEP, _OPTIMIZER_STEP, _KERAS_BATCH = (step_names.PATTERNS[s] for s in step_names.SOURCES)  # run/steps.py
# SQL LIKE patterns that select the ranges a step window can come from (the reader's NVTX text column).
STEP_LIKE = step_names.LIKE


def step_filter(column: str = "name") -> str:
    """The SQL condition on a range's name that STEP_LIKE selects. The first character is compared first (LIKE
    ignores the case of ASCII letters: both cases): where a reader's name is an expression (nsys: the text, else
    its StringIds value, cut) a flattened subquery computes it again for each LIKE — 7 of them on 125k ranges took
    0.14 s, the prefilter lets almost none through to them (0.04 s)."""
    like = " OR ".join(f"{column} LIKE '{p}'" for p in STEP_LIKE)
    if any(p[:1] in ("", "%", "_") or not p[0].isascii() for p in STEP_LIKE):
        return f"({like})"
    first = sorted({c for p in STEP_LIKE for c in (p[0].lower(), p[0].upper())})
    return f"(substr({column}, 1, 1) IN ({', '.join(repr(c) for c in first)}) AND ({like}))"
NO_STEPS = ("--steps: no step ranges in this capture (NVTX 'step N', torch.profiler 'ProfilerStep#N', the optimizer "
            "steps `nvprof-wrap run` marks in PyTorch jobs, Keras batches with --annotate keras, or the executions of "
            "a JAX program XLA marks when nsys traces NVTX)")


@dataclass(frozen=True)
class Window:
    """seconds: (start, end) from the first GPU activity; steps: (A, B) for steps A..B-1. One of the two — or
    neither, with ``cut`` alone.

    cut: B, a capture window's end where the profiler went on recording while it stopped (nsys, its stop beside the
    job: tracer/window.py): nothing from the start of the first step >= B on is kept, whatever else is asked. Not
    the user's window: a capture without step marks is read whole, a format without a timeline as it is."""

    seconds: tuple[float, float] | None = None
    steps: tuple[int, int] | None = None
    cut: int | None = None
    # --with-warmup: keep what a JAX job's GPU ran before its first step (readers/_xla_warmup.py), which a capture
    # read whole leaves out; a window in seconds or steps keeps what it holds either way
    warmup: bool = False

    def __post_init__(self) -> None:
        if self.seconds is not None and self.steps is not None or \
                self.seconds is None and self.steps is None and self.cut is None and not self.warmup:
            raise BadInput(None, "a window is either seconds (--window) or steps (--steps), one of them")
        if self.cut is not None and self.cut < 0:
            raise BadInput(None, f"a capture window's end is a step number (got {self.cut})")
        if self.cuts_only:
            return
        if self.seconds is not None:
            lo, hi = self.seconds
        elif self.steps is not None:
            lo, hi = self.steps
        if not lo < hi or lo < 0:
            what = "--window START:END" if self.seconds is not None else "--steps A:B"
            raise BadInput(None, f"{what}: needs 0 <= start < end (got {lo}:{hi})")

    @property
    def cuts_only(self) -> bool:
        """Only a capture window's end: what the user asked is the whole capture."""
        return self.seconds is None and self.steps is None

    @property
    def key(self) -> str:
        """What the run store adds to a capture's identity: one file read through two windows is two captures."""
        asked = [f"window={self.seconds[0]!r}:{self.seconds[1]!r}"] if self.seconds is not None else \
            [f"steps={self.steps[0]}:{self.steps[1]}"] if self.steps is not None else []
        return ";".join(asked + ([f"{CUT_KEY}{self.cut}"] if self.cut is not None else []) +
                        (["warmup=kept"] if self.warmup else []))

    def describe(self) -> str:
        if self.seconds is not None:
            return f"--window {self.seconds[0]:g}:{self.seconds[1]:g}"
        if self.steps is not None:
            return f"--steps {self.steps[0]}:{self.steps[1]}"
        if self.cut is None:
            return "--with-warmup"
        return f"the capture window's end (step {self.cut})"

    def asked(self) -> Window | None:
        """The window the user asked for, without the cut (None: the whole capture)."""
        return None if self.cuts_only and not self.warmup else Window(self.seconds, self.steps, warmup=self.warmup)


CUT_KEY = "cut-at-step="


def make(window: tuple[float, float] | None = None, steps: tuple[int, int] | None = None,
         cut: int | None = None, warmup: bool = False) -> Window | None:
    """The Window for readers.read / ingest / analyze's ``window=(start_s, end_s)`` and ``steps=(A, B)``; cut: a
    capture window's end to cut at (Window.cut); warmup: keep a JAX job's warm-up (Window.warmup)."""
    if window is None and steps is None:
        return None if cut is None and not warmup else Window(cut=None if cut is None else int(cut), warmup=warmup)
    if window is not None and steps is not None:
        raise BadInput(None, "--window and --steps together: give one of them")
    try:
        if window is not None:
            return Window(seconds=(float(window[0]), float(window[1])), cut=cut, warmup=warmup)
        return Window(steps=(int(steps[0]), int(steps[1])), cut=cut, warmup=warmup)  # type: ignore[index]  # steps is given here: both None returned above
    except (TypeError, ValueError, IndexError):
        raise BadInput(None, f"a window is two numbers (start, end); got {window if window is not None else steps!r}") \
            from None


@overload
def parse(text: str, what: str, integer: Literal[False] = False) -> tuple[float, float]: ...
@overload
def parse(text: str, what: str, integer: Literal[True]) -> tuple[int, int]: ...
@overload
def parse(text: str, what: str, integer: bool) -> tuple[float, float] | tuple[int, int]: ...
def parse(text: str, what: str, integer: bool = False) -> tuple[float, float] | tuple[int, int]:
    """'START:END' → (start, end); one clear line when it is not that."""
    parts = text.split(":")
    example = "10:20" if integer else "30:90.5"
    try:
        if len(parts) != 2:
            raise ValueError
        got = (int(parts[0]), int(parts[1])) if integer else (float(parts[0]), float(parts[1]))
    except ValueError:
        raise BadInput(None, f"{what} {text!r}: expected START:END, e.g. {what} {example}") from None
    # seconds (or steps) a capture can hold: past them a window's nanoseconds overflow (1e308 read as the capture's
    # own error, "unreadable nsys-sqlite capture (OverflowError …)"), and NaN compares with nothing
    if not all(math.isfinite(v) and abs(v) <= MAX_WINDOW for v in got):
        raise BadInput(None, f"{what} {text!r}: each end a number of {'steps' if integer else 'seconds'} "
                             f"within ±{MAX_WINDOW:.0e}, e.g. {what} {example}")
    return got


MAX_WINDOW = 1e9  # seconds (32 years) or steps a window's ends may be


OPEN_ENDS = (-(1 << 62), 1 << 62)  # a window's open ends (timeline/sql.py EVERYTHING)


def bounds(window: Window, origin_ns: int | None, ranges: Iterable[Range]) -> tuple[int, int]:
    """[lo, hi) in ns of the capture's clock. origin_ns: the first GPU activity (None: the capture has none);
    ranges: (name, tid, start, end) of the NVTX / annotation ranges that may mark steps (STEP_LIKE)."""
    ranges = list(ranges) if window.cut is not None else ranges
    if window.seconds is not None:
        if origin_ns is None:
            raise BadInput(None, "no GPU activity to count the window from")
        a, b = window.seconds
        lo, hi = origin_ns + round(a * NS), origin_ns + round(b * NS)
    elif window.steps is not None:
        lo, hi = step_bounds(window.steps, ranges, window.cut)
    else:
        lo, hi = OPEN_ENDS
    return (lo, min(hi, cut_at(window.cut, ranges))) if window.cut is not None else (lo, hi)


def cut_at(step: int, ranges: Iterable[Range]) -> int:
    """The start of the first step >= ``step`` the ranges mark (the open end where they mark none)."""
    starts, _ = _steps(ranges)
    later = [n for n in starts if n >= step]
    return starts[min(later)] if later else OPEN_ENDS[1]


def step_bounds(steps: tuple[int, int], ranges: Iterable[Range], cut: int | None = None) -> tuple[int, int]:
    """cut: steps from this one on are not the capture's (Window.cut): asked for, they are missing (step B still
    ends the window where the capture marks where it began)."""
    a, b = steps
    starts, ends = _steps(ranges)
    ours = {n: t for n, t in starts.items() if n < cut} if cut is not None and any(n < cut for n in starts) \
        else starts
    if not ours:
        raise BadInput(None, NO_STEPS)
    missing = [n for n in (a, b - 1) if n not in ours]
    if missing:
        have = sorted(ours)
        raise BadInput(None, f"--steps {a}:{b}: no step {missing[0]} in this capture (steps {have[0]}..{have[-1]})")
    return starts[a], starts[b] if b in starts else ends[b - 1]


class Marked(NamedTuple):
    """A capture's steps, as marked_steps finds them."""

    source: str | None  # "step marks" | "optimizer steps" | "keras batches" | "XLA executions"; None: no steps
    starts: dict[int, int]  # {step: earliest start}
    ends: dict[int, int]  # {step: latest end}
    # the programs XLA executed for the steps, 'module#program_id' ('jit_update#14586'), several joined by PROGRAMS:
    # with XLA executions as the steps, the one executed; with marked steps, those it executed only inside their ranges
    program: str | None = None


def _steps(ranges: Iterable[Range]) -> tuple[dict[int, int], dict[int, int]]:
    """{step: earliest start}, {step: latest end}: the job's named steps when there are any, else the optimizer
    steps run marked, else Keras batches."""
    m = marked_steps(ranges)
    return m.starts, m.ends


def spans(ranges: Iterable[Range]) -> tuple[str | None, list[tuple[int, int, int]]]:
    """(what marked them, [(step, start, end)] in step order): a step runs from its start to the next step's start,
    the last one to its range's end. (None, []) without steps."""
    source, found, _program = step_spans(ranges)
    return source, found


def step_spans(ranges: Iterable[Range]) -> tuple[str | None, list[tuple[int, int, int]], str | None]:
    """spans, and the program whose executions are the steps (Marked.program)."""
    source, starts, ends, program = marked_steps(ranges)
    order = sorted(starts)
    return source, [(n, starts[n], starts[order[i + 1]] if i + 1 < len(order) else max(ends[n], starts[n] + 1))
                    for i, n in enumerate(order)], program


def marked_steps(ranges: Iterable[Range]) -> Marked:
    """_steps, with what marked them (Marked)."""
    named: tuple[dict[int, int], dict[int, int]] = ({}, {})
    optimizer: tuple[dict[int, int], dict[int, int]] = ({}, {})
    batches: tuple[dict[int, int], dict[int, int]] = ({}, {})
    keras: list[tuple[object, int, int, str | None]] = []
    torch_steps: list[tuple[int, int]] = []
    xla: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for name, tid, s, e in ranges:
        if s is None:
            continue
        m = None
        for pattern, (starts, ends) in ((_STEP, named), (_OPTIMIZER_STEP, optimizer), (_KERAS_BATCH, batches)):
            m = pattern.match(name or "")
            if m:
                break
        if m:
            n = int(m.group(1))
            starts[n] = min(s, starts.get(n, s))
            ends[n] = max(e if e is not None else s, ends.get(n, s))
        elif (name or "").startswith(KERAS_PREFIX):
            keras.append((tid, s, e if e is not None else s, name))
        elif step_names.torch_optimizer_step(name or ""):
            torch_steps.append((s, e if e is not None else s))
        elif (program := step_names.xla_execution(name or "")) is not None:
            xla.setdefault(program, []).append((s, e if e is not None else s))
    for source, found in ((OWN, named), (OPTIMIZER, optimizer), (BATCHES, batches)):
        # optimizer step 0 alone is the range annotate opens at torch's import: no optimizer ever stepped (a Keras
        # job on the torch backend), so it marks no step
        if found[0] and (source != OPTIMIZER or len(found[0]) > 1):
            return Marked(source, *found, _inside(found, xla))
    if len(torch_steps) > 1:  # torch.profiler's Optimizer.step#… ranges, numbered in start order from 0
        calls = sorted(set(torch_steps))
        return Marked(OPTIMIZER, {i: s for i, (s, _) in enumerate(calls)}, {i: e for i, (_, e) in enumerate(calls)})
    if keras:
        batches = _keras_batches(keras)
        return Marked(BATCHES, *batches, _inside(batches, xla))
    program, runs = max(xla.items(), key=lambda kv: len(kv[1]), default=(None, []))
    if program is not None and len(runs) > 1:  # a JAX step: one execution of the program XLA ran most often, in
        # start order from 0
        calls = sorted(set(runs))
        return Marked(XLA, {i: s for i, (s, _) in enumerate(calls)}, {i: e for i, (_, e) in enumerate(calls)},
                      f"{program[0]}#{program[1]}")
    return Marked(None, {}, {})


def _inside(steps: tuple[dict[int, int], dict[int, int]],
            xla: dict[tuple[str, int], list[tuple[int, int]]]) -> str | None:
    """The programs XLA executed inside the steps' own ranges (each execution's range within one step's), most
    executions first, joined by PROGRAMS. None where a program ran both inside and outside them (its FLOPs are per
    program: which of them were the steps' is not known), or where those inside ran in fewer than STEPS_COVERED of
    the steps. Keras on JAX marks its batches around its train step program's executions, and runs its validation
    and evaluation programs between them: their FLOPs are no step's."""
    ranges = sorted((steps[0][n], steps[1].get(n, steps[0][n])) for n in steps[0])
    los = [lo for lo, _hi in ranges]

    def step_of(s: int, e: int) -> int | None:
        i = bisect.bisect_right(los, s) - 1
        return i if i >= 0 and e <= ranges[i][1] else None
    found: list[tuple[tuple[str, int], int]] = []
    covered: set[int] = set()
    for program, runs in xla.items():
        where = [i for s, e in runs if (i := step_of(s, e)) is not None]
        if where and len(where) < len(runs):
            return None
        if where:
            found.append((program, len(runs)))
            covered.update(where)
    if len(covered) < STEPS_COVERED * len(ranges):
        return None
    found.sort(key=lambda pr: (-pr[1], pr[0]))
    return PROGRAMS.join(f"{module}#{program}" for (module, program), _n in found) or None


STEPS_COVERED = 0.9  # of the marked steps, those the programs found inside them must have run in (_inside)


def _keras_batches(keras: list[tuple[object, int, int, str | None]]) -> tuple[dict[int, int], dict[int, int]]:
    """Batch N: the N-th call of the model — the Keras layer whose calls are most often outermost (not inside
    another Keras call on their thread; layers built before the first batch are called alone too) — in start order
    over every thread."""
    outer: list[tuple[str | None, int, int]] = []
    tid_now: object = object()
    reach: int | None = None
    for tid, s, e, name in sorted(keras, key=lambda r: (str(r[0]), r[1], -r[2])):
        if tid != tid_now:
            tid_now, reach = tid, None
        if reach is None or s > reach:
            outer.append((name, s, e))
            reach = e
    model = Counter(name for name, _, _ in outer).most_common(1)[0][0]
    calls = sorted((s, e) for name, s, e in outer if name == model)
    return {i: s for i, (s, _) in enumerate(calls)}, {i: e for i, (_, e) in enumerate(calls)}


def refuse(fmt: str) -> BadInput:
    return BadInput(None, f"--window/--steps need a timeline of GPU activity, which a {fmt} file does not have")
