"""Summary of benchmarks/gpu/cupti_floor.sh: per variant, the launch-heavy job's timed loop (median of its rounds, each
round listed), × unprofiled, and µs per launch = (loop − unprofiled loop) / launches in the loop, the launches
counted in the traced capture (its kernels × timed steps / all steps, warm-up included); then the start-up.

    python3 benchmarks/gpu/cupti_floor_summary.py SESSION_DIR [--variants none,cupti,…] > summary.md
"""
from __future__ import annotations

import glob
import json
import re
import sqlite3
import statistics
import sys
from pathlib import Path

VARIANTS = ("none", "cupti", "discard", "noapi_discard")


def main(session: str, variants: tuple[str, ...] = VARIANTS) -> int:
    s = Path(session)
    log = (s / "session.log").read_text()
    loops: dict[str, list[float]] = {}
    steps = warmup = None
    for out in sorted((s / "runs").glob("fl_*.txt")):
        name = re.sub(r"_\d+$", "", out.stem.removeprefix("fl_"))
        for line in out.read_text().splitlines():
            if line.startswith("{"):
                d = json.loads(line)
                loops.setdefault(name, []).append(d["loop_s"])
                steps = d["steps"]
    launches = None
    caps = sorted(glob.glob(str(s / "cap_cupti_1" / "cupti-*.sqlite")))
    if caps and steps:
        total = sum(sqlite3.connect(c).execute("SELECT COUNT(*) FROM kernel").fetchone()[0] for c in caps)
        warmup = 20
        launches = total * steps / (steps + warmup)
    base = statistics.median(loops.get("none", [float("nan")]))
    print(f"launch-heavy job, {steps} timed steps; launches in the timed loop ≈ {launches:,.0f} "
          f"({launches / base:,.0f}/s unprofiled)\n" if launches else "no capture to count launches\n")
    print("| variant | timed loop s, median (rounds) | × unprofiled | µs per launch |")
    print("|---|---|---|---|")
    for name in variants:
        xs = loops.get(name)
        if not xs:
            continue
        m = statistics.median(xs)
        per = (m - base) / launches * 1e6 if launches else float("nan")
        print(f"| {name} | {m:.3f} ({', '.join(f'{x:.3f}' for x in xs)}) | {m / base:.3f} | {per:.2f} |")
    walls = {}
    for m in re.finditer(r"^wall (st_\w+?)_\d+ ([\d.]+) rc", log, re.MULTILINE):
        walls.setdefault(m.group(1), []).append(float(m.group(2)))
    if walls:
        print("\nstart-up, `python3 -c pass` wall s: " + "; ".join(
            f"{k.removeprefix('st_')} median {statistics.median(v):.3f} ({', '.join(f'{x:.3f}' for x in v)})"
            for k, v in walls.items()))
    it = s / "importtime.txt"
    if it.is_file():
        rows = []
        for line in it.read_text().splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
            if m and len(m.group(3)) <= 2:  # top-level imports
                rows.append((int(m.group(2)), m.group(4)))
        total = sum(us for us, _ in rows)
        print(f"\ntraced start-up imports (top level, -X importtime): {total / 1e6:.3f} s; biggest: " +
              ", ".join(f"{n} {us / 1e6:.3f} s" for us, n in sorted(rows, reverse=True)[:6]))
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    picked = tuple(args[args.index("--variants") + 1].split(",")) if "--variants" in args else VARIANTS
    sys.exit(main(args[0], picked))
