"""The floors the suite holds `report` against: the least any tool must spend on the same question, each a Python
snippet run in a fresh process with the capture's path as its argument."""
from __future__ import annotations

# A raw GROUP BY of kernel time by name, joined to the names: what a one-line sqlite3 query answers.
FLOOR_NSYS = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
              "rows = c.execute('SELECT s.value, g.n, g.t FROM (SELECT demangledName AS nid, COUNT(*) AS n, "
              "SUM(\"end\" - start) AS t FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY demangledName) g "
              "JOIN StringIds s ON s.id = g.nid').fetchall(); print(len(rows))")
# The floor any per-op attribution must pay (docs/performance.md, "Attribution floor"): FLOOR_NSYS's GROUP BY over
# the kernels, each joined to its launch call by correlation id — one scan of the launch-call table (SQLite indexes
# it once, automatically) and one seek per kernel. benchmarks/native/corr_join.c is the same work compiled.
FLOOR_ATTRIBUTION = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                     "rows = c.execute('SELECT s.value, g.n, g.t, g.calls FROM (SELECT k.demangledName AS nid, "
                     "COUNT(*) AS n, SUM(k.\"end\" - k.start) AS t, COUNT(r.start) AS calls "
                     "FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                     "ON r.correlationId = k.correlationId GROUP BY k.demangledName) g "
                     "JOIN StringIds s ON s.id = g.nid').fetchall(); print(len(rows))")
# The two-table floor (issue 48): FLOOR_NSYS's GROUP BY, then one scan of the launch-call table (each call's
# correlation id and time read once) — what any attribution must read at least, with no join: on 20M launches
# SQLite's automatic index for FLOOR_ATTRIBUTION's join costs more than the GROUP BY itself.
FLOOR_TWO_TABLES = (FLOOR_NSYS.replace("print(len(rows))", "")
                    + "calls = c.execute('SELECT COUNT(correlationId), SUM(\"end\" - start) "
                    "FROM CUPTI_ACTIVITY_KIND_RUNTIME').fetchone(); print(len(rows), calls[0])")
# A Kineto JSON streamed by ijson, kernel time summed by name: the least a reader of the JSON does.
STREAM_JSON = ("import gzip, ijson, sys, collections; agg = collections.Counter(); "
               "[agg.update({e['name']: e.get('dur', 0)}) for e in "
               "ijson.items((gzip.open if sys.argv[1].endswith('.gz') else open)(sys.argv[1], 'rb'), "
               "'traceEvents.item', use_float=True) if e.get('cat') == 'kernel']; print(len(agg))")
# Holistic Trace Analysis' kernel breakdown of a folder of traces: the anchor on Kineto JSON.
HTA = ("import sys, os; from hta.trace_analysis import TraceAnalysis; d = sys.argv[1]; "
       "a = TraceAnalysis(trace_dir=d); k = a.get_gpu_kernel_breakdown(visualize=False); print(len(k[1]))")
