"""A fixed amount of GPU work that is either launch-bound or compute-bound, timed by itself: for measuring what a
profiler costs per kernel launch.

    python workloads/launch_rate.py --kind launch [--steps 1500]    # small MLP training steps: many tiny kernels
    python workloads/launch_rate.py --kind compute [--steps 2000]   # 4096^3 bf16 GEMM chains: few, long kernels

``launch``: training steps of a small MLP (batch 64, 6 layers of 256, Adam, fp32): every kernel is tiny, so
the step time is the CPU time PyTorch spends launching them, as in a small-model or small-batch training job
(tens of thousands of launches a second on a recent host). ``compute``: chains of big bf16 GEMMs; the GPU is
the bottleneck and launches are rare. The step count is fixed, so the work is the same under every profiler.

Prints one JSON line: {"kind", "steps", "loop_s" (the timed steps, after warm-up and a synchronize),
"wall_s" (since the start of this script), "device"}. Without a GPU it prints "no GPU: skipped" and exits 0.
"""
from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

T0 = time.perf_counter()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kind", choices=("launch", "compute"), default="launch")
    p.add_argument("--steps", type=int, help="timed steps (default: 1500 launch, 2000 compute)")
    p.add_argument("--warmup", type=int, default=20)
    args = p.parse_args(argv)
    args.steps = args.steps or (1500 if args.kind == "launch" else 2000)
    import torch

    if not torch.cuda.is_available():
        print("no GPU: skipped")
        return 0
    step = launch_step() if args.kind == "launch" else compute_step()
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    loop = time.perf_counter() - t
    print(json.dumps({"kind": args.kind, "steps": args.steps, "loop_s": round(loop, 4),
                      "wall_s": round(time.perf_counter() - T0, 4), "device": torch.cuda.get_device_name()}),
          flush=True)
    return 0


def launch_step() -> Callable[[], None]:
    import torch

    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(256, 10)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False)  # per-tensor kernels, as many jobs run
    x = torch.randn(64, 256, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    return step


def compute_step() -> Callable[[], None]:
    import torch

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        c = a
        for _ in range(8):
            c = torch.tanh(c @ b)

    return step


if __name__ == "__main__":
    raise SystemExit(main())
