"""What the report's analyses beyond the kernel table cost together — the per-step series and what is built from it
(time budget, speed-up ceiling, achieved TFLOP/s and MFU, the hardware tables) — against the same `report` with them
off, on generated Nsight Systems exports; each `report --format json` a fresh process, interleaved in each round.

    python -m benchmarks report_sections [--quick]      # 50k launches; full: 100k and 1M, 3 rounds after a warm-up

Every section hangs off the series: NVPROF_WRAP_SERIES_MAX_LAUNCHES=0 leaves the series out, and with it the time
budget, the ceiling and MFU (built from the budget); =-1 measures it at any size (by default not past 300k launches:
timeline/series.py MAX_LAUNCHES). The generated exports hold no FLOPs and no hardware samples, so achieved TFLOP/s
and the hardware tables have no rows in either run; their store queries run in both. The stage that grows is timed
too: series.measure inside one analyze (the reader's numpy pass over the kernel and launch-call tables), so the
result says where the difference goes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from benchmarks.suite.machine import ROOT
from benchmarks.suite.measure import Measured, generated, measure, report_cmd, values
from benchmarks.suite.types import Case, Figure, Result, RunArgs

NAME = "report_sections"
MEASURES = ("report time and peak memory with every section (per-step series, time budget, ceiling, achieved, "
            "hardware), on generated Nsight Systems exports")
FLOOR = "the same report with the sections off (NVPROF_WRAP_SERIES_MAX_LAUNCHES=0)"
ANCHOR = "none: no other tool gives these sections for these captures"
QUICK = (50_000,)
FULL = (100_000, 1_000_000)
OFF, ON = "report, sections off", "report, every section"
ENV = "NVPROF_WRAP_SERIES_MAX_LAUNCHES"
# One analyze in this process with series.measure timed: the seconds the series' own pass takes, printed as JSON
# (measured here, not in the forked worker a big capture's series, or a small one's, gets: series.Ahead).
STAGE = ("import json, os, sys, tempfile, time; import nvprof_wrap; from nvprof_wrap.timeline import series; "
         "series.BIG = series.AHEAD_LAUNCHES = 1 << 62; inner = series.measure; spent = []\n"
         "def timed(*a, **k):\n t = time.perf_counter(); r = inner(*a, **k); spent.append(time.perf_counter() - t); "
         "return r\n"
         "series.measure = timed; t = time.perf_counter()\n"
         "with tempfile.TemporaryDirectory() as d: nvprof_wrap.analyze(sys.argv[1], store=os.path.join(d, 'r.sqlite'))"
         "\nprint(json.dumps({'total': time.perf_counter() - t, 'series': sum(spent)}))")


def run(args: RunArgs) -> Result:
    cases: list[Case] = []
    for n in QUICK if args.quick else FULL:
        db = generated("nsys", n, args.work_dir / f"nsys_{n}.sqlite", "--seed", "1")
        got: dict[str, list[Measured]] = {OFF: [], ON: []}
        stage: list[float] = []
        measure(report_cmd(db))  # a warm-up: the page cache holds the file for both
        for _ in range(args.rounds):
            got[OFF].append(measure(report_cmd(db), env={ENV: "0"}))
            got[ON].append(measure(report_cmd(db), env={ENV: "-1"}))
            stage.append(series_seconds(str(db)))
        (s0, m0), (s1, m1) = values(got[OFF]), values(got[ON])
        cases.append(Case(f"{n:,} launches", (
            Figure(OFF, "floor", "s", s0), Figure(ON, "measured", "s", s1, versus=OFF),
            Figure("series pass inside one analyze", "measured", "s", tuple(round(s, 3) for s in stage),
                   note="series.measure, timed in one process with every section on"),
            Figure("peak memory, off", "floor", "MB", m0), Figure("peak memory, every section", "measured", "MB", m1))))
    return args.result(tuple(cases))


def series_seconds(capture: str) -> float:
    """Seconds series.measure took in one analyze of capture (every section on), in a fresh process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               **{ENV: "-1"})
    out = subprocess.run([sys.executable, "-c", STAGE, capture], cwd=ROOT, env=env, check=True, capture_output=True,
                         text=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["series"])
