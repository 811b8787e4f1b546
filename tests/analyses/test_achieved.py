"""Achieved TFLOP/s (analyses/achieved.py) on real H200 torch.profiler traces recorded with record_shapes=True: 20
bf16 8192³ matmuls reach what the loop's own timing said (773.8 TFLOP/s) within 10%, under the H200's dense bf16
peak; a capture without shapes gets none, and says which flag gives them."""
from __future__ import annotations

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.analyses.achieved import HOW
from tests._paths import ROOT, fixture_file

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
    assert len(rows) == report.achieved["bf16"].kernels  # 15 names: all shown (at most 20)
    assert abs(sum(r.flops for r in rows) - report.achieved["bf16"].flops) <= len(rows)


def test_mfu_is_not_given_from_flops_of_a_part_of_the_tensor_core_work():
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
    assert tf32.tensor_core_share == 1.0 and tf32.tflops > 19.5
    assert fp32 is None or (fp32.tensor_core_share == 0.0 and fp32.tflops < 19.5)
    verdict = {k.name: (k.tensor_core, k.precision) for k in report.kernels}
    for k in report.achieved_kernels:
        assert (k.precision == "tf32") == (verdict[k.name] == ("yes", "tf32")), k
    assert any(k.name.startswith("ampere_sgemm") and k.precision == "fp32" for k in report.achieved_kernels) or \
        "sampled_rank" in trace
