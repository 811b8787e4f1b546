"""Issue 27: what each CUDA call costs in a job before, inside and after an nsys capture range — per call, in one
process, so the machine's drift between jobs (10-30% on the H200 it was written for) does not hide a few percent.

    python benchmarks/gpu/nsys_after_range.py [--detach] [--reps R] [--calls N]

Under `nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop` (or unprofiled: then the start and
stop do nothing). Three kinds of call, timed in turn so they share the drift: "kernel" (an elementwise add: one
plain kernel launch), "gemm" (a 64x64 matmul: cuBLAS), "conv" (a small conv2d: cuDNN). Each rep times N calls of one
kind and a synchronize, between two timings of as many calls of a pure-Python reference (the CPU's speed at that
moment: the H200 machine's CPU switches between states ~1.4x apart within seconds), so "per_reference" is a call's
cost in units of the reference, drift cancelled; phases: "before" (R reps), then cudaProfilerStart, "inside" (3
reps), cudaProfilerStop, with --detach the window's own detach of nsys' CUPTI (nvprof_wrap.tracer.window, as `run
--capture-steps` does it at the next step mark), then "after" (R reps). Prints one JSON line per phase and kind: the
median µs per call and per reference.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--detach", action="store_true")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--name", default="run")
    a = ap.parse_args()
    import torch

    x = torch.ones(1 << 12, device="cuda")
    m = torch.randn(64, 64, device="cuda")
    img, w = torch.randn(1, 8, 16, 16, device="cuda"), torch.randn(8, 8, 3, 3, device="cuda")
    data = list(range(64))

    def reference() -> int:  # Python work of about a torch call's length that touches no CUDA
        return sum(data)

    kinds = {"kernel": lambda: x.add_(1.0), "gemm": lambda: torch.mm(m, m),
             "conv": lambda: torch.nn.functional.conv2d(img, w, padding=1)}

    def timed(call) -> float:
        torch.cuda.synchronize()
        t = time.perf_counter_ns()
        for _ in range(a.calls):
            call()
        torch.cuda.synchronize()
        return (time.perf_counter_ns() - t) / a.calls / 1e3

    def phase(name: str, reps: int) -> None:
        got: dict[str, list[float]] = {k: [] for k in kinds}
        norm: dict[str, list[float]] = {k: [] for k in kinds}
        for _ in range(reps):
            for kind, call in kinds.items():
                cpu = timed(reference)  # the CPU's speed now: no CUDA call in it
                us = timed(call)
                got[kind].append(us)
                norm[kind].append(us / ((cpu + timed(reference)) / 2))
        for kind, us in got.items():
            print(json.dumps({"run": a.name, "phase": name, "kind": kind,
                              "us_per_call": round(statistics.median(us), 3), "min": round(min(us), 3),
                              "per_reference": round(statistics.median(norm[kind]), 4), "reps": reps}), flush=True)

    def edge(name: str, call) -> None:
        t = time.perf_counter()
        call()
        print(json.dumps({"run": a.name, "edge": name, "held_ms": round((time.perf_counter() - t) * 1e3, 3)}),
              flush=True)

    phase("warmup", 2)
    phase("before", a.reps)
    edge("start", torch.cuda.profiler.start)
    phase("inside", 3)
    edge("stop", torch.cuda.profiler.stop)
    if a.detach:
        from nvprof_wrap.tracer.window import _detach_profilers_cupti

        _detach_profilers_cupti(lambda event: print(json.dumps({"run": a.name, **event}), flush=True))
    phase("after", a.reps)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
