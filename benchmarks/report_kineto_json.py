"""`report` on Kineto JSON traces of N kernel events (each with its runtime event), against an ijson stream that
sums kernel time by name, and Holistic Trace Analysis' kernel breakdown of the same trace where HTA is installed;
up to 1M events the same trace gzipped too (as torch.profiler writes `*.json.gz`), each against the floor on it.

    python -m benchmarks report_kineto_json [--quick]      # 100k events; full: 100k, 1M, 5M (HTA and gzip up to 1M)

Each measurement is a fresh process (wall time; peak PSS of its process tree), interleaved in each round.
"""
from __future__ import annotations

import gzip
import importlib.util
import shutil
from pathlib import Path

from benchmarks.suite.floors import HTA, STREAM_JSON
from benchmarks.suite.measure import Measured, generated, measure, python, report_cmd, values
from benchmarks.suite.types import Case, Figure, Result, RunArgs

NAME = "report_kineto_json"
MEASURES = "report time and peak memory on generated lean Kineto JSON traces (kernels and their runtime events)"
FLOOR = "ijson floor: the trace streamed by ijson, kernel time summed by name"
ANCHOR = "HTA: Holistic Trace Analysis get_gpu_kernel_breakdown on the same trace, where HTA is installed"
QUICK = (100_000,)
FULL = (100_000, 1_000_000, 5_000_000)
HTA_MAX = 1_000_000  # HTA needs ~6 GB at 1M events, ~14 GB at 5M
GZIP_MAX = 1_000_000  # the gzipped case: the compression is slow to make, and 1M already shows the ratio


def run(args: RunArgs) -> Result:
    sizes = QUICK if args.quick else FULL
    cases: list[Case] = []
    for n in sizes:
        trace = generated("kineto", n, args.work_dir / f"kineto_{n}" / "rank0.trace.json")
        cases.append(measure_trace(f"{n:,} kernels", trace, args.rounds, hta=n <= HTA_MAX))
        if n <= GZIP_MAX:
            cases.append(measure_trace(f"{n:,} kernels, gzipped", gzipped(trace, args.work_dir / f"kineto_{n}_gz"),
                                       args.rounds, hta=n <= HTA_MAX))
    return args.result(tuple(cases))


def gzipped(trace: Path, folder: Path) -> Path:
    """trace gzipped (level 6, as gzip gives it) into its own folder, made once: HTA reads a whole folder."""
    out = folder / (trace.name + ".gz")
    if not out.exists():
        folder.mkdir(parents=True, exist_ok=True)
        part = out.with_suffix(".part")
        with trace.open("rb") as src, gzip.open(part, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        part.rename(out)
    return out


def measure_trace(label: str, trace: Path, rounds: int, hta: bool) -> Case:
    """The floor, report and HTA on one trace, interleaved; HTA reads the trace's folder."""
    hta = hta and importlib.util.find_spec("hta") is not None
    got: dict[str, list[Measured]] = {"ijson floor": [], "report": [], "HTA": []}
    for _ in range(rounds):
        got["ijson floor"].append(measure(python("-c", STREAM_JSON, str(trace))))
        got["report"].append(measure(report_cmd(trace)))
        if hta:
            got["HTA"].append(measure(python("-c", HTA, str(trace.parent))))
    figures: list[Figure] = []
    for name, ms in got.items():
        secs, mbs = values(ms)
        if name == "ijson floor":
            figures.append(Figure(name, "floor", "s", secs))
        elif name == "report":
            figures += [Figure(name, "measured", "s", secs, versus="ijson floor"),
                        Figure("report peak memory", "measured", "MB", mbs)]
        else:
            why = "" if hta else "not run: HTA not installed here, or the trace too big for it"
            figures += [Figure("HTA", "anchor", "s", secs, note=why), Figure("HTA peak memory", "anchor", "MB", mbs)]
    return Case(f"{label}, {trace.stat().st_size / 2**20:,.0f} MB", tuple(figures))
