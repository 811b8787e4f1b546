"""`report` on Nsight Systems SQLite exports of N launches (generated in the real schema, with runtime calls, copies
and NVTX ranges), against the attribution floor and the plain GROUP BY floor, and `nsys stats`' kernel summary where
nsys is installed. On a machine of more than two cores, `report` on cores 0-1 (taskset) beside it.

    python -m benchmarks report_nsys_sqlite [--quick]      # 100k launches; full: 100k, 1M, 5M (~15 min on 2 cores)

Each measurement is a fresh process (wall time; peak PSS of its process tree), the floors and the reports
interleaved in each round; the largest size also runs with its NVTX ranges removed (a script run without markers).
"""
from __future__ import annotations

import os
import shutil

from benchmarks.suite.floors import FLOOR_ATTRIBUTION, FLOOR_NSYS
from benchmarks.suite.measure import Measured, generated, measure, python, report_cmd, values, without_nvtx
from benchmarks.suite.types import Case, Figure, Result, RunArgs

NAME = "report_nsys_sqlite"
MEASURES = "report time and peak memory on generated Nsight Systems exports (NVTX ranges, runtime calls, copies)"
FLOOR = ("attribution floor: one sqlite3 GROUP BY of kernel time by name with every kernel joined to its launch call; "
         "GROUP BY floor: the GROUP BY alone")
ANCHOR = "nsys stats --report cuda_gpu_kern_sum on the same file, where nsys is installed"
QUICK = (100_000,)
FULL = (100_000, 1_000_000, 5_000_000)


def run(args: RunArgs) -> Result:
    sizes = QUICK if args.quick else FULL
    two_cores = len(os.sched_getaffinity(0)) > 2 and shutil.which("taskset") is not None
    nsys = shutil.which("nsys")
    cases: list[Case] = []
    for n in sizes:
        db = generated("nsys", n, args.work_dir / f"nsys_{n}.sqlite", "--seed", "1")
        variants = [(f"{n:,} launches, NVTX", db)]
        if n == max(sizes):
            variants.append((f"{n:,} launches, no NVTX", without_nvtx(db)))
        for label, path in variants:
            got: dict[str, list[Measured]] = {}
            for _ in range(args.rounds):
                got.setdefault("attribution floor", []).append(measure(python("-c", FLOOR_ATTRIBUTION, str(path))))
                got.setdefault("GROUP BY floor", []).append(measure(python("-c", FLOOR_NSYS, str(path))))
                got.setdefault("report", []).append(measure(report_cmd(path)))
                if two_cores:
                    got.setdefault("report, cores 0-1", []).append(measure(["taskset", "-c", "0,1",
                                                                            *report_cmd(path)]))
                if nsys:
                    got.setdefault("nsys stats", []).append(measure(
                        [nsys, "stats", "--report", "cuda_gpu_kern_sum", "--format", "csv", str(path)]))
            cases.append(Case(label, tuple(_figures(got, nsys is not None))))
    return args.result(tuple(cases))


def _figures(got: dict[str, list[Measured]], nsys: bool) -> list[Figure]:
    out: list[Figure] = []
    for name, ms in got.items():
        secs, mbs = values(ms)
        if name.endswith("floor"):
            out.append(Figure(name, "floor", "s", secs))
        elif name == "nsys stats":
            out.append(Figure(name, "anchor", "s", secs))
        else:
            out.append(Figure(name, "measured", "s", secs, versus="attribution floor"))
            out.append(Figure(f"{name} peak memory", "measured", "MB", mbs))
    if not nsys:
        out.append(Figure("nsys stats", "anchor", "s", (), note="nsys not installed here"))
    return out
