"""Ground truth from hardware counters, composed: the counter rules choose the metrics this GPU offers
(classify/counters.py), an earlier run's store names the kernels worth measuring, launch/verify.py runs the command
under Nsight Compute, and the export is read beside the captures it verifies."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from nvprof_wrap.analyses import achieved
from nvprof_wrap.analyses.achieved import KernelFacts
from nvprof_wrap.classify import counters
from nvprof_wrap.classify.counter_flops import COUNTERS_OP
from nvprof_wrap.errors import BadInput, ToolMissing
from nvprof_wrap.launch import ncu
from nvprof_wrap.launch.gpus import list_gpus
from nvprof_wrap.launch.verify import earlier_run, measure
from nvprof_wrap.pipeline.compose import analyze
from nvprof_wrap.report import Report
from nvprof_wrap.report.counter_check import check, rates
from nvprof_wrap.run import Run
from nvprof_wrap.store import Store
from nvprof_wrap.store.queries import OpFlopsRow


def counters_of(cmd: list[str], *, ncu_path: str | None, runs: Path, output: str | None, top: int,
                launch_count: int, quiet_stdout: bool) -> tuple[Path, list[Path]]:
    """Run ``cmd`` under Nsight Compute; the CSV it wrote and the earlier run (if any) whose captures it verifies."""
    exe = ncu.NCU.require(ncu_path)
    gpus = list_gpus()
    cc = max((g.cc or 0.0 for g in gpus), default=9.0)
    metrics = counters.metrics_for(cc, ncu.query_metrics(exe))
    if not counters.can_decide(metrics):
        raise ToolMissing(f"ncu offers no matrix-instruction count (HMMA with its HFMA2 split, wgmma, IMMA or DMMA) "
                          f"on compute capability {cc}: tensor-pipe cycles alone cannot tell matrix math from HFMA2")
    before = earlier_run(cmd, runs)
    names = top_kernels(before, top) if before else None
    default = runs / f"verify-{Path(cmd[0]).name}-{time.strftime('%Y%m%d-%H%M%S')}"
    csv = measure(exe, cmd, Path(output or default), not output, metrics, names, launch_count, before, quiet_stdout)
    return csv, ([before] if before else [])


def top_kernels(folder: Path, n: int) -> list[str]:
    """The names of a run's ``n`` kernels with the most GPU time, from its run store."""
    store = Store(Run(folder).store_file)
    try:
        return store.top_kernel_names(n)
    finally:
        store.close()


def report_with_counters(csv: Path, attach: list[Path]) -> Report:
    """The report of an ncu CSV export and the captures it verifies, with its summary of what the counters said
    against the name rules (``counter_check``); BadInput when the export has no counters."""
    store = Store()
    try:
        rep = analyze(csv, *attach, store=store)
        if not store.has_counters():
            raise BadInput(csv, "no kernel counters in this export (was it made with ncu --csv?)")
        rows = store.op_flops_rows()
        counted = [(r["name"], r["precision"], r["flops"], r["launches"], r["total_ns"])
                   for r in rows if r["op"] == COUNTERS_OP]
        # {a timeline's kernel name: the counter tool's}, where the two spell one kernel apart
        spelled = counters.alike({c[0] for c in counted}, store.timeline_kernel_names())
    finally:
        store.close()
    trace = trace_rates([r for r in rows if r["op"] != COUNTERS_OP], spelled, {k.name: k for k in rep.kernels}.get)
    return dataclasses.replace(rep, counter_check=check(rep.kernels, rates(counted, trace)))


def trace_rates(rows: list[OpFlopsRow], spelled: dict[str, str],
                kernel: Callable[[str], KernelFacts | None]) -> dict[str, float]:
    """Each kernel's TFLOP/s from the FLOPs of its own math the timelines give it (analyses/achieved.own_flops, as
    the report's per-kernel rates: a helper none; every kernel, not the report's top rates; a name under ops of
    several precisions once: what the counters measure of it), by the counter tool's name of it where the two spell
    it apart (ncu's `cutlass::Kernel2<…>(T1::Params)` for the PyTorch profiler's `…(cutlass_80_tensorop_…::Params)`)."""
    ran = achieved.ran_in(((r["op"], r["name"], r["precision"], r["flops"], r["total_ns"]) for r in rows), kernel)
    acc: dict[str, tuple[float, int]] = {}
    for (own, _precision), (f, t) in achieved.own_flops(ran, kernel).items():
        name = spelled.get(own, own)
        flops, ns = acc.get(name, (0.0, 0))
        acc[name] = (flops + f, ns + t)
    return {name: round(flops / ns / 1e3, 2) for name, (flops, ns) in acc.items() if flops > 0 and ns > 0}
