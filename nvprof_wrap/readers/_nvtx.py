"""NVTX range names as frameworks write them, reduced to the op or layer they name."""
from __future__ import annotations

import re

# torch.autograd.profiler.emit_nvtx appends ", seq = N", ", op_id = N", ", sizes = [...]" to each op.
_DECOR = re.compile(r",\s*(?:seq|op_id|sizes|input_op_ids)\s*=.*$")


def op_name(text: str | None) -> str:
    """'aten::addmm, seq = 12, op_id = 40' → 'aten::addmm'; no range → '(no NVTX range)'."""
    if not text:
        return "(no NVTX range)"
    return _DECOR.sub("", text).strip() or "(no NVTX range)"


def attribute(conn, ranges_sql: str, launches_sql: str) -> list[tuple]:
    """Kernels attributed to the NVTX ranges open on the thread that launched them.

    ranges_sql yields (tid, start, end, name) of push/pop or start/end ranges; launches_sql yields
    (pid, tid, t, key, dur) per kernel launch: the launching thread, the CPU time of the launch call, a kernel
    name or name id. Returns (pid, scope, op, key, launches, total_ns): op is the innermost range, scope the
    innermost layer range that --annotate adds ("keras:…", "torch:…"), else the outermost range.
    Ranges go to indexed temp tables; each launch costs index seeks, nothing is held per launch in Python.
    """
    conn.execute("DROP TABLE IF EXISTS temp.nvw_ranges")
    conn.execute(f"CREATE TEMP TABLE nvw_ranges AS SELECT tid, s, e, name FROM ({ranges_sql}) "
                 "WHERE e IS NOT NULL AND tid IS NOT NULL")
    if conn.execute("SELECT COUNT(*) FROM temp.nvw_ranges").fetchone()[0] == 0:
        return []
    conn.execute("CREATE INDEX temp.nvw_ranges_i ON nvw_ranges(tid, s)")
    # Outermost ranges: those that start after every earlier range of their thread has ended. They do
    # not overlap, so the one enclosing a launch is the last one starting before it (an index seek).
    conn.execute("DROP TABLE IF EXISTS temp.nvw_top")
    conn.execute("""CREATE TEMP TABLE nvw_top AS SELECT tid, s, e, name FROM
        (SELECT tid, s, e, name, MAX(e) OVER (PARTITION BY tid ORDER BY s, e DESC
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
         FROM nvw_ranges) WHERE reach IS NULL OR s >= reach""")
    conn.execute("CREATE INDEX temp.nvw_top_i ON nvw_top(tid, s)")
    conn.execute("DROP TABLE IF EXISTS temp.nvw_layers")
    conn.execute("""CREATE TEMP TABLE nvw_layers AS SELECT * FROM nvw_ranges
                    WHERE name LIKE 'keras:%' OR name LIKE 'torch:%'""")
    conn.execute("CREATE INDEX temp.nvw_layers_i ON nvw_layers(tid, s)")
    sql = f"""
    WITH l AS ({launches_sql})
    SELECT l.pid,
           COALESCE((SELECT name FROM nvw_layers g WHERE g.tid = l.tid AND g.s <= l.t AND g.e >= l.t
                     ORDER BY g.s DESC LIMIT 1),
                    (SELECT CASE WHEN g.e >= l.t THEN g.name END FROM nvw_top g WHERE g.tid = l.tid AND g.s <= l.t
                     ORDER BY g.s DESC LIMIT 1)),
           (SELECT name FROM nvw_ranges g WHERE g.tid = l.tid AND g.s <= l.t AND g.e >= l.t ORDER BY g.s DESC LIMIT 1),
           l.key, COUNT(*), SUM(l.dur)
    FROM l GROUP BY 1, 2, 3, 4"""
    out: dict[tuple, list[int]] = {}
    for pid, scope, op, key, n, tot in conn.execute(sql):
        agg = out.setdefault((pid, op_name(scope), op_name(op), key), [0, 0])
        agg[0] += n
        agg[1] += tot or 0
    return [(*k, *v) for k, v in out.items()]
