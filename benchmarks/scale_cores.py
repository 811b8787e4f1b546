"""Per-op attribution at scale on every core of this machine and on two (taskset), against the attribution floor
and the GROUP BY floor: Nsight Systems captures of 2M and 5M launches with runtime records and NVTX ranges (and 5M
without NVTX). One command, for a machine with many cores (the GPU machine: about 4 minutes on its 16 cores,
generation included):

    python3 -m benchmarks.scale_cores OUT_DIR [--sizes 2000000,5000000] [--rounds 2] [--stages]

The floors (benchmarks/scale.py): FLOOR_ATTRIBUTION, the GROUP BY over the kernels joined to their launch calls by
correlation id — what any per-op attribution pays, the target's base (docs/performance.md "Attribution floor") —
and FLOOR_NSYS, the plain GROUP BY. The compiled passes (timeline/native.py) are built in place first where they are
not (a C compiler and Python's headers); the first line says whether they run. Captures come from
benchmarks.generate (the fixtures' real kernel names, or the repository's own captures' where ../shared/fixtures is
absent) into OUT_DIR, and are removed at the end. Each measurement is a fresh process (wall time; peak PSS of its
process tree): the floors, report on every core, report on cores 0-1, interleaved per round. --stages: then
benchmarks.stages on each NVTX capture, on every core and on cores 0-1.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import time

from benchmarks.scale import FLOOR_ATTRIBUTION, FLOOR_NSYS, ROOT, measure


def compiled() -> str:
    """Whether the compiled passes run here, after building them in place where they are missing."""
    def runs() -> bool:
        probe = [sys.executable, "-c", "from nvprof_wrap.timeline import native; print(native.available())"]
        return subprocess.run(probe, check=False, cwd=ROOT, capture_output=True, text=True).stdout.strip() == "True"

    if not runs():  # setup.py, else the compiler itself where setuptools is missing (Python 3.12 has none of its own)
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], check=False, cwd=ROOT,
                       capture_output=True)
    if not runs():
        out = ROOT / "nvprof_wrap" / "timeline" / f"_cattr{sysconfig.get_config_var('EXT_SUFFIX')}"
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                        str(ROOT / "nvprof_wrap" / "timeline" / "_cattr.c"), "-o", str(out), "-ldl"], check=False,
                       capture_output=True)
    if os.environ.get("NVPROF_WRAP_NATIVE", "").lower() in ("0", "off", "no"):
        return "off (NVPROF_WRAP_NATIVE)"
    return "on" if runs() else "off (not built: no C compiler or Python headers?)"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--sizes", default="2000000,5000000")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--stages", action="store_true")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    began = time.time()
    print("cores", len(os.sched_getaffinity(0)), "| compiled passes", compiled(), flush=True)
    sizes = [int(x) for x in a.sizes.split(",")]
    for n in sizes:
        db = f"{a.out}/nsys_{n}.sqlite"
        subprocess.run([sys.executable, "-m", "benchmarks.generate", "nsys", str(n), db, "--seed", "1"], check=True)
        variants = [("nvtx", db)]
        if n == max(sizes):
            plain = f"{a.out}/nsys_{n}_nonvtx.sqlite"
            shutil.copy(db, plain)
            with sqlite3.connect(plain) as conn:
                conn.execute("DELETE FROM NVTX_EVENTS")
            variants.append(("no-nvtx", plain))
        for r in range(a.rounds):
            for label, path in variants:
                if label == "no-nvtx" and r:
                    continue  # once: the NVTX case is the one the target is about
                floor = measure([sys.executable, "-c", FLOOR_ATTRIBUTION, path])
                group_by = measure([sys.executable, "-c", FLOOR_NSYS, path])
                report = [sys.executable, "-m", "nvprof_wrap", "report", path, "--format", "json"]
                every, two = measure(report), measure(["taskset", "-c", "0,1", *report])
                print(f"{n:>9,} {label:8} round {r} attribution floor {floor[0]:.2f} s (GROUP BY {group_by[0]:.2f} s)"
                      f" | report all cores {every[0]:.2f} s {every[1]:.0f} MB = {every[0] / floor[0]:.2f}x "
                      f"({every[0] / group_by[0]:.2f}x GROUP BY) | report 2 cores {two[0]:.2f} s {two[1]:.0f} MB = "
                      f"{two[0] / floor[0]:.2f}x ({two[0] / group_by[0]:.2f}x GROUP BY)", flush=True)
        if a.stages:
            stages = [sys.executable, "-m", "benchmarks.stages", db, "--rounds", "1", "--one-sweep-too"]
            for cmd in (stages, ["taskset", "-c", "0,1", *stages]):
                print(f"{n:,} stages{' (cores 0-1)' if cmd[0] == 'taskset' else ''}:", flush=True)
                subprocess.run(cmd, check=False)
        for _, path in variants:
            os.remove(path)
    print(f"done in {time.time() - began:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
