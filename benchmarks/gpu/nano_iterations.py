"""Issue 27: nanoGPT's own per-iteration times (train.py --log_interval=1 prints "iter N: loss L, time T ms, ...")
from a job's output, split at a capture window: robust to the GPU machine's start-up noise, which moves whole-job wall
times by ±20% between runs of one command.

    python3 benchmarks/gpu/nano_iterations.py LABEL STDOUT_FILE [--window 100:120] [--wall SECONDS]

Prints one line: LABEL, iterations, their summed time (the training loop; after iteration 20: warm-up and the
first-iteration CUDA set-up left out), the median iteration outside the window and inside it, the iterations at the
window's edges (where a profiler starts and stops recording), the slowest iterations outside it, and the job's wall
time when given.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

# anywhere in a line: under nsys a window's stop is followed by nsys' "[1/1] [0% ] nsys.nsys-rep" progress bar,
# written by its nsys-tee into the job's stdout while the job runs on (the next line joins the bar's)
ITER = re.compile(r"iter (\d+): loss [^,]+, time ([0-9.]+)ms")


def iterations(stdout: Path) -> dict[int, float]:
    """nanoGPT's iteration number -> its time (ms), from a job's output."""
    return iterations_of(stdout.read_text().splitlines())


def iterations_of(lines: list[str]) -> dict[int, float]:
    return {int(m.group(1)): float(m.group(2)) for m in map(ITER.search, lines) if m}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("label")
    p.add_argument("stdout", type=Path)
    p.add_argument("--window", default="-1:-1")
    p.add_argument("--wall", type=float)
    p.add_argument("--buckets", type=int, default=0, help="also the median iteration per N steps")
    a = p.parse_args(argv)
    lo, hi = (int(x) for x in a.window.split(":"))
    times = iterations(a.stdout)
    if not times:
        print(f"{a.label}: no iteration times in {a.stdout}")
        return 1
    outside = {i: t for i, t in times.items() if i > 20 and not lo <= i < hi}
    inside = [t for i, t in times.items() if lo <= i < hi]
    edges = ", ".join(f"{i}: {times[i]:.1f}" for i in (lo - 1, lo, hi - 1, hi, hi + 1) if i in times)
    slowest = ", ".join(f"{i}: {t:.1f}" for i, t in sorted(outside.items(), key=lambda it: -it[1])[:3])
    print(f"iters {a.label}: {len(times)} iterations, loop {sum(times.values()) / 1000:.2f} s (after 20: "
          f"{sum(t for i, t in times.items() if i > 20) / 1000:.2f} s), median outside the window "
          f"{statistics.median(outside.values()):.2f} ms" + (f", inside {statistics.median(inside):.2f} ms" if inside
                                                              else "")
          + (f"; edges (ms) {edges}" if lo >= 0 else "") + f"; slowest outside {slowest}"
          + (f"; wall {a.wall:.2f} s" if a.wall is not None else ""))
    if a.buckets:  # the median iteration per bucket of steps: is a cost after the window lasting or passing?
        last = max(times)
        cells = []
        for b in range(0, last + 1, a.buckets):
            got = [t for i, t in times.items() if b <= i < b + a.buckets and i > 20 and not lo <= i < hi]
            if got:
                cells.append(f"{b}: {statistics.median(got):.2f}")
        print(f"buckets {a.label} (median ms per {a.buckets} steps, window excluded): " + ", ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
