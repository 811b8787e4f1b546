"""CUDA graph launches whose kernels an Nsight Systems capture did not record one by one.

nsys traces a CUDA graph as one record per launch by default (``--cuda-graph-trace=graph``): the launch's start,
end and device go to ``CUPTI_ACTIVITY_KIND_GRAPH_TRACE``, its kernels nowhere. XLA runs a JAX step as a graph
(command buffers), PyTorch does under ``torch.compile(mode="reduce-overhead")`` and CUDA-graph capture. Read without
them, such a capture shows the GPU idle where it worked: on the H200 a Keras-on-JAX transformer's 192 steps were
7.24 s of graph work and 0.23 s of other kernels, and the report said "GPU idle 100%, host-bound"
(benchmarks/gpu/jax_captures.sh). So each graph launch whose kernels are missing counts as one kernel of unknown
kind, GRAPH_NAME, wherever kernels count (aggregates, busy time, the per-step budget), and the capture's note says
how to see inside. With ``--cuda-graph-trace=node`` (what ``nvprof-wrap run`` asks for) the kernels are recorded with
the graph launch's correlation id: those launches are left out here, so nothing is counted twice.
"""
from __future__ import annotations

import sqlite3

from nvprof_wrap.model import CUDA_GRAPH_KERNEL, KernelAgg
from nvprof_wrap.text.units import duration
from nvprof_wrap.timeline.sql import columns

GRAPH = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
GRAPH_NAME = CUDA_GRAPH_KERNEL
GRAPH_KEY = -1  # the name key of a graph launch's rows: no StringIds id is negative


def uncovered(conn: sqlite3.Connection, have: set[str], kernel: str, name_col: str) -> str | None:
    """A subquery of the graph launches the capture has no kernel of — (start, "end", deviceId, globalPid, and
    GRAPH_KEY as ``name_col``), usable wherever a kernel table is read — or None when there are none."""
    if GRAPH not in have:
        return None
    cols = columns(conn, GRAPH)
    if not {"start", "end", "deviceId"} <= cols:
        return None
    kcols = columns(conn, kernel)
    covered = f"AND correlationId NOT IN (SELECT correlationId FROM {kernel} WHERE correlationId IS NOT NULL)" \
        if "correlationId" in cols and "correlationId" in kcols else ""
    gpid = "globalPid" if "globalPid" in cols else "NULL AS globalPid"
    sql = (f'(SELECT start, "end", deviceId, {gpid}, {GRAPH_KEY} AS {name_col} FROM {GRAPH} '
           f'WHERE "end" >= start {covered})')
    return sql if conn.execute(f"SELECT 1 FROM {sql} LIMIT 1").fetchone() else None


def aggregates(conn: sqlite3.Connection, graphs: str, dur: str, where: str) -> tuple[KernelAgg, ...]:
    """One KernelAgg per process and device: the graph launches as GRAPH_NAME."""
    return tuple(KernelAgg(pid, dev, GRAPH_NAME, n, tot) for pid, dev, n, tot in conn.execute(
        f"SELECT (globalPid >> 24) & 16777215, deviceId, COUNT(*), COALESCE(SUM({dur}), 0) FROM {graphs} "
        f"WHERE {where} GROUP BY 1, 2"))


def note(kernels: tuple[KernelAgg, ...]) -> str:
    """What the capture's graph launches were and how to see inside them."""
    n = sum(k.launches for k in kernels if k.name == GRAPH_NAME)
    ns = sum(k.total_ns or 0 for k in kernels if k.name == GRAPH_NAME)
    every = sum(k.total_ns or 0 for k in kernels) or 1
    return (f"{n:,} CUDA graph launches took {duration(ns)} of GPU time ({ns / every:.0%} of kernel time) but "
            "their kernels were not recorded one by one (nsys' default, --cuda-graph-trace=graph): counted as "
            f"'{GRAPH_NAME}', of unknown kind — capture with `nsys profile --cuda-graph-trace=node` "
            "(`nvprof-wrap run` does) to see which of them ran on tensor cores")
