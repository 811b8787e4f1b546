"""Captures of other vendors' GPUs are refused, never read as NVIDIA's.

A PyTorch profiler trace from an AMD GPU has the same shape as a CUDA one (ROCm's Kineto writes "cuda_runtime"
events and a deviceProperties list with computeMajor 9 for gfx9 GPUs — an MI300X reports 9.4), so reading it would
call AMD's matrix cores "CUDA cores" and take the GPU for a Hopper. What gives it away (checked on public ROCm
traces: HolisticTraceAnalysis mi250_minitoy_train_ROCm6_2, TraceLens MI300X/MI210 traces): the top-level
roctracer/hip version keys, AMD device names, and a warp size of 64 (every NVIDIA GPU has 32).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any  # the trace's JSON header: values as json gives them

from nvprof_wrap.errors import BadInput

_AMD_NAME = re.compile(r"\b(?:AMD|Radeon|Instinct|MI\d{2,3}[A-Z]?)\b")
ROCM_KEYS = ("roctracer_version", "hip_runtime_version", "hip_driver_version")
# What rocprof's own outputs carry and no NVIDIA capture does: AMDGPU code objects name a kernel's descriptor
# '<name> [clone .kd]'; rocprof --stats writes "Name","Calls","TotalDurationNs","AverageNs","Percentage"; its Chrome
# trace (--hip-trace) keeps rocminfo's HSA attributes in otherData and a wave size per dispatch
# (fixtures wild3/rocprof-stats-aiter-gfx950.stats.csv and rocprof-trace-aiter-gfx950.json, gfx950).
_ROCPROF_MARKS = ((b"[clone .kd]", "AMD kernel descriptors ('[clone .kd]')"),
                  (b'"TotalDurationNs","AverageNs","Percentage"', "a rocprof --stats table"),
                  (b"HSASystemAttributes", "rocminfo's HSA attributes"),
                  (b"hiprandState", "hipRAND state types"), (b"HIP_vector_type", "HIP vector types"))
AMD_REFUSAL = "an AMD GPU (ROCm) capture: not read"


def rocm_capture(raw: bytes) -> str | None:
    """The refusal for a file whose first bytes are rocprof's or HIP's (an AMD GPU capture), else None."""
    seen = [why for mark, why in _ROCPROF_MARKS if mark in raw]
    if not seen:
        return None
    return (f"{AMD_REFUSAL} ({', '.join(seen)}): nvprof-wrap reads NVIDIA CUDA captures only — "
            "AMD matrix cores are not NVIDIA tensor cores")


def refuse_other_vendor(path: Path, header: Mapping[str, Any]) -> None:
    """BadInput when a trace's header says its GPUs are not NVIDIA's."""
    props = [p for p in header.get("deviceProperties") or [] if isinstance(p, dict)]
    named = next((str(p["name"]) for p in props if _AMD_NAME.search(str(p.get("name") or ""))), None)
    wide = next((p for p in props if p.get("warpSize") == 64), None)
    rocm = [k for k in ROCM_KEYS if k in header]
    if not (named or wide or rocm):
        return
    gpu = named or (str(wide.get("name") or "") if wide else "") or "an AMD GPU"
    why = "; ".join(x for x in (f"device {gpu!r}" if named else "",
                                "warp size 64" if wide else "", ", ".join(rocm)) if x)
    raise BadInput(path, f"{AMD_REFUSAL} — a ROCm (AMD GPU) trace ({why}): nvprof-wrap reads NVIDIA CUDA "
                         "captures only — AMD matrix cores are not NVIDIA tensor cores, and computeMajor 9 here is "
                         "not a Hopper")
