"""Achieved TFLOP/s of a bf16 GEMM loop, as the loop itself times it and as torch.profiler records it (run on the GPU
machine): N matmuls of SIZE³ in bf16, timed with CUDA events around the loop (the loop's own figure), then the same
loop under torch.profiler with record_shapes=True and one ProfilerStep per matmul, written as a Kineto trace.

    python3 benchmarks/gpu/matmul_achieved.py OUT_DIR [--size 8192] [--iters 20] [--dtype bf16]

OUT_DIR gets the trace (*.pt.trace.json.gz) and loop.json: {"size", "iters", "dtype", "flops", "seconds",
"tflops", "gpu"} — the figure a report of the trace must reproduce from its shapes and kernel durations.
Measured on the H200: the trace is tests/data/h200_runs/kineto_matmul_bf16_shapes/matmul.pt.trace.json.gz, its
loop.json benchmarks/results/matmul_achieved/bf16_8192x20.json (787.0 TFLOP/s; a second run: 782.5).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--dtype", choices=("bf16", "fp16", "fp32", "tf32"), default="bf16")
    args = p.parse_args(argv)
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    torch.backends.cuda.matmul.allow_tf32 = args.dtype == "tf32"
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.dtype, torch.float32)
    n = args.size
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    for _ in range(3):  # warm-up: cuBLAS' heuristics, clocks
        a @ b
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.iters):
        a @ b
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3
    flops = 2 * n ** 3 * args.iters
    args.out.mkdir(parents=True, exist_ok=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=args.iters, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(str(args.out), use_gzip=True)) as prof:
        for _ in range(args.iters + 1):
            a @ b
            prof.step()
    torch.cuda.synchronize()
    loop = {"size": n, "iters": args.iters, "dtype": args.dtype, "flops": flops, "seconds": seconds,
            "tflops": flops / seconds / 1e12, "gpu": torch.cuda.get_device_name()}
    (args.out / "loop.json").write_text(json.dumps(loop, indent=1) + "\n")
    print(json.dumps(loop))
    return 0


if __name__ == "__main__":
    sys.exit(main())
