"""Names a console cut ('…', '...') decided from their visible part where the evidence comes before the cut (issue 45
item 1): the vLLM docs' `nsys stats` table (sm90_xmma_gemm_bf16bf16_…_execute_segment_k_of…) and the B200 tables
(fmhaSm100fKernel_Qkv…, a CuTe DSL FlashAttentionForwardSm100 kernel); and the adversarial cuts next to them, where
what is hidden could decide otherwise ('_ffma_' or '_execute_split_k_kernel' may follow) — those stay unknown."""
from __future__ import annotations

import pytest

from benchmarks.accuracy import LABELS_DIR, load_labels
from nvprof_wrap.classify import classify
from nvprof_wrap.pipeline import analyze
from tests._paths import FIXTURES

WILD3 = FIXTURES / "wild3"
KEPT = "the name is cut, but what is hidden cannot change this"

XMMA_SM90 = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
SPLIT_K = ("sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_"
           "warpsize2x2x1_g1_tensor16x8x8_execute_split_k_kernel_cudnn_train")  # h200_training_runs.tsv: 'no'
FMHA = "fmhaSm100fKernel_QkvBfloat16OBfloat16H128PagedKvCausalP16MultiCtasKvVarSeqQ16Kv128StaticSwapsAbForG…"
CUTE_FA = "kernel_cutlass_kernel_vllmvllm_flash_attncuteflash_fwd_sm100FlashAttentionForwardSm100_object_at__t…"


@pytest.mark.parametrize("name, verdict, precision", [
    # real cut names (wild3): the evidence is before the cut
    (XMMA_SM90 + "execute_segment_k_of…", "yes", "bf16"),  # vllm-docs-profiling-nsys-stats-h100.md
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_…", "yes",
     "bf16"),
    (FMHA, "yes", "bf16"),  # nsys-stats-table-vllm-qwen7b-b200.md
    (CUTE_FA, "yes", ""),  # nsys-stats-table-vllm-deepseek-r1-b200.md: its operand types are hidden
    (SPLIT_K[:-10] + "…", "no", "fp32"),  # the split-K reduction's own name is visible
    # adversarial: the hidden part could decide otherwise
    ("sm90_xmma_gemm_…", "unknown", ""),  # '_ffma_' may follow
    (XMMA_SM90 + "…", "unknown", "bf16"),  # '_execute_split_k_kernel' may follow the warp-group size
    (XMMA_SM90 + "execute_s…", "unknown", "bf16"),  # … or 'split_k' after '_execute_s'
    (XMMA_SM90[:-1] + "...", "unknown", "bf16"),
    (SPLIT_K[:SPLIT_K.index("split") - 1] + "…", "unknown", "tf32"),  # '_execute_' then the cut
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8_stage3_warpsize2x2x1…", "unknown", "fp32"),  # cs336: ffma?
    ("fmhaSm100f…", "unknown", ""),  # the generator's kernel name itself is cut
    ("kernel_cutlass_kernel_flash_attncuteflash_fwd_sm100FlashAttentionForward…", "unknown", ""),  # …Combine may follow
    ("kernel_cutlass_kernel_flash_attncuteflash_fwd_sm100FlashAttentionForwardSm100…", "unknown", ""),  # class cut?
])
def test_cut_names(name, verdict, precision):
    c = classify(name)
    assert (c.tensor_core, c.precision) == (verdict, precision), c.reason
    if verdict == "unknown":
        assert c.rule == "cut-name" and "name cut short (by a console table's width" in c.reason
    else:
        assert c.rule != "cut-name" and KEPT in c.reason


def _labelled() -> list[tuple[str, str]]:
    return sorted({(lab.name, lab.truth) for labels in load_labels(LABELS_DIR).values() for lab in labels})


@pytest.mark.parametrize("family", ["xmma", "fmha", "flash"])
def test_no_cut_of_a_labelled_name_is_decided_wrong(family):
    """Every labelled kernel name of the family (benchmarks/labels: counter-verified and public), cut after each of its
    characters: the cut name is unknown or says what its whole name's label says — never the other verdict."""
    names = [(n, t) for n, t in _labelled() if family in n.lower()]
    assert len(names) >= 20
    decided = 0
    for name, truth in names:
        for end in range(3, len(name)):
            c = classify(name[:end] + "…")
            if c.tensor_core != "unknown":
                decided += 1
                assert c.tensor_core == truth, (name[:end] + "…", c.rule)
    assert decided > 0


@pytest.mark.skipif(not WILD3.is_dir(), reason="the shared fixtures' wild3 folder is absent")
def test_the_cut_names_of_the_wild3_console_tables():
    """vLLM's docs table (H100) cuts its four cuBLAS GEMMs after '_execute_segment_k_o': bf16 on tensor cores, 85% of
    the kernel time it lists, and the report says the names are cut. The B200 tables cut TensorRT-LLM's fmhaSm100
    attention and a CuTe DSL FlashAttention kernel after their names: tensor cores. What stays unknown would stay so
    whole, or its kernel name itself is cut (fused_add_rms_norm_kern…, a Triton kernel's op list, trtllm-gen bmm_…
    before '_sm100f', cuBLAS' sm80 fp32 GEMMs before the instruction slot)."""
    docs = {k.name: k for k in analyze(WILD3 / "vllm-docs-profiling-nsys-stats-h100.md").kernels}
    xmma = [k for n, k in docs.items() if n.startswith("sm90_xmma_gemm_")]
    assert len(xmma) == 4 and all(n.endswith("…") for n in (k.name for k in xmma))
    assert {(k.tensor_core, k.precision) for k in xmma} == {("yes", "bf16")}
    assert all(KEPT in k.reason and "_execute_split_k_kernel" in k.reason for k in xmma)
    assert round(sum(k.share for k in xmma), 3) == 0.852  # of the kernel time the table lists
    cut: dict[str, str] = {}
    for path in sorted(WILD3.glob("nsys-stats-*")) + [WILD3 / "vllm-docs-profiling-nsys-stats-h100.md"]:
        cut.update({k.name: k.tensor_core for k in analyze(path).kernels if k.name.endswith(("…", "..."))})
    assert len(cut) == 103 and {cut[FMHA], cut[CUTE_FA]} == {"yes"}
    fmha = [n for n in cut if n.startswith("fmhaSm100fKernel_Qkv")]
    assert len(fmha) == 8 and {cut[n] for n in fmha} == {"yes"}
    unknown = sorted(n[:22] for n, v in cut.items() if v == "unknown")  # 22 before
    assert unknown == ["bmm_Bfloat16_E4m3E4m3_", "bmm_E4m3_E4m3E4m3_Fp32", "sm80_xmma_gemm_f32f32_",
                       "sm80_xmma_gemm_f32f32_", "std::enable_if<T2>(int", "triton_poi_fused_add_a",
                       "void vllm::apply_repet", "void vllm::concat_and_", "void vllm::merge_attn_"]
