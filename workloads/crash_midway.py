"""A job that crashes midway through GPU work, for testing what a profiler keeps.

    python workloads/crash_midway.py --how exception|exit|os_exit|sigkill|segfault [--iters 20]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import signal
import sys


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--how", choices=("exception", "exit", "os_exit", "sigkill", "segfault"), default="exception")
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args(argv)
    import torch

    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    for _ in range(args.iters):
        a = torch.tanh(a @ a)
    torch.cuda.synchronize()
    print(f"ran {args.iters} bf16 matmuls, now crashing by {args.how}", flush=True)
    if args.how == "exception":
        raise RuntimeError("crash_midway: deliberate failure")
    if args.how == "exit":
        sys.exit(7)
    if args.how == "os_exit":
        os._exit(9)
    if args.how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    ctypes.string_at(0)  # segfault
    return 0


if __name__ == "__main__":
    sys.exit(main())
