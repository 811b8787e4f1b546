"""Where in XLA's CUDA graphs each kernel ran, from an Nsight Systems capture traced node by node.

XLA runs a jitted step's thunks as a CUDA graph (its command buffer: one node per command, in the command buffer's
order). A kernel of a graph carries its node's id (``graphNodeId``: the graph's id << 32 | the node's number in its
graph). A fusion's kernel is a node of the graph itself; a cuBLAS or cuDNN call is traced into a graph of its own,
whose kernels — numbered after every node of the outer graph when it is instantiated — run in the place of the
outer graph's node for it: no kernel of the outer graph carries that node's number. Measured on the H100 (jax's
MNIST example with cuBLAS GEMMs, a Keras transformer on JAX; benchmarks/gpu/xla_graph_gemms.sh): node 3 of the
step's graph has no kernel, and its split-K GEMM's two kernels (nodes 23 and 24) run between nodes 2 and 4.

So, per launch of a graph (its kernels, copies and sets share the launch's correlation id), in start order: a node
is nested when a node that starts after it has a smaller number (the outer graph's nodes run in their order, the
nested ones carry larger numbers); a nested kernel's slot is the outer node that ran last before it (its node is
the command after that one). A graph places its nodes alike at every launch: they are placed from its first and
its last, and each node's kernels counted over every launch. The report reads them against XLA's dump
(classify/xla_flops.py per_graph_node): the command after the slot, its custom call, and that call's FLOPs.

A graph that ends with a nested call leaves that call's kernels looking like the outer graph's own (no later node):
their numbers are past the command buffer's end, and the report gives that graph no figure.
"""
from __future__ import annotations

import sqlite3

from nvprof_wrap.model import GraphNodeAgg
from nvprof_wrap.run import steps
from nvprof_wrap.timeline.gpu_metrics import kernel_names
from nvprof_wrap.timeline.sql import columns

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
_NODES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_MEMCPY")
_LIKE = steps.XLA_MODULE_PREFIX + "%"
MAX_NODES = 200_000  # distinct (graph node, process) pairs read at most (a training step's graph: tens to thousands)


def nodes(conn: sqlite3.Connection, have: set[str], ranges_sql: str | None, name_col: str, dur: str,
          where: str = "true") -> tuple[GraphNodeAgg, ...]:
    """The kernels of XLA's CUDA graphs that start where `where` holds, per (process, graph, slot, nested node,
    name), with the XLA execution range each graph was launched in (dur: the duration expression the reader sums);
    () where the capture has no kernel of a graph (no node trace: nsys --cuda-graph-trace=graph), or no XLA range.

    Two passes: every kernel of a graph counted per (node, process) in one GROUP BY; each node's place (nested or
    not, its slot) from two launches of its graph, its first and its last (a graph runs the same nodes in the same
    order at every launch), a node placed differently by the two, or in neither, left out. Measured at 520k graph
    kernels (jax's MNIST steps replicated, 2 cores): 0.35-0.4 s, against 0.16-0.19 s for a GROUP BY of the kernel
    table by name; placing every launch's nodes by window functions over every node took 2.2 s."""
    if KERNEL not in have or ranges_sql is None or "CUPTI_ACTIVITY_KIND_RUNTIME" not in have or \
            not {"graphNodeId", "correlationId", "globalPid"} <= columns(conn, KERNEL):
        return ()
    if conn.execute("SELECT 1 FROM StringIds WHERE value LIKE ? LIMIT 1", (_LIKE,)).fetchone() is None:
        return ()  # no XLA range: no JAX/XLA job (one look at the strings, no scan)
    # a node runs one kernel: two names for one node (a damaged capture) leave it out
    counted = [r[:3] + r[4:] for r in conn.execute(f"""
        SELECT (globalPid >> 24) & 16777215, graphNodeId, MIN({name_col}), MAX({name_col}), COUNT(*),
               COALESCE(SUM({dur}), 0), MIN(correlationId), MAX(correlationId)
        FROM {KERNEL} WHERE graphNodeId IS NOT NULL AND {where}
        GROUP BY graphNodeId, globalPid LIMIT {MAX_NODES + 1}""") if r[2] == r[3] and isinstance(r[1], int)]
    if len(counted) > MAX_NODES:  # no job's graphs hold that many nodes: a damaged capture's ids (no figure, no memory)
        return ()
    launches: dict[tuple[int | None, int], list[int]] = {}  # (process, graph) -> [first, last] launch: a graph's
    # and a launch's ids are a process's own
    for pid, node, _n, _c, _t, first, last in counted:
        if isinstance(first, int) and isinstance(last, int):
            seen = launches.setdefault((pid, node >> 32), [first, last])
            seen[0], seen[1] = min(seen[0], first), max(seen[1], last)
    if not launches:
        return ()
    placed = _places(conn, have, {(pid, corr) for (pid, _g), pair in launches.items() for corr in pair})
    names = kernel_names(conn, {r[2] for r in counted})
    module = _modules(conn, ranges_sql, {key: pair[0] for key, pair in launches.items()})
    out = []
    for pid, node, nid, n, ns, _first, _last in counted:
        g, place = node >> 32, placed.get((pid, node >> 32, node & 0xFFFFFFFF))
        if place is not None and (pid, g) in module:
            out.append(GraphNodeAgg(pid, module[(pid, g)], g, place[0], place[1], names.get(nid, "<unnamed kernel>"),
                                    n, ns))
    return tuple(out)


def _places(conn: sqlite3.Connection, have: set[str],
            launches: set[tuple[int | None, int]]) -> dict[tuple[int | None, int, int], tuple[int, int | None]]:
    """(process, graph, node) -> (slot, nested node or None) of the kernels of the graph launches (process,
    correlation id), each node placed alike in every one of them it ran in (else left out). In start order per
    launch: a node is nested when a node that starts after it has a smaller number; a nested node's slot is the last
    outer node before it (their numbers rise in start order)."""
    marks = ",".join(str(int(c)) for c in sorted({corr for _p, corr in launches}))
    parts = []
    for t in _NODES:
        cols = columns(conn, t) if t in have else set()
        if {"graphNodeId", "correlationId", "start"} <= cols:
            pid = "(globalPid >> 24) & 16777215" if "globalPid" in cols else "NULL"
            parts.append(f"""SELECT {pid} AS p, correlationId AS corr, graphNodeId >> 32 AS g,
                                    graphNodeId & 4294967295 AS i, start, {1 if t == KERNEL else 0} AS k
                             FROM {t} WHERE correlationId IN ({marks}) AND graphNodeId IS NOT NULL
                                   AND typeof(graphNodeId) = 'integer' AND typeof(start) = 'integer'""")
    rows = conn.execute(f"""
        WITH n AS (SELECT *, i > COALESCE(MIN(i) OVER (PARTITION BY p, corr, g ORDER BY start, i
                                                       ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING), i) AS nested
                   FROM ({" UNION ALL ".join(parts)})),
             a AS (SELECT *, MAX(CASE WHEN NOT nested THEN i END) OVER (PARTITION BY p, corr, g ORDER BY start, i
                                                                        ROWS UNBOUNDED PRECEDING) AS slot FROM n)
        SELECT DISTINCT p, corr, g, i, CASE WHEN nested THEN slot ELSE i END, CASE WHEN nested THEN i END
        FROM a WHERE k = 1 AND (NOT nested OR slot IS NOT NULL)""").fetchall()
    places: dict[tuple[int | None, int, int], set[tuple[int, int | None]]] = {}
    for pid, corr, g, i, slot, child in rows:
        if (pid, corr) in launches:  # another process's launch of the same correlation id is not one of them
            places.setdefault((pid, g, i), set()).add((slot, child))
    return {node: found.pop() for node, found in places.items() if len(found) == 1}


def _modules(conn: sqlite3.Connection, ranges_sql: str,
             launches: dict[tuple[int | None, int], int]) -> dict[tuple[int | None, int], str]:
    """Each (process, graph)'s XLA execution range: the innermost one open on the launching thread when its first
    launch was called (one graph runs one module's commands). One scan of the launch calls for every graph's, then
    one of XLA's ranges on their threads around their times."""
    graph_of = {(key[0], int(corr)): key for key, corr in launches.items()}
    corrs = ",".join(str(corr) for _p, corr in graph_of)
    calls = [(graph_of[(pid, corr)], tid, t) for pid, corr, tid, t in conn.execute(
        "SELECT (globalTid >> 24) & 16777215, correlationId, globalTid, start FROM CUPTI_ACTIVITY_KIND_RUNTIME "
        f"WHERE correlationId IN ({corrs})") if isinstance(t, int) and (pid, corr) in graph_of]
    if not calls:
        return {}
    tids = sorted({tid for _g, tid, _t in calls if isinstance(tid, int)})
    lo, hi = min(t for _g, _tid, t in calls), max(t for _g, _tid, t in calls)
    out: dict[tuple[int | None, int], tuple[int, str]] = {}
    for tid, start, end, name in conn.execute(
            f"SELECT tid, s, e, name FROM ({ranges_sql}) WHERE tid IN ({','.join(map(str, tids)) or 'NULL'}) "
            "AND s <= ? AND e >= ? AND name LIKE ?", (hi, lo, _LIKE)):
        if steps.xla_execution(name or "") is None:
            continue
        for key, call_tid, t in calls:
            if call_tid == tid and start <= t <= end and (key not in out or start > out[key][0]):
                out[key] = (start, name)
    return {key: name for key, (_s, name) in out.items()}
