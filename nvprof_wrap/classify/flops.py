"""FLOPs of a framework op from the shapes torch.profiler records (``record_shapes=True``): a pure function of the
op's name, its "Input Dims", "Input type" and "Concrete Inputs" (the scalar arguments, as text).

Only the matrix ops a tensor core runs are counted, each where the kernel is launched: mm, addmm, bmm, baddbmm,
_scaled_mm, _int_mm, _addmm_activation, the convolutions (forward; the backward where its shapes determine it) and
the fused attention ops (SDPA's flash / efficient / cuDNN kernels, forward and backward). aten::matmul and
aten::linear are never counted: they dispatch to mm / addmm / bmm, which are recorded inside them and counted there
(readers/_kineto_rows.py counts only the innermost op that has FLOPs, so a multiply is counted once).

Anything the shapes do not determine — a conv whose stride or padding was not recorded, attention whose is_causal
flag was not, a signature of another torch version — gives None, never a guess. Values from a file are hostile:
a dimension that is not a non-negative integer below MAX_DIM, a list of the wrong depth or length, a total beyond
MAX_FLOPS gives None; nothing here raises on any JSON value.

Here, below the readers and the analyses, because the reader needs it while the shapes are in hand: the store keeps
no shapes (classify is pure, like this).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

MAX_DIM = 1 << 40  # a tensor dimension beyond this is not a real one
MAX_FLOPS = 1 << 62  # one op; more (4.6e18: over an hour of an H200's dense fp8 peak) is not a real op
# Attention's backward: 2.5× the forward's FLOPs, as FlashAttention's own benchmark counts them
# (Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py, flops(): "2.5 * f" for "bwd"): five
# matrix products (QKᵀ recomputed, dV, dP, dQ, dK) against the forward's two.
ATTENTION_BACKWARD = 2.5  # (computed as ×5 // 2: exact in integers)

# "Input type" → precision. torch spells scalar types as c10 names ("c10::BFloat16") or C types ("float").
_PRECISIONS = {
    "c10::BFloat16": "bf16", "BFloat16": "bf16",
    "c10::Half": "fp16", "Half": "fp16",
    "float": "fp32", "Float": "fp32",
    "double": "fp64", "Double": "fp64",
    "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8", "c10::Float8_e8m0fnu": "fp8",
    "c10::Float4_e2m1fn_x2": "fp4",
    "signed char": "int8", "c10::qint8": "int8", "unsigned char": "uint8",
    "int": "int32", "long int": "int64", "long": "int64",
    "c10::complex<float>": "complex64", "c10::complex<double>": "complex128",
}


def precision_of(types: object) -> str:
    """The precision of an op's tensor operands from their "Input type" entries: "bf16", "fp16", "fp32", "fp64",
    "fp8", "fp4", "int8", …; "mixed" when they differ, "unknown" when none is a tensor type known here (scalars,
    "Scalar", "" are skipped)."""
    if not isinstance(types, (list, tuple)):
        return "unknown"
    seen = {p for t in types if isinstance(t, str) and (p := _PRECISIONS.get(t)) is not None}
    if len(seen) == 1:
        return seen.pop()
    return "mixed" if seen else "unknown"


def flops_of(op: str, dims: object, types: object = None, concrete: object = None) -> int | None:
    """FLOPs of one call of ``op`` (a multiply-add is 2), or None when this op is not counted or its recorded
    arguments do not determine them. dims: "Input Dims"; types: "Input type" (unused for the count: the same
    shapes are the same work in every precision); concrete: "Concrete Inputs" (stride, padding, is_causal …)."""
    found = operands(op, dims, concrete)
    return found[0] if found is not None else None


def count(op: str, dims: object, types: object, concrete: object = None) -> tuple[int, str] | None:
    """(FLOPs, precision) of one call, the precision from the operands that carry the FLOPs (an addmm's bias or an
    attention's mask can be of another type); None as flops_of."""
    found = operands(op, dims, concrete)
    if found is None:
        return None
    flops, which = found
    picked = [types[i] for i in which if i < len(types)] if isinstance(types, list) else []
    return flops, precision_of(picked)


def operands(op: str, dims: object, concrete: object = None) -> tuple[int, tuple[int, ...]] | None:
    """(FLOPs, the indices of the inputs they are computed on), or None."""
    rule = _RULES.get(op)
    if rule is None or not isinstance(dims, list) or len(dims) > 64:
        return None
    args = concrete if isinstance(concrete, list) and len(concrete) == len(dims) else None
    try:
        found = rule(dims, args)
    except _Unknown:
        return None
    if found is None:
        return None
    flops, which = found
    return (flops, which) if 0 <= flops <= MAX_FLOPS else None


class _Unknown(Exception):
    """The recorded arguments do not determine the FLOPs."""


# A rule: (Input Dims, Concrete Inputs or None) → (FLOPs, the inputs they are computed on); _Unknown or None when
# the arguments do not determine them.
_Rule = Callable[[list[object], list[object] | None], tuple[int, tuple[int, ...]] | None]


def _shape(dims: Sequence[object], i: int, rank: int | tuple[int, ...]) -> list[int]:
    """Input i's shape, of the given rank(s); _Unknown when absent or not a shape."""
    if i >= len(dims):
        raise _Unknown
    shape = dims[i]
    ranks = (rank,) if isinstance(rank, int) else rank
    if not isinstance(shape, list) or len(shape) not in ranks:
        raise _Unknown
    for d in shape:
        if type(d) is not int or not 0 <= d < MAX_DIM:  # bool, float, str, negative, huge: not a dimension
            raise _Unknown
    return shape


# -- matrix products ---------------------------------------------------------------------------------------------
def _gemm(a: int, b: int) -> _Rule:
    """C[M,N] = A[M,K] · B[K,N], A and B inputs a and b: 2·M·N·K."""
    def rule(dims: list[object], args: list[object] | None) -> tuple[int, tuple[int, ...]] | None:
        (m, k), (k2, n) = _shape(dims, a, 2), _shape(dims, b, 2)
        if k != k2:
            raise _Unknown
        return 2 * m * n * k, (a, b)
    return rule


def _batched(a: int, b: int) -> _Rule:
    """C[B,M,N] = A[B,M,K] · B[B,K,N]: 2·B·M·N·K."""
    def rule(dims: list[object], args: list[object] | None) -> tuple[int, tuple[int, ...]] | None:
        (bs, m, k), (bs2, k2, n) = _shape(dims, a, 3), _shape(dims, b, 3)
        if k != k2 or bs != bs2:
            raise _Unknown
        return 2 * bs * m * n * k, (a, b)
    return rule


# -- convolutions ------------------------------------------------------------------------------------------------
def _ints(args: list[object] | None, i: int, n: int) -> list[int]:
    """A list argument ("[1, 1]", or "[1]" for every spatial dimension) from Concrete Inputs; _Unknown if absent."""
    if args is None or i >= len(args) or not isinstance(args[i], str):
        raise _Unknown
    text = str(args[i]).strip()
    if not (text.startswith("[") and text.endswith("]")) or len(text) > 200:
        raise _Unknown
    try:
        values = [int(v) for v in text[1:-1].split(",") if v.strip()]
    except ValueError:
        raise _Unknown from None
    if len(values) == 1:
        values *= n
    if len(values) != n or any(not 0 <= v < MAX_DIM for v in values):
        raise _Unknown
    return values


def _scalar(args: list[object] | None, i: int) -> str:
    if args is None or i >= len(args) or not isinstance(args[i], str):
        raise _Unknown
    return str(args[i]).strip()


def _flag(args: list[object] | None, i: int) -> bool:
    """A bool argument as Concrete Inputs write it ("True" / "False"); _Unknown otherwise."""
    text = _scalar(args, i)
    if text not in ("True", "False"):
        raise _Unknown
    return text == "True"


def _conv_macs(x: list[int], w: list[int], out_spatial: Sequence[int], transposed: bool) -> int:
    """Multiply-adds of a convolution: every output position (input position, transposed) meets a whole filter
    group: N · positions · Cout · Cin/groups · kernel = N · positions · weight's elements."""
    if transposed:
        return x[0] * math.prod(x[2:]) * math.prod(w)
    return x[0] * math.prod(out_spatial) * math.prod(w)


def _conv(layouts: dict[int, tuple[int, int, int, int | None]]) -> _Rule:
    """A forward convolution (input 0, weight 1): layouts maps the number of inputs (a torch version's schema) to
    the indices of (stride, padding, dilation, transposed or None)."""
    def rule(dims: list[object], args: list[object] | None) -> tuple[int, tuple[int, ...]] | None:
        where = layouts.get(len(dims))
        if where is None:
            raise _Unknown
        x, w = _shape(dims, 0, (3, 4, 5)), _shape(dims, 1, (3, 4, 5))
        if len(x) != len(w):
            raise _Unknown
        stride_at, padding_at, dilation_at, transposed_at = where
        transposed = _flag(args, transposed_at) if transposed_at is not None else False
        if transposed:
            if x[1] != w[0]:  # weight (Cin, Cout/groups, k…)
                raise _Unknown
            return 2 * _conv_macs(x, w, (), True), (0, 1)
        if w[1] == 0 or x[1] % w[1]:  # weight (Cout, Cin/groups, k…)
            raise _Unknown
        n = len(x) - 2
        stride, padding, dilation = _ints(args, stride_at, n), _ints(args, padding_at, n), _ints(args, dilation_at, n)
        out = [(size + 2 * p - d * (k - 1) - 1) // s + 1 if s else -1
               for size, k, s, p, d in zip(x[2:], w[2:], stride, padding, dilation)]
        if any(o <= 0 for o in out):
            raise _Unknown
        return 2 * _conv_macs(x, w, out, False), (0, 1)
    return rule


def _conv_backward(dims: list[object], args: list[object] | None) -> tuple[int, tuple[int, ...]] | None:
    """aten::convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    output_padding, groups, output_mask): the forward's FLOPs once per input and weight gradient that output_mask
    asks for (the grad_output's shape is the output's: no stride needed)."""
    if len(dims) != 11:
        raise _Unknown
    g, x, w = _shape(dims, 0, (3, 4, 5)), _shape(dims, 1, (3, 4, 5)), _shape(dims, 2, (3, 4, 5))
    if not len(g) == len(x) == len(w) or g[0] != x[0]:
        raise _Unknown
    mask = _scalar(args, 10).strip("[]").replace(" ", "").split(",")
    if len(mask) != 3 or any(m not in ("True", "False") for m in mask):
        raise _Unknown
    times = (mask[0] == "True") + (mask[1] == "True")
    macs = _conv_macs(x, w, (), True) if _flag(args, 7) else _conv_macs(g, w, g[2:], False)
    return 2 * macs * times, (1, 2)


def _conv_backward_input(dims: list[object], args: list[object] | None) -> tuple[int, tuple[int, ...]] | None:
    """cudnn_convolution_backward_input(self_size, grad_output, weight, …) (torch ≤ 1.10): one forward's FLOPs."""
    g, w = _shape(dims, 1, (3, 4, 5)), _shape(dims, 2, (3, 4, 5))
    if len(g) != len(w) or g[1] != w[0]:  # grad_output (N, Cout, …), weight (Cout, Cin/groups, k…)
        raise _Unknown
    return 2 * _conv_macs(g, w, g[2:], False), (1, 2)


# -- attention -----------------------------------------------------------------------------------------------------
def _attention(q_at: int, heads_first: bool, causal: dict[int, int], backward: bool, mask_type: bool = False,
               windows: tuple[int, ...] = ()) -> _Rule:
    """Fused attention: forward 2·B·H·Lq·Lk·(D + Dv) (QKᵀ and PV; 4·B·H·Lq·Lk·D when Dv = D), halved when causal
    (as FlashAttention counts it); backward 2.5× that. q, k, v are inputs q_at, +1, +2, laid out (B, H, L, D), or
    (B, L, H, D) where not heads_first (the _flash / _efficient entry points). causal maps the number of inputs (a
    torch version's schema) to where is_causal is (mask_type: an int, custom_mask_type, 0 meaning none). windows:
    where a sliding window's size may be: one that was set (or not recorded) leaves the FLOPs unknown."""
    def rule(dims: list[object], args: list[object] | None) -> tuple[int, tuple[int, ...]] | None:
        at = causal.get(len(dims))
        if at is None:
            raise _Unknown
        q, k, v = (_shape(dims, q_at + i, 4) for i in range(3))
        if heads_first:
            (b, h, lq, d), (b2, hk, lk, d2), (b3, hv, lv, dv) = q, k, v
        else:
            (b, lq, h, d), (b2, lk, hk, d2), (b3, lv, hv, dv) = q, k, v
        if not b == b2 == b3 or d != d2 or lk != lv or hk != hv or (hk and h % hk):  # grouped-query heads divide
            raise _Unknown
        if mask_type:
            kind = _scalar(args, at)
            if kind not in ("0", "1", "2"):
                raise _Unknown
            is_causal = kind != "0"
        else:
            is_causal = _flag(args, at)
        for i in windows:
            if i < len(dims) and _scalar(args, i) not in ("", "-1", "None"):
                raise _Unknown
        flops = 2 * b * h * lq * lk * (d + dv)
        flops = flops // 2 if is_causal else flops
        return (flops * 5 // 2 if backward else flops), (q_at, q_at + 1, q_at + 2)
    return rule


_RULES: dict[str, _Rule] = {
    "aten::mm": _gemm(0, 1),
    "aten::addmm": _gemm(1, 2),
    "aten::_addmm_activation": _gemm(1, 2),
    "aten::_scaled_mm": _gemm(0, 1),
    "aten::_int_mm": _gemm(0, 1),
    "aten::bmm": _batched(0, 1),
    "aten::baddbmm": _batched(1, 2),
    # (input, weight, bias, stride, padding, dilation, groups)
    "aten::conv1d": _conv({7: (3, 4, 5, None)}),
    "aten::conv2d": _conv({7: (3, 4, 5, None)}),
    "aten::conv3d": _conv({7: (3, 4, 5, None)}),
    # (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    "aten::convolution": _conv({9: (3, 4, 5, 6)}),
    # the same, then benchmark, deterministic, cudnn_enabled (torch ≥ 1.8), allow_tf32 (≥ 1.11)
    "aten::_convolution": _conv({12: (3, 4, 5, 6), 13: (3, 4, 5, 6)}),
    # (self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32): padding first
    "aten::cudnn_convolution": _conv({9: (3, 2, 4, None)}),
    "aten::convolution_backward": _conv_backward,
    "aten::cudnn_convolution_backward_input": _conv_backward_input,
    # (query, key, value, dropout_p, is_causal, return_debug_mask, *, scale)
    "aten::_scaled_dot_product_flash_attention": _attention(0, True, {7: 4, 6: 4}, False),
    # (query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, …) in (B, L, H, D)
    "aten::_flash_attention_forward": _attention(0, False, {n: 8 for n in range(10, 18)}, False, windows=(11, 12)),
    # (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, *, scale)
    "aten::_scaled_dot_product_efficient_attention": _attention(0, True, {8: 6}, False),
    # (query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
    #  custom_mask_type, …) in (B, M, H, K)
    "aten::_efficient_attention_forward": _attention(0, False, {n: 9 for n in range(11, 16)}, False, True, (13,)),
    # (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, *, scale)
    "aten::_scaled_dot_product_cudnn_attention": _attention(0, True, {9: 6}, False),
    # (query, key, value, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, compute_log_sumexp, dropout_p, is_causal…)
    "aten::_cudnn_attention_forward": _attention(0, True, {n: 10 for n in range(13, 16)}, False),
    # (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, …)
    "aten::_scaled_dot_product_flash_attention_backward": _attention(1, True, {15: 11}, True),
    "aten::_flash_attention_backward": _attention(1, False, {n: 11 for n in range(15, 18)}, True, windows=(15, 16)),
    # (grad_out_, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p,
    #  grad_input_mask, is_causal, *, scale); torch 2.0: (grad_out_, query, key, value, out, logsumexp, is_causal, …)
    "aten::_scaled_dot_product_efficient_attention_backward": _attention(1, True, {13: 11, 9: 6}, True),
    # (…, logsumexp, dropout_p, philox_seed, philox_offset, custom_mask_type, bias_requires_grad, …) in (B, M, H, K)
    "aten::_efficient_attention_backward": _attention(1, False, {n: 14 for n in range(17, 22)}, True, True, (18,)),
    # (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k,
    #  max_q, max_k, dropout_p, is_causal, *, scale): both names, one schema
    "aten::_scaled_dot_product_cudnn_attention_backward": _attention(1, True, {16: 14}, True),
    "aten::_cudnn_attention_backward": _attention(1, True, {16: 14}, True),
}
# The op names worth looking at: the reader checks each CPU op's name against this before reading its arguments.
OPS = frozenset(_RULES)
