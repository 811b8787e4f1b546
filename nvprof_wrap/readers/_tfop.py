"""What the TensorFlow / JAX profiler (TensorBoard trace JSON, XSpace ``.xplane.pb``) records on a GPU, shared by
both readers: which lines of a device are streams, which stream events are copies rather than kernels, and which
op launched a kernel.

Sources: the CUPTI collector of TensorFlow / XLA (``cupti_collector.cc``) names copy events ``MemcpyH2D`` …
``Memset`` and puts the launching op in the event's stats: ``tf_op`` (TF ≥ 2.6, the outermost annotation),
``hlo_op`` / ``hlo_module`` (XLA and JAX), ``annotation`` and ``level 0`` (TF 2.2–2.5, the whole annotation
stack: ``op_name:OpType`` scopes joined by ``::``, each with optional ``#key=value,…#`` metadata). Derived lines
("TensorFlow Ops", "XLA Ops", "Steps", …) repeat the kernels' time spans and are never read as kernels.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

# Stream-line events that are not kernels, by name, and the direction a copy goes (CuptiTracerEventType names).
COPY_DIRECTIONS = {"MemcpyH2D": "HtoD", "MemcpyD2H": "DtoH", "MemcpyD2D": "DtoD", "MemcpyP2P": "PtoP",
                   "MemcpyOther": "other", "MemcpyH2H": "HtoH"}
NOT_KERNELS = {"Memset", "MemoryAlloc", "MemoryFree", "Overhead", "UnifiedMemory", "Generic", "MemoryResidency",
               "HostRegister", "HostUnregister", "CudaGraph", "ThreadMarker", "ThreadMarkerRange"}
# Lines that TensorFlow / XLA derive from the streams (same time spans again), by name.
DERIVED_LINES = {"Steps", "TensorFlow Ops", "TensorFlow Name Scope", "XLA Ops", "XLA Modules", "Launch Stats",
                 "Source code", "XLA TraceMe", "Async XLA Ops", "SparseCore Ops", "Framework Ops",
                 "Framework Name Scope", "Host Threads", "Memory Activity"}
_DERIVED_ID_MIN = 0xDEADBEEF  # XLine ids of derived lines count up from here (xplane_schema.h)
_STREAM = re.compile(r"^Stream #(\d+)")
_DEVICE = re.compile(r"^/device:GPU:(\d+)")
_SUFFIX = re.compile(r"(?:[._]\d+)+$")


def gpu_ordinal(plane_or_process_name: str) -> int | None:
    """'/device:GPU:1' → 1; a host, TPU or custom plane → None."""
    m = _DEVICE.match(plane_or_process_name or "")
    return int(m.group(1)) if m else None


def is_stream(line_id: int | None, name: str) -> bool:
    """A stream line (kernels and copies), not a line derived from the streams."""
    if name in DERIVED_LINES:
        return False
    if _STREAM.match(name):
        return True
    return line_id is not None and not (_DERIVED_ID_MIN <= (line_id & 0xFFFFFFFF) < _DERIVED_ID_MIN + 256)


def copy_kind(name: str, stats: Mapping[str, object]) -> tuple[str, str] | None:
    """(kind, direction) when a stream event is a copy or a set, None for a kernel."""
    if name in COPY_DIRECTIONS:
        return "memcpy", COPY_DIRECTIONS[name]
    if name.startswith("Memset") or "memset_details" in stats:
        return "memset", ""
    if name.startswith("Memcpy") or "memcpy_details" in stats:
        return "memcpy", "other"
    if name in NOT_KERNELS:
        return "other", ""
    return None


def copy_bytes(stats: Mapping[str, object]) -> int:
    """'size:4096 dest:0 async:1' → 4096."""
    m = re.search(r"size:(\d+)", str(stats.get("memcpy_details") or stats.get("memset_details") or ""))
    return int(m.group(1)) if m else 0


def _scopes(annotation: str) -> list[str]:
    """'a/b:T#k=v#::c:U' → ['a/b:T', 'c:U']: the named levels of an annotation stack, outermost first."""
    out = []
    for part in annotation.split("::"):
        name = part.split("#", 1)[0].strip()
        if name:
            out.append(name)
    return out


def _tf(op: str) -> tuple[str, str]:
    """'model/dense/MatMul:MatMul' → ('model/dense', 'MatMul'): the op's name scope (its layer, with
    'gradient_tape/' in front for the backward pass) and its type."""
    name, _, typ = op.rpartition(":") if ":" in op and "/" not in op.rpartition(":")[2] else (op, "", "")
    scope = name.rpartition("/")[0] if "/" in name else name
    return scope or name, typ or name.rpartition("/")[2] or name


def op_of(stats: Mapping[str, object]) -> tuple[str, str] | None:
    """(scope, op) of the op that launched a GPU event, from its stats; None when none is recorded.

    XLA / JAX: op is the HLO instruction without its number ('fusion.12' → 'fusion', 'custom-call.3' →
    'custom-call'), scope the HLO module ('jit_train_step'). TensorFlow: op is the op type ('MatMul'), scope the
    op's name scope ('model/dense'), from tf_op, else the innermost level of the annotation stack."""
    hlo = str(stats.get("hlo_op") or "")
    if hlo:
        module = str(stats.get("hlo_module") or "") or _tf(str(stats.get("tf_op") or ""))[0] or "(no module)"
        return module, _SUFFIX.sub("", hlo) or hlo
    tf_op = str(stats.get("tf_op") or "")
    if not tf_op:
        levels = _scopes(str(stats.get("annotation") or stats.get("kernel_annotation") or stats.get("level 0") or ""))
        tf_op = levels[-1] if levels else ""
    return _tf(tf_op) if tf_op else None
