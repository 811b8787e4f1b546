"""The report's communication (analyses/communication.py) from the store: the communication kernels by collective,
their overlap with compute over the steady steps, and — of ranks — who arrived last at each step's collectives."""
from __future__ import annotations

from collections.abc import Iterable

from nvprof_wrap.analyses import communication as comm
from nvprof_wrap.report.series import Series, steady_rows
from nvprof_wrap.store import Store


def build(store: Store, kernels: Iterable[tuple[str, str, int, int]], series: Series | None,
          communication: frozenset[str]) -> comm.Communication | None:
    """kernels: (name, family, launches, ns) of every kernel; None where none is a communication kernel."""
    rows = list(kernels)
    total = sum(ns for _n, _f, _l, ns in rows)
    mine = [(name, launches, ns) for name, family, launches, ns in rows if family in communication]
    if not mine:
        return None
    spent = sum(ns for _n, _l, ns in mine)
    steady_ = steady_rows(series)
    found = comm.stragglers(*_rank_starts(store)) if series is not None and series.kind == "steps" else ()
    steady = {r.step for r in steady_}  # the ranks' lateness in the warm-up step (set-up, first allocations) is not
    # what holds the job: the ranks that were late are counted over the steady steps
    return comm.Communication(spent, round(spent / total, 6) if total else 0.0, comm.by_collective(mine),
                              # a row's kernel time is its processes' sum, its exposed time their mean
                              comm.overlap([(r.duration_ns, r.comm_ns // max(r.processes, 1), r.exposed_comm_ns)
                                            for r in steady_], series.kind if series is not None else "steps"),
                              found[:comm.MAX_STRAGGLERS],
                              comm.straggler_ranks([s for s in found if s.step in steady]))


def _rank_starts(store: Store) -> tuple[dict[int, dict[int, list[tuple[int, str]]]],
                                        dict[tuple[int, int], tuple[int, int]]]:
    """rank → step → [(start on the common clock, name)] in order; (rank, step) → (compute ns, idle ns)."""
    store.index_ranks()
    starts: dict[int, dict[int, list[tuple[int, str]]]] = {}
    for r in store.rank_collective_rows():
        starts.setdefault(r["rank"], {}).setdefault(r["step"], []).append((r["at_ns"], r["name"]))
    own = {(r["rank"], r["step"]): (r["compute_ns"] or 0, r["idle_ns"] or 0) for r in store.rank_step_own()}
    return starts, own
