"""Truth at the edges (issue #12): counter truth net of HFMA2, named kernels never unknown, the family beats a stray
word, the GPU decides where the name cannot, Blackwell names, non-NVIDIA traces refused, the math type over scalar
arguments, nvprof's correlation suffix. Every case is a real name or a real capture."""
from __future__ import annotations

import csv
import gzip
import re
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from benchmarks.accuracy import LABELS_DIR, load_labels
from nvprof_wrap import readers
from nvprof_wrap.classify import classify, counters
from nvprof_wrap.classify.engine import load_rules
from nvprof_wrap.classify.rank import decide
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers import ncu_csv
from tests._paths import DATA, PUBLIC, ROOT, RUNS, WILD

TRAIN = RUNS / "train_counters"
MIT = DATA / "public_mit"
B200 = WILD / "kineto-vllm-b200.json.gz"  # AMD-AGI/TraceLens tests/traces/b200/eager_trace.json.gz


def _counters(run: str) -> dict[str, object]:
    return {v.name: v for v in ncu_csv.read(TRAIN / f"{run}.ncu.csv.gz").counters}


# --- 1. counter truth survives HFMA2.MMA -------------------------------------------------------------
def test_fp32_layer_norm_is_not_tensor_core_although_the_tensor_pipe_was_busy():
    """Measured on the H200 (GPT fp32 step): the tensor pipe was active 6,838 cycles and executed 147,456 'HMMA'
    instructions, every one of them HFMA2.MMA — plain fp16x2 math, not a matrix instruction."""
    v = next(v for n, v in _counters("gpt_fp32").items() if "vectorized_layer_norm_kernel<float, float" in n)
    assert v.tensor_core == "no"
    assert "HMMA 147,456 of which HFMA2 147,456" in v.detail and "tensor-pipe cycles 6,838" in v.detail
    assert "HFMA2.MMA" in v.detail


def test_cycles_alone_never_say_yes():
    cycles = {"sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.sum": 6838.0}
    assert counters.launch_verdict(cycles, "9.0").tensor_core == "unknown"
    assert counters.launch_verdict({**cycles, counters.HMMA_INST: 147456.0}, "9.0").tensor_core == "unknown"
    idle = {k: 0.0 for k in counters.CYCLES}
    assert counters.launch_verdict(idle, "9.0").tensor_core == "no"
    # an int8 kernel with no IMMA count in the export cannot be called "no" from HMMA alone
    only_hmma = {counters.HMMA_INST: 0.0, counters.HFMA2_INST: 0.0, **cycles}
    assert counters.launch_verdict(only_hmma, "9.0").tensor_core == "unknown"
    # Volta has no HFMA2.MMA: there HMMA counts are matrix instructions
    assert counters.launch_verdict({counters.HMMA_INST: 512.0}, "7.0").tensor_core == "yes"


def test_wgmma_is_not_counted_twice():
    """On the H200, sm__inst_executed_pipe_tensor_op_hmma.sum includes the warpgroup instructions (hmma = gmma for
    nvjet_sm90_*): the reported count is the larger of the two, not their sum."""
    v = next(v for n, v in _counters("gpt_bf16").items() if n == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT")
    assert v.tensor_core == "yes" and v.value == 524_288
    assert "HMMA 524,288 of which HFMA2 0, wgmma 524,288" in v.detail


def _raw_net_mma(gz: Path) -> dict[str, tuple[bool, bool]]:
    """Per kernel name of a raw ncu export, read without nvprof_wrap: (matrix instructions net of HFMA2 > 0 on some
    launch, tensor-pipe cycles > 0 on some launch)."""
    launches: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    with gzip.open(gz, "rt", newline="") as f:
        for r in csv.DictReader(f):
            try:
                launches[(r["ID"], r["Kernel Name"])][r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
            except ValueError:
                pass
    out: dict[str, tuple[bool, bool]] = {}
    for (_, name), m in launches.items():
        def inst(kind: str, m: dict[str, float] = m) -> float:
            return m.get(f"sm__inst_executed_pipe_tensor_op_{kind}.sum", 0.0)
        mma = max(inst("hmma") - inst("hmma_type_hfma2"), inst("gmma")) + inst("imma") + inst("dmma")
        cyc = m.get("sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.sum", 0.0)
        was = out.get(name, (False, False))
        out[name] = (was[0] or mma > 0, was[1] or cyc > 0)
    return out


def test_training_labels_are_matrix_instructions_net_of_hfma2_in_the_raw_exports():
    """Every label of h200_training_runs.tsv, re-derived from the six raw ncu exports without nvprof_wrap's reader:
    yes ⇔ HMMA − HFMA2 (or wgmma, IMMA, DMMA) > 0 on some launch. The cycle rule would have called 11 kernels
    tensor-core (fp32 layer norm, softmax and GammaBeta backward, bf16 reductions, cuDNN batch norm and RNN
    element-wise kernels, an fp32 FFMA GEMM): their tensor-pipe work was HFMA2.MMA only, and their labels say no."""
    raw: dict[str, tuple[bool, bool]] = {}
    for gz in sorted(TRAIN.glob("*.ncu.csv.gz")):
        for name, (mma, cyc) in _raw_net_mma(gz).items():
            was = raw.get(name, (False, False))
            raw[name] = (was[0] or mma, was[1] or cyc)
    labels = {lab.name: lab.truth for lab in load_labels(LABELS_DIR)["h200_training_runs.tsv"]}
    assert set(raw) == set(labels) and len(labels) == 249
    assert {n: "yes" if mma else "no" for n, (mma, _) in raw.items()} == labels
    hfma2_only = sorted(n for n, (mma, cyc) in raw.items() if cyc and not mma)
    assert len(hfma2_only) == 11 and {labels[n] for n in hfma2_only} == {"no"}
    assert any("vectorized_layer_norm_kernel<float, float" in n for n in hfma2_only)


@pytest.mark.parametrize("label_file", ["h200_counters.tsv", "h200_gpu_runs.tsv", "h200_training_runs.tsv",
                                        "public_named.tsv", "public_research.tsv"])
def test_no_wrong_verdict_on_any_labelled_set(label_file):
    labels = load_labels(LABELS_DIR)[label_file]
    wrong = [(lab.truth, lab.name[:100]) for lab in labels if classify(lab.name).tensor_core not in (lab.truth,
                                                                                                  "unknown")]
    assert wrong == []


# --- 2. no "unknown" where the name says what the kernel is ------------------------------------------
def test_every_kernel_of_the_training_runs_is_decided_by_its_name():
    """249 distinct kernels of GPT (fp32/bf16/fp16, and an fp32 step of another shape measured after the rules were
    final), ResNet-50 and an LSTM on the H200: the name rules decide every one, and agree with the counters on every
    one."""
    labels = load_labels(LABELS_DIR)["h200_training_runs.tsv"]
    assert len(labels) == 249
    assert [lab.name[:100] for lab in labels if classify(lab.name).tensor_core != lab.truth] == []


@pytest.mark.parametrize("name", [
    # ncu spells at::native:: as native:: (and cudnn::cnn:: as cnn::)
    ("void native::<unnamed>::multi_tensor_apply_kernel<native::<unnamed>::TensorListMetadata<1>, "
     "native::LpNormFunctor<float, 1, float, 1, 1, 0>, float *, int>(T1, T2, T3...)"),
    "void native::lpnorm_cleanup<float, 1, float, 1, float>(const T5 *, native::TensorListAddresses, int)",
    "void native::<unnamed>::krn_partials_per_segment<long>(T1 *, const T1 *, const long *, long)",
    ("void native::<unnamed>::GammaBetaBackwardCUDAKernelTemplate<float, float, 32, 32, 256, 0, 1, 0>(long, long, "
     "const T1 *, const T1 *, const T2 *, const T2 *, T1 *, T1 *)"),
    "cudnn::initstates(unsigned long long, curandStateXORWOW *)",
    ("void elemWiseRNNcell<float, float, float, 2, 2>(int, int, int, int, int, bool, const T1 *, const T1 *, "
     "const T2 *, const T1 *, const T1 *, const T1 *, T1 *, T1 *, T2 *, T1 *, T1 *, int)"),
    ("void cudnn::compute_dot_do_o_specialized<1, 64>(const void *, const void *, void *, void *, unsigned int, "
     "unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, float)"),
    ("void cask_plugin__5x_cudnn::init_device_workspace_kernel<fprop::Warp_specialized_params_non_template<"
     "xmma__5x_cudnn::Grid_constant_params>>(T1, bool)"),
    "void cnn::reduce_wgrad_nchw_helper<float, float>(void *, const void *, T1, int, int)",
    ("void moe::dev::routing::routingIndicesHistogramKernel<moe::dev::routing::routingRenormalize::KernelParams<"
     "__nv_bfloat16, __nv_bfloat16, 128, false, true, true> >(moe::dev::routing::routingRenormalize::KernelParams<"
     "__nv_bfloat16, __nv_bfloat16, 128, false, true, true>)"),
    "cupy_copy__float32_float32",
    "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
])
def test_named_helpers_are_decided(name):
    assert classify(name).tensor_core == "no", classify(name).reason


def test_fbgemm_and_aten_helpers_of_a_real_trace_are_decided():
    """HolisticTraceAnalysis' sampled_rank-0 trace (A100): its last three unknowns were FBGEMM's sparse / quantize
    helpers and ATen's repeat_interleave kernel (a static kernel outside any namespace, aten/native/cuda/Repeat.cu)."""
    from nvprof_wrap.pipeline import analyze

    rep = analyze(PUBLIC / "facebookresearch__HolisticTraceAnalysis__sampled_rank-0.json.gz")
    assert [k.name for k in rep.kernels if k.tensor_core == "unknown"] == []
    by = {k.name: k for k in rep.kernels}
    for name, rule in [
        ("void fbgemm_gpu::_offsets_range_cuda_kernel<int>(long, long, int const*, int*)", "fbgemm-helper"),
        (("void fbgemm_gpu::(anonymous namespace)::_get_FP8_qparam_cuda_kernel<float>(float const*, int, int, "
          "unsigned char*, float*, bool)"), "fbgemm-helper"),
        ("void compute_cuda_kernel<long>(long*, long*, long*, long, long)", "aten-repeat-interleave"),
    ]:
        assert (by[name].tensor_core, classify(name).rule) == ("no", rule)


def test_library_namespace_rules_come_after_the_matrix_family():
    """'fbgemm_gpu::' decides only names without a GEMM / attention / MMA word: an FBGEMM matrix kernel is never
    "no" for its namespace."""
    order = [r.id for r in load_rules().verdict]
    assert order.index("matrix-family-undecided") < order.index("fbgemm-helper") < order.index("elementwise")


# Generated code whose name carries no op (nvFuser without a scheduler, XLA fusions, Inductor templates).
# ... and the launches of CUDA graphs whose kernels the capture does not hold (readers/_nsys_graphs.py): no name
_GENERATED = re.compile(r"^(?:<unnamed>::)?nvfuser_none_|^(?:gemm_)?fusion(?:_dot(?:_general)?)?(?:_\d+)?$"
                        r"|^triton_tem_|^CUDA graph launch \(kernels not traced one by one\)$")


@pytest.mark.slow
def test_unknown_is_left_only_to_generated_code_on_every_capture():
    """Every capture of the shared fixtures and of this project's runs, with its GPU and no counters: what stays
    unknown is generated code without dtype and op (issue 12, item 2) — never a named library or framework kernel."""
    from benchmarks.unknown_share import DEFAULT, captures
    from nvprof_wrap.pipeline import analyze

    unknown: dict[str, list[str]] = {}
    for path in captures(DEFAULT):
        try:
            rep = analyze(path)
        except BadInput:
            continue  # not a kernel capture (the ROCm traces are refused)
        names = [k.name for k in rep.kernels if k.tensor_core == "unknown"]
        if names:
            unknown[path.name] = names
    assert PUBLIC.is_dir() and unknown  # the generated kernels of the fixtures are there to be found
    assert {c: [n for n in names if not _GENERATED.search(n)] for c, names in unknown.items()} == \
        {c: [] for c in unknown}
    assert set(unknown) == {"NVIDIA__Fuser__report1.sqlite", "vm.xplane.pb", "nsys.sqlite.gz"}  # jax_mnist_nsys


@pytest.mark.slow
def test_docs_give_the_unknown_share_per_capture(capsys):
    """docs/accuracy.md carries, per capture, the share of GPU time the rules leave unknown: the table that
    python -m benchmarks.unknown_share --format markdown prints now."""
    from benchmarks import unknown_share

    assert PUBLIC.is_dir()
    assert unknown_share.main(["--format", "markdown"]) == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert len(table) > 30
    doc = (ROOT / "docs" / "accuracy.md").read_text()
    start = doc.index(table[0])
    assert doc[start:].splitlines()[:len(table)] == table


@pytest.mark.parametrize("name", ["triton_tem_fused_mm_0", "gemm_fusion_dot_1", "fusion_12",
                                  "cuda_compute_flux(int, int*, float*, float*, float*)"])
def test_generated_and_user_kernels_stay_unknown(name):
    assert classify(name).tensor_core == "unknown"


# --- 3. the family beats a stray word ---------------------------------------------------------------
def test_fp32_memory_efficient_attention_runs_on_tensor_cores_dropout_or_not():
    """PyTorch's fp32 SDPA on sm80+: CUTLASS fast-fp32 (3xTF32). Counters on the H200 agree, and these two kernels
    are 9.3% of the GPT fp32 step's GPU time — the verdict said 'not seen' before."""
    c = _counters("gpt_fp32")
    fwd = next(v for n, v in c.items() if n.startswith("fmha_cutlassF_f32_aligned_64x64_rf_sm80"))
    bwd = next(v for n, v in c.items() if n.startswith("fmha_cutlassB_f32_aligned_64x64_k64_dropout_sm80"))
    for v in (fwd, bwd):
        assert v.tensor_core == "yes"
        got = classify(v.name)
        assert (got.tensor_core, got.precision) == ("yes", "fp32 (3xTF32)")
    # the same family built for GPUs without that path is SIMT
    assert classify("fmha_cutlassB_f32_aligned_64x64_k64_dropout_sm75").tensor_core == "no"
    assert classify("fmha_cutlassF_f16_aligned_64x64_rf_sm50").tensor_core == "no"


def test_an_mma_shaped_aten_gemm_is_not_an_aten_elementwise_kernel():
    """PyTorch's int4 weight-only GEMM (torch._weight_int4pack_mm; torchao int4, gpt-fast) runs
    at::native::tinygemm_m16n8k16_chunk_kernel, which issues mma.sync.aligned.m16n8k16 .bf16 (aten/src/ATen/native/cuda/
    int4mm.cu); public profiles show it at 87% of a trace's GPU time. The 'at::' namespace must not make it an ATen
    elementwise "no". The name below is its one instantiation (HANDLE_Q_GROUP(8, 8, None), qGroupSize 128) as Kineto
    spells it; the same file's weight-repacking kernel names the shape without gemm/mma and stays "no"."""
    gemm = classify("void at::native::tinygemm_m16n8k16_chunk_kernel<"
                    "at::native::ALayout_RM<(at::native::KReductionType)0>, "
                    "at::native::BLayout_TC_int4<8, 128>, at::native::ALayout_RM<(at::native::KReductionType)0>, 8, 8>"
                    "(void const*, void const*, void const*, void*, int, int, int, int, int, int)")
    assert (gemm.tensor_core, gemm.precision, gemm.rule) == ("yes", "bf16", "ptx-mma-shape")
    repack = classify("void at::native::matrix_to_m16n8k16_Bint4_layout<8>(at::GenericPackedTensorAccessor<unsigned "
                      "char, 2ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 4ul, "
                      "at::RestrictPtrTraits, int>)")
    assert repack.tensor_core == "no"


def test_xmma_split_k_reduction_is_not_the_gemm():
    """Counters on the H200: the '..._execute_split_k_kernel' after an xmma wgrad executed no matrix instruction."""
    v = next(v for n, v in _counters("resnet_fp32").items() if n.endswith("execute_split_k_kernel__5x_cudnn"))
    assert v.tensor_core == "no"
    assert classify(v.name).tensor_core == "no" and classify(v.name).precision == "fp32"


def test_gpt_fp32_report_says_yes_for_the_attention_kernels():
    from nvprof_wrap import report
    from nvprof_wrap.pipeline import evidence
    from nvprof_wrap.pipeline.ingest import ingest
    from nvprof_wrap.store import Store

    store = Store()
    ingest(store, [TRAIN / "gpt_fp32.ncu.csv.gz"])
    evidence.rank(store)
    rep = report.build(store)
    assert rep.verdict.tensor_cores == "yes" and rep.verdict.precisions == ("fp32 (3xTF32)",)
    assert rep.verdict.unknown_ns == 0


# --- 4. the GPU decides where the name cannot -------------------------------------------------------
def _with_gpu(tmp_path: Path, src: Path, name: str, major: int, minor: int) -> Path:
    """A real nsys capture whose GPU record is replaced (the only edit), to put its kernels on another GPU."""
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    con.execute("UPDATE TARGET_INFO_GPU SET name = ?, computeMajor = ?, computeMinor = ?", (name, major, minor))
    con.commit()
    con.close()
    return dst


def test_pre_volta_gpu_means_no_tensor_cores_and_flags_the_names(tmp_path, capsys):
    capture = _with_gpu(tmp_path, PUBLIC / "NVIDIA__Fuser__report1.sqlite", "TITAN Xp", 6, 1)
    assert main(["report", str(capture), "--format", "json"]) == 0
    import json

    rep = json.loads(capsys.readouterr().out)
    assert rep["verdict"] == "no"
    nvjet = next(k for k in rep["kernels"] if k["name"].startswith("nvjet_"))
    assert nvjet["tensor_core"] == "no" and nvjet["evidence"] == "device"
    assert "has no tensor cores" in nvjet["reason"]
    assert any("claim what the GPU cannot run" in h for h in rep["hints"])


def test_nvprof_summary_csv_takes_its_gpu_from_the_unified_memory_section(tmp_path):
    """A real `nvprof --csv --print-gpu-summary` (Rodinia CFD, nanzifan/nvprof-result): the summary rows name no
    device, its Unified Memory section does ("TITAN Xp (0)"). Pascal has no tensor cores, so the four user kernels,
    whose names say nothing, are "no" by the GPU instead of unknown. Two GPUs named there: no kernel is attributed."""
    from nvprof_wrap.pipeline import analyze

    src = PUBLIC / "nanzifan__nvprof-result__print-gpu-summary.csv"
    cap = readers.read(src)
    assert [(d.device_id, d.name) for d in cap.devices] == [(0, "TITAN Xp")]
    assert {k.device_id for k in cap.kernels} == {0} and len(cap.kernels) == 4
    rep = analyze(src)
    assert rep.verdict.tensor_cores == "no" and rep.verdict.unknown_ns == 0
    assert {(k.tensor_core, k.evidence) for k in rep.kernels} == {("no", "device")}
    two = tmp_path / src.name
    two.write_text(src.read_text().replace('"TITAN Xp (0)",,,', '"Tesla V100-SXM2-16GB (1)",,,'))
    cap2 = readers.read(two)
    assert cap2.devices == () and {k.device_id for k in cap2.kernels} == {None}
    assert analyze(two).verdict.tensor_cores == "unknown"


def test_turing_gtx_16_has_no_tensor_cores_by_name():
    c = classify("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn")
    assert decide(c, 7.5, gpu_name="NVIDIA GeForce GTX 1660 Ti").tensor_core == "no"
    assert decide(c, 7.5, gpu_name="NVIDIA GeForce RTX 2080").tensor_core == "yes"
    assert decide(c, None, gpu_name="TITAN Xp").evidence == "device"  # name alone gives sm_61


@pytest.mark.parametrize("name, cc, flagged", [
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", 7.5, True),  # bf16 before Ampere
    ("nvjet_sm90_qqtst_128x128_128x6_2x1_v_bz_coopA_algo2_TNT", 8.0, True),  # fp8 before Ada
    (("bmm_Bfloat16_E2m1E2m1_Fp32_t128x16x256_et128x16_m128x16x64_cga1x1x1_16dp256b_TN_transOut_schedP_bN_dynBatch_"
      "sm100a"), 9.0, True),
    ("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", 9.0, False),
])
def test_names_that_claim_what_the_gpu_cannot_run_are_flagged(name, cc, flagged):
    assert bool(decide(classify(name), cc).flag) is flagged


def test_counters_beat_the_device_and_the_device_beats_the_name():
    c = classify("volta_h884gemm_64x64_ldg8_nn")
    assert decide(c, 6.1).tensor_core == "no"
    assert decide(c, 6.1, counter=("no", "measured")).evidence == "counters"


# --- 5. Blackwell and TensorRT-LLM --------------------------------------------------------------------
def test_b200_trace_tensor_core_share_and_precisions():
    """A real PyTorch-profiler trace from two B200s (TraceLens, MIT): 59.7% of kernel time on tensor cores in fp8
    and bf16 (the rules before this change found 7%). Its trtllm-gen GEMMs of MXFP4 weights × MXFP8 activations are
    fp8 — their mixed tcgen05 MMA's rate —, not fp4, which promised twice it."""
    from nvprof_wrap import report
    from nvprof_wrap.pipeline import evidence
    from nvprof_wrap.pipeline.ingest import ingest
    from nvprof_wrap.store import Store

    store = Store()
    ingest(store, [B200])
    evidence.rank(store)
    rep = report.build(store)
    assert rep.verdict.tensor_cores == "yes"
    assert rep.verdict.tc_fraction == pytest.approx(0.597, abs=0.001)
    assert set(rep.verdict.precisions) == {"bf16", "fp8"}
    assert rep.verdict.unknown_ns == 0
    assert not [k.name for k in rep.kernels if k.flag]  # computeMajor 10: nothing claims too much
    by = {k.name: k for k in rep.kernels}
    assert by["bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_"
              "schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f"].precision == "fp8"


@pytest.mark.parametrize("name, precision", [
    ("nvjet_sm100_tst_128x256_64x6_2x1_2cta_v_bz_TNT", "bf16"),
    ("nvjet_sm103_hsh_128x256_64x6_2x1_2cta_v_bz_NNT", "fp16"),
    ("nvjet_sm100_ootst_128x128_256x7_4x1_2cta_v_bx_Avec16UE4M3_Bvec16UE4M3_", "fp4"),
    ("fmhaSm100fKernel_QkvFp16OFp16H128PagedKvCausalP64MultiCtasKvVarSeqQ32Kv128StaticSwapsAbForGen", "fp16"),
    ("fmhaSm100aKernel_QE4m3KvE2m1OE4m3H128PagedKvCausalP32VarSeqQ128Kv128PersistentContext", "fp4"),
    (("bmm_E4m3_E4m3E4m3_Fp32_t128x8x128u2_s8_et64x8_m64x8x32_c1x1x1_rM_TN_transOut_noShfl_dsFp8_schPd4x2x2x3_bN_tma_"
      "tmaSf_rgTma_clmp_lbW2_dynB_sm100f"), "fp8"),
    (("cutlass3x_sm120_bstensorop_s16832gemm_block_scaled_ue8m0xe4m3_ue8m0xe4m3_f32_bf16_bf16_128x128x128_1x1x1_0_tnn_"
      "align16_q_bias_bf16_relu"), "fp8"),
    (("cutlass3x_sm100_bstensorop_s256x128x64gemm_block_scaled_ue4m3xf4_ue4m3xf4_f32_f16_f16_256x128x256_0_tnn_align32_"
      "o_vs16_2sm_bias_f16_relu"), "fp4"),
])
def test_blackwell_names(name, precision):
    c = classify(name)
    assert (c.tensor_core, c.precision) == ("yes", precision)


def test_nvjet_reason_names_the_right_instruction():
    assert "wgmma" in classify("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT").reason
    assert "wgmma" not in classify("nvjet_sm100_tst_128x256_64x6_2x1_2cta_v_bz_TNT").reason
    assert "tcgen05" in classify("nvjet_sm100_tst_128x256_64x6_2x1_2cta_v_bz_TNT").reason
    assert classify("cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_64x128x16_1x1x1_3_tnn_align1_bias_f32_relu"
                    ).tensor_core == "no"


# --- 6. not NVIDIA ------------------------------------------------------------------------------------
@pytest.mark.parametrize("trace", ["TraceLens__mi300_gaunernst_bert-small-uncased.json.gz",
                                   "HolisticTraceAnalysis__mi250_minitoy_train_ROCm6_2_kineto.json.gz"])
def test_rocm_traces_are_refused_with_one_line(trace, capsys):
    with pytest.raises(BadInput, match="ROCm"):
        readers.read(MIT / trace)
    assert main(["report", str(MIT / trace)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "ROCm (AMD GPU) trace" in err and trace in err


# --- 7. precision from the math type -------------------------------------------------------------------
def test_fused_adam_is_fp32_although_its_arguments_are_double():
    name = ("void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::"
            "FusedOptimizerTensorListMetadata<(int)4>, at::native::<unnamed>::FusedAdamMathFunctor<float, (int)4, "
            "(at::native::ADAM_MODE)1, (bool)0>, const float *, double, double, double, double, double, bool, "
            "const float *, const float *>(T1, T2, T3...)")  # the GPT bf16 --fused-adam nsys capture on the H200
    assert classify(name).precision == "fp32"


def test_an_enum_cast_is_not_a_data_type():
    name = ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>("
            "__nv_bfloat16 const*, __nv_bfloat16 const*, unsigned char*, unsigned char*, long const*, long, long, "
            "long, long, long, int, int, int, float const*, float const*)")  # the B200 trace
    assert (classify(name).tensor_core, classify(name).precision) == ("no", "bf16")


# --- 8. nvprof GPU-trace CSV: the correlation suffix ------------------------------------------------------
def test_nvprof_gpu_trace_correlation_suffix_is_stripped(tmp_path):
    """Rows of a real `nvprof --print-gpu-trace` run on a TITAN Xp (nanzifan/nvprof-result BabelStream), in the
    CSV layout: each launch carries its correlation id, ' [128]', ' [174]'… — one kernel must stay one row."""
    csv = tmp_path / "gpu-trace.csv"
    csv.write_text(
        "==180392== NVPROF is profiling process 180392, command: ./cuda-stream\n"
        "==180392== Profiling application: ./cuda-stream\n"
        '"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread",'
        '"Static SMem","Dynamic SMem","Size","Throughput","SrcMemType","DstMemType","Device","Context",'
        '"Stream","Name"\n'
        'ms,ms,,,,,,,,B,B,KB,GB/s,,,,,,\n'
        '326.63,1.6782,32768,1,1,1024,1,1,14,0,0,,,,,"TITAN Xp (0)","1","7","void init_kernel<double>(double*, '
        'double*, double*, double, double, double) [128]"\n'
        '328.34,1.2396,32768,1,1,1024,1,1,8,0,0,,,,,"TITAN Xp (0)","1","7","void copy_kernel<double>(double const *, '
        'double*) [135]"\n'
        '335.81,1.2355,32768,1,1,1024,1,1,8,0,0,,,,,"TITAN Xp (0)","1","7","void copy_kernel<double>(double const *, '
        'double*) [174]"\n'
        '343.28,1.2351,32768,1,1,1024,1,1,8,0,0,,,,,"TITAN Xp (0)","1","7","void copy_kernel<double>(double const *, '
        'double*) [213]"\n')
    cap = readers.read(csv)
    copies = [k for k in cap.kernels if "copy_kernel" in k.name]
    assert len(copies) == 1 and copies[0].launches == 3 and not copies[0].name.endswith("]")
    from nvprof_wrap import report
    from nvprof_wrap.pipeline import evidence
    from nvprof_wrap.pipeline.ingest import ingest
    from nvprof_wrap.store import Store

    store = Store()
    ingest(store, [csv])
    evidence.rank(store)
    rep = report.build(store)  # TITAN Xp, by name: sm_61, no tensor cores
    assert rep.verdict.tensor_cores == "no"
    assert all(k.evidence == "device" for k in rep.kernels)


def test_gzipped_text_captures_are_read():
    with gzip.open(TRAIN / "lstm_fp32.ncu.csv.gz", "rt") as f:
        assert f.readline()
    assert len(ncu_csv.read(TRAIN / "lstm_fp32.ncu.csv.gz").counters) == 38
