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
_OP_PROGRAM = re.compile(r"^module_0*(\d+)\.([^ ]+)(?: |$)")  # an op_flops row's op after OP_PREFIX
_EXECUTION = re.compile(r"XlaModule:#hlo_module=[^,#]+,program_id=(\d+)#")
# XLA's range around one thunk's launches, where it ran outside a CUDA graph: 'Thunk:#name=jit(dot)/dot_general,
# hlo_op=custom-call.1,unique_hlo_op_id=4294967298#' (the autotuner's own have no XlaModule range around them)
_THUNK = re.compile(r"^Thunk:#(?:[^#]*,)?hlo_op=([^,#]+)")
_TARGET = re.compile(r'custom_call_target="(__cublas\$(?:gemm|lt\$matmul)[^"]*)"')
# cuDNN's convolutions as XLA calls them: window and dim_labels are the forward convolution's in each (the operands'
# and result's roles differ: _CONV_ROLES)
_CUDNN_CONV = re.compile(
    r'custom_call_target="__cudnn\$conv(Forward|BiasActivationForward|BackwardInput|BackwardFilter)"')
# cuDNN's fused attention (jax.nn.dot_product_attention's cuDNN path, Keras's MultiHeadAttention on JAX)
_CUDNN_FMHA = re.compile(r'custom_call_target="__cudnn\$fmha(\w*)"')
_INTERMEDIATE = re.compile(r'"intermediate_tensor_shape":\{"dimensions":\["(\d+)","(\d+)","(\d+)","(\d+)"\]')
_MASK = re.compile(r'"mask_type":"(\w+)"')
_WINDOW = re.compile(r'"sliding_window_length":(\d+)')
_PAGED = re.compile(r'"is_paged_attention":true|"max_seg_per_batch":(?!1\b)\d+')
_UNCOUNTED = re.compile(r"\b(?:lhs_dilate|batch_group_count)=")  # not checked against a measured count: no figure
_LHS_CONTRACTING = re.compile(r'"lhs_contracting_dimensions":\[([^\]]*)\]')


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


def program_of(op: str) -> str | None:
    """The program ('jit_update#14586', as timeline/window.Marked.program names it) an op_flops row's op from XLA's
    dump is of ('xla:module_14586.jit_update', or '… %custom-call.1'); None for any other op, and for launches
    outside XLA's execution ranges ('… (and 2 more module(s) alike)': which module ran them is not known)."""
    if not op.startswith(OP_PREFIX) or op.endswith(" module(s) alike)"):
        return None
    m = _OP_PROGRAM.match(op[len(OP_PREFIX):])
    return f"{m.group(2)}#{int(m.group(1))}" if m else None


def dot_flops(d: xla_hlo.Instr, comp: dict[str, xla_hlo.Instr]) -> float | None:
    """One dot's or convolution's FLOPs, or None where a shape it needs is unknown."""
    lhs = d.operand_dims(0, comp)
    if d.dims is None or lhs is None:
        return None
    if d.opcode == "convolution":
        rhs = d.operand_dims(1, comp)
        labels = _LABELS.search(d.attrs)
        if rhs is None or labels is None or "o" not in labels.group(1):
            return None
        out_features = rhs[labels.group(1).index("o")]
        return 2.0 * prod(d.dims) * (prod(rhs) // out_features) if out_features else None
    m = _CONTRACTING.search(d.attrs)
    if m is None:
        return None
    axes = [int(a) for a in m.group(1).split(",") if a]
    if any(a >= len(lhs) for a in axes):
        return None
    return 2.0 * prod(d.dims) * prod(lhs[a] for a in axes)


def custom_call_flops(module: xla_hlo.Module, hlo_name: str) -> float | None:
    """One execution's FLOPs of the cuBLAS GEMM custom call ``hlo_name`` (``__cublas$gemm``,
    ``__cublas$lt$matmul``, fp8's ``__cublas$lt$matmul$f8``): 2 × (its result's elements, batch dimensions included)
    × (the lhs's contracting dimensions, from its backend config's dot_dimension_numbers); of a cuDNN convolution's,
    conv_flops'; of cuDNN's fused attention, attention_flops'. None where it is no such call or a shape or the
    dimension numbers are not there (a dump trimmed of its backend configs)."""
    comp = module.computations.get(module.where.get(hlo_name, ""), {})
    ins = comp.get(hlo_name)
    if ins is None or ins.opcode != "custom-call":
        return None
    if (conv := _CUDNN_CONV.search(ins.attrs)) is not None:
        return conv_flops(ins, comp, conv.group(1))
    if (fmha := _CUDNN_FMHA.search(ins.attrs)) is not None:
        return attention_flops(ins, comp, fmha.group(1).endswith("Backward"))
    if not _TARGET.search(ins.attrs):
        return None
    out = ins.dims if ins.dims is not None else ins.first
    lhs = ins.operand_dims(0, comp)  # of a multi-output fusion's element, where it names one ('%fusion.1#1')
    m = _LHS_CONTRACTING.search(ins.attrs)
    if out is None or lhs is None or m is None:
        return None
    axes = [int(a.strip().strip('"')) for a in m.group(1).split(",") if a.strip().strip('"').isdigit()]
    if not axes or any(a >= len(lhs) for a in axes):
        return None
    return 2.0 * prod(out) * prod(lhs[a] for a in axes)


# per cuDNN call: where the forward convolution's output is and where its filter is ("result": the call's result,
# its first tuple element; a number: that operand). The backward calls compute the forward's gradients, the same
# multiply-adds (a gradient of the input: output gradient × filter; of the filter: input × output gradient).
_CONV_ROLES: dict[str, tuple[str | int, str | int]] = {
    "Forward": ("result", 1), "BiasActivationForward": ("result", 1), "BackwardInput": (0, 1),
    "BackwardFilter": (1, "result")}


def conv_flops(ins: xla_hlo.Instr, comp: dict[str, xla_hlo.Instr], kind: str) -> float | None:
    """One execution's FLOPs of a cuDNN convolution custom call of kind ``kind`` (Forward, BiasActivationForward,
    BackwardInput, BackwardFilter): its forward convolution's, as for XLA's own (dot_flops): 2 × (the forward
    output's elements) × (the filter's elements per output feature, the filter's ``o`` in dim_labels — its input
    features already per group). A stride or padding changes the output's shape, not this; a dilated input
    (lhs_dilate) or batch groups are left without a figure (no such call was measured). None where a shape or the
    labels are not there."""
    labels = _LABELS.search(ins.attrs)
    if labels is None or "o" not in labels.group(1) or _UNCOUNTED.search(ins.attrs):
        return None
    result = ins.dims if ins.dims is not None else ins.first
    out_at, filter_at = _CONV_ROLES[kind]
    out = result if isinstance(out_at, str) else ins.operand_dims(out_at, comp)
    kernel = result if isinstance(filter_at, str) else ins.operand_dims(filter_at, comp)
    if out is None or kernel is None or len(kernel) != len(labels.group(1)):
        return None
    out_features = kernel[labels.group(1).index("o")]
    return 2.0 * prod(out) * (prod(kernel) // out_features) if out_features else None


def attention_flops(ins: xla_hlo.Instr, comp: dict[str, xla_hlo.Instr], backward: bool) -> float | None:
    """One execution's FLOPs of a cuDNN fused attention custom call (``__cudnn$fmhaSoftmax``, ``…Dropout``,
    ``…Backward`` …), counted as PyTorch's fused attention is (classify/flops.py _attention, FlashAttention's own
    count): forward 2·B·H·Sq·Sk·(D + Dv) (QKᵀ and PV), halved for a causal mask; backward 2.5× that. B, H, Sq, Sk
    from the backend config's intermediate_tensor_shape (the scores), D and Dv the last dimensions of Q and V (its
    first and third operands, laid out B, S, H, D: each holds B·S·H·D elements, checked). A padding, ALiBi or sliding
    window mask, paged attention or packed sequences get no figure (their work depends on the data); None where a
    shape is not there."""
    dims = _INTERMEDIATE.search(ins.attrs)
    mask = _MASK.search(ins.attrs)
    window = _WINDOW.search(ins.attrs)
    if dims is None or mask is None or mask.group(1) not in ("NO_MASK", "CAUSAL") or _PAGED.search(ins.attrs) or \
            (window is not None and window.group(1) != "0"):
        return None
    b, h, sq, sk = (int(x) for x in dims.groups())
    q, v = ins.operand_dims(0, comp), ins.operand_dims(2, comp)
    if q is None or v is None or len(q) != 4 or len(v) != 4 or prod(q) != b * sq * h * q[-1] or \
            prod(v) != b * sk * h * v[-1]:
        return None
    flops = 2 * b * h * sq * sk * (q[-1] + v[-1])
    flops = flops // 2 if mask.group(1) == "CAUSAL" else flops
    return float(flops * 5 // 2 if backward else flops)


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


Grouped = dict[tuple[int, int | None, int, str], dict[str, tuple[int, int]]]  # (capture, pid, program, HLO) -> name ->
# (launches, ns) of the kernels one custom call launched
Executions = dict[tuple[int, int | None, int, str], int]  # the same key -> how many times the call ran


def per_thunk(dirs: Iterable[Path], thunks: Iterable[tuple[int, int | None, str, str, str, int, int]],
              nodes: Iterable[tuple[int, int | None, str, int, int, int | None, str, int, int]] = (),
              without_thunks: list[str] | None = None) -> list[tuple[int, OpFlops]]:
    """(capture id, op_flops row) for the kernels cuBLAS launched for XLA's GEMM custom calls.

    XLA's thunk sequence names no kernel for a custom call (``kCublasLtMatmul``): cuBLAS picks it at run time. Where
    a module ran outside a CUDA graph, XLA's range around each thunk says which instruction launched the kernels
    inside it. thunks: (capture id, pid, XLA's execution range, the thunk's range, kernel name, launches, ns) of the
    launches inside both. Inside a CUDA graph, the node a kernel ran in says it (per_graph_node). nodes: (capture
    id, pid, XLA's execution range, graph, slot, nested node, kernel name, launches, ns): readers/_xla_graphs.py's.
    An instruction runs once per thunk range. Outside graphs, one of the module's ENTRY computation runs once an
    execution of the module, which its kernel thunks' launches count (_entry_runs); else its executions are the
    launches of each kernel name it launched, where they agree (cuBLAS may add a split-K reduction kernel per
    execution; where they do not, no figure: _executions_agree). Inside a graph it runs once per graph launch, which
    each of its nodes counts (cuDNN's two layout transforms an execution are two nodes: per_graph_node). Its FLOPs
    × executions go to those kernels in proportion to their time, as an op's in a torch.profiler trace
    (readers/_kineto_flops.py). without_thunks: where given, the dumped modules (their prefixes) whose graphs ran
    library calls but whose dump has no thunk files to place them by (an older XLA's: per_graph_node) are added to
    it."""
    grouped: Grouped = {}
    for cid, pid, module_range, thunk_range, name, launches, ns in thunks:
        e, th = _EXECUTION.search(module_range or ""), _THUNK.match(thunk_range or "")
        if e is not None and th is not None:
            _add(grouped, (cid, pid, int(e.group(1)), th.group(1)), name, launches or 0, ns or 0)
    graphs: dict[tuple[int, int | None, int, int], list[tuple[int, int | None, str, int, int]]] = {}
    for cid, pid, module_range, graph, slot, child, name, launches, ns in nodes:
        e = _EXECUTION.search(module_range or "")
        if e is not None:
            graphs.setdefault((cid, pid, int(e.group(1)), graph), []).append((slot, child, name, launches or 0,
                                                                                ns or 0))
    programs = {program for _c, _p, program, _h in grouped} | {program for _c, _p, program, _g in graphs}
    if not programs:
        return []
    modules = xla_hlo.by_program(programs, dirs)
    outside = _entry_runs(grouped, modules)
    in_graphs: Executions = {}
    per_graph_node(graphs, modules, grouped, without_thunks, in_graphs)
    # a call met both outside and inside graphs (never seen) keeps the launches' count
    return _custom_calls(grouped, modules, {k: n for k, n in (*outside.items(), *in_graphs.items())
                                            if (k in outside) != (k in in_graphs)})


def _entry_runs(grouped: Grouped, modules: dict[int, tuple[str, xla_hlo.Module, Path]]) -> Executions:
    """How many times each instruction of its module's ENTRY computation ran outside CUDA graphs, per (capture, pid,
    program): the launches of the module's kernel thunks there (a fusion's thunk launches its own kernel once a run),
    where they all agree — a module cut by the capture's edges, or run on several devices unevenly, disagrees and
    says nothing. cuDNN launched the convnet's first convolution as two layout transforms and one GEMM a run, 8
    launches and 4 under one thunk range: the module's kernel thunks say 4."""
    counts: dict[tuple[int, int | None, int], set[int]] = {}
    for (cid, pid, program, hlo), names in grouped.items():
        found = modules.get(program)
        if found is None or found[1].entry is None or found[1].where.get(hlo) != found[1].entry:
            continue
        kernel = xla_hlo.kernel_name(hlo)
        if set(names) == {kernel}:  # a kernel thunk: its own kernel alone
            counts.setdefault((cid, pid, program), set()).add(names[kernel][0])
    runs = {k: next(iter(v)) for k, v in counts.items() if len(v) == 1}
    out: Executions = {}
    for cid, pid, program, hlo in grouped:
        found, n = modules.get(program), runs.get((cid, pid, program))
        if found is not None and n and found[1].where.get(hlo) == found[1].entry:
            out[(cid, pid, program, hlo)] = n
    return out


def _add(grouped: Grouped, key: tuple[int, int | None, int, str], name: str, launches: int, ns: int) -> None:
    got = grouped.setdefault(key, {})
    n, tot = got.get(name, (0, 0))
    got[name] = (n + launches, tot + ns)


# a command whose node is a graph of its own: the library call XLA traced into it (cuBLAS, cuDNN, …), whose kernels
# are that graph's nodes; every other command is a node of the module's graph itself
_OWN_NODES = (*xla_hlo.KERNEL_COMMANDS, "kCopy", "kMemset32BitValue", "kMemzero")


def per_graph_node(graphs: dict[tuple[int, int | None, int, int], list[tuple[int, int | None, str, int, int]]],
                   modules: dict[int, tuple[str, xla_hlo.Module, Path]], grouped: Grouped,
                   without_thunks: list[str] | None = None, executions: Executions | None = None) -> None:
    """Add to grouped the kernels of XLA's CUDA graphs that ran for a custom call, by the command buffer's command
    at their node, and to executions (where given) how many times each call ran: a node runs once per launch of
    its graph, so the call's executions are the launches of any one of its nodes, summed over the graphs. graphs:
    per (capture, pid, program, graph) its (slot, nested node, name, launches, ns) rows (readers/_xla_graphs.py);
    modules: the dump's (xla_hlo.by_program).

    A graph is one of its module's command buffers (thunk_sequence_after_thunk_passes.txt): the one whose kernel
    commands name every kernel of the graph's own at its node — else it is no graph of the dump's, and takes no
    figure. A nested kernel ran in the node after its slot, a command whose node is a graph of its own (cuBLAS's
    kCublasLtMatmul); where several such commands follow the slot, each takes one nested node in node order only
    when there are as many nested nodes as commands, else none does."""
    buffers: dict[int, list[tuple[xla_hlo.Command, ...]]] = {}  # per program: read once for every rank's graphs
    for (cid, pid, program, _graph), rows in sorted(graphs.items(), key=lambda kv: (kv[0][0], kv[0][1] or -1,
                                                                                     kv[0][2], kv[0][3])):
        found = modules.get(program)
        if program not in buffers:
            buffers[program] = xla_hlo.command_buffers(found[2], found[0]) if found else []
        if found and not buffers[program] and without_thunks is not None and found[0] not in without_thunks and \
                any(child is not None for _s, child, _n, _l, _t in rows):
            without_thunks.append(found[0])  # a library call's kernels ran in this graph: none is placed
        commands = _graph_of(buffers[program], rows)
        if commands is None:
            continue
        nested: dict[int, dict[int, list[tuple[str, int, int]]]] = {}
        for slot, child, name, launches, ns in rows:
            if child is not None:
                nested.setdefault(slot, {}).setdefault(child, []).append((name, launches, ns))
        for slot, children in nested.items():
            holes = []
            for j in range(slot + 1, len(commands)):
                if commands[j].kind in _OWN_NODES:
                    break
                holes.append(j)
            if not holes or (len(holes) > 1 and len(holes) != len(children)):
                continue
            runs: dict[str, int] = {}  # per instruction: the launches of its busiest node in this graph
            for i, child in enumerate(sorted(children)):
                hlo = commands[holes[i if len(holes) > 1 else 0]].hlo
                if hlo is None:  # a command thunk_metadata.txt names no instruction of
                    continue
                for name, launches, ns in children[child]:
                    _add(grouped, (cid, pid, program, hlo), name, launches, ns)
                runs[hlo] = max(runs.get(hlo, 0), *(n for _name, n, _t in children[child]))
            if executions is not None:
                for hlo, n in runs.items():
                    executions[(cid, pid, program, hlo)] = executions.get((cid, pid, program, hlo), 0) + n


def _graph_of(buffers: list[tuple[xla_hlo.Command, ...]],
              rows: list[tuple[int, int | None, str, int, int]]) -> tuple[xla_hlo.Command, ...] | None:
    """The one command buffer whose kernel commands name each of the graph's own kernels at its node; None: none
    does, or more than one."""
    own = {(slot, name) for slot, child, name, _n, _t in rows if child is None}
    fits = [b for b in buffers if all(slot < len(b) and b[slot].kind in xla_hlo.KERNEL_COMMANDS and
                                      b[slot].kernel == name for slot, name in own)]
    return fits[0] if len(fits) == 1 and own else None


def _executions_agree(names: dict[str, tuple[int, int]]) -> bool:
    """Whether the kernels one custom call launched say how many times it ran: each name as many times (cuBLAS's
    GEMM and its split-K reduction once an execution each). Where they differ, a library launched a helper more
    than once an execution (cuDNN transposes the input and the filter: nchwToNhwcKernel twice), or once in all
    (a first call's setup): the launches do not tell which, and the call takes no figure."""
    return len({n for n, _t in names.values()}) == 1


def _custom_calls(grouped: Grouped, modules: dict[int, tuple[str, xla_hlo.Module, Path]],
                  executions: Executions) -> list[tuple[int, OpFlops]]:
    """The op_flops rows of grouped's custom calls that are cuBLAS GEMMs of a dumped module. executions: how many
    times a call ran, where known (_entry_runs, per_graph_node); the others' are their kernels' launches."""
    out: list[tuple[int, OpFlops]] = []
    for (cid, pid, program, hlo), names in sorted(grouped.items(), key=lambda kv: (kv[0][0], kv[0][1] or -1,
                                                                                    kv[0][2], kv[0][3])):
        found = modules.get(program)
        flops = custom_call_flops(found[1], hlo) if found else None
        key = (cid, pid, program, hlo)
        if found is None or not flops or key not in executions and not _executions_agree(names):
            continue
        answer = found[1].answer(hlo)
        precision = answer.precision if answer is not None and answer.precision else "unknown"
        total = flops * executions.get(key, max(n for n, _t in names.values()))
        ns_all = sum(t for _n, t in names.values())
        launches_all = sum(n for n, _t in names.values())
        for name, (n, t) in sorted(names.items()):
            share = t / ns_all if ns_all > 0 else n / launches_all if launches_all else 0.0
            out.append((cid, OpFlops(pid, f"{OP_PREFIX}{found[0]} %{hlo}", name, precision, total * share, n, t)))
    return out
