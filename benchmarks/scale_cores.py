"""The Nsight Systems half of the scale benchmark on every core of this machine and on two (taskset), with and
without NVTX ranges, for machines with many cores:

    python -m benchmarks.scale_cores OUT_DIR

Generates 1M- and 5M-launch captures in OUT_DIR (benchmarks.generate; NVPROF_WRAP_FIXTURES may point at a copy
of the fixtures). Results of the run on the GPU machine's 16 cores: benchmarks/results/scale_16cores.txt.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys

from benchmarks.scale import FLOOR_NSYS, measure


def main() -> int:
    out = sys.argv[1]
    print("cores", len(os.sched_getaffinity(0)), flush=True)
    for n in (1_000_000, 5_000_000):
        db = f"{out}/nsys_{n}.sqlite"
        subprocess.run([sys.executable, "-m", "benchmarks.generate", "nsys", str(n), db, "--seed", "1"], check=True)
        plain = f"{out}/nsys_{n}_nonvtx.sqlite"
        shutil.copy(db, plain)
        with sqlite3.connect(plain) as conn:
            conn.execute("DELETE FROM NVTX_EVENTS")
        for label, path in (("nvtx", db), ("no-nvtx", plain)):
            for _ in range(2):
                floor = measure([sys.executable, "-c", FLOOR_NSYS, path])
                report = [sys.executable, "-m", "nvprof_wrap", "report", path, "--format", "json"]
                every, two = measure(report), measure(["taskset", "-c", "0,1", *report])
                print(f"{n:>9,} {label:8} floor {floor[0]:.2f} s | report all cores {every[0]:.2f} s {every[1]:.0f} MB "
                      f"= {every[0] / floor[0]:.2f}x | report 2 cores {two[0]:.2f} s {two[1]:.0f} MB "
                      f"= {two[0] / floor[0]:.2f}x", flush=True)
        os.remove(db)
        os.remove(plain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
