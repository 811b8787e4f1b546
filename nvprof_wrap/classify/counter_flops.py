"""FLOPs of one kernel launch from Nsight Compute's counters (``nvprof-wrap verify``): counts of the math the
hardware executed, per instruction type, where a report's other FLOPs sources (op shapes, XLA's dump) are the ops'
arithmetic.

Tensor cores: ``sm__ops_path_tensor_src_<type>[_dst_<type>].sum``, "# of math ops executed in Tensor path with
source <type>" (ncu 2025.3 --query-metrics --chip gh100: bf16_dst_fp32, fp16, tf32_dst_fp32, fp64, fp8, int8, int1).
Measured on the H200 (tests/data/ncu_flops, benchmarks/gpu/ncu_flops.sh): a matmul of 2048×1024×512 counted
2,147,483,648 = 2·M·N·K in bf16, fp16, TF32 and fp64 alike — one op is one FLOP. The matrix instruction counts would
not do: an instruction's FLOPs depend on its shape, which no counter gives.

CUDA cores: the SASS thread instructions executed with their predicate on, ``smsp__sass_thread_inst_executed_op_
{f,d}{fma,add,mul}_pred_on.sum`` — a fused multiply-add 2 FLOPs, an add or a multiply 1. Measured: the fp32 matmul
without TF32 (cuBLAS's FFMA SGEMM) 1,075,838,976 FFMA = M·N·K and its epilogue's 2,097,152 (2·M·N·K + 0.2%); an fp32
and an fp64 multiply-add of 2^24 elements 2^24 FFMA and DFMA. Half-precision thread instructions are left out: the
fp16 multiply-add of 2^24 elements, computed in fp32, counted 3 × 2^24 HADD — conversions, not arithmetic.

A launch's FLOPs are its tensor path's where it has any (its matrix math: the epilogue's few FMAs left out), else
its CUDA cores'; its precision the source type with the most of them. A launch whose export has none of these
metrics has no figure; one with them all zero has 0 (a copy or fill kernel).
"""
from __future__ import annotations

import math
from collections.abc import Mapping

COUNTERS_OP = "ncu:counters"  # the op of an op_flops row from the counters: kept apart from the trace's FLOPs
_TENSOR = "sm__ops_path_tensor_src_"
_PRECISIONS = {"fp16": "fp16", "bf16": "bf16", "tf32": "tf32", "fp64": "fp64", "fp8": "fp8", "int8": "int8",
               "int4": "int4", "int1": "int1"}
_THREADS = "sm__sass_thread_inst_executed_op_"
_CUDA_CORE = {"f": "fp32", "d": "fp64"}
_PER_INSTRUCTION = {"fma": 2.0, "add": 1.0, "mul": 1.0}
# what `verify` asks ncu for, beside the matrix instruction counts (counters.py keeps those ncu offers)
METRICS = (*(f"{_TENSOR}{t}.sum" for t in ("bf16_dst_fp32", "fp16", "fp16_dst_fp16", "fp16_dst_fp32",
                                          "tf32_dst_fp32", "fp64", "fp8", "int8")),
           *(f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum" for p in "fd" for op in _PER_INSTRUCTION))


def _sm(name: str) -> str:
    return "sm__" + name[len("smsp__"):] if name.startswith("smsp__") else name


def launch_flops(metrics: Mapping[str, float | None]) -> tuple[float, str] | None:
    """(FLOPs, precision) of one launch from its counters ('' without any FLOP), or None where the export has no
    FLOP counter for it."""
    tensor: dict[str, float] = {}
    cores: dict[str, float] = {}
    for raw, value in metrics.items():
        name = _sm(raw)
        if value is None or math.isnan(value) or not name.endswith(".sum"):  # nan: not measured
            continue
        if name.startswith(_TENSOR) and "sparsity" not in name:  # _sparsity_off/_on split the same count
            source = name[len(_TENSOR):-len(".sum")].split("_dst_")[0]
            precision = _PRECISIONS.get(source, source)
            tensor[precision] = tensor.get(precision, 0.0) + value
        elif name.startswith(_THREADS) and name.endswith("_pred_on.sum"):
            op = name[len(_THREADS):-len("_pred_on.sum")]
            kind, per = _CUDA_CORE.get(op[:1]), _PER_INSTRUCTION.get(op[1:])
            if kind is not None and per is not None:
                cores[kind] = cores.get(kind, 0.0) + value * per
    if not tensor and not cores:
        return None
    found = tensor if sum(tensor.values()) > 0 else cores
    total = sum(found.values())
    return (total, max(sorted(found), key=lambda p: found[p])) if total > 0 else (0.0, "")
