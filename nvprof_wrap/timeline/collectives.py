"""When each communication kernel of a step started, in order: the k-th collective of a step is the same collective
on every rank (NCCL has every rank call them in one order), so these starts, on clocks aligned across captures,
say which rank the others waited for (analyses/communication.py).

One query per kernel table, for the communication kernels' name keys only (none: nothing is read), their steps
found by bisection over the steps' starts; at most MAX_PER_STEP a step and process (a step of hundreds of buckets
stays bounded in the store).
"""
from __future__ import annotations

import bisect
import sqlite3
from typing import Any

from nvprof_wrap.classify import COMMUNICATION_FAMILIES, classify
from nvprof_wrap.classify.engine import may_communicate
from nvprof_wrap.model import StepCollective, StepKernels
from nvprof_wrap.timeline.series_tables import GpuTable, Names

MAX_PER_STEP = 256


def is_communication(name: str) -> bool:
    return may_communicate(name) and classify(name).family in COMMUNICATION_FAMILIES


def starts(conn: sqlite3.Connection, gpu: list[GpuTable], spans: list[tuple[int, int, int]], names: Names,
           kernels: StepKernels, keys: list[Any] | None = None) -> tuple[StepCollective, ...]:
    """The communication kernels that started in the steps (spans: (step, lo, hi) in time order), in start order
    per (process, step); () where the steps ran none. keys: every name key of the kernel tables' rows that start
    in the steps' span, where the caller read them (timeline/series_np.py): their names are looked up, not each
    table's DISTINCT keys (a scan of the table: 0.15-0.3 s at 1M launches)."""
    # each distinct name looked at once (a name per step and process: 300k of them, 1,496 distinct, took 1.1 s)
    wanted = {name for name in kernels.names if is_communication(name)}
    if not wanted or not spans:
        return ()
    los = [lo for _n, lo, _hi in spans]
    lo, hi = spans[0][1], spans[-1][2]
    found: list[tuple[int, object, str]] = []
    for g in gpu:
        if not g.name:
            continue
        held = keys if keys is not None else [k for (k,) in conn.execute(f"SELECT DISTINCT {g.name} FROM {g.table}")]
        named = {k: name for k, name in names(held).items() if name in wanted}
        if not named:
            continue
        marks = ",".join("?" * len(named))
        found += [(s, pid, named[key]) for pid, s, key in conn.execute(
            f"SELECT {g.pid}, start, {g.name} FROM {g.table} WHERE {g.name} IN ({marks}) AND start >= ? AND start < ?",
            (*named, lo, hi))]
    found.sort(key=lambda t: (t[0], str(t[1])))
    out: list[StepCollective] = []
    count: dict[tuple[object, int], int] = {}
    for s, pid, name in found:
        i = bisect.bisect_right(los, s) - 1
        if i < 0 or s >= spans[i][2]:
            continue
        step = spans[i][0]
        k = count.get((pid, step), 0)
        if k < MAX_PER_STEP:
            out.append(StepCollective(pid if isinstance(pid, int) else None, step, k, int(s), name))
            count[(pid, step)] = k + 1
    return tuple(out)
