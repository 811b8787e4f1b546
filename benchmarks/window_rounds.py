"""Issue 27: rounds of nanoGPT runs side by side, from their own per-iteration times (train.py --log_interval=1):
per run the median iteration before the window (steps 21 to A-1), after it (B on) and the training loop after
step 20, each as a ratio to the same round's BASE run. A folder holds one sub-folder per run, named
PREFIX_VARIANT_ROUND, each with the job's stdout.log (benchmarks/gpu/capture_window.sh P writes them; its p_stdout.tgz).

    python3 -m benchmarks.window_rounds DIR [--window 100:120] [--base none]
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

from benchmarks.gpu.nano_iterations import iterations

RUN = re.compile(r"^[a-z0-9]+_(?P<variant>.+)_(?P<round>\d+)$")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--window", default="100:120")
    p.add_argument("--base", default="none")
    a = p.parse_args(argv)
    lo, hi = (int(x) for x in a.window.split(":"))
    runs: dict[int, dict[str, tuple[float, float, float]]] = {}
    for out in sorted(a.folder.glob("*/stdout.log")):
        m = RUN.match(out.parent.name)
        times = iterations(out) if m else {}
        if not times:
            continue
        before = statistics.median(t for i, t in times.items() if 20 < i < lo)
        after = statistics.median(t for i, t in times.items() if i >= hi)
        loop = sum(t for i, t in times.items() if i > 20) / 1000
        runs.setdefault(int(m["round"]), {})[m["variant"]] = (before, after, loop)
    if not runs:
        print(f"{a.folder}: no runs with iteration times", file=sys.stderr)
        return 1
    print(f"| round | run | median step before {a.window} (ms) | after it (ms) | loop after step 20 (s) "
          f"| loop / {a.base} | after / {a.base}'s after | after / before |")
    print("|---|---|---|---|---|---|---|---|")
    for rnd, got in sorted(runs.items()):
        base = got.get(a.base)
        for variant, (before, after, loop) in sorted(got.items(), key=lambda kv: kv[0] != a.base):
            ratio = (f"{loop / base[2]:.2f} | {after / base[1]:.2f}" if base else "— | —")
            print(f"| {rnd} | {variant} | {before:.2f} | {after:.2f} | {loop:.2f} | {ratio} | {after / before:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
