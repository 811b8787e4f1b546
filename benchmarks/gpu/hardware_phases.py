"""Phases whose tensor-pipe truth is known, one NVTX range each (`phase NAME`), for the hardware-truth issue: the
hardware's own tensor activity (NVML GPM, nsys GPU metrics) is measured per phase and per kernel against them.

    fp32_tf32_off   torch.mm fp32 with TF32 off: sm80_xmma_*ffma* / cutlass simt: CUDA cores (no)
    triton_bf16     a Triton tl.dot matmul in bf16 (kernel `matmul_kernel`: the name rules say "unknown"): wgmma (yes)
    layernorm_fp32  torch layer_norm fp32: HFMA2 work on the tensor pipe, no matrix math (no)
    cublas_bf16     torch.mm bf16 (nvjet / cuBLAS): tensor cores (yes)
    fp16_elementwise  x * y + z in fp16: CUDA cores (no)
    idle            nothing for the phase's length

    python benchmarks/gpu/hardware_phases.py [--seconds 1.5] [--only a,b]
"""
from __future__ import annotations

import argparse
import time

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # no Triton: the phase is skipped, and says so
    triton = None

if triton is not None:
    @triton.jit
    def matmul_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            x = tl.load(a + rm[:, None] * sam + (k + rk)[None, :] * sak)
            y = tl.load(b + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.bfloat16))


def _nvtx(name: str):
    return torch.cuda.nvtx.range(f"phase {name}")


def _loop(seconds: float, fn) -> int:
    torch.cuda.synchronize()
    end, n = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        for _ in range(10):
            fn()
        n += 10
        torch.cuda.synchronize()
    return n


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=1.5)
    p.add_argument("--only", default=None)
    p.add_argument("--size", type=int, default=4096)
    args = p.parse_args()
    n = args.size
    dev = "cuda"
    a32, b32 = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    a16, b16 = a32.bfloat16(), b32.bfloat16()
    h1, h2, h3 = (torch.randn(8192, 8192, device=dev, dtype=torch.float16) for _ in range(3))
    ln_x = torch.randn(8192, 4096, device=dev)
    ln = torch.nn.LayerNorm(4096, device=dev)
    c16 = torch.empty(n, n, device=dev, dtype=torch.bfloat16)

    def triton_mm():
        grid = (n // 128, n // 128)
        matmul_kernel[grid](a16, b16, c16, n, n, n, *a16.stride(), *b16.stride(), *c16.stride(), BM=128, BN=128, BK=64)

    def tf32_off():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.mm(a32, b32)

    phases = {"fp32_tf32_off": tf32_off, "triton_bf16": triton_mm if triton is not None else None,
              "layernorm_fp32": lambda: ln(ln_x), "cublas_bf16": lambda: torch.mm(a16, b16),
              "fp16_elementwise": lambda: h1 * h2 + h3, "idle": None}
    only = set(args.only.split(",")) if args.only else None
    for name, fn in phases.items():  # warm-up (Triton compiles, cuBLAS picks its kernels) outside the phases
        if fn is not None and (only is None or name in only):
            fn()
    torch.cuda.synchronize()
    for name, fn in phases.items():
        if only is not None and name not in only:
            continue
        t0 = time.time_ns()
        with _nvtx(name):
            if name == "idle":
                time.sleep(args.seconds)
                count = 0
            elif fn is None:
                print(f"phase {name}: skipped (no Triton)", flush=True)
                continue
            else:
                count = _loop(args.seconds, fn)
        print(f"phase {name}: {count} calls, {t0} to {time.time_ns()} (unix ns)", flush=True)


if __name__ == "__main__":
    main()
