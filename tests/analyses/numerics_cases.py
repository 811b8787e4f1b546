"""Numerics records (docs/numerics.md's format) of four runs, made by hand, to test the analysis and its reader.

HAND-MADE, not recorded: each number below is taken from a fact the project measured, and says which.
- ``seed``: the seed's pure-fp16 Keras MLP with Keras 2's RMSprop (docs/seed-collapse.md sections 3-4): the first
  Dense kernel (10000x256, 2,560,000 weights, initial max |w| 0.0273) gets an RMSprop accumulator 0.1*g^2 that is 0
  for every |g| below ~5e-4 and subnormal above it (0.1*(3e-3)^2 = 9e-7 < 6.1e-5), an update lr*g/epsilon of up to
  5.0 against a normal 0.003 (ratio 5/0.0273 = 183), weights at 5.02 after step 0; the next forward pass overflows
  fp16 (65504) and every weight is NaN by the step after. The logit layer's weights reach 5.14 (from 0.143).
- ``mixed``: the same model under mixed_float16 (section 5): float16 activations, float32 weights, gradients and
  optimizer state, loss scale 32768 throughout, every step applied.
- ``scaler``: a PyTorch model under fp16 autocast and a GradScaler (the issue's case): blocks.0.fc2's activations
  pass 65504 at every step, so every step's gradients are inf, the scaler skips every update and halves its scale
  from 65536, down past 1.
- ``bf16``: a PyTorch model under bf16 autocast that trains: nothing near bf16's limits.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FP16_TINY = 6.104e-05
SEED_LAYERS = ("dense", "dense_1", "dense_2")
SEED_SIZES = {"dense": 2_560_000, "dense_1": 65_536, "dense_2": 11_776}
SEED_W0 = {"dense": 0.0273, "dense_1": 0.108, "dense_2": 0.143}
SEED_W1 = {"dense": 5.02, "dense_1": 5.0, "dense_2": 5.14}


def meta(framework: str, policy: str, layers: tuple[str, ...], backend: str | None = None, pid: int = 4242) \
        -> dict[str, Any]:
    return {"kind": "meta", "v": 1, "pid": pid, "framework": framework, "backend": backend, "policy": policy,
            "every": 1, "first_steps": 3, "layers": list(layers)}


def tensor(step: int, phase: str, layer: str, kind: str, name: str, dtype: str, n: int, max_abs: float | None,
           zeros: float = 0.0, subnormal: float = 0.0, nan: int = 0, inf: int = 0,
           ratio: float | None = None) -> dict[str, Any]:
    return {"kind": "tensor", "step": step, "phase": phase, "layer": layer, "tensor": kind, "name": name,
            "dtype": dtype, "n": n, "max_abs": max_abs, "zeros": zeros, "subnormal": subnormal, "nan": nan,
            "inf": inf, "ratio": ratio}


def loss(step: int, value: float | None, scale: float | None = None, skipped: bool | None = None) -> dict[str, Any]:
    return {"kind": "loss", "step": step, "loss": value, "finite": value is not None, "scale": scale,
            "skipped": skipped}


def end(steps: int, records: int) -> dict[str, Any]:
    return {"kind": "end", "steps": steps, "records": records, "dropped": 0, "overhead_s": 0.4}


def seed() -> list[dict[str, Any]]:
    """The seed: pure fp16, Keras 2's RMSprop (Keras 3 on the torch backend, `--keras2-numerics all`)."""
    out = [meta("keras", "float16", SEED_LAYERS, "torch")]
    batch = 512
    for step in range(3):
        broken = step >= 1
        for i, layer in enumerate(SEED_LAYERS):
            width = 46 if layer == "dense_2" else 256
            act = batch * width
            if not broken:
                out.append(tensor(step, "forward", layer, "weight", f"{layer}/kernel", "float16", SEED_SIZES[layer],
                                  SEED_W0[layer]))
                out.append(tensor(step, "forward", layer, "activation", "output", "float16", act,
                                  1.0 if layer == "dense_2" else 0.9, zeros=0.5 if i < 2 else 0.0))
            elif step == 1 and layer == "dense":  # the multi-hot rows times weights of 5: past 65504
                out.append(tensor(step, "forward", layer, "activation", "output", "float16", act, 61_000.0,
                                  zeros=0.3, inf=40_000))
            else:
                out.append(tensor(step, "forward", layer, "activation", "output", "float16", act, None, nan=act))
        out.append(loss(step, 3.826 if step == 0 else None))
        for layer in reversed(SEED_LAYERS):
            n = SEED_SIZES[layer]
            if broken:
                out.append(tensor(step, "backward", layer, "gradient", f"{layer}/kernel", "float16", n, None, nan=n))
                continue
            # absent words give exact zeros; a third of the rest is below fp16's smallest normal
            out.append(tensor(step, "backward", layer, "gradient", f"{layer}/kernel", "float16", n, 3e-3,
                              zeros=0.62 if layer == "dense" else 0.1, subnormal=0.3))
        for layer in SEED_LAYERS:
            n = SEED_SIZES[layer]
            if broken:
                for kind, name in (("optimizer_state", f"{layer}/rms"), ("update", f"{layer}/kernel"),
                                   ("weight", f"{layer}/kernel")):
                    out.append(tensor(step, "update", layer, kind, name, "float16", n, None, nan=n))
                continue
            # 0.1*g^2 is 0 below |g| ~5e-4 and subnormal above: every accumulator below the smallest normal
            out.append(tensor(step, "update", layer, "optimizer_state", f"{layer}/rms", "float16", n, 9e-7,
                              zeros=0.63 if layer == "dense" else 0.2, subnormal=1.0))
            out.append(tensor(step, "update", layer, "update", f"{layer}/kernel", "float16", n, 5.0,
                              zeros=0.62 if layer == "dense" else 0.1, ratio=5.0 / SEED_W0[layer]))
            out.append(tensor(step, "update", layer, "weight", f"{layer}/kernel", "float16", n, SEED_W1[layer]))
    out.append(end(3, len(out)))
    return out


def mixed(steps: int = 6) -> list[dict[str, Any]]:
    """The seed's model under mixed_float16: loss scale 32768, fp32 variables; it trains."""
    out = [meta("keras", "mixed_float16", SEED_LAYERS, "tensorflow")]
    for step in range(steps):
        w = 0.0273 + 0.003 * step
        for layer in SEED_LAYERS:
            out.append(tensor(step, "forward", layer, "activation", "output", "float16", 512 * 256, 2.0 + step,
                              zeros=0.5))
        out.append(loss(step, 3.8 - 0.3 * step, scale=32768.0, skipped=False))
        for layer in SEED_LAYERS:
            n = SEED_SIZES[layer]
            out.append(tensor(step, "backward", layer, "gradient", f"{layer}/kernel", "float32", n, 3e-3 * 32768,
                              zeros=0.62))
            out.append(tensor(step, "update", layer, "optimizer_state", f"{layer}/rms", "float32", n, 9e-7,
                              zeros=0.6))
            out.append(tensor(step, "update", layer, "update", f"{layer}/kernel", "float32", n, 0.003,
                              zeros=0.6, ratio=0.003 / w))
            out.append(tensor(step, "update", layer, "weight", f"{layer}/kernel", "float32", n, w))
    out.append(end(steps, len(out)))
    return out


TORCH_LAYERS = ("embed", "blocks.0.fc1", "blocks.0.fc2", "head")


def scaler(steps: int = 20) -> list[dict[str, Any]]:
    """fp16 autocast + GradScaler: blocks.0.fc2 overflows every forward pass; the scale halves to past 1."""
    out = [meta("torch", "autocast fp16", TORCH_LAYERS, "torch", pid=77)]
    for step in range(steps):
        for layer in TORCH_LAYERS:
            n = 64 * 1024
            if layer == "blocks.0.fc1":
                out.append(tensor(step, "forward", layer, "activation", "output", "float16", n, 41_000.0))
            elif layer == "blocks.0.fc2":
                out.append(tensor(step, "forward", layer, "activation", "output", "float16", n, 60_000.0, inf=12))
            elif layer == "head":
                out.append(tensor(step, "forward", layer, "activation", "output", "float16", n, None, nan=n))
            else:
                out.append(tensor(step, "forward", layer, "activation", "output", "float16", n, 3.0))
        out.append(loss(step, None, scale=65536.0 / 2 ** step, skipped=True))
        for layer in reversed(TORCH_LAYERS):
            out.append(tensor(step, "backward", layer, "gradient", f"{layer}.weight", "float32", 4096, None,
                              nan=4096))
            out.append(tensor(step, "update", layer, "update", f"{layer}.weight", "float32", 4096, 0.0, zeros=1.0,
                              ratio=0.0))
            out.append(tensor(step, "update", layer, "weight", f"{layer}.weight", "float32", 4096, 0.05))
    out.append(end(steps, len(out)))
    return out


def scaler_healthy(steps: int = 8) -> list[dict[str, Any]]:
    """fp16 autocast + GradScaler that trains: its first two steps overflow the gradients and are skipped."""
    out = [meta("torch", "autocast fp16", TORCH_LAYERS, "torch", pid=78)]
    scale = 65536.0
    for step in range(steps):
        skip = step < 2
        for layer in TORCH_LAYERS:
            out.append(tensor(step, "forward", layer, "activation", "output", "float16", 65536, 4.0))
        out.append(loss(step, 5.0 - 0.2 * step, scale=scale, skipped=skip))
        for layer in reversed(TORCH_LAYERS):
            out.append(tensor(step, "backward", layer, "gradient", f"{layer}.weight", "float32", 4096,
                              None if skip else 2.0, inf=4096 if skip else 0))
            out.append(tensor(step, "update", layer, "update", f"{layer}.weight", "float32", 4096,
                              0.0 if skip else 1e-3, zeros=1.0 if skip else 0.0, ratio=0.0 if skip else 0.02))
            out.append(tensor(step, "update", layer, "optimizer_state", f"{layer}.weight/exp_avg_sq", "float32",
                              4096, 1e-6, zeros=1.0 if step == 0 else 0.0))
        if skip:
            scale /= 2
    out.append(end(steps, len(out)))
    return out


def bf16(steps: int = 6) -> list[dict[str, Any]]:
    """bf16 autocast that trains: nothing near bf16's limits."""
    out = [meta("torch", "autocast bf16", TORCH_LAYERS, "torch", pid=79)]
    for step in range(steps):
        for layer in TORCH_LAYERS:
            out.append(tensor(step, "forward", layer, "activation", "output", "bfloat16", 65536, 7.5, zeros=0.4))
        out.append(loss(step, 4.0 - 0.25 * step))
        for layer in reversed(TORCH_LAYERS):
            out.append(tensor(step, "backward", layer, "gradient", f"{layer}.weight", "float32", 4096, 0.01))
            out.append(tensor(step, "update", layer, "update", f"{layer}.weight", "float32", 4096, 1e-3,
                              ratio=0.02))
            out.append(tensor(step, "update", layer, "weight", f"{layer}.weight", "float32", 4096, 0.05))
    out.append(end(steps, len(out)))
    return out


def write(folder: Path, records: list[dict[str, Any]], pid: int = 4242) -> Path:
    """The records as a run folder's numerics file (strict JSON: the recorder writes null for NaN), with a
    manifest-less folder: the reader needs only the file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"numerics-{pid}.jsonl"
    path.write_text("".join(json.dumps(r, allow_nan=False) + "\n" for r in records))
    return path
