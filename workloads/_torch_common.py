"""Shared helpers for the PyTorch workloads (gpt_train, resnet_train, lstm_lm).

Standalone like the Keras workloads: nothing here imports ``nvprof_wrap``. Metrics go to
``$NVPROF_WRAP_METRICS`` in the same JSON-lines format as ``_common.py`` describes (start line, one line per
logging interval with ``epoch`` = step, end line), so ``run`` and ``experiment`` show training health.
Each training step is one NVTX range named ``step N`` (0-based), the convention ``--steps`` uses.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")


def base_parser(description: str, steps: int, batch_size: int) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--precision", choices=PRECISIONS, default="fp32",
                   help="fp32 (TF32 off for matmul, PyTorch's default), tf32 (TF32 on), fp16 (autocast + "
                        "GradScaler), bf16 (autocast); default fp32")
    p.add_argument("--steps", type=int, default=steps, help=f"training steps (default {steps})")
    p.add_argument("--batch-size", type=int, default=batch_size, help=f"default {batch_size}")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--seed", type=int, default=0, help="default 0")
    p.add_argument("--torch-profiler", metavar="DIR",
                   help="also write a torch.profiler (Kineto) trace of steps 2..4, with op shapes, into DIR")
    return p


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


class Metrics:
    """JSON lines to $NVPROF_WRAP_METRICS, flushed per line; nothing when the variable is unset."""

    def __init__(self, workload: str, args: argparse.Namespace) -> None:
        path = os.environ.get("NVPROF_WRAP_METRICS")
        self.f = open(path, "a") if path else None  # noqa: SIM115 - lives as long as the workload
        self.t0 = time.perf_counter()
        self.write({"event": "start", "workload": workload, "precision": args.precision, "backend": "torch",
                    "data": "synthetic", "epochs": args.steps, "batch_size": args.batch_size})

    def write(self, obj: dict[str, Any]) -> None:  # one JSON object per line
        if self.f:
            self.f.write(json.dumps(obj) + "\n")
            self.f.flush()

    def step(self, step: int, loss: float, step_time_s: float) -> None:
        self.write({"epoch": step + 1, "loss": _finite(loss), "accuracy": None, "epoch_time_s": step_time_s,
                    "steps": 1})

    def end(self) -> None:
        self.write({"event": "end", "wall_s": time.perf_counter() - self.t0})


def setup(args: argparse.Namespace) -> tuple[str, Callable[[], AbstractContextManager[Any]], Any]:
    """(device, autocast context factory, GradScaler or None) for the chosen precision."""
    import torch

    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    dev = "cuda" if torch.cuda.is_available() else "cpu"

    def autocast() -> AbstractContextManager[Any]:
        return torch.autocast(dev, dtype=dtype) if dtype is not None else nullcontext()

    scaler = torch.amp.GradScaler(dev) if args.precision == "fp16" else None
    return dev, autocast, scaler


def train(name: str, args: argparse.Namespace, model: Any, optimizer: Any, batch: Callable[[int], tuple[Any, Any]],
          loss_fn: Callable[[Any, Any, Any], Any], clip: float | None = None) -> int:  # torch objects: Any
    """The training loop every workload shares: NVTX step ranges, autocast, loss scaling, gradient clipping,
    metrics per step, an optional torch.profiler window."""
    import torch

    dev, autocast, scaler = setup(args)
    metrics = Metrics(name, args)
    prof = None
    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                       # op shapes: what a FLOP count of the trace's matrix ops needs (torch 2.11's trace has no
                       # `flops` arg even with with_flops=True, measured on the H200)
                       record_shapes=True,
                       on_trace_ready=tensorboard_trace_handler(args.torch_profiler))
        prof.start()
    nvtx = torch.cuda.nvtx if dev == "cuda" else None
    loss_v = float("nan")
    for step in range(args.steps):
        t = time.perf_counter()
        if nvtx:
            nvtx.range_push(f"step {step}")
        x, y = batch(step)
        with autocast():
            loss = loss_fn(model, x, y)
        optimizer.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
        else:
            loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        if nvtx:
            nvtx.range_pop()
        if prof is not None:
            prof.step()
        loss_v = loss.item()  # synchronises: the step time below is the step's
        metrics.step(step, loss_v, time.perf_counter() - t)
    if prof is not None:
        prof.stop()
    metrics.end()
    print(f"{name} {args.precision}{' compiled' if args.compile else ''}: {args.steps} steps, last loss {loss_v:.4f}",
          flush=True)
    return 0
