"""The classifier against hardware-counter truth (H200) and the traps named in the fixtures README."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvprof_wrap.classify import classify, load_rules
from nvprof_wrap.readers import ncu_csv
from tests._paths import H200, PUBLIC, ROOT, fixtures_absent


def test_agrees_with_every_counter_verdict_on_h200():
    capture = ncu_csv.read(H200 / "ncu_tensor_metrics.csv")
    assert len(capture.counters) == 24
    assert sum(v.tensor_core == "yes" for v in capture.counters) == 10
    for v in capture.counters:
        assert classify(v.name).tensor_core == v.tensor_core, v.name


def test_every_kernel_of_the_torch_ops_script_has_the_expected_verdict():
    ops = json.loads((H200 / "torch_ops_kernels.json").read_text())
    tc_ops = {"mm_fp16", "mm_bf16", "mm_fp64", "conv_fp16", "conv_fp16_cl", "conv_bf16_cl", "sdpa_fp16", "sdpa_bf16",
              "int8_mm", "fp8_mm", "linear_bwd_fp16"}
    for op, names in ops.items():
        verdicts = {classify(n).tensor_core for n in names if n != "Memset (Device)"}
        assert ("yes" in verdicts) == (op in tc_ops), (op, verdicts)
        assert "unknown" not in verdicts, op


@pytest.mark.parametrize("name, tc, precision", [
    ("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", "yes", "fp16"),
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "yes", "bf16"),
    ("nvjet_sm90_qqtst_128x128_128x6_2x1_v_bz_coopA_algo2_TNT", "yes", "fp8"),
    ("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT", "yes", "fp16"),
    (("sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize128x64x16_stage3_warpsize2x2x1_tensor16x8x8_execute_kernel__5x_"
      "cublas"), "yes", "fp64"),
    (("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize64x64x64_warpgroupsize1x1x1_g1_execute_"
      "segment_k_off_kernel__5x_cudnn"), "yes", "bf16"),
    (("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize64x64x64_warpgroupsize1x1x1_g1_execute_"
      "segment_k_off_kernel__5x_cudnn"), "yes", "fp16"),
    (("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_"
      "g1_tensor16x8x8_alignc4_execute_kernel_cudnn"), "yes", "tf32"),
    (("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>"
      "(cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4::Params)"), "yes", "tf32"),
    (("void cutlass::Kernel<cutlass_70_wmma_tensorop_f16_s161616gemm_f16_32x32_64x2_tn_align8>"
      "(cutlass_70_wmma_tensorop_f16_s161616gemm_f16_32x32_64x2_tn_align8::Params)"), "yes", "fp16"),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_i161616gemm_s8_forwardCompat_128x128_32x2_nn_align4>(T1::Params)",
     "yes", "int8"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0",
     "yes", "fp16/bf16"),
    ("trt_ampere_h16816gemm_64x64_ldg8_relu_stages_64x5_tn_v1", "yes", "fp16"),
    ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", "yes", "fp16"),
    ("volta_h884gemm_64x64_ldg8_nn", "yes", "fp16"),
    # negatives: FFMA/SIMT beat 'xmma', the arch prefix does not name the GPU, pooling is not a GEMM
    (("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__"
      "5x_cublas"), "no", "fp32"),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)", "no", "fp32"),
    ("volta_sgemm_128x64_nn", "no", "fp32"),
    ("ampere_sgemm_32x32_sliced1x4_tn", "no", "fp32"),
    ("cudnn_volta_scudnn_128x64_relu_xregs_large_nn_v1", "no", "fp32"),
    ("sm50_xmma_pooling_coalescedC_NHWC_kMAX_3_False_execute_kernel_trt", "no", ""),
    ("turing_fp16_sgemm_fp16_128x64_nn", "no", "fp16"),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)", "no", ""),
    (("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::Half>, "
      "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul>)"), "no", "fp16"),
    ("triton_poi_fused_add_0", "no", ""),
    # generated GEMMs carry no evidence: unknown, never guessed
    ("triton_tem_fused_mm_0", "unknown", ""),
    ("gemm_fusion_dot_1", "unknown", ""),
    ("fusion_12", "unknown", ""),
])
def test_names(name, tc, precision):
    c = classify(name)
    assert (c.tensor_core, c.precision) == (tc, precision)
    assert c.reason


def test_every_rule_names_its_source_and_a_reason():
    rules = load_rules()
    for r in rules.verdict:
        assert r.reason and r.source, r.id
    for r in rules.precision:
        assert r.source, r.id
    assert rules.version.count("+") == 1


def test_cutlass_kernel_is_read_from_the_demangled_name_not_short_name():
    from nvprof_wrap.readers import nsys_sqlite

    capture = nsys_sqlite.read(PUBLIC / "wenscarl__cutlass_benchmark__report1.sqlite")
    (k,) = capture.kernels
    assert (len(k.name) == 4889 and "MmaTensorOp" in k.name and "GemmShape<(int)16, (int)8, (int)8>" in k.name
            and "cutlass::half_t" in k.name)
    assert classify(k.name).tensor_core == "yes"
    assert classify(k.name).precision == "fp16"


def _reference_verdict(name: str, table: list[dict]) -> str:
    """The rules as written: case-insensitive patterns searched in the name itself, first match wins."""
    import re

    return next((e["id"] for e in table if re.search(e["pattern"], name, re.IGNORECASE)), "")


def test_lowered_rules_match_as_the_case_insensitive_rules_on_every_real_name(monkeypatch):
    """The engine runs lowered patterns on lowered names (2.6x faster); on every distinct kernel name of the real
    captures (the fixtures', else the repository's own) the rule that wins is the one the rules as written pick."""
    import tomllib

    from benchmarks import generate
    from benchmarks.generate import real_names

    if fixtures_absent():  # a fixtures folder without its parts (empty, say): the repository's own captures
        monkeypatch.setattr(generate, "FIXTURES", ROOT / "no-shared-fixtures")

    table = tomllib.loads((ROOT / "nvprof_wrap" / "classify" / "rules.toml").read_text())["verdict"]
    from nvprof_wrap.classify.engine import _first

    names = real_names()
    assert len(names) >= 50
    rules = load_rules()
    # The first matching rule, before classify() turns an untrusted verdict on a cut name into 'cut-name'.
    picked = {n: getattr(_first(rules.verdict, n.lower()), "id", "") for n in names}
    assert picked == {n: _reference_verdict(n, table) for n in names}
    assert {classify(n).rule for n in names} - {"cut-name"} <= set(picked.values())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["sm90_xmma_gemm_", "F16", "Cutlass::", "HMMA", "_Z", "Fmha_Cutlassf_F32_",
                                 "_Sm80", "TensorOp", "FFMA", "Native::", "(Bool)1", "Half", "BF16", "__nv_",
                                 "gemv", "Elementwise", "IMMA", "ncHW", "at::", "E4M3", "x", "<", ">", "(", ")"]),
                min_size=1, max_size=12))
def test_classification_ignores_case(parts):
    name = "".join(parts)
    a, b = classify(name), classify(name.swapcase())
    assert (a.tensor_core, a.precision, a.family, a.rule) == (b.tensor_core, b.precision, b.family, b.rule)


def test_names_classified_before_in_the_process_are_not_classified_again(monkeypatch, classified):
    """classify_many keeps what classify gave each name (a reader classifies a trace's names while its series' worker
    runs; the report's evidence then finds them): a name is classified once per rules table, the same answer; the
    memo starts over past MAX_DONE names and for another rules table."""
    import dataclasses

    from nvprof_wrap.classify import engine

    calls = classified
    first = engine.classify_many(["volta_sgemm_128x64_nn", "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64"])
    again = engine.classify_many(["sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64", "elementwise_kernel"])
    assert calls == ["volta_sgemm_128x64_nn", "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64",
                     "elementwise_kernel"]
    assert again[0] == first[1] == classify(first[1].name) and again[1] == classify("elementwise_kernel")
    monkeypatch.setattr(engine, "MAX_DONE", 4)
    engine.classify_many(["a_kernel", "b_kernel"])  # 3 kept + 2 > 4: started over with these
    assert set(engine._done()) == {"a_kernel", "b_kernel"}
    rules = engine.load_rules()
    monkeypatch.setattr(engine, "load_rules", lambda: dataclasses.replace(rules))  # another table: nothing kept
    calls.clear()
    engine.classify_many(["a_kernel"])
    assert calls == ["a_kernel"]


def _sample_names() -> list[str]:
    """The kernel names of the bundled H200 captures (the torch ops script's nsys export, the seed's Keras run)."""
    import nvprof_wrap as nw

    samples = ROOT / "nvprof_wrap" / "samples"
    return list(dict.fromkeys(k.name for capture in (samples / "torch_ops" / "nsys_torch_ops.sqlite",
                                                     samples / "keras_reuters_fp16")
                              for k in nw.analyze(capture).kernels))


@pytest.mark.parametrize(("per_worker", "cores", "forked"), [(10, 4, 3), (10, 2, 1), (60, 4, 0), (1000, 16, 0)])
def test_names_classified_side_by_side_are_classified_as_one_by_one(monkeypatch, per_worker, cores, forked):
    """The report's evidence classifies the names no reader classified in parts, each further part in a forked
    worker (one per PER_WORKER names, at most one per core): the same classifications, in the same order, as
    classify() one name at a time; nothing forked below two parts' worth of names."""
    from nvprof_wrap.classify import engine

    names = _sample_names()
    assert len(names) > 80
    started: list[int] = []

    class Counted(engine.Forked):
        def __init__(self, fn, part):
            started.append(len(part))
            super().__init__(fn, part)

    monkeypatch.setattr(engine, "Forked", Counted)
    monkeypatch.setattr(engine, "PER_WORKER", per_worker)
    monkeypatch.setattr(engine, "cores", lambda: cores)
    monkeypatch.setattr(engine, "_DONE", [])
    got = engine.classify_many(names + names[:5], side_by_side=True)
    assert got == [classify(n) for n in names]
    assert len(started) == forked and sum(started) < len(names)
    assert engine.classify_many(names, side_by_side=True) == got and len(started) == forked  # kept: none again


def test_a_side_by_side_workers_error_is_raised_and_the_other_workers_ended(monkeypatch):
    """A worker's error (a bug classifying one name) is the caller's, as raised in the worker; the workers after it
    are ended and reaped, not waited for."""
    import os

    from nvprof_wrap.classify import engine

    names = _sample_names()
    real = engine.classify

    def broken(name: str):
        if name == names[len(names) * 3 // 8]:  # in the first worker's part (of 4): two more workers still there
            raise ValueError(f"cannot classify {name!r}")
        return real(name)

    workers: list[engine.Forked] = []

    class Kept(engine.Forked):
        def __init__(self, fn, part):
            super().__init__(fn, part)
            workers.append(self)

    monkeypatch.setattr(engine, "classify", broken)
    monkeypatch.setattr(engine, "Forked", Kept)
    monkeypatch.setattr(engine, "PER_WORKER", 10)
    monkeypatch.setattr(engine, "cores", lambda: 4)
    monkeypatch.setattr(engine, "_DONE", [])
    with pytest.raises(ValueError, match="cannot classify"):
        engine.classify_many(names, side_by_side=True)
    assert len(workers) == 3 and all(w.pid > 0 for w in workers)
    for w in workers:  # each reaped: none left behind
        with pytest.raises(ChildProcessError):
            os.waitpid(w.pid, os.WNOHANG)
