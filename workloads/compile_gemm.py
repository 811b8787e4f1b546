"""A torch.compile GEMM whose kernels carry no dtype in their names (Inductor's Triton templates,
``triton_tem_fused_mm_*``): the case only counters or compiled code can settle.

    python workloads/compile_gemm.py [--dtype fp16|bf16|fp32] [--size 2048] [--iters 20]
"""
from __future__ import annotations

import argparse
import sys
from typing import Any


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", choices=("fp16", "bf16", "fp32"), default="fp16")
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args(argv)
    import torch
    import torch._inductor.config as cfg

    cfg.max_autotune_gemm_backends = "TRITON"  # force Inductor's own Triton GEMM template, not cuBLAS
    cfg.max_autotune = True
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    torch.backends.cuda.matmul.allow_tf32 = False

    @torch.compile(mode="max-autotune-no-cudagraphs")  # type: ignore[untyped-decorator]  # torch is not type-checked here
    def f(a: Any, b: Any, c: Any) -> Any:  # torch tensors
        return torch.relu(a @ b + c)

    a = torch.randn(args.size, args.size, device="cuda", dtype=dtype)
    b = torch.randn(args.size, args.size, device="cuda", dtype=dtype)
    c = torch.randn(args.size, device="cuda", dtype=dtype)
    for _ in range(args.iters):
        out = f(a, b, c)
    torch.cuda.synchronize()
    print(f"compiled GEMM {args.size}^3 {args.dtype} x{args.iters}: {out.float().abs().mean().item():.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
