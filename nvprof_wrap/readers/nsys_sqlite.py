"""Nsight Systems SQLite export (``nsys export --type sqlite``), schemas of nsys 2023 to 2026.

Kernel names come from ``demangledName`` through ``StringIds`` — never ``shortName``, which is just
"Kernel" for every CUTLASS 2.x kernel. ``globalPid`` packs the pid in bits 24..47.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Activity, Capture, Device, KernelAgg, MemAgg, OpAgg, Process, merge_kernels, merge_memops
from nvprof_wrap.readers._nvtx import op_name
from nvprof_wrap.readers._sqlite import MEMCPY_DIRECTION, busy_sql, columns, connect_ro, tables

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"


def _pid_expr(cols: set[str]) -> str:
    return "((globalPid >> 24) & 16777215)" if "globalPid" in cols else "NULL"


def _kernels(conn: sqlite3.Connection) -> tuple[KernelAgg, ...]:
    cols = columns(conn, KERNEL)
    name_col = next((c for c in ("demangledName", "mangledName", "shortName") if c in cols), None)
    if name_col is None:
        raise BadInput(None, f"{KERNEL} has no name column")
    # Group by the raw globalPid (the pid is extracted from the few groups afterwards) and keep only COUNT and
    # SUM: per-launch expressions and MIN/MAX made this scan 1.7x slower than a plain GROUP BY at 1M launches.
    gpid = "globalPid" if "globalPid" in cols else "NULL"
    sql = f"""
    SELECT {_pid_expr(cols).replace("globalPid", "g.gp")}, g.dev, COALESCE(s.value, '<unnamed kernel>'), g.n, g.tot
    FROM (SELECT {name_col} AS nid, {gpid} AS gp, deviceId AS dev, COUNT(*) AS n, SUM("end" - start) AS tot
          FROM {KERNEL} GROUP BY {name_col}, {gpid}, deviceId) g
    LEFT JOIN StringIds s ON s.id = g.nid"""
    return merge_kernels(KernelAgg(*row) for row in conn.execute(sql))


def _memops(conn: sqlite3.Connection, have: set[str]) -> tuple[MemAgg, ...]:
    out: list[MemAgg] = []
    if MEMCPY in have:
        pid = _pid_expr(columns(conn, MEMCPY))
        for p, dev, kind, n, tot, nbytes in conn.execute(
                f'SELECT {pid}, deviceId, copyKind, COUNT(*), SUM("end"-start), SUM(bytes) FROM {MEMCPY} GROUP BY 1,2,3'):
            out.append(MemAgg(p, dev, "memcpy", MEMCPY_DIRECTION.get(kind, "other"), n, tot, nbytes))
    if MEMSET in have:
        pid = _pid_expr(columns(conn, MEMSET))
        for p, dev, n, tot, nbytes in conn.execute(
                f'SELECT {pid}, deviceId, COUNT(*), SUM("end"-start), SUM(bytes) FROM {MEMSET} GROUP BY 1,2'):
            out.append(MemAgg(p, dev, "memset", "", n, tot, nbytes))
    return merge_memops(out)


def _activity(conn: sqlite3.Connection, have: set[str]) -> tuple[Activity, ...]:
    parts = [f'SELECT {_pid_expr(columns(conn, t))} AS pid, deviceId AS dev, start, "end" FROM {t}'
             for t in (KERNEL, MEMCPY, MEMSET) if t in have]
    return tuple(Activity(*row) for row in conn.execute(busy_sql(" UNION ALL ".join(parts))))


def _devices(conn: sqlite3.Connection, have: set[str]) -> tuple[Device, ...]:
    if "TARGET_INFO_GPU" not in have:
        return ()
    cols = columns(conn, "TARGET_INFO_GPU")
    dev = "cuDevice" if "cuDevice" in cols else "id"  # cuDevice is the CUDA ordinal that kernels' deviceId uses
    pick = [c if c in cols else "NULL" for c in ("name", "computeMajor", "computeMinor", "smCount")]
    rows = conn.execute(f"SELECT {dev}, {', '.join(pick)} FROM TARGET_INFO_GPU")
    return tuple(Device(*row) for row in rows)


def _processes(conn: sqlite3.Connection, have: set[str], pids: set[int]) -> tuple[Process, ...]:
    names: dict[int, str] = {}
    if "PROCESSES" in have:
        names = {pid: name for pid, name in conn.execute("SELECT pid, name FROM PROCESSES")}
    return tuple(Process(pid, names.get(pid)) for pid in sorted(pids))


def _ops(conn: sqlite3.Connection, have: set[str]) -> tuple[OpAgg, ...]:
    """Attribute each kernel to the NVTX ranges open on the thread that launched it.

    kernel.correlationId → the runtime API call (thread, CPU time) → the innermost and outermost
    push/pop or start/end range of that thread around the call. Ranges go to an indexed temp
    table; the lookups are correlated subqueries on it, so nothing is held per launch in Python.
    """
    if not {"NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME"} <= have:
        return ()
    text = "COALESCE(n.text, s.value)" if "textId" in columns(conn, "NVTX_EVENTS") else "n.text"
    conn.execute("DROP TABLE IF EXISTS temp.nvw_ranges")
    conn.execute(f"""CREATE TEMP TABLE nvw_ranges AS
        SELECT n.globalTid AS tid, n.start AS s, n."end" AS e, {text} AS name
        FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
        WHERE n.eventType IN (59, 60) AND n."end" IS NOT NULL AND n.globalTid IS NOT NULL""")
    if conn.execute("SELECT COUNT(*) FROM temp.nvw_ranges").fetchone()[0] == 0:
        return ()
    conn.execute("CREATE INDEX temp.nvw_ranges_i ON nvw_ranges(tid, s)")
    # Outermost ranges: those that start after every earlier range of their thread has ended. They do
    # not overlap, so the one enclosing a launch is the last one starting before it (an index seek).
    conn.execute("DROP TABLE IF EXISTS temp.nvw_top")
    conn.execute("""CREATE TEMP TABLE nvw_top AS SELECT tid, s, e, name FROM
        (SELECT tid, s, e, name, MAX(e) OVER (PARTITION BY tid ORDER BY s, e DESC
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
         FROM nvw_ranges) WHERE reach IS NULL OR s >= reach""")
    conn.execute("CREATE INDEX temp.nvw_top_i ON nvw_top(tid, s)")
    # Layer ranges that nvprof-wrap --annotate adds ("keras:dense_1 (Dense)", "torch:Linear"): the innermost
    # of these is the scope when present, so a per-layer table sits above the per-ATen-op one.
    conn.execute("DROP TABLE IF EXISTS temp.nvw_layers")
    conn.execute("""CREATE TEMP TABLE nvw_layers AS SELECT * FROM nvw_ranges
                    WHERE name LIKE 'keras:%' OR name LIKE 'torch:%'""")
    conn.execute("CREATE INDEX temp.nvw_layers_i ON nvw_layers(tid, s)")
    sql = """
    WITH l AS (SELECT k.demangledName AS nid, k."end" - k.start AS dur, r.globalTid AS tid, r.start AS t
               FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
                 ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24))
    SELECT (l.tid >> 24) & 16777215 AS pid,
           COALESCE((SELECT name FROM nvw_layers g WHERE g.tid = l.tid AND g.s <= l.t AND g.e >= l.t
                     ORDER BY g.s DESC LIMIT 1),
                    (SELECT CASE WHEN g.e >= l.t THEN g.name END FROM nvw_top g WHERE g.tid = l.tid AND g.s <= l.t
                     ORDER BY g.s DESC LIMIT 1)),
           (SELECT name FROM nvw_ranges g WHERE g.tid = l.tid AND g.s <= l.t AND g.e >= l.t ORDER BY g.s DESC LIMIT 1),
           s.value, COUNT(*), SUM(dur)
    FROM l LEFT JOIN StringIds s ON s.id = l.nid GROUP BY 1, 2, 3, 4"""
    out: dict[tuple, list[int]] = {}
    for pid, scope, op, name, n, tot in conn.execute(sql):
        key = (pid, op_name(scope), op_name(op), name or "<unnamed kernel>")
        agg = out.setdefault(key, [0, 0])
        agg[0] += n
        agg[1] += tot or 0
    return tuple(OpAgg(*k, *v) for k, v in out.items())


def read(path: Path) -> Capture:
    conn = connect_ro(path)
    try:
        have = tables(conn)
        if KERNEL not in have:
            raise BadInput(path, "Nsight Systems export without a CUPTI_ACTIVITY_KIND_KERNEL table "
                                 "(was CUDA tracing on? nsys profile --trace=cuda)")
        kernels = _kernels(conn)
        memops = _memops(conn, have)
        pids = {k.pid for k in kernels if k.pid is not None} | {m.pid for m in memops if m.pid is not None}
        notes = () if "TARGET_INFO_GPU" in have else ("no TARGET_INFO_GPU table: GPU models unknown",)
        return Capture(str(path), "nsys-sqlite", kernels, memops, _activity(conn, have),
                       _devices(conn, have), _processes(conn, have, pids), ops=_ops(conn, have), notes=notes)
    except BadInput as e:
        raise BadInput(path, e.why) from None
    finally:
        conn.close()
