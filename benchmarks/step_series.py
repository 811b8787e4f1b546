"""What the per-step series costs `report` (readers' numpy series: each table read once into arrays): `report
--format json` with the series measured (NVPROF_WRAP_SERIES_MAX_LAUNCHES=-1) and without it (=0), on generated
Nsight Systems exports, interleaved in each round.

    python -m benchmarks step_series [--quick]      # 50k launches; full: 200k and 1M, 3 rounds
"""
from __future__ import annotations

from benchmarks.suite.measure import Measured, generated, measure, report_cmd, values
from benchmarks.suite.types import Case, Figure, Result, RunArgs

NAME = "step_series"
MEASURES = "report time and peak memory with the per-step series measured, on generated Nsight Systems exports"
FLOOR = "the same report without the series (NVPROF_WRAP_SERIES_MAX_LAUNCHES=0)"
ANCHOR = "none: no other tool gives per-step series of these captures"
QUICK = (50_000,)
FULL = (200_000, 1_000_000)
WITHOUT, WITH = "report without the series", "report with the series"


def run(args: RunArgs) -> Result:
    cases: list[Case] = []
    for n in QUICK if args.quick else FULL:
        db = generated("nsys", n, args.work_dir / f"nsys_{n}.sqlite", "--seed", "1")
        got: dict[str, list[Measured]] = {WITHOUT: [], WITH: []}
        measure(report_cmd(db))  # a warm-up: the page cache holds the file for both
        for _ in range(args.rounds):
            got[WITHOUT].append(measure(report_cmd(db), env={"NVPROF_WRAP_SERIES_MAX_LAUNCHES": "0"}))
            got[WITH].append(measure(report_cmd(db), env={"NVPROF_WRAP_SERIES_MAX_LAUNCHES": "-1"}))
        (s0, m0), (s1, m1) = values(got[WITHOUT]), values(got[WITH])
        cases.append(Case(f"{n:,} launches", (
            Figure(WITHOUT, "floor", "s", s0), Figure(WITH, "measured", "s", s1, versus=WITHOUT),
            Figure("peak memory without", "floor", "MB", m0), Figure("peak memory with", "measured", "MB", m1))))
    return args.result(tuple(cases))
