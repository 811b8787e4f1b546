"""The "and if not, why?" part: short, evidence-based hints from a report's numbers. Pure: no I/O."""
from __future__ import annotations

from nvprof_wrap.report import Report
from nvprof_wrap.text.units import pct_whole as _pct

# Rules of the classifier whose "no" means matrix math on CUDA cores (rules.toml ids).
_CUDA_CORE_MATRIX = {"ffma", "simt", "sgemm", "scudnn"}
_MIN_SHARE = 0.05  # below 5% of kernel time a finding is not worth a line




def hints(report: Report) -> tuple[str, ...]:
    """The "if not, why?" lines of a report, from its numbers only."""
    kernels, split, devices = list(report.kernels), list(report.split), list(report.devices)
    total = sum(k.total_ns for k in kernels) or 1
    out: list[str] = []
    old = [f"{g.name or 'GPU ' + str(g.device_id)} (compute capability {g.cc})" for g in report.gpus
           if g.cc is not None and not g.has_tensor_cores]
    if old:
        out.append(f"{', '.join(old)}: no tensor cores on this GPU — they arrived with Volta (7.0), and Turing's "
                   "GTX 16xx chips have none.")
    flagged = [k for k in kernels if getattr(k, "flag", "")]
    if flagged:
        out.append(f"{len(flagged)} kernel name(s) claim what the GPU cannot run (e.g. {flagged[0].short}: "
                   f"{flagged[0].flag}): the capture's device record or the name is wrong — check which GPU ran it.")
    fp32 = [k for k in kernels if k.tensor_core == "no" and k.precision == "fp32" and k.name_rule in _CUDA_CORE_MATRIX]
    share = sum(k.total_ns for k in fp32) / total
    ccs = [g.cc for g in report.gpus if g.cc is not None]
    if share >= _MIN_SHARE and ccs and max(ccs) < 8.0:
        out.append(f"{_pct(share)} of kernel time is fp32 matrix math on CUDA cores (e.g. {fp32[0].short}): on this "
                   "GPU only fp16 reaches the tensor cores (TF32 needs compute capability 8.0+): use mixed precision "
                   "(mixed_float16).")
    elif share >= _MIN_SHARE:
        out.append(f"{_pct(share)} of kernel time is fp32 matrix math on CUDA cores (e.g. {fp32[0].short}): "
                   "TF32 is off. PyTorch: torch.backends.cuda.matmul.allow_tf32 = True; Keras/any framework: mixed "
                   "precision (mixed_float16 or mixed_bfloat16) puts these GEMMs on tensor cores.")
    half = [k for k in kernels if k.tensor_core == "no" and k.precision in ("fp16", "bf16", "fp16/bf16")
            and k.name_rule in (_CUDA_CORE_MATRIX | {"blas-helper"}) and "gemm" in k.name.lower() + k.family]
    share = sum(k.total_ns for k in half) / total
    if share >= _MIN_SHARE:
        out.append(f"{_pct(share)} of kernel time is 16-bit matrix math that is not on tensor cores "
                   f"(e.g. {half[0].short}): matrix-vector products, K=1 or shapes not multiple of 8 fall back to "
                   "CUDA cores — '16-bit in the name' is not 'tensor core'.")
    ops = sum(s.total_ns for s in split) or 1
    copies = sum(s.total_ns for s in split if s.kind == "memcpy") / ops
    if copies >= 0.5:
        out.append(f"{_pct(copies)} of GPU time is memory copies, mostly {_top_copy(split)}: tensor cores cannot "
                   "speed that up; keep data on the GPU or make the copies asynchronous (pinned memory).")
    idle = [d for d in devices if d.idle_share is not None and d.idle_share >= 0.8]
    if idle:
        worst = max(idle, key=lambda d: d.idle_share)
        within = f", within {report.scope.option}" if report.scope else ""
        out.append(f"The GPU was idle {_pct(worst.idle_share)} of the time from its first kernel to its last (start-up "
                   f"excluded{within}): the job is host-bound (Python, "
                   "data loading, framework overhead), so faster kernels — fp16 included — will not make it faster.")
    return tuple(out)


def _top_copy(split: list) -> str:
    copies = [s for s in split if s.kind == "memcpy"]
    return max(copies, key=lambda s: s.total_ns).direction if copies else "copies"
