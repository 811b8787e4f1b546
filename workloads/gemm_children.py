"""A parent process that starts GPU work in child processes (one after the other, then two at once):
the check that a profiler follows children. Each child runs fp16 matmuls with PyTorch.

    python workloads/gemm_children.py [--children 2] [--size 2048] [--iters 10]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import subprocess
import sys

CHILD = """
import sys, torch
n, iters = int(sys.argv[1]), int(sys.argv[2])
a = torch.randn(n, n, device="cuda", dtype=torch.float16)
b = torch.randn(n, n, device="cuda", dtype=torch.float16)
for _ in range(iters):
    c = a @ b
torch.cuda.synchronize()
print(f"child done: {n}x{n} fp16 x{iters}", flush=True)
"""


def _spawned(n: int, iters: int) -> None:  # multiprocessing 'spawn' child: a fresh interpreter
    subprocess.check_call([sys.executable, "-c", CHILD, str(n), str(iters)])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--children", type=int, default=2)
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--iters", type=int, default=10)
    args = p.parse_args(argv)
    for _ in range(args.children):  # subprocess children, one after the other
        subprocess.check_call([sys.executable, "-c", CHILD, str(args.size), str(args.iters)])
    ctx = mp.get_context("spawn")  # and multiprocessing children, concurrently
    procs = [ctx.Process(target=_spawned, args=(args.size, args.iters)) for _ in range(2)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join()
    return max((pr.exitcode or 0) for pr in procs)


if __name__ == "__main__":
    sys.exit(main())
