"""Trim a real capture of benchmarks/gpu/hardware_phases.py to KEEP seconds of each phase (its NVTX range): kernels, GPU
metrics and launch calls outside are deleted (nothing is added or changed), for a test fixture under 2 MB.

    python benchmarks/trim_capture.py SRC DST KEEP_S nsys|cupti     (then gzip -9 DST)

tests/data/h200_runs/hw_phases_nsys: the nsys export of benchmarks/gpu/hardware_metrics_explore.sh, KEEP_S 0.3;
tests/data/h200_runs/hw_phases_cupti: its cupti run folder (capture trimmed with KEEP_S 0.6, gpm.jsonl whole)."""
import shutil
import sqlite3
import sys

src, dst, keep, kind = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
shutil.copy(src, dst)
c = sqlite3.connect(dst)
if kind == "nsys":
    ranges = c.execute("SELECT n.start, n.end FROM NVTX_EVENTS n WHERE n.text LIKE 'phase %' "
                       "AND n.end IS NOT NULL").fetchall()
    ktab, mtab = "CUPTI_ACTIVITY_KIND_KERNEL", "GPU_METRICS"
else:
    ranges = c.execute("SELECT start, end FROM nvtx WHERE name LIKE 'phase %'").fetchall()
    ktab, mtab = "kernel", None
win = [(s, min(e, s + int(keep * 1e9))) for s, e in ranges]
cond = " OR ".join(f"(start >= {s} AND end <= {e})" for s, e in win)
c.execute(f"DELETE FROM {ktab} WHERE NOT ({cond})")
if mtab:
    mc = " OR ".join(f"(timestamp >= {s} AND timestamp < {e})" for s, e in win)
    c.execute(f"DELETE FROM {mtab} WHERE NOT ({mc})")
for t in ("CUPTI_ACTIVITY_KIND_RUNTIME", "runtime", "driver"):
    try:
        c.execute(f"DELETE FROM {t} WHERE correlationId NOT IN (SELECT correlationId FROM {ktab})" if t.isupper()
                  else f"DELETE FROM {t} WHERE correlation_id NOT IN (SELECT correlation_id FROM {ktab})")
    except sqlite3.Error as e:
        print(t, e)
for t in ("CUPTI_ACTIVITY_KIND_MEMSET", "memset"):
    try:
        c.execute(f"DELETE FROM {t} WHERE NOT ({cond})")
    except sqlite3.Error as e:
        print(t, e)
c.commit(); c.execute("VACUUM"); c.close()
print(dst, __import__("os").path.getsize(dst))
