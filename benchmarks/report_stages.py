"""Where `report` spends its time on a big Nsight Systems export: wall time of each stage inside one `analyze`, in
one process, beside the GROUP BY floor run in a child process first.

    python -m benchmarks report_stages [--quick]            # a generated export: 200k launches; full: 2M
    python -m benchmarks.report_stages CAPTURE.sqlite [--rounds 2] [--one-sweep-too]     # any capture, printed

Wraps the reader's stages with timers (the forked workers are timed from the parent: the wait for them counts in the
stage that started them) and runs the whole pipeline once per round, store and rendering included, in a fresh
temporary store. Stages overlap (the busy-time union runs in a forked child beside the rest), so they do not add up
to the total. --one-sweep-too: each round also runs with the NVTX segment sweep in one process (as before it was
cut into pieces of time), right after the default one.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from benchmarks.suite.floors import FLOOR_NSYS
from benchmarks.suite.machine import ROOT
from benchmarks.suite.measure import generated
from benchmarks.suite.types import Case, Figure, Result, RunArgs

NAME = "report_stages"
MEASURES = "wall time of each stage of one analyze (read, sweep, attribution, classification) on a generated export"
FLOOR = "GROUP BY floor: one sqlite3 GROUP BY of kernel time by name, in a child process"
ANCHOR = "none: the stages are this tool's own"
QUICK, FULL = 200_000, 2_000_000
TOTAL = "analyze + to_dict"

SPENT: dict[str, list[float]] = defaultdict(list)


def run(args: RunArgs) -> Result:
    n = QUICK if args.quick else FULL
    db = generated("nsys", n, args.work_dir / f"nsys_{n}.sqlite", "--seed", "1")
    out = subprocess.run([sys.executable, "-m", "benchmarks.report_stages", str(db), "--rounds", str(args.rounds),
                          "--json"], cwd=ROOT, check=True, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    rounds: list[dict[str, float]] = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    names = list(dict.fromkeys(k for r in rounds for k in r))
    floor = tuple(round(r["floor"], 3) for r in rounds)
    cases = [Case(name, (Figure("time", "measured", "s", tuple(round(r.get(name, 0.0), 3) for r in rounds),
                                versus="GROUP BY floor"), Figure("GROUP BY floor", "floor", "s", floor)))
             for name in names if name != "floor"]
    return args.result(tuple(cases), case_header=f"stage, one analyze of {n:,} launches with NVTX ranges")


def _timed(owner: Any, name: str, label: str) -> None:
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return inner(*a, **k)
        finally:
            SPENT[label].append(time.perf_counter() - t)

    setattr(owner, name, wrapper)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("capture")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--one-sweep-too", action="store_true")
    p.add_argument("--json", action="store_true", help="one JSON line per round: seconds per stage")
    a = p.parse_args(argv)
    t = time.perf_counter()
    import nvprof_wrap
    from nvprof_wrap import report as report_mod
    from nvprof_wrap.pipeline import compose, evidence
    from nvprof_wrap.readers import nsys_sqlite
    from nvprof_wrap.timeline import busy, native, nvtx
    imported = time.perf_counter() - t
    _timed(nvtx, "_all_segments", "NVTX segment sweep (+ insert)")
    _timed(nvtx, "_main_threads", "main thread per process")
    _timed(nvtx, "_slices", "attribution slices planned")
    _timed(nvtx, "_attribute_slice", "attribution, this process's slice")
    _timed(native, "sweep", "NVTX segment sweep (compiled)")
    _timed(nvtx, "_compiled_slice", "attribution, this process's slice (compiled)")
    _timed(nsys_sqlite, "attribute", "attribution in all (sweep + join + group, workers waited for)")
    _timed(busy.BusyTime, "result", "busy-time union, wait after the rest")
    _timed(nsys_sqlite, "_memops", "copies and sets")
    _timed(compose, "ingest", "ingest (read + store)")
    _timed(evidence, "prepare", "evidence (classification)")
    _timed(report_mod, "build", "report built from the store")
    if not a.json:
        print(f"cores {len(os.sched_getaffinity(0))}; imports {imported:.2f} s", flush=True)
    pieces = nvtx.MIN_SPLIT_RANGES
    for r, one_sweep in [(r, v) for r in range(a.rounds) for v in ((False, True) if a.one_sweep_too else (False,))]:
        nvtx.MIN_SPLIT_RANGES = 1 << 62 if one_sweep else pieces
        t = time.perf_counter()
        floor = subprocess.run([sys.executable, "-c", FLOOR_NSYS, a.capture], capture_output=True, check=True)
        floor_s = time.perf_counter() - t
        SPENT.clear()
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            report = nvprof_wrap.analyze(a.capture, store=os.path.join(tmp, "run.sqlite"))
            text = report.to_dict()
            total = time.perf_counter() - t
        if a.json:
            print(json.dumps({"floor": floor_s, "imports": imported, **{k: sum(v) for k, v in SPENT.items()},
                              TOTAL: total}), flush=True)
            continue
        print(f"repeat {r}{' (sweep in one process)' if one_sweep else ''}: floor {floor_s:.2f} s "
              f"(child process, {floor.stdout.decode().strip()} names); "
              f"analyze + to_dict {total:.2f} s = {total / floor_s:.2f}x the floor "
              f"({len(text.get('kernels', []))} kernel rows)", flush=True)
        for label, spent in SPENT.items():
            print(f"  {sum(spent):6.2f} s  {label}" + (f" ({len(spent)} calls)" if len(spent) > 1 else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
