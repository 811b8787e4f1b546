"""The FLOPs of cuDNN's convolutions that XLA calls (``__cudnn$convBiasActivationForward``, ``…BackwardInput``,
``…BackwardFilter``: classify/xla_flops.py conv_flops) and of its fused attention (``__cudnn$fmhaSoftmax``,
``…Backward``: attention_flops, last test), and the name rule of cuDNN's direct convolution engine —
on Keras's examples/demo_mnist_convnet.py, unmodified, on Keras's JAX backend on an H100 (synthetic MNIST:
benchmarks/gpu/keras_synthetic_mnist.py; `RUNS=kcnn bash benchmarks/gpu/xla_graph_gemms.sh`): float32 as XLA runs it
and with command buffers off, and under mixed_bfloat16; steps 20..23 of each, with the train step's dump.

The model's convolutions, per batch of 128 (counted by hand from its layers): the first, 3×3 from 1 channel to 32 on
28×28 → 26×26, 2 × 128·26·26·32 × 9 = 49,840,128 FLOPs forward and as many for its filter's gradient (no gradient of
the input images); the second, 3×3 from 32 channels to 64 on 13×13 → 11×11, 2 × 128·11·11·64 × 288 = 570,949,632
forward, for its filter's gradient and for its input's: 1,812,529,152 a step. The dense layer's three GEMMs (XLA's
Triton fusions, counted before) add 3 × 2 × 128·1600·10 = 12,288,000.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.classify import classify, xla_flops, xla_hlo
from nvprof_wrap.store import Store
from tests._ncu_truth import raw_truth
from tests._paths import H100_RUNS
from tests._xla_dump import with_dump

PROGRAM = 7953  # module_7953.jit_train_step: the train step for batches of 128 in each run
STEPS = 4
CONV1, CONV2 = 49_840_128, 570_949_632
CONVS = 2 * CONV1 + 3 * CONV2  # 1,812,529,152
DENSE = 12_288_000
NCU = H100_RUNS / "keras_jax_convnet_ncu"


@pytest.mark.parametrize("run", ["graphs", "bf16_graphs"])
def test_each_cudnn_convolution_call_gets_its_forward_convolutions_flops(run: str, tmp_path: Path) -> None:
    folder = with_dump(H100_RUNS / f"keras_jax_convnet_{run}_nsys", tmp_path)
    _prefix, module, _path = xla_hlo.by_program({PROGRAM}, [folder / "xla-dump"])[PROGRAM]
    assert {h: xla_flops.custom_call_flops(module, h) for h in (
        "cudnn-conv-bias-activation.6", "cudnn-conv-bw-filter.2",  # the first convolution: forward, filter
        "cudnn-conv-bias-activation.7", "cudnn-conv-bw-filter.3", "cudnn-conv-bw-input.1")} == {
        "cudnn-conv-bias-activation.6": CONV1, "cudnn-conv-bw-filter.2": CONV1,
        "cudnn-conv-bias-activation.7": CONV2, "cudnn-conv-bw-filter.3": CONV2, "cudnn-conv-bw-input.1": CONV2}


def test_a_keras_convnet_on_jax_gets_every_convolutions_flops(tmp_path: Path) -> None:
    # float32 as XLA runs it: every convolution's launches ran the same number of times as its other kernels. Before
    # conv_flops only the dense layer's GEMMs had FLOPs (49,152,000 over the 4 steps, 3.3% of kernel time)
    rep = analyze(with_dump(H100_RUNS / "keras_jax_convnet_graphs_nsys", tmp_path), health=False)
    assert rep.series is not None and rep.series.marked == STEPS
    assert sum(a.flops for a in rep.achieved.values()) == STEPS * (CONVS + DENSE)
    # the tf32 convolutions cuDNN ran without tensor cores (its direct engine and wgrad_alg0 for the first layer's
    # one input channel) ran in fp32 (achieved.ran_as): counted as tf32, under half the tf32 time was on tensor
    # cores, and there was no tf32 peak and no MFU
    assert rep.achieved["tf32"].tensor_core_share > 0.85 and rep.achieved["fp32"].tensor_core_share == 0.0
    assert {k.name.split("<")[0] for k in rep.achieved_kernels if k.precision == "fp32"} == {
        "void convolve_common_engine_float_NHWC", "void wgrad_alg0_engine_NHWC"}
    assert rep.achieved["fp32"].flops == STEPS * 2 * CONV1  # the first convolution's forward pass and filter
    assert rep.mfu is not None and (rep.mfu.precision, rep.mfu.flops_per_step) == ("tf32", CONVS + DENSE)
    # the steps are Keras's batches; XLA executed the train step's program only inside them: its FLOPs are a step's
    # (timeline/window.py _inside), not every FLOP of the capture
    assert rep.series is not None and rep.series.source == "keras batches"
    assert rep.mfu.program == rep.series.program == f"jit_train_step#{PROGRAM}"
    # mixed_bfloat16: the same convolutions in bf16 (the dense layer's first GEMM pads 1,600 to 1,664: XLA's)
    rep = analyze(with_dump(H100_RUNS / "keras_jax_convnet_bf16_graphs_nsys", tmp_path), health=False)
    assert rep.mfu is not None and rep.mfu.precision == "bf16"
    assert rep.mfu.flops_per_step == CONVS + 2 * 4_096_000 + 2 * 128 * 1664 * 10
    assert rep.achieved["bf16"].coverage > 0.45  # of the kernel time: the rest elementwise (3.1% before)


@pytest.mark.parametrize("run", ["nographs", "graphs_transforms"])
def test_a_call_whose_kernels_ran_unequal_times_counts_the_runs_its_modules_kernel_thunks_give(
        run: str, tmp_path: Path) -> None:
    # with command buffers off cuDNN ran the first convolution as nchwToNhwcKernel twice (the images and the
    # filter) and one GEMM each execution: 8 launches and 4 under one call's thunk ranges; so did it with them on in
    # a second run (graphs_transforms: convolutions run outside XLA's command buffers). The most launches of one
    # name made 8 executions (twice its FLOPs), and a helper run once in all would make them too few: the launches
    # alone do not tell. The call is in the module's ENTRY computation, which runs once an execution, as its fusions'
    # kernel thunks (4 launches each) count: 4 executions, its FLOPs shared by its three kernels by their time. The
    # second run had no MFU before (FLOPs for too little of its tensor-core time), the first neither
    folder = with_dump(H100_RUNS / f"keras_jax_convnet_{run}_nsys", tmp_path)
    rep = analyze(folder, health=False)
    assert sum(a.flops for a in rep.achieved.values()) == STEPS * (CONVS + DENSE)
    # the call's GEMM lists its FLOPs whole: its transforms' shares are its (achieved.per_kernel)
    first = [k for k in rep.achieved_kernels if k.name.startswith("sm80_xmma_fprop_implicit_gemm_indexed_wo_smem")]
    assert [k.flops for k in first] == [STEPS * CONV1]
    assert rep.mfu is not None and rep.mfu.flops_per_step == CONVS + DENSE
    calls = _calls(folder, tmp_path)
    assert round(sum(f for (h, _n), f in calls.items() if h == "cudnn-conv-bias-activation.6")) == STEPS * CONV1
    assert sorted(n.split("<")[0].split("_tf32")[0] for (h, n) in calls if h == "cudnn-conv-bias-activation.6") == [
        "sm80_xmma_fprop_implicit_gemm_indexed_wo_smem", "void cudnn::engines_precompiled::nchwToNhwcKernel"]


def test_where_the_modules_kernel_thunks_disagree_a_call_whose_kernels_ran_unequal_times_gets_no_figure(
        tmp_path: Path) -> None:
    # a capture that cut one of the module's executions short (one fusion's launch missing) leaves its kernel thunks
    # without one count: the call with two transforms a run falls back on its launches, which do not agree — no
    # figure; the calls whose kernels agree keep theirs
    folder = with_dump(H100_RUNS / "keras_jax_convnet_nographs_nsys", tmp_path)
    calls = _calls(folder, tmp_path, cut="loop_broadcast_fusion_1")
    assert not any(h == "cudnn-conv-bias-activation.6" for h, _n in calls)
    assert round(sum(f for (h, _n), f in calls.items() if h == "cudnn-conv-bias-activation.7")) == STEPS * CONV2


def _calls(folder: Path, tmp_path: Path, cut: str | None = None) -> dict[tuple[str, str], float]:
    """(custom call, kernel name) → FLOPs of the capture's library kernels (classify/xla_flops.per_thunk) from the
    store's own rows; cut: a kernel whose thunk's launches are one fewer, as if the capture ended inside a run."""
    store_path = tmp_path / f"{folder.name}.{cut}.store.sqlite"
    analyze(folder, store=store_path, health=False)
    store = Store(store_path)
    try:
        thunks = [(c, p, m, t, n, k - 1 if n == cut else k, ns)
                  for c, p, m, t, n, k, ns in store.launches_in_xla_thunks()]
        assert cut is None or any(n == cut for *_r, n, _k, _ns in thunks)
        rows = xla_flops.per_thunk([folder / "xla-dump"], thunks, store.launches_in_xla_graphs())
        return {(r.op.split(" %")[1], r.name): r.flops for _cid, r in rows}
    finally:
        store.conn.close()


def test_cudnns_direct_convolution_engine_runs_no_matrix_instruction_and_the_name_rule_agrees() -> None:
    # ncu on the H100 (benchmarks/gpu/ncu_cudnn_convs.sh: the same job under Nsight Compute; JAX ends in a segfault
    # under ncu 2025.3.1 after some kernels, so the float32 CSV holds the first epoch's first convolutions and XLA's
    # autotuning of them, the bf16 one a single kernel): convolve_common_engine_float_NHWC's only tensor-pipe
    # instructions are HFMA2.MMA, its math FFMA. It was "unknown" (no rule matched: 10.7% of the bf16 run's time)
    truth: dict[str, str] = {}
    hfma2_only: set[str] = set()
    for csv in ("ncu_float32", "ncu_mixed_bfloat16"):
        with gzip.open(NCU / f"{csv}.csv.gz", "rt") as f:
            t, h = raw_truth(f.read().splitlines())
        truth |= t
        hfma2_only |= h
    engines = {n for n in truth if "convolve_common_engine" in n}
    assert len(engines) == 2 and {truth[n] for n in engines} == {"no"} and engines <= hfma2_only
    assert len(truth) == 12 and set(truth.values()) == {"yes", "no"}
    for name, verdict in truth.items():  # every kernel ncu measured here: the names say what the counters say
        assert classify(name).tensor_core == verdict, name
    assert {classify(n).rule for n in engines} == {"blas-engine"}


def test_cudnns_fused_attention_gets_flashattentions_count_with_command_buffers_and_without(tmp_path: Path) -> None:
    # the Keras transformer on JAX in bf16 (workloads/keras_transformer.py, steps 20..23; test_xla_graph_flops.py
    # reads its cuBLAS GEMMs): four causal self-attention layers of 8 heads of 64 over 256 tokens, batches of 32,
    # as cuDNN's flash attention custom calls. Forward 2·B·H·S·S·(D + Dv) halved for the causal mask, backward 2.5×
    # (as PyTorch's SDPA is counted: classify/flops.py): 30,064,771,072 a step; before, none, and the bf16 FLOPs
    # were the GEMMs' 2,473,901,162,496 alone
    fwd = 2 * 32 * 8 * 256 * 256 * (64 + 64) // 2
    attention = 4 * (fwd + fwd * 5 // 2)
    assert attention == 30_064_771_072
    for mode in ("graphs", "nographs"):
        folder = with_dump(H100_RUNS / f"keras_jax_transformer_{mode}_nsys", tmp_path / mode)
        _prefix, module, _path = xla_hlo.by_program({15251}, [folder / "xla-dump"])[15251]
        calls = [n for comp in module.computations.values() for n, i in comp.items()
                 if i.opcode == "custom-call" and "__cudnn$fmha" in i.attrs]
        assert sorted(xla_flops.custom_call_flops(module, n) for n in calls) == [fwd] * 4 + [fwd * 5 // 2] * 4
        rep = analyze(folder, health=False)
        assert rep.achieved["bf16"].flops == 2_473_901_162_496 + STEPS * attention
        assert {k.name.split("_wgmma")[0] for k in rep.achieved_kernels if "sdpa" in k.name} == {
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop", "cudnn_generated_fort_native_sdpa_sm90_flash_bprop"}
        assert rep.mfu is not None and rep.mfu.precision == "bf16"  # the attention was the matrix work left out


def test_around_an_epochs_end_the_steps_flops_are_the_train_programs_not_validations(tmp_path: Path) -> None:
    # steps 419..423 of the float32 job (command buffers on): the first epoch's last full batches, its last partial
    # batch of 112 images (jit_train_step recompiled: program 152102), Keras's validation (47 executions of
    # jit_test_step, compiled there, between batches 421 and 422) and the second epoch's first two batches
    rep = analyze(with_dump(H100_RUNS / "keras_jax_convnet_epoch_end_nsys", tmp_path), health=False)
    assert rep.series is not None and (rep.series.source, rep.series.marked) == ("keras batches", 5)
    # the warm-up ends at the train step's first execution: validation ran most often in the window, and everything
    # before its first execution — three train steps — had been left out as warm-up
    assert rep.warmup is not None and rep.warmup.program == "jit_train_step"
    # MFU: the train programs' FLOPs over the 5 steps — four batches of 128 and one of 112, counted by hand — not
    # the validation's forward passes besides (29.4 GFLOP of them: 4.3x the steps')
    partial = (2 * CONV1 + 3 * CONV2 + DENSE) * 112 // 128
    assert rep.mfu is not None and rep.mfu.program == rep.series.program == \
        f"jit_train_step#{PROGRAM} + jit_train_step#152102"
    assert rep.mfu.flops_per_step == round((4 * (CONVS + DENSE) + partial) / 5)
