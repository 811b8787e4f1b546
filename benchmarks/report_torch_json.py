"""`report` on traces in torch.profiler's own layout (benchmarks.generate torch: CPU op stacks, runtime calls, flow
events and ProfilerStep ranges beside the kernels, ~1.5 KB per kernel), against the ijson floor, and HTA where it is
installed.

    python -m benchmarks report_torch_json [--quick]      # 20k kernels; full: 100k and 300k, 2 rounds

Each measurement is a fresh process (wall time; peak PSS of its process tree), interleaved in each round.
"""
from __future__ import annotations

from benchmarks.report_kineto_json import HTA_MAX, measure_trace
from benchmarks.suite.measure import generated
from benchmarks.suite.types import Result, RunArgs

NAME = "report_torch_json"
MEASURES = "report time and peak memory on generated torch.profiler traces (CPU ops, runtime calls, flow events)"
FLOOR = "ijson floor: the trace streamed by ijson, kernel time summed by name"
ANCHOR = "HTA: Holistic Trace Analysis get_gpu_kernel_breakdown on the same trace, where HTA is installed"
QUICK = (20_000,)
FULL = (100_000, 300_000)


def run(args: RunArgs) -> Result:
    sizes = QUICK if args.quick else FULL
    traces = [(n, generated("torch", n, args.work_dir / f"torch_{n}" / "rank0.pt.trace.json")) for n in sizes]
    cases = [measure_trace(f"{n:,} kernels", trace, args.rounds, hta=n <= HTA_MAX) for n, trace in traces]
    return args.result(tuple(cases))
