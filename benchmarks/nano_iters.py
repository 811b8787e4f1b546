"""Issue 27: nanoGPT's own per-iteration times (train.py --log_interval=1 prints "iter N: loss L, time T ms, ...")
from a job's output, split at a capture window: robust to the GPU machine's start-up noise, which moves whole-job wall
times by ±20% between runs of one command.

    python3 benchmarks/nano_iters.py LABEL STDOUT_FILE [--window 100:120]

Prints: LABEL, iterations, their summed time (the training loop), the median iteration outside the window (after
iteration 20: warm-up and the first-iteration CUDA set-up left out), and inside it.
"""
from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

ITER = re.compile(r"^iter (\d+): loss [^,]+, time ([0-9.]+)ms")


def main(argv: list[str]) -> int:
    label, path = argv[0], Path(argv[1])
    lo, hi = (int(x) for x in argv[3].split(":")) if len(argv) > 3 and argv[2] == "--window" else (-1, -1)
    times = {int(m.group(1)): float(m.group(2)) for m in map(ITER.match, path.read_text().splitlines()) if m}
    if not times:
        print(f"{label}: no iteration times in {path}")
        return 1
    outside = [t for i, t in times.items() if i > 20 and not lo <= i < hi]
    inside = [t for i, t in times.items() if lo <= i < hi]
    print(f"iters {label}: {len(times)} iterations, loop {sum(times.values()) / 1000:.2f} s (after 20: "
          f"{sum(t for i, t in times.items() if i > 20) / 1000:.2f} s), median outside the window "
          f"{statistics.median(outside):.2f} ms" + (f", inside {statistics.median(inside):.2f} ms" if inside else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
