"""FLOPs of the kernels XLA generated, from its optimized HLO (``--xla_dump_to=DIR --xla_dump_hlo_as_text``): what a
torch.profiler trace's recorded shapes give PyTorch (classify/flops.py), XLA's dump gives JAX.

One launch of a GEMM fusion's kernel runs the dots (and convolutions) of the fusion's computation and of those it
calls (classify/xla_hlo.py maps kernel names to HLO instructions, thunk files included). A dot's FLOPs are
2 × (the product of its result's dimensions, batch dimensions included) × (the product of the lhs's contracting
dimensions) — whatever split XLA made of the math (a split-K GEMM's partial products are a batch dimension of the
result, the same FLOPs); a convolution's 2 × (its output's elements) × (the kernel's elements per output feature).
The precision is the xla_hlo verdict's. Then per capture: a kernel name's FLOPs per launch × its launches there.

Different modules may launch kernels of one name with different shapes (jax's MNIST example compiles its step for
batches of 128 and for the last batch of 96: both launch ``gemm_fusion_dot_3``). The launches a capture records
inside XLA's execution range of a module (``XlaModule:#hlo_module=jit_update,program_id=14586#``, the dump's
``module_14586.jit_update``) take that module's figure, and none where the dump lacks that module; launches outside
XLA's ranges (a capture without NVTX) take a figure only where every module of the dump agrees on it.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from math import prod
from pathlib import Path

from nvprof_wrap.classify import xla_hlo
from nvprof_wrap.model import OpFlops

OP_PREFIX = "xla:"  # the op of an op_flops row from XLA's dump: 'xla:module_14586.jit_update'
_CONTRACTING = re.compile(r"\blhs_contracting_dims=\{([0-9,]*)\}")
_LABELS = re.compile(r"\bdim_labels=\w+_(\w+)->\w+")
_PROGRAM = re.compile(r"^module_(\d+)\.")
_EXECUTION = re.compile(r"XlaModule:#hlo_module=[^,#]+,program_id=(\d+)#")


@dataclass(frozen=True)
class LaunchFlops:
    """One launch of a kernel XLA generated, in one module: its FLOPs (None: its instructions differ, or a shape is
    not known) and their precision."""

    kernel: str
    module: str  # the dump's prefix: 'module_14586.jit_update'
    hlo: str  # the instruction it is named after, or the first that launches it
    flops: float | None
    precision: str

    @property
    def program_id(self) -> int | None:
        """The id XLA's execution ranges name the module by (program_id=14586), where its prefix has it."""
        m = _PROGRAM.match(self.module)
        return int(m.group(1)) if m else None


def dot_flops(d: xla_hlo.Instr, comp: dict[str, xla_hlo.Instr]) -> float | None:
    """One dot's or convolution's FLOPs, or None where a shape it needs is unknown."""
    lhs = comp.get(d.operands[0]) if d.operands else None
    if d.dims is None or lhs is None or lhs.dims is None:
        return None
    if d.opcode == "convolution":
        rhs = comp.get(d.operands[1]) if len(d.operands) > 1 else None
        labels = _LABELS.search(d.attrs)
        if rhs is None or rhs.dims is None or labels is None or "o" not in labels.group(1):
            return None
        out_features = rhs.dims[labels.group(1).index("o")]
        return 2.0 * prod(d.dims) * (prod(rhs.dims) // out_features) if out_features else None
    m = _CONTRACTING.search(d.attrs)
    if m is None:
        return None
    axes = [int(a) for a in m.group(1).split(",") if a]
    if any(a >= len(lhs.dims) for a in axes):
        return None
    return 2.0 * prod(d.dims) * prod(lhs.dims[a] for a in axes)


def instruction_flops(module: xla_hlo.Module, hlo_name: str) -> float | None:
    """The FLOPs of one launch of the fusion ``hlo_name``: its dots' (0 for a fusion without any); None where it is
    no fusion or a dot's shapes are unknown."""
    dots = module.dots(hlo_name)
    if dots is None:
        return None
    each = [dot_flops(d, comp) for d, comp in dots]
    return None if None in each else sum(f for f in each if f is not None)


def scan(names: set[str], dirs: Iterable[Path]) -> list[LaunchFlops]:
    """For each module of XLA's dumps in ``dirs`` and each of ``names`` it launches with dots: one launch's FLOPs."""
    out = []
    for prefix, module, wanted in xla_hlo.modules(names, dirs):
        for kernel, ops in sorted(wanted.items()):
            if not any(module.dots(op) for op in ops):
                continue  # elementwise or reduction work, or no fusion: no matrix FLOPs
            each = {op: (instruction_flops(module, op), module.answer(op)) for op in sorted(ops)}
            figures = {f for f, _ in each.values()}
            precisions = {a.precision if a is not None and a.precision else "unknown" for _, a in each.values()}
            flops = figures.pop() if len(figures) == 1 and len(precisions) == 1 else None
            named = [op for op in each if xla_hlo.kernel_name(op) == kernel]
            out.append(LaunchFlops(kernel, prefix, (named or list(each))[0], flops,
                                   precisions.pop() if len(precisions) == 1 else "unknown"))
    return out


def per_capture(figures: Iterable[LaunchFlops], kernels: Iterable[tuple[int, int | None, str, int, int]],
                scoped: Iterable[tuple[int, int | None, str, str, int, int]]) -> list[tuple[int, OpFlops]]:
    """(capture id, op_flops row) for the launches of kernels XLA's dump has figures for.

    kernels: (capture id, pid, kernel name, launches, ns) — the store's kernels, the warm-up and what a window
    leaves out already left out; scoped: (capture id, pid, range, kernel name, launches, ns) for launches inside
    NVTX ranges, XLA's execution ranges among them."""
    by_name: dict[str, list[LaunchFlops]] = {}
    for f in figures:
        by_name.setdefault(f.kernel, []).append(f)
    inside: dict[tuple[int, int | None, str], dict[int | None, tuple[int, int]]] = {}
    for cid, pid, where, name, launches, ns in scoped:
        if name in by_name:
            m = _EXECUTION.search(where or "")
            program = int(m.group(1)) if m else None  # None: an autotuner candidate's range (no program_id)
            got = inside.setdefault((cid, pid, name), {})
            n, t = got.get(program, (0, 0))
            got[program] = (n + (launches or 0), t + (ns or 0))
    out: list[tuple[int, OpFlops]] = []
    for cid, pid, name, launches, ns in kernels:
        found = by_name.get(name)
        if not found:
            continue
        of = {f.program_id: f for f in found if f.program_id is not None}
        left, left_ns = launches or 0, ns or 0
        for program, (n, t) in sorted(inside.get((cid, pid, name), {}).items(), key=lambda kv: kv[0] or -1):
            # launched by a module the dump lacks (or an autotuner's): its shapes are unknown, no figure is guessed
            left, left_ns = left - n, left_ns - t
            known = of.get(program) if program is not None else None
            if known is not None and known.flops:
                out.append((cid, OpFlops(pid, OP_PREFIX + known.module, name, known.precision, known.flops * n, n, t)))
        alike = {(f.flops, f.precision) for f in found}
        if left > 0 and len(alike) == 1:
            flops, precision = alike.pop()
            if flops:
                first = min(f.module for f in found)
                op = OP_PREFIX + first + (f" (and {len(found) - 1} more module(s) alike)" if len(found) > 1 else "")
                out.append((cid, OpFlops(pid, op, name, precision, flops * left, left, max(left_ns, 0))))
    return out
