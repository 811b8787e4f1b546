"""FLOPs of an op from the shapes torch.profiler records (nvprof_wrap/classify/flops.py). The arguments below are
copied from real traces (named beside each); the expected counts are written out by hand, not by the code."""
from __future__ import annotations

import json
import random

import pytest

from nvprof_wrap.classify.flops import MAX_FLOPS, OPS, count, flops_of, precision_of

BF16 = ["c10::BFloat16", "c10::BFloat16"]


def test_gemms_count_two_flops_per_multiply_add():
    # tests/data/h200_runs/kineto_matmul_bf16_shapes: aten::mm of two 8192x8192 bf16 matrices
    assert flops_of("aten::mm", [[8192, 8192], [8192, 8192]], BF16, ["", ""]) == 2 * 8192**3
    # kineto_gpt_bf16_shapes: addmm(bias, x[4096, 512], w[512, 1536]); the bias add is not counted
    assert count("aten::addmm", [[1536], [4096, 512], [512, 1536], [], []],
                 ["c10::BFloat16"] * 3 + ["Scalar"] * 2) == (2 * 4096 * 512 * 1536, "bf16")
    # HTA sampled_rank-0 (A100): bmm [2048, 160, 45] @ [2048, 45, 20]
    assert count("aten::bmm", [[2048, 160, 45], [2048, 45, 20]], ["float", "float"]) == \
        (2 * 2048 * 160 * 45 * 20, "fp32")
    # particle-transformer amp (A100): baddbmm with an fp32 self and fp16 batches: the batches' precision
    assert count("aten::baddbmm", [[4096, 128, 128], [4096, 128, 16], [4096, 16, 128], [], []],
                 ["float", "c10::Half", "c10::Half", "Scalar", "Scalar"]) == (2 * 4096 * 128 * 128 * 16, "fp16")
    assert count("aten::_scaled_mm", [[256, 512], [512, 128], [], [], [], [], [], []],
                 ["c10::Float8_e4m3fn", "c10::Float8_e5m2", "float", "float", "", "", "", ""]) == \
        (2 * 256 * 128 * 512, "fp8")
    assert count("aten::_int_mm", [[64, 32], [32, 16]], ["signed char", "signed char"]) == (2 * 64 * 16 * 32, "int8")


def test_matmul_and_linear_are_counted_where_they_dispatch():
    """They hold the mm / addmm / bmm that launches the kernel: counting them too would count each multiply twice."""
    assert flops_of("aten::matmul", [[8192, 8192], [8192, 8192]], BF16) is None
    assert flops_of("aten::linear", [[16, 256, 512], [1536, 512], [1536]], ["float"] * 3) is None
    assert "aten::matmul" not in OPS and "aten::linear" not in OPS


def test_mismatched_inner_dimensions_are_no_gemm():
    assert flops_of("aten::mm", [[8, 4], [5, 3]]) is None
    assert flops_of("aten::bmm", [[2, 8, 4], [3, 4, 3]]) is None


def test_convolution_needs_its_stride_and_padding():
    # particle-transformer amp (A100): cudnn_convolution(self, weight, padding, stride, dilation, groups, …)
    conv = [[512, 4, 1, 8256], [64, 4, 1, 1], [], [], [], [], [], [], []]
    args = ["", "", "[0, 0]", "[1, 1]", "[1, 1]", "1", "False", "False", "True"]
    assert count("aten::cudnn_convolution", conv, ["c10::Half"] * 2 + ["ScalarList"] * 3, args) == \
        (2 * 512 * 8256 * 64 * 4, "fp16")
    # ResNet-50's first conv: 224² → 112² with stride 2, padding 3 (aten::conv2d(input, weight, bias, stride,
    # padding, dilation, groups))
    assert flops_of("aten::conv2d", [[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], []], None,
                    ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "1"]) == 2 * 32 * 112 * 112 * 64 * 3 * 7 * 7
    # a depthwise conv: weight (C, 1, k, k), groups = C
    assert flops_of("aten::convolution", [[8, 32, 10, 10], [32, 1, 3, 3], [], [], [], [], [], [], []], None,
                    ["", "", "", "[1]", "[1]", "[1]", "False", "[0]", "32"]) == 2 * 8 * 10 * 10 * 32 * 9
    # the same torch 1.8 trace's conv without Concrete Inputs (pytorch/kineto's ResNet-50 sample): no guess
    assert flops_of("aten::cudnn_convolution", [[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []],
                    ["float", "float", "GenericList", "GenericList", "GenericList", "Int", "Bool", "Bool", "Bool"],
                    None) is None


def test_transposed_convolution_counts_per_input_position():
    assert flops_of("aten::convolution", [[2, 16, 8, 8], [16, 4, 3, 3], [], [], [], [], [], [], []], None,
                    ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[1, 1]", "1"]) == 2 * 2 * 8 * 8 * 16 * 4 * 9


def test_convolution_backward_counts_the_gradients_asked_for():
    dims = [[4, 64, 28, 28], [4, 32, 56, 56], [64, 32, 3, 3]] + [[]] * 8
    args = ["", "", "", "[64]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    one = 2 * 4 * 28 * 28 * 64 * 32 * 9
    assert flops_of("aten::convolution_backward", dims, None, [*args, "[True, True, True]"]) == 2 * one
    assert flops_of("aten::convolution_backward", dims, None, [*args, "[False, True, False]"]) == one
    assert flops_of("aten::convolution_backward", dims, None, None) is None
    # pytorch/kineto's ResNet-50 sample (torch 1.8): dgrad from grad_output [32, 2048, 7, 7], weight [2048, 512, 1, 1]
    assert flops_of("aten::cudnn_convolution_backward_input",
                    [[], [32, 2048, 7, 7], [2048, 512, 1, 1], [], [], [], [], [], [], []]) == 2 * 32 * 49 * 2048 * 512
    # its weight gradient: the kernel's size is in an unrecorded list argument
    assert flops_of("aten::cudnn_convolution_backward_weight",
                    [[], [32, 2048, 7, 7], [32, 512, 7, 7], [], [], [], [], [], [], []]) is None


def test_attention_forward_backward_and_causal():
    # kineto_gpt_bf16_shapes: cuDNN SDPA, q/k/v (16, 8, 256, 64), is_causal recorded True
    qkv = [[16, 8, 256, 64]] * 3
    fwd = 4 * 16 * 8 * 256 * 256 * 64 // 2
    assert count("aten::_cudnn_attention_forward", qkv + [[]] * 10, BF16 * 2,
                 ["", "", "", "", "", "", "256", "256", "True", "0.1", "True", "False", ""]) == (fwd, "bf16")
    assert count("aten::_scaled_dot_product_cudnn_attention", qkv + [[]] * 6, BF16 * 2,
                 ["", "", "", "", "True", "0.1", "True", "False", ""]) == (fwd, "bf16")
    backward = [[16, 8, 256, 64]] * 5 + [[16, 8, 256, 1]] + [[]] * 10
    assert flops_of("aten::_cudnn_attention_backward", backward, None,
                    [""] * 11 + ["256", "256", "0.1", "True", ""]) == fwd * 5 // 2
    # the same shapes, not causal: twice the work
    assert flops_of("aten::_scaled_dot_product_cudnn_attention", qkv + [[]] * 6, None,
                    ["", "", "", "", "True", "0.1", "False", "False", ""]) == 2 * fwd
    # is_causal not recorded: no guess
    assert flops_of("aten::_scaled_dot_product_cudnn_attention", qkv + [[]] * 6, None, None) is None


def test_flash_attention_in_both_layouts():
    """wild/kineto-bert-small-h100: SDPA's flash op takes (B, H, L, D); the _flash_attention_forward inside it
    (B, L, H, D). Both give one count."""
    outer = flops_of("aten::_scaled_dot_product_flash_attention", [[1, 8, 141, 64]] * 3 + [[]] * 4, None,
                     ["", "", "", "0.", "False", "False", "0.125"])
    inner = flops_of("aten::_flash_attention_forward", [[1, 141, 8, 64]] * 3 + [[]] * 12, None,
                     ["", "", "", "", "", "141", "141", "0.", "False", "False", "0.125", "", "", "", ""])
    assert outer == inner == 4 * 8 * 141 * 141 * 64
    # a sliding window set: not the full L² any more
    assert flops_of("aten::_flash_attention_forward", [[1, 141, 8, 64]] * 3 + [[]] * 12, None,
                    ["", "", "", "", "", "141", "141", "0.", "False", "False", "0.125", "64", "0", "", ""]) is None
    # variable-length batches (q of (total, H, D)): the lengths are in a tensor's values, not recorded
    assert flops_of("aten::_flash_attention_forward", [[300, 8, 64]] * 3 + [[]] * 12, None, [""] * 15) is None


def test_efficient_attention_mask_type():
    dims = [[2, 128, 4, 64]] * 3 + [[]] * 11
    args = [""] * 8 + ["0.", "1", "False", "", "", ""]
    assert flops_of("aten::_efficient_attention_forward", dims, None, args) == 4 * 2 * 4 * 128 * 128 * 64 // 2
    args[9] = "0"
    assert flops_of("aten::_efficient_attention_forward", dims, None, args) == 4 * 2 * 4 * 128 * 128 * 64


@pytest.mark.parametrize(("types", "want"), [
    (["c10::BFloat16"], "bf16"), (["c10::Half", "Scalar"], "fp16"), (["float", "float"], "fp32"),
    (["double"], "fp64"), (["c10::Float8_e4m3fn"], "fp8"), (["c10::Float8_e5m2", "c10::Float8_e4m3fn"], "fp8"),
    (["signed char"], "int8"), (["float", "c10::Half"], "mixed"), (["Scalar", ""], "unknown"), ([], "unknown"),
    ("c10::Half", "unknown"), (None, "unknown"), ([["float"]], "unknown"),
])
def test_precision_of(types, want):
    assert precision_of(types) == want


HOSTILE_DIMS = [
    None, "[[8, 8], [8, 8]]", 7, {"a": 1}, [], [[8, 8]], [[8, 8], "8x8"], [[8, -8], [-8, 8]], [[8, 8.0], [8.0, 8]],
    [[True, True], [True, True]], [[2**60, 2**60], [2**60, 2**60]], [[2**40, 8], [8, 8]], [[8, [8]], [[8], 8]],
    [[[8, 8]], [[8, 8]]], [[8, 8, 8], [8, 8]], [[None, 8], [8, 8]], [["8", "8"], ["8", "8"]], [[8, 8]] * 1000,
    [[2**31, 2**31], [2**31, 2**31]],  # 2·(2³¹)³ = 2⁹⁴ FLOPs: beyond MAX_FLOPS, no op is that big
]


@pytest.mark.parametrize("dims", HOSTILE_DIMS, ids=range(len(HOSTILE_DIMS)))
def test_hostile_dims_give_none(dims):
    for op in OPS:
        assert flops_of(op, dims, ["float"] * 4, ["", "", "", "[1]", "[0]", "[1]", "False", "[0]", "1"]) is None


def test_any_json_value_never_raises():
    """Random JSON values for every counted op's arguments: None or a count within bounds, never an exception."""
    rng = random.Random(41)

    def value(depth: int = 0) -> object:
        def shapes() -> list[list[int]]:
            return [[rng.randint(0, 64) for _ in range(rng.randrange(1, 5))] for _ in range(rng.randrange(1, 17))]

        makers = [lambda: None, lambda: True, lambda: rng.randint(-5, 2**45), lambda: rng.random() * 1e6,
                  lambda: rng.choice(["", "True", "[1, 1]", "1", "x"]), lambda: rng.randint(0, 64), shapes,
                  lambda: [value(depth + 1) for _ in range(rng.randrange(4))], lambda: {"k": value(depth + 1)}]
        return makers[rng.randrange(9 if depth < 3 else 7)]()

    for _ in range(4000):
        op = rng.choice(sorted(OPS))
        dims, types, concrete = value(), value(), value()
        got = count(op, dims, types, concrete)
        assert got is None or (0 <= got[0] <= MAX_FLOPS and isinstance(got[1], str)), (op, json.dumps(dims))
