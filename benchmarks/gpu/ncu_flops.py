"""Known-FLOP kernels for Nsight Compute's FLOP counters (run under ncu on the GPU machine by benchmarks/gpu/
ncu_flops.sh; issue 41): one matmul of ones, 2048×1024×512, per precision — bf16, fp16, fp32 with TF32, fp32
without, fp64 — each 2·M·N·K FLOPs, then an fp32, an fp16 and an fp64 addcmul (x + x·x) of 2^24 elements, each one
multiply-add per element. The export is tests/data/ncu_flops/ncu_flops.csv (tests/classify/test_counter_flops.py)."""
from __future__ import annotations

M, N, K = 2048, 1024, 512


def main() -> None:
    import torch  # the GPU machine's; this machine's checks need none

    for _label, dtype, tf32 in (("bf16", torch.bfloat16, False), ("fp16", torch.float16, False),
                                ("tf32", torch.float32, True), ("fp32", torch.float32, False),
                                ("fp64", torch.float64, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.ones(M, K, dtype=dtype, device="cuda")
        b = torch.ones(K, N, dtype=dtype, device="cuda")
        torch.cuda.synchronize()
        a @ b
        torch.cuda.synchronize()
    for dtype in (torch.float32, torch.float16, torch.float64):
        x = torch.ones(1 << 24, dtype=dtype, device="cuda")
        torch.cuda.synchronize()
        torch.addcmul(x, x, x)
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
