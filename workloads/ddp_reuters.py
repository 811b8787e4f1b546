"""The seed's Reuters MLP, data-parallel over several GPUs with PyTorch DDP (NCCL all-reduce).

    torchrun --nproc-per-node 2 workloads/ddp_reuters.py [--precision fp32|fp16|mixed|bf16] [--epochs 5]

Same model as workloads/reuters_mlp.py (Dense 256 relu → Dense 256 relu → Dense 46 softmax, RMSprop,
categorical cross-entropy, batch 512 per rank), on the same deterministic synthetic data (8982 × 10000,
46 classes). fp16 is the seed's pure-fp16 setup (model and data in half); mixed is autocast + GradScaler.
Rank 0 writes per-epoch metrics to $NVPROF_WRAP_METRICS as JSON lines.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

WORDS, CLASSES, TRAIN = 10000, 46, 8982


def synthetic(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Each class has 30 indicative words; a document mixes 20 of its class words with 60 random words."""
    rng = np.random.default_rng(seed)
    class_words = rng.integers(0, WORDS, size=(CLASSES, 30))
    y = rng.integers(0, CLASSES, size=TRAIN)
    x = np.zeros((TRAIN, WORDS), dtype=np.float32)
    for i, c in enumerate(y):
        x[i, rng.choice(class_words[c], 20)] = 1.0
        x[i, rng.integers(0, WORDS, 60)] = 1.0
    return x, y


def _json(v: float) -> float | str:
    return v if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--precision", choices=("fp32", "fp16", "mixed", "bf16"), default="mixed")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=512)
    args = p.parse_args(argv)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    torch.manual_seed(0)
    x, y = synthetic()
    x, y = torch.from_numpy(x[1000:]).to(dev), torch.from_numpy(y[1000:]).to(dev)
    x, y = x[rank::world], y[rank::world]  # each rank its shard
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision, torch.float32)
    model = nn.Sequential(nn.Linear(WORDS, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, CLASSES))
    model = model.to(dev, dtype=dtype if args.precision in ("fp16", "bf16") else torch.float32)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.RMSprop(ddp.parameters(), lr=1e-3, eps=1e-7)
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "mixed")
    sink = open(os.environ["NVPROF_WRAP_METRICS"], "a") if rank == 0 and os.environ.get("NVPROF_WRAP_METRICS") else None  # noqa: SIM115 - open for the whole run
    if sink:
        sink.write(json.dumps({"event": "start", "workload": "ddp_reuters", "precision": args.precision,
                               "backend": "torch-ddp", "world_size": world, "epochs": args.epochs}) + "\n")
    for epoch in range(1, args.epochs + 1):
        t0, steps, loss_sum, correct, seen = time.time(), 0, 0.0, 0, 0
        for i in range(0, len(x), args.batch_size):
            xb, yb = x[i:i + args.batch_size], y[i:i + args.batch_size]
            xb = xb.to(dtype) if args.precision in ("fp16", "bf16") else xb
            with torch.autocast("cuda", dtype=torch.float16, enabled=args.precision == "mixed"):
                logits = ddp(xb)
                loss = nn.functional.cross_entropy(logits.float(), yb)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            steps += 1
            loss_sum += loss.item()
            correct += (logits.argmax(1) == yb).sum().item()
            seen += len(yb)
        torch.cuda.synchronize()
        if rank == 0:
            rec = {"epoch": epoch, "loss": _json(loss_sum / steps), "accuracy": correct / seen, "val_loss": None,
                   "val_accuracy": None, "epoch_time_s": time.time() - t0, "steps": steps}
            print(f"Epoch {epoch}/{args.epochs} - loss: {loss_sum / steps:.4f} - accuracy: {correct / seen:.4f}",
                  flush=True)
            if sink:
                sink.write(json.dumps(rec) + "\n")
                sink.flush()
    if sink:
        sink.write(json.dumps({"event": "end"}) + "\n")
        sink.close()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
