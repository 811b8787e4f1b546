"""FLOPs from Nsight Compute's counters (classify/counter_flops.py, issue 41): an H200 export of known-FLOP kernels
(tests/data/ncu_flops/ncu_flops.csv, benchmarks/gpu/ncu_flops.sh: one 2048×1024×512 matmul per precision, and an
fp32, fp16 and fp64 multiply-add of 2^24 elements), and verify's rate per kernel from them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvprof_wrap import readers
from nvprof_wrap.classify import counters
from nvprof_wrap.classify.counter_flops import COUNTERS_OP, METRICS, launch_flops
from nvprof_wrap.pipeline.verify import report_with_counters
from nvprof_wrap.renderers import render
from nvprof_wrap.report.counter_check import rates
from tests._paths import DATA, H200

EXPORT = DATA / "ncu_flops" / "ncu_flops.csv"
M, N, K, ELEMENTS = 2048, 1024, 512, 1 << 24
MATMUL = 2 * M * N * K


def by_name(path: Path = EXPORT) -> dict[str, tuple[str, float, int, int]]:
    return {f.name: (f.precision, f.flops, f.launches, f.total_ns) for f in readers.read(path).op_flops}


def test_the_tensor_paths_ops_are_the_matmuls_flops_in_every_precision():
    got = by_name()
    assert got["nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT"][:2] == ("bf16", MATMUL)
    assert got["nvjet_sm90_hsh_128x128_64x6_2x1_v_bz_NNT"][:2] == ("fp16", MATMUL)
    tf32 = next(v for n, v in got.items() if n.startswith("sm90_xmma_gemm_f32f32_tf32f32"))
    fp64 = next(v for n, v in got.items() if n.startswith("sm90_xmma_gemm_f64f64"))
    # their epilogues' FFMA / DMUL are left out: the tensor path's count alone
    assert tf32[:2] == ("tf32", MATMUL) and fp64[:2] == ("fp64", MATMUL)
    assert all(launches == 1 and ns > 0 for _p, _f, launches, ns in got.values())


def test_cuda_cores_count_two_flops_per_fma():
    got = by_name()
    sgemm = next(v for n, v in got.items() if n.startswith("sm80_xmma_gemm_f32f32_f32f32"))  # fp32 without TF32
    assert sgemm[0] == "fp32" and MATMUL <= sgemm[1] <= 1.003 * MATMUL  # FFMA = M·N·K, plus the epilogue's
    elementwise = sorted(v[:2] for n, v in got.items() if "addcmul" in n)
    # fp32, fp16 (computed in fp32: its 3 × 2^24 HADD conversions are no FLOPs) and fp64
    assert elementwise == [("fp32", 2 * ELEMENTS), ("fp32", 2 * ELEMENTS), ("fp64", 2 * ELEMENTS)]
    assert not any("FillFunctor" in n for n in got)  # a fill kernel: counted, 0 FLOPs, no rate


def test_one_launchs_counters():
    assert launch_flops({"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 10.0,
                         "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 3.0}) == (23.0, "fp32")
    assert launch_flops({"sm__ops_path_tensor_src_fp8.sum": 100.0, "sm__ops_path_tensor_src_fp8_sparsity_off.sum":
                         100.0, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 5.0}) == (100.0, "fp8")
    assert launch_flops({"sm__ops_path_tensor_src_bf16_dst_fp32.sum": 0.0}) == (0.0, "")
    assert launch_flops({"smsp__sass_thread_inst_executed_op_hadd_pred_on.sum": 9.0}) is None  # no FLOP counter
    assert launch_flops({counters.HMMA_INST: 4.0, counters.DURATION: 1.0}) is None


def test_an_export_without_flop_counters_has_no_figure():
    path = H200 / "ncu_tensor_metrics.csv"
    if not path.is_file():
        pytest.skip(f"{path} absent (the shared fixtures: tests/_paths.py)")
    assert readers.read(path).op_flops == ()


def test_verify_asks_for_the_flop_counters_ncu_offers():
    offered = {m.rsplit(".", 1)[0] for m in (*counters.HOPPER_METRICS, *METRICS)} - {
        "sm__ops_path_tensor_src_fp16_dst_fp16", "sm__ops_path_tensor_src_fp16_dst_fp32"}  # Ampere's names
    got = counters.metrics_for(9.0, offered)
    assert "sm__ops_path_tensor_src_bf16_dst_fp32.sum" in got and "sm__ops_path_tensor_src_fp16_dst_fp16.sum" not in got
    assert "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum" in got


def test_verify_says_each_kernels_rate_and_keeps_it_out_of_the_traces_achieved():
    rep = report_with_counters(EXPORT, [])
    check = rep.counter_check
    assert check is not None and check.rates and rep.achieved is None  # timed under ncu: never added to a trace's
    top = {r.name: r for r in check.rates}
    bf16 = top["nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT"]
    assert (bf16.precision, bf16.flops, bf16.launches) == ("bf16", MATMUL, 1)
    assert bf16.tflops == round(MATMUL / (bf16.seconds * 1e9) / 1e3, 2) and 250 < bf16.tflops < 989.4
    assert bf16.trace_tflops is None  # no trace given beside the export
    assert len(check.rates) == 8 and check.rates[0].flops >= check.rates[-1].flops
    text = render("table", rep)
    assert f"{bf16.tflops:,.1f} TFLOP/s bf16: nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT" in text
    data = json.loads(render("json", rep))
    assert data["counter_check"]["rates"][0]["flops"] == check.rates[0].flops


def test_a_rate_beside_the_traces():
    counted = [("gemm", "bf16", 6e12, 2, 10_000_000), ("gemm", "fp32", 1e9, 0, 0), ("fill", "", 0.0, 1, 5)]
    (only,) = rates(counted, {"gemm": 550.0})
    assert (only.precision, only.flops, only.launches, only.tflops, only.trace_tflops) == (
        "bf16", 6_001_000_000_000, 2, 600.1, 550.0)
    assert COUNTERS_OP.startswith("ncu")
