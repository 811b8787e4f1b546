"""Read what benchmarks/gpu/backend_overhead.sh left: the tracer's correctness against Nsight Systems, and the overhead
of each backend per launch, from the launches counted in the captures.

    python3 benchmarks/gpu/tracer_summary.py check RUN_FOLDER...      # kernel launches by mangled name, side by side
    python3 benchmarks/gpu/tracer_summary.py summary SESSION_FOLDER   # medians, ratios and µs per launch (markdown)

check: a folder of the cupti backend (cupti-*.sqlite[.partial]) or of nsys (the exported .sqlite); prints the
launches, distinct kernels and the meta of the tracer (records path, writer), and whether every folder has the
same launches per mangled kernel name as the first. summary: SESSION_FOLDER/session.log has "wall NAME SECONDS rc
RC" lines, SESSION_FOLDER/runs/NAME.txt each job's output (workloads/launch_rate.py prints its own timed loop as
a JSON line), runs/NAME/ the captures of the first repeat (ovh_<variant>_<workload>_1). µs per launch = (median timed
loop under the backend - median unprofiled) / launches in the capture; the capture also counts the launches of
start-up and warm-up (about 2% more than the timed loop's), so this errs a little low.
"""
from __future__ import annotations

import collections
import glob
import json
import math
import re
import sqlite3
import statistics
import sys
from pathlib import Path


def launches_by_name(folder: str) -> tuple[collections.Counter, dict[str, str]]:
    """Kernel launches per mangled name (cupti: kernel.name; nsys: CUPTI_ACTIVITY_KIND_KERNEL.mangledName)."""
    counts: collections.Counter = collections.Counter()
    meta: dict[str, str] = {}
    for path in sorted(glob.glob(f"{folder}/**/*.sqlite*", recursive=True)):
        if path.endswith("-journal"):
            continue
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if {"kernel", "meta"} <= tables:
            counts.update(dict(conn.execute("SELECT name, COUNT(*) FROM kernel GROUP BY name")))
            m = dict(conn.execute("SELECT key, value FROM meta"))
            if conn.execute("SELECT 1 FROM kernel LIMIT 1").fetchone():
                meta = {k: m[k] for k in ("records", "writer", "api_records", "status", "dropped_records",
                                          "record_errors", "slow_walks", "skipped_records") if k in m}
        elif "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            cols = {r[1] for r in conn.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
            col = "mangledName" if "mangledName" in cols else "demangledName"
            counts.update(dict(conn.execute(
                f"SELECT s.value, COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.{col} "
                "GROUP BY 1")))
            meta = {"nsys_name_column": col}
        conn.close()
    return counts, meta


def check(folders: list[str]) -> int:
    first = None
    same = True
    for folder in folders:
        counts, meta = launches_by_name(folder)
        print(f"{folder}: {sum(counts.values())} launches, {len(counts)} kernels, {json.dumps(meta)}")
        if first is None:
            first = counts
        elif counts != first:
            same = False
            diff = {k: (first.get(k, 0), counts.get(k, 0)) for k in set(first) | set(counts)
                    if first.get(k, 0) != counts.get(k, 0)}
            print(f"  DIFFERS from {folders[0]} for {len(diff)} kernels, e.g. {list(diff.items())[:3]}")
    print("launches per kernel: " + ("MATCH" if same else "DIFFER"))
    return 0 if same else 1


def summary(session: str) -> int:
    walls: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    loops: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for line in Path(session, "session.log").read_text().splitlines():
        m = re.match(r"wall ovh_(\w+?)_(launch|compute)_(\d+) ([\d.]+) rc (\d+)", line)
        if not m or m.group(5) != "0":
            continue
        variant, work, rnd, wall = m.group(1), m.group(2), m.group(3), float(m.group(4))
        walls[variant, work].append(wall)
        out = Path(session, "runs", f"ovh_{variant}_{work}_{rnd}.txt")
        loop = next((json.loads(x)["loop_s"] for x in out.read_text().splitlines() if x.startswith('{"kind"')), None) \
            if out.exists() else None
        if loop is not None:
            loops[variant, work].append(loop)
    starts: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for line in Path(session, "session.log").read_text().splitlines():
        m = re.match(r"wall start_(none|cupti)_(\w+)_\d+ ([\d.]+) rc 0", line)
        if m:
            starts[m.group(2), m.group(1)].append(float(m.group(3)))
    for what in sorted({w for w, _ in starts}):
        none, cupti = starts.get((what, "none"), []), starts.get((what, "cupti"), [])
        if none and cupti:
            print(f"start-up ({what}): unprofiled {statistics.median(none):.3f} s, with the tracer "
                  f"{statistics.median(cupti):.3f} s: +{statistics.median(cupti) - statistics.median(none):.3f} s "
                  f"(medians of {len(none)} and {len(cupti)})\n")
    print("| workload | variant | command wall s (median) | × unprofiled | timed loop s (median) | × unprofiled "
          "| launches | launches/s unprofiled | µs per launch (loop) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for work in ("launch", "compute"):
        base_wall = statistics.median(walls.get(("none", work)) or [float("nan")])
        base_loop = statistics.median(loops.get(("none", work)) or [float("nan")])
        launches = 0
        for variant in ("none", "cupti", "cupti_objects", "nsys"):
            if (variant, work) not in walls:
                continue
            w = statistics.median(walls[variant, work])
            lp = statistics.median(loops.get((variant, work)) or [float("nan")])
            if variant != "none":
                launches = sum(launches_by_name(f"{session}/runs/ovh_{variant}_{work}_1")[0].values()) or launches
            per = 1e6 * (lp - base_loop) / launches if launches and variant != "none" else float("nan")
            rate = launches / base_loop if launches and not math.isnan(base_loop) else float("nan")
            print(f"| {work} | {variant} | {w:.2f} ({', '.join(f'{x:.2f}' for x in walls[variant, work])}) "
                  f"| {w / base_wall:.3f} | {lp:.3f} ({', '.join(f'{x:.3f}' for x in loops.get((variant, work), []))}) "
                  f"| {lp / base_loop:.3f} | {launches or ''} | {rate:,.0f} | {per:.2f} |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("check", "summary"):
        sys.exit(__doc__)
    sys.exit(check(sys.argv[2:]) if sys.argv[1] == "check" else summary(sys.argv[2]))
