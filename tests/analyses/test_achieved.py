"""Achieved TFLOP/s (analyses/achieved.py) on real H200 torch.profiler traces recorded with record_shapes=True: 20
bf16 8192³ matmuls reach what the loop's own timing said (773.8 TFLOP/s) within 10%, under the H200's dense bf16
peak; a capture without shapes gets none, and says which flag gives them."""
from __future__ import annotations

from pathlib import Path

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.analyses.achieved import CUDA_CORE_MATRIX, HOW, _helper, per_kernel
from tests._paths import H100_RUNS, ROOT, fixture_file
from tests._xla_dump import with_dump

RUNS = ROOT / "tests" / "data" / "h200_runs"


def test_a_bf16_matmul_loop_reaches_its_own_timing_under_the_peak() -> None:
    report = analyze(RUNS / "kineto_matmul_bf16_shapes", health=False)
    assert report.achieved is not None
    a = report.achieved["bf16"]
    assert a.flops == 20 * 2 * 8192 ** 3 and a.tensor_core_share == 1.0
    assert abs(a.tflops - 773.8) / 773.8 <= 0.10 and a.peak_tflops == 989.4 and a.tflops <= a.peak_tflops
    assert report.to_dict()["achieved"]["bf16"]["tflops"] == a.tflops
    assert "bf16 787.4 TFLOP/s of 989.4 peak (79.6%)" in " ".join(str(report).split())  # the terminal wraps it


def test_an_fp32_run_is_set_against_the_cuda_cores_where_its_gemms_ran_there() -> None:
    report = analyze(RUNS / "kineto_gpt_fp32_shapes", health=False)
    assert report.achieved is not None and set(report.achieved) == {"fp32"}
    a = report.achieved["fp32"]
    assert a.tensor_core_share < 0.5 and a.peak_tflops == 66.9 and 0 < a.tflops <= a.peak_tflops


def test_no_flops_without_shapes_and_the_report_says_how() -> None:
    report = analyze(RUNS / "gpt_bf16_nsys", health=False)
    assert report.achieved is None and report.to_dict()["achieved"] is None
    assert HOW in " ".join(str(report).split())


def test_model_flops_utilisation_is_a_steps_matrix_flops_over_the_mean_step_against_the_peak() -> None:
    report = analyze(RUNS / "kineto_gpt_bf16_shapes", health=False)
    assert report.mfu is not None and report.achieved is not None and report.time_budget is not None
    m, b = report.mfu, report.time_budget
    total = sum(a.flops for a in report.achieved.values())
    assert report.series is not None and len(report.series.rows) == 3  # ProfilerStep#2-4: FLOPs of all three
    assert m.flops_per_step == round(total / 3) and m.step_s == b.step_s and m.precision == "bf16"
    assert m.mfu == round(total / 3 / b.step_s / 1e12 / 989.4, 4) and 0 < m.mfu < 0.1  # a small GPT, host-bound


def test_each_kernels_rate_adds_up_to_its_precisions() -> None:
    report = analyze(RUNS / "kineto_gpt_bf16_shapes", health=False)
    assert report.achieved is not None and report.achieved_kernels
    rows = report.achieved_kernels
    assert [r.flops for r in rows] == sorted((r.flops for r in rows), reverse=True)
    assert all(r.precision == "bf16" and 0 < r.tflops <= 989.4 for r in rows)
    # every name of matrix math shown (at most 20): a helper's share of its op's FLOPs is its GEMMs'
    math = {k.name for k in report.kernels if not _helper(k)}
    assert {r.name for r in rows} <= math and len(rows) <= report.achieved["bf16"].kernels
    assert abs(sum(r.flops for r in rows) - report.achieved["bf16"].flops) <= len(rows)


def test_mfu_is_not_given_from_flops_of_a_part_of_the_tensor_core_work() -> None:
    """FLOPs known for a tenth of the tensor-core time would make an MFU that reads low and looks true."""
    from nvprof_wrap.report.build import _flops_cover_the_math
    from nvprof_wrap.report.types import KernelRow

    def row(name: str, ns: int, tc: str) -> KernelRow:
        return KernelRow(name, 1, ns, ns, 0.0, tc, "bf16", "", "", "name", tc, None, None, "", "")

    kernels = (row("gemm_fusion_dot", 10, "yes"), row("nvjet_sm90_tss", 90, "yes"), row("loop_fusion", 900, "no"))
    assert not _flops_cover_the_math([("gemm_fusion_dot", "bf16", 1e9, 10)], kernels)
    assert _flops_cover_the_math([("gemm_fusion_dot", "bf16", 1e9, 10), ("nvjet_sm90_tss", "bf16", 1e9, 90)], kernels)
    assert not _flops_cover_the_math([], (row("loop_fusion", 900, "no"),))


@pytest.mark.parametrize("trace", [
    "public/facebookresearch__HolisticTraceAnalysis__sampled_rank-0.json.gz",
    "wild/kineto-hta-trace-diff-a100.json.gz"])
def test_float32_ops_whose_kernels_ran_as_tf32_on_tensor_cores_are_counted_as_tf32(trace: str) -> None:
    """PyTorch's float32 matmuls with TF32 allowed, on A100s: their cutlass_80_tensorop_s1688gemm kernels (tf32 in
    the kernel table) were counted as fp32 — 24-25 TFLOP/s read as fp32, over the A100's 19.5 TFLOP/s fp32 peak,
    94 TFLOP/s for one kernel. Those kernels' FLOPs are tf32's now; the float32 ops that ran on CUDA cores
    (ampere_sgemm_*, under the same aten::bmm) stay fp32."""
    report = analyze(fixture_file(trace), health=False)
    assert report.achieved is not None
    tf32, fp32 = report.achieved["tf32"], report.achieved.get("fp32")
    assert tf32.tensor_core_share >= 0.9 and tf32.tflops > 19.5  # the rest: their helpers (split-K reductions)
    assert fp32 is None or (fp32.tensor_core_share == 0.0 and fp32.tflops < 19.5)
    verdict = {k.name: (k.tensor_core, k.precision) for k in report.kernels}
    helper = {k.name for k in report.kernels if _helper(k)}
    for k in report.achieved_kernels:  # tf32: the tensor-core GEMMs (their helpers' FLOPs theirs: per_kernel)
        assert (k.precision == "tf32") == (verdict[k.name] == ("yes", "tf32")) and k.name not in helper, k
    assert any(k.name.startswith("ampere_sgemm") and k.precision == "fp32" for k in report.achieved_kernels) or \
        "sampled_rank" in trace


def test_the_helpers_of_float32_convolutions_that_ran_as_tf32_count_as_tf32() -> None:
    """ResNet-50 in float32 on an H100 under the PyTorch profiler (record_shapes; tests/data/h100_runs/
    counters_beside_kineto): cuDNN ran its convolutions as TF32 on tensor cores, with NCHW↔NHWC transforms, split-K
    reductions and workspace set-up beside them, each with its share of its op's FLOPs. Those helpers were counted in
    fp32: 79.4 TFLOP/s over 7.55 ms, 118.7% of the CUDA cores' fp32 peak. They count in tf32 now; fp32 keeps the
    GEMMs that ran on CUDA cores (cutlass simt, ffma xmma) and the helpers of their ops."""
    report = analyze(ROOT / "tests" / "data" / "h100_runs" / "counters_beside_kineto" / "resnet_fp32.pt.trace.json.gz",
                     health=False)
    assert report.achieved is not None and set(report.achieved) == {"tf32", "fp32"}
    tf32, fp32 = report.achieved["tf32"], report.achieved["fp32"]
    assert fp32.peak_tflops == 66.9 and fp32.tflops <= 0.2 * 66.9 and fp32.seconds < 0.0002
    assert tf32.peak_tflops == 494.7 and tf32.tflops <= 494.7 and 0.026 < tf32.seconds < 0.027
    assert tf32.tensor_core_share > 0.7  # the rest: the helpers' time
    # the layout transforms are not listed with a rate of their own (per_kernel): their FLOPs are their GEMMs'
    assert any("nchwToNhwc" in k.name or "nhwcToNchw" in k.name for k in report.kernels)
    assert not any("nchwToNhwc" in k.name or "nhwcToNchw" in k.name for k in report.achieved_kernels)
    cuda_cores = {k.name for k in report.kernels if k.name_rule in CUDA_CORE_MATRIX}
    assert all(k.precision == "fp32" for k in report.achieved_kernels if k.name in cuda_cores)


def test_a_helper_of_an_op_whose_calls_ran_gemms_both_ways_is_split_by_their_time() -> None:
    """An op name is every call of it: 3/4 of aten::bmm's GEMM time ran as TF32 on tensor cores, 1/4 as sgemm on CUDA
    cores, so its split-K reduction's share of the FLOPs counts 3/4 in tf32. An op without a tensor-core GEMM keeps
    its helpers in fp32; a kernel the name leaves unknown stays as its op's precision says."""
    from nvprof_wrap.analyses.achieved import ran_in
    from nvprof_wrap.report.types import KernelRow

    def row(name: str, tc: str, precision: str, rule: str) -> KernelRow:
        return KernelRow(name, 1, 1, 1, 0.0, tc, precision, "", "", "name", tc, None, None, rule, "")

    kernels = {k.name: k for k in (row("tensorop_s1688gemm", "yes", "tf32", "cutlass-tensorop"),
                                   row("ampere_sgemm", "no", "fp32", "sgemm"),
                                   row("splitKreduce", "no", "fp32", "blas-helper"),
                                   row("triton_mm", "unknown", "", "matrix-family-undecided"))}
    rows = [("aten::bmm", "tensorop_s1688gemm", "fp32", 3e6, 300), ("aten::bmm", "ampere_sgemm", "fp32", 1e6, 100),
            ("aten::bmm", "splitKreduce", "fp32", 4e5, 40), ("aten::mm", "ampere_sgemm", "fp32", 2e6, 200),
            ("aten::mm", "splitKreduce", "fp32", 2e5, 20), ("aten::bmm", "triton_mm", "fp32", 5e5, 50)]
    got = ran_in(rows, kernels.get)
    assert got == [("aten::bmm", "tensorop_s1688gemm", "tf32", 3e6, 300),
                   ("aten::bmm", "ampere_sgemm", "fp32", 1e6, 100),
                   ("aten::bmm", "splitKreduce", "tf32", 3e5, 30), ("aten::bmm", "splitKreduce", "fp32", 1e5, 10),
                   ("aten::mm", "ampere_sgemm", "fp32", 2e6, 200), ("aten::mm", "splitKreduce", "fp32", 2e5, 20),
                   ("aten::bmm", "triton_mm", "fp32", 5e5, 50)]
    assert sum(f for _o, _n, _p, f, _t in got) == sum(f for *_x, f, _t in rows)


def test_every_rule_of_matrix_math_on_cuda_cores_is_a_rule() -> None:
    from nvprof_wrap.classify.engine import load_rules
    assert CUDA_CORE_MATRIX <= {r.id for r in load_rules().verdict if r.value == "no"}


def test_tf32_is_set_against_the_tensor_cores_however_much_of_its_time_helpers_took() -> None:
    """tf32 is a tensor-core format: its FLOPs are of ops with tensor-core GEMMs (ran_as, ran_in), the rest of its
    time their helpers'. Where layout transforms took most of it, the rate had no peak (and the run no MFU); fp32
    on CUDA cores and bf16 mostly off tensor cores keep theirs as before."""
    from nvprof_wrap.analyses import peaks
    from nvprof_wrap.analyses.achieved import achieved

    h100 = peaks.lookup("NVIDIA H100 80GB HBM3")
    assert h100 is not None
    verdict = {"gemm": "yes", "nchwToNhwc": "no", "sgemm": "no", "bf16_gemm": "yes", "bf16_elementwise": "no"}.get
    rows = [("gemm", "tf32", 4e12, 40_000_000), ("nchwToNhwc", "tf32", 6e12, 60_000_000),
            ("sgemm", "fp32", 1e12, 50_000_000), ("bf16_gemm", "bf16", 1e12, 10_000_000),
            ("bf16_elementwise", "bf16", 1e12, 20_000_000)]
    got = achieved(rows, lambda n: verdict(n) or "unknown", h100, 200_000_000)
    assert got["tf32"].tensor_core_share == 0.4 and got["tf32"].peak_tflops == peaks.tensor_peak(h100, "tf32")
    assert got["fp32"].peak_tflops == h100.rates["fp32"] and got["bf16"].peak_tflops is None


def test_a_kernels_rate_is_of_its_own_math_not_a_helpers_share_of_its_ops(tmp_path: Path) -> None:
    """A float32 Keras convnet on JAX on an H100 (tests/data/h100_runs/keras_jax_convnet_graphs_transforms_nsys): XLA's
    dump gives each cuDNN convolution call's FLOPs, split among the call's kernels by time. Listed per kernel, the
    call's helpers read rates of math they never did — the workspace set-up kernel 20.43 TFLOP/s, the NCHW→NHWC
    transform 3.25, a split-K reduction 20.43 — and each GEMM only its time's share of its call's FLOPs (the filter
    gradient's 20.43 TFLOP/s where its own time gives 30.28). Now the helpers are not listed and each call's FLOPs
    are its math kernels'; wgrad_alg0 (the first convolution's filter gradient, its only kernel: CUDA cores) is
    math, not a helper; the Triton GEMM fusions keep the FLOPs the dump gives each."""
    rep = analyze(with_dump(H100_RUNS / "keras_jax_convnet_graphs_transforms_nsys", tmp_path), health=False)
    assert rep.achieved is not None
    def listed(start: str, precision: str) -> tuple[float, float]:
        (got,) = [(k.flops, k.tflops) for k in rep.achieved_kernels if k.name.startswith(start)
                  and k.precision == precision]
        return got

    helpers = [k.name for k in rep.kernels if _helper(k)]
    assert any("nchwToNhwc" in n for n in helpers) and any("init_device_workspace" in n for n in helpers)
    assert not {k.name for k in rep.achieved_kernels} & set(helpers)
    assert listed("sm90_xmma_wgrad_indexed_implicit_gemm_f32", "tf32") == (2_283_798_528, 30.28)
    assert listed("void wgrad_alg0_engine_NHWC", "fp32")[0] == rep.achieved["fp32"].flops == 199_360_512
    fusions = {k.name: k.flops for k in rep.achieved_kernels if k.name.startswith("gemm_fusion_dot")}
    assert fusions == dict.fromkeys(("gemm_fusion_dot", "gemm_fusion_dot_1", "gemm_fusion_dot_general_5"), 16_384_000)
    assert sum(k.flops for k in rep.achieved_kernels) == sum(a.flops for a in rep.achieved.values())
    assert all(k.tflops <= (rep.achieved[k.precision].peak_tflops or 0) for k in rep.achieved_kernels)


def test_a_helpers_share_goes_to_its_ops_math_of_its_precision_by_time() -> None:
    """per_kernel on rows as ran_in gives them: aten::bmm's split-K reduction's FLOPs in tf32 go to its tf32 GEMM, in
    fp32 to its sgemm; aten::mm's to its sgemm; an op of helpers alone gives no row; rows of another op are apart."""
    from nvprof_wrap.report.types import KernelRow

    def row(name: str, tc: str, rule: str) -> KernelRow:
        return KernelRow(name, 1, 1, 1, 0.0, tc, "fp32", "", "", "name", tc, None, None, rule, "")

    kernels = {k.name: k for k in (row("tensorop_s1688gemm", "yes", "cutlass-tensorop"),
                                   row("ampere_sgemm", "no", "sgemm"), row("splitKreduce", "no", "blas-helper"),
                                   row("nchwToNhwc", "no", "cudnn-helper"))}
    got = per_kernel([("aten::bmm", "tensorop_s1688gemm", "tf32", 3e6, 300),
                      ("aten::bmm", "ampere_sgemm", "fp32", 1e6, 100),
                      ("aten::bmm", "splitKreduce", "tf32", 3e5, 30), ("aten::bmm", "splitKreduce", "fp32", 1e5, 10),
                      ("aten::mm", "ampere_sgemm", "fp32", 2e6, 200), ("aten::mm", "splitKreduce", "fp32", 2e5, 20),
                      ("aten::cat", "nchwToNhwc", "fp32", 5e5, 50)], kernels.get)
    assert [(k.name, k.precision, k.flops, k.seconds) for k in got] == [
        ("tensorop_s1688gemm", "tf32", 3_300_000, 3e-7), ("ampere_sgemm", "fp32", 3_300_000, 3e-7)]
