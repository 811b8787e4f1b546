"""A PyTorch model whose first layer's activations exceed float16's largest value (65504): under fp16 autocast every
step's loss is non-finite, the GradScaler skips every update and halves its scale each time; under bf16 (float32's
range) the same model trains. The numerics recorder's test case for a collapsing loss scale
(docs/numerics-recorder.md).

    python workloads/fp16_overflow.py --precision fp16    # scale falls, every step skipped, fc1's output inf
    python workloads/fp16_overflow.py --precision bf16    # trains: nothing non-finite

Model: Linear(64, 256) "fc1" with weights 1000× the default and inputs of scale 100 (outputs ~1e5), LayerNorm,
ReLU, Linear(256, 1); MSE against a linear target; Adam. Runs on the GPU if there is one, else on the CPU (autocast
and GradScaler both work there). Prints one line per step: the loss, the scale, whether the step was skipped.
"""
from __future__ import annotations

import argparse
import sys

import torch


def build(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = torch.nn.Sequential()
    model.add_module("fc1", torch.nn.Linear(64, 256))
    model.add_module("norm", torch.nn.LayerNorm(256))
    model.add_module("act", torch.nn.ReLU())
    model.add_module("fc2", torch.nn.Linear(256, 1))
    with torch.no_grad():
        model.fc1.weight.mul_(1000.0)  # fc1's outputs reach ~1e5: past float16's 65504
    return model


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--precision", choices=("fp16", "bf16", "fp32"), default="fp16")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = build(args.seed).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    scaler = torch.amp.GradScaler(device, enabled=args.precision == "fp16")
    gen = torch.Generator().manual_seed(args.seed)
    true_w = torch.randn(64, 1, generator=gen)
    for step in range(args.steps):
        x = torch.randn(args.batch_size, 64, generator=gen) * 100.0
        y = (x / 100.0) @ true_w
        x, y = x.to(device), y.to(device)
        with torch.autocast(device, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        before = scaler.get_scale() if scaler.is_enabled() else None
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        skipped = before is not None and scaler.get_scale() < before
        print(f"step {step}: loss {loss.item():.6g}, scale {before}, skipped {skipped}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
