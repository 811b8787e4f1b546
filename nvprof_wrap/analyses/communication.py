"""Communication: how much of the GPU's time went to collectives, which ones, how much of it compute hid, and —
across ranks — who arrived last at each collective.

- **By collective**: the communication kernels (rules.toml families with `communication = true`: NCCL, DeepEP,
  NVSHMEM) grouped by what their names spell (classify/collectives.py: collective, data type, algorithm, protocol).
- **Overlap**: per step, the communication kernels' time and the part of it during which no other kernel, copy or
  set of the same process ran (timeline/series.py measures both as interval unions: busy − compute-only busy);
  the rest was hidden under compute. Summed over the steady steps.
- **Stragglers**: the k-th collective of a step on each rank is the same collective (NCCL requires every rank to
  call collectives in the same order); the rank that started it last, on clocks aligned by each capture's session
  start, is the one the others waited for, and by how much.

Time in a collective includes waiting for the slowest rank: a rank with less communication time than the others
may be the one they wait for.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nvprof_wrap.classify.collectives import parse

EXPOSED_DOMINATES = 0.25  # exposed communication at least this share of the mean step: advice worth giving
MIN_LATE_NS = 50_000  # a rank later than the others' earliest start by less than this is jitter, not a straggler
MAX_STRAGGLERS = 2000  # rows kept (a 1,000-step job of 50 buckets would have 50,000): the ranks' totals count all
CAUSE_SHARE = 0.5  # a rank's extra compute (or idle) in the step explains its lateness when at least half of it


@dataclass(frozen=True)
class CollectiveRow:
    """Communication kernels of one collective, data type, algorithm and protocol, across the run."""

    collective: str  # "" where the name spells none (an NVSHMEM barrier, a DeepEP kernel)
    dtype: str
    algorithm: str
    protocol: str
    launches: int
    kernel_ns: int
    share: float  # of the communication kernels' time
    name: str  # its biggest kernel's name


@dataclass(frozen=True)
class Overlap:
    """Over the steady steps, per mean step: the communication kernels' time and the part of it no compute ran beside
    (exposed); the rest was hidden under compute on other streams."""

    steps: int
    kind: str  # "steps" | "buckets" (time buckets with GPU work, where the capture marks no steps)
    step_ns: int  # the mean step
    comm_ns: int
    exposed_ns: int
    hidden_share: float  # of the communication time
    exposed_step_share: float  # of the mean step


@dataclass(frozen=True)
class Straggler:
    """One collective of one step matched across ranks: who started it last, and how long after the first."""

    step: int
    nth: int  # the nth communication kernel of the step on each rank, from 0
    collective: str
    rank: int  # the last to start it
    late_ns: int  # its start after the earliest rank's
    # what the rank's own capture shows of its step beside the other ranks' median: longer compute, a GPU left
    # idle longer (its host: Python, data loading, launches); "" where neither explains it
    cause: str = ""


@dataclass(frozen=True)
class StragglerRank:
    """A rank that arrived last at collectives: how many, and its lateness in all."""

    rank: int
    collectives: int
    late_ns: int
    steps: int  # in how many steps


@dataclass(frozen=True)
class Communication:
    """JSON "communication" (docs/json.md), absent from a run without communication kernels."""

    kernel_ns: int  # the communication kernels' time, all ranks
    share: float  # of all kernel time
    collectives: tuple[CollectiveRow, ...] = ()
    overlap: Overlap | None = None
    stragglers: tuple[Straggler, ...] = ()  # the first MAX_STRAGGLERS in step order (of steps, never buckets)
    straggler_ranks: tuple[StragglerRank, ...] = ()  # of the steady steps (after the first)


def by_collective(kernels: Iterable[tuple[str, int, int]]) -> tuple[CollectiveRow, ...]:
    """(name, launches, kernel ns) of the communication kernels → one row per (collective, dtype, algorithm,
    protocol), most time first."""
    groups: dict[tuple[str, str, str, str], list[int]] = {}
    biggest: dict[tuple[str, str, str, str], tuple[int, str]] = {}
    for name, launches, ns in kernels:
        c = parse(name)
        key = (c.collective, c.dtype, c.algorithm, c.protocol)
        g = groups.setdefault(key, [0, 0])
        g[0] += launches
        g[1] += ns
        if ns > biggest.get(key, (-1, ""))[0]:
            biggest[key] = (ns, name)
    total = sum(g[1] for g in groups.values())
    rows = [CollectiveRow(*key, g[0], g[1], round(g[1] / total, 6) if total else 0.0, biggest[key][1])
            for key, g in groups.items()]
    return tuple(sorted(rows, key=lambda r: (-r.kernel_ns, r.collective, r.dtype)))


def overlap(steps: Sequence[tuple[int, int, int]], kind: str = "steps") -> Overlap | None:
    """(duration ns, communication ns, exposed communication ns) of the steady steps → their mean; None without
    communication in them."""
    if not steps or not any(c for _d, c, _e in steps):
        return None
    n = len(steps)
    step, comm, exposed = (sum(d for d, _c, _e in steps) // n, sum(c for _d, c, _e in steps) // n,
                           sum(e for _d, _c, e in steps) // n)
    return Overlap(n, kind, step, comm, exposed, round(1 - exposed / comm, 6) if comm else 0.0,
                   round(exposed / step, 6) if step else 0.0)


def stragglers(starts: Mapping[int, Mapping[int, Sequence[tuple[int, str]]]],
               own: Mapping[tuple[int, int], tuple[int, int]] | None = None) -> tuple[Straggler, ...]:
    """starts: rank → step → (start ns on the common clock, kernel name) of its communication kernels in start
    order. For each step every rank ran and each nth below the fewest collectives any of them ran, the rank that
    started it last; kept where it was at least MIN_LATE_NS after the earliest. own: (rank, step) → (compute-busy
    ns, GPU idle ns) of the rank's step, for the cause. Fewer than 2 ranks: none."""
    if len(starts) < 2:
        return ()
    out = []
    ranks = sorted(starts)
    common = set.intersection(*(set(starts[r]) for r in ranks))
    for step in sorted(common):
        count = min(len(starts[r][step]) for r in ranks)
        for k in range(count):
            at = sorted((starts[r][step][k][0], r) for r in ranks)
            first, (last, rank) = at[0][0], at[-1]
            if last - first >= MIN_LATE_NS:
                out.append(Straggler(step, k, parse(starts[rank][step][k][1]).collective, rank, last - first,
                                     _cause(rank, step, ranks, last - first, own or {})))
    return tuple(out)


def _cause(rank: int, step: int, ranks: Sequence[int], late: int,
           own: Mapping[tuple[int, int], tuple[int, int]]) -> str:
    mine = own.get((rank, step))
    others = [own[(r, step)] for r in ranks if r != rank and (r, step) in own]
    if mine is None or not others:
        return ""
    host = "GPU idle (its host: Python, data loading, launches)"
    for i, what in ((0, "compute (GPU busy without communication)"), (1, host)):
        theirs = sorted(o[i] for o in others)[len(others) // 2]
        if mine[i] - theirs >= CAUSE_SHARE * late:
            return f"its {what} in step {step} {mine[i] / 1e6:.2f} ms vs {theirs / 1e6:.2f} ms median of the others"
    return ""


def straggler_ranks(found: Sequence[Straggler]) -> tuple[StragglerRank, ...]:
    """Per rank that was last anywhere: collectives, lateness in all, steps; the most-late rank first."""
    by: dict[int, list[int]] = {}
    steps: dict[int, set[int]] = {}
    for s in found:
        g = by.setdefault(s.rank, [0, 0])
        g[0] += 1
        g[1] += s.late_ns
        steps.setdefault(s.rank, set()).add(s.step)
    return tuple(sorted((StragglerRank(r, g[0], g[1], len(steps[r])) for r, g in by.items()),
                        key=lambda t: (-t.late_ns, t.rank)))
