"""A long job's capture: `report` on a generated Nsight Systems export of 20M launches (the real schema, with runtime
calls, copies and NVTX ranges: what hours of training leave), as JSON, with --per-step and as the HTML page, against
the two-table floor (the kernels' GROUP BY, then one scan of the launch calls), the attribution floor (the GROUP BY
with each kernel joined to its call: SQLite builds an index for the join, which at this size costs more than the
rest) and the GROUP BY floor alone; each a fresh process, interleaved in each round.

    python -m benchmarks report_long_job [--quick]      # 2M launches; full: 20M (~2.2 GB; check free disk first)

Memory is given twice: the peak PSS of the process tree (sampled, as every suite benchmark gives it) and the peak
RSS of its largest process (/usr/bin/time's maximum resident set size: wait4's rusage, which takes in the
children each process waited for — `report` forks workers for big captures). The goal (issue 48): ≤ 1.5× the
two-table floor, ≤ 300 MB.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from benchmarks.suite.floors import FLOOR_ATTRIBUTION, FLOOR_NSYS, FLOOR_TWO_TABLES
from benchmarks.suite.measure import Measured, generated, measure, python, report_cmd, values
from benchmarks.suite.types import Case, Figure, Result, RunArgs, Unavailable

NAME = "report_long_job"
MEASURES = ("report time and peak memory on a generated 20M-launch Nsight Systems export (NVTX ranges, runtime "
            "calls, copies), as JSON, with --per-step and as HTML")
FLOOR = ("two-table floor: one sqlite3 GROUP BY of kernel time by name, then one scan of the launch-call table; "
         "attribution floor: the GROUP BY with every kernel joined to its launch call; GROUP BY floor: the GROUP BY "
         "alone")
ANCHOR = "none run here: nsys stats was killed after 300 s at 4.3 GB on this size on the H200 host (issue 48)"
QUICK = (2_000_000,)
FULL = (20_000_000,)
BYTES_PER_LAUNCH = 115  # a generated export's size per launch, measured (2M: 223 MB): checked against free disk


def run(args: RunArgs) -> Result:
    time_bin = shutil.which("time") or "/usr/bin/time"
    if not Path(time_bin).exists():
        raise Unavailable("no /usr/bin/time here to read the largest process's peak RSS")
    cases: list[Case] = []
    for n in QUICK if args.quick else FULL:
        path = args.work_dir / f"nsys_{n}.sqlite"
        if not path.exists():
            args.work_dir.mkdir(parents=True, exist_ok=True)
            free = shutil.disk_usage(args.work_dir).free
            if free < 2 * n * BYTES_PER_LAUNCH:
                raise Unavailable(f"{free / 2**30:.1f} GB free in {args.work_dir}: the {n:,}-launch export needs "
                                  f"~{n * BYTES_PER_LAUNCH / 2**30:.1f} GB")
        db = generated("nsys", n, path, "--seed", "1")
        with tempfile.TemporaryDirectory() as tmp:
            html = str(Path(tmp) / "report.html")
            variants = {
                "two-table floor": python("-c", FLOOR_TWO_TABLES, str(db)),
                "attribution floor": python("-c", FLOOR_ATTRIBUTION, str(db)),
                "GROUP BY floor": python("-c", FLOOR_NSYS, str(db)),
                "report (json)": report_cmd(db),
                "report --per-step": python("-m", "nvprof_wrap", "report", str(db), "--per-step"),
                "report (html)": python("-m", "nvprof_wrap", "report", str(db), "--format", "html", "-o", html)}
            got: dict[str, list[tuple[Measured, float]]] = {k: [] for k in variants}
            for _ in range(args.rounds):
                for label, cmd in variants.items():
                    got[label].append(_with_rss(time_bin, cmd, Path(tmp) / "rss"))
        cases.append(Case(f"{n:,} launches, {db.stat().st_size / 2**20:,.0f} MB", tuple(_figures(got))))
    return args.result(tuple(cases))


def _with_rss(time_bin: str, cmd: list[str], out: Path) -> tuple[Measured, float]:
    """One measurement, and the peak RSS (MB) of the largest process in its tree."""
    m = measure([time_bin, "-f", "%M", "-o", str(out), *cmd])
    return m, int(out.read_text().split()[-1]) / 1024  # kilobytes


def _figures(got: dict[str, list[tuple[Measured, float]]]) -> list[Figure]:
    figures: list[Figure] = []
    for label, ms in got.items():
        secs, pss = values([m for m, _ in ms])
        rss = tuple(round(r, 1) for _, r in ms)
        if label.endswith("floor"):
            figures.append(Figure(label, "floor", "s", secs))
            continue
        figures += [Figure(label, "measured", "s", secs, versus="two-table floor"),
                    Figure(f"{label} peak PSS", "measured", "MB", pss),
                    Figure(f"{label} peak RSS", "measured", "MB", rss)]
    return figures
