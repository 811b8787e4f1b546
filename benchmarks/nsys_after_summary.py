"""Issue 27: the table of benchmarks/gpu/nsys_after_range.py's runs (capture_window.sh R). Reads the JSON lines of every
run (named PREFIX_VARIANT_ROUND) from one or more files and prints, per variant and kind of call, the median over
rounds of: µs per call before the capture range, after it / before it (the same process: what the range left
behind), and before it / the same round's BASE run before (what nsys' presence costs from the job's start); a kind
"K/ref" is K's cost per pure-Python reference timed beside it (the CPU's drift cancelled), where the runs have it.

    python3 -m benchmarks.nsys_after_summary LOG... [--base none]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

from benchmarks.window_rounds import RUN


def read(paths: list[str]) -> dict[tuple[str, int], dict[tuple[str, str], float]]:
    """(variant, round) -> (phase, kind) -> µs per call (kind "K/ref": per reference)."""
    runs: dict[tuple[str, int], dict[tuple[str, str], float]] = {}
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                if not line.startswith('{"run"'):
                    continue
                row = json.loads(line)
                m = RUN.match(row["run"])
                if m and "phase" in row:
                    got = runs.setdefault((m["variant"], int(m["round"])), {})
                    got[row["phase"], row["kind"]] = row["us_per_call"]
                    if "per_reference" in row:
                        got[row["phase"], row["kind"] + "/ref"] = row["per_reference"]
    return runs


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--base", default="none")
    a = ap.parse_args(argv)
    runs = read(a.logs)
    variants = sorted({v for v, _ in runs}, key=lambda v: (v != a.base, v))
    kinds = sorted({k for got in runs.values() for _, k in got})
    print(f"| run | call | rounds | before (µs per call, or per reference) | after / before | "
          f"before / {a.base}'s before | after / {a.base}'s after |")
    print("|---|---|---|---|---|---|---|")
    for v in variants:
        for kind in kinds:
            rows = [(rnd, got) for (var, rnd), got in sorted(runs.items()) if var == v
                    and ("before", kind) in got and ("after", kind) in got]
            if not rows:
                continue
            before = [got["before", kind] for _, got in rows]
            left = [got["after", kind] / got["before", kind] for _, got in rows]
            base = {rnd: runs.get((a.base, rnd), {}) for rnd, _ in rows}
            presence = [got["before", kind] / base[rnd]["before", kind] for rnd, got in rows
                        if ("before", kind) in base[rnd]]
            after = [got["after", kind] / base[rnd]["after", kind] for rnd, got in rows
                     if ("after", kind) in base[rnd]]

            def cell(xs: list[float]) -> str:
                return (f"{statistics.median(xs):.3f} ({min(xs):.2f}-{max(xs):.2f})" if xs else "-")
            print(f"| {v} | {kind} | {len(rows)} | {statistics.median(before):.2f} | {cell(left)} | {cell(presence)} | "
                  f"{cell(after)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
