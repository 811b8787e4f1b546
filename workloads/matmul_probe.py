"""Positive control: plain GEMMs per dtype, timed, to see tensor cores fire.

    python workloads/matmul_probe.py --dtypes fp32,tf32,fp16,bf16 --size 4096 --iters 20

For each dtype it multiplies two size x size matrices ``--iters`` times on
the GPU and prints the measured TFLOP/s (2*n^3 flops per GEMM, timed between
device synchronizations, after warm-up).  Under a profiler, the fp16/bf16
(and tf32) GEMMs should show tensor-core kernels and the fp32 one should not.

Framework: plain PyTorch when importable (``--framework auto``), else Keras
ops on whatever backend Keras uses.  ``tf32`` is fp32 with TF32 math
explicitly enabled; ``fp32`` explicitly disables it, so the two differ.

Without a GPU it prints "no GPU: skipped" and exits 0 (``--allow-cpu`` runs
the same timing on the CPU, to test the probe itself).  With
NVPROF_WRAP_METRICS set it writes a start line, one ``{"event": "gemm", ...}``
line per dtype and an end line (no epochs: it is not a training job).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

DTYPES = ("fp32", "tf32", "fp16", "bf16")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="fp32,tf32,fp16,bf16",
                        help=f"comma-separated subset of {','.join(DTYPES)}")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--framework", choices=("auto", "torch", "keras"), default="auto")
    parser.add_argument("--allow-cpu", action="store_true",
                        help="time on the CPU when there is no GPU (tests the probe)")
    args = parser.parse_args(argv)
    args.dtype_list = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    unknown = sorted(set(args.dtype_list) - set(DTYPES))
    if unknown:
        parser.error(f"unknown dtype(s): {', '.join(unknown)}")
    return args


def tflops(size: int, iters: int, seconds: float) -> float:
    return 2.0 * size ** 3 * iters / seconds / 1e12 if seconds > 0 else math.inf


# --------------------------------------------------------------------------
# PyTorch
# --------------------------------------------------------------------------


def torch_has_gpu() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def torch_gemm(dtype: str, size: int, iters: int, on_gpu: bool) -> float:
    """Seconds for ``iters`` GEMMs; TF32 switched on only for "tf32"."""
    import torch

    device = "cuda" if on_gpu else "cpu"
    # Set both knobs explicitly: their defaults differ across PyTorch versions.
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    torch.backends.cudnn.allow_tf32 = dtype == "tf32"
    tdtype = {"fp32": torch.float32, "tf32": torch.float32,
              "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = torch.randn(size, size, device=device, dtype=tdtype)
    b = torch.randn(size, size, device=device, dtype=tdtype)
    sync: Callable[[], None] = torch.cuda.synchronize if on_gpu else (lambda: None)
    for _ in range(2):  # warm-up: cuBLAS handle, heuristics, clocks
        torch.matmul(a, b)
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        torch.matmul(a, b)
    sync()
    return time.perf_counter() - start


# --------------------------------------------------------------------------
# Keras ops (any backend)
# --------------------------------------------------------------------------


def keras_has_gpu() -> bool:
    import keras

    backend = keras.backend.backend()
    if backend == "torch":
        return torch_has_gpu()
    if backend == "tensorflow":
        import tensorflow as tf

        return bool(tf.config.list_physical_devices("GPU"))
    if backend == "jax":
        import jax

        return any(d.platform == "gpu" for d in jax.devices())
    return False


def _keras_set_tf32(enabled: bool) -> bool:
    """Switch TF32 on the Keras backend; False when it cannot be controlled."""
    import keras

    backend = keras.backend.backend()
    if backend == "torch":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = enabled
        torch.backends.cudnn.allow_tf32 = enabled
        return True
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(enabled)
        return True
    return False


def _keras_sync(value: Any) -> None:
    """Wait for the device: converting to numpy blocks until the GEMM is done."""
    import keras

    keras.ops.convert_to_numpy(keras.ops.sum(value[:1, :1]))


def keras_gemm(dtype: str, size: int, iters: int, on_gpu: bool) -> float:
    import keras

    if not _keras_set_tf32(dtype == "tf32") and dtype == "tf32":
        raise RuntimeError(f"tf32 cannot be switched on the {keras.backend.backend()} backend")
    kdtype = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}[dtype]
    a = keras.random.normal((size, size), dtype=kdtype, seed=1)
    b = keras.random.normal((size, size), dtype=kdtype, seed=2)
    out = a
    for _ in range(2):
        out = keras.ops.matmul(a, b)
    _keras_sync(out)
    start = time.perf_counter()
    for _ in range(iters):
        out = keras.ops.matmul(a, b)
    _keras_sync(out)
    return time.perf_counter() - start


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def pick_framework(choice: str) -> str:
    if choice != "auto":
        return choice
    return "torch" if importlib.util.find_spec("torch") is not None else "keras"


class _Sink:
    """The NVPROF_WRAP_METRICS JSON-lines file (kept tiny: no Keras import here)."""

    def __init__(self) -> None:
        path = os.environ.get("NVPROF_WRAP_METRICS")
        self._stream = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 (closed in close())
        self._t0 = time.perf_counter()

    def write(self, record: dict[str, Any]) -> None:
        if self._stream is not None:
            clean = {k: (("nan" if math.isnan(v) else "inf" if v > 0 else "-inf")
                         if isinstance(v, float) and not math.isfinite(v) else v)
                     for k, v in record.items()}
            self._stream.write(json.dumps(clean) + "\n")
            self._stream.flush()

    def close(self) -> None:
        self.write({"event": "end", "wall_s": round(time.perf_counter() - self._t0, 3)})
        if self._stream is not None:
            self._stream.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    framework = pick_framework(args.framework)
    try:
        has_gpu = torch_has_gpu() if framework == "torch" else keras_has_gpu()
    except ImportError as exc:
        print(f"no GPU: skipped ({framework} not importable: {exc})")
        return 0
    if not has_gpu and not args.allow_cpu:
        print(f"no GPU: skipped (framework {framework})")
        return 0
    gemm = torch_gemm if framework == "torch" else keras_gemm
    device = "gpu" if has_gpu else "cpu"
    sink = _Sink()
    sink.write({"event": "start", "workload": "matmul_probe", "framework": framework,
                "device": device, "size": args.size, "iters": args.iters,
                "dtypes": args.dtype_list})
    print(f"matmul probe: {framework} on {device}, {args.size}x{args.size}, {args.iters} iters")
    for dtype in args.dtype_list:
        try:
            seconds = gemm(dtype, args.size, args.iters, has_gpu)
        except (RuntimeError, TypeError, ValueError) as exc:  # dtype unsupported here
            print(f"{dtype:>5}: skipped ({exc})", flush=True)
            sink.write({"event": "gemm", "dtype": dtype, "skipped": str(exc)})
            continue
        rate = tflops(args.size, args.iters, seconds)
        print(f"{dtype:>5}: {rate:8.2f} TFLOP/s  ({seconds / args.iters * 1e3:.3f} ms/GEMM)",
              flush=True)
        sink.write({"event": "gemm", "dtype": dtype, "tflops": round(rate, 4),
                    "seconds": round(seconds, 6)})
    sink.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
