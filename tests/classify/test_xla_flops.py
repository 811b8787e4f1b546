"""FLOPs of XLA's kernels from its HLO dump (classify/xla_flops.py, issue 41): the figures of the H200 dumps
(tests/data/xla_dump) against the models' known shapes, launches counted per module, and the achieved TFLOP/s and
Achieved line of a report end to end."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.analyses.achieved import HOW, HOW_JAX, NONE_IN_DUMP
from nvprof_wrap.classify import xla_flops, xla_hlo
from nvprof_wrap.renderers import render
from tests._paths import H100_RUNS, RUNS
from tests.classify.test_xla_hlo import DUMPS, KJAX, MNIST, launched, run_folder

# jax's MNIST example: an fp32 MLP 784-1024-1024-10. The dumped jit_update is the one compiled for an epoch's last
# batch: 60000 images = 468 batches of 128 and one of 96.
BATCH, IN, HIDDEN, OUT = 96, 784, 1024, 10


def figures(folder: Path) -> dict[str, xla_flops.LaunchFlops]:
    return {f.kernel: f for f in xla_flops.scan(launched(folder), [folder])}


def test_the_mnist_first_layers_forward_dot_whatever_split_xla_made_of_it():
    got = figures(MNIST)
    # %gemm_fusion_dot.3 is the first layer's forward dot, split-K: f32[4,96,1024] of f32[96,4,196] (784 = 4 × 196)
    first = got["gemm_fusion_dot_3"]
    assert first.flops == 2 * BATCH * IN * HIDDEN
    assert (first.precision, first.hlo, first.module) == ("tf32", "gemm_fusion_dot.3", "module_121088.jit_update")
    assert first.program_id == 121088
    assert got["gemm_fusion_dot"].flops == 2 * IN * HIDDEN * BATCH  # its weights' gradient: f32[784,1024], K = 96
    assert got["gemm_fusion_dot_general_12"].flops == 2 * BATCH * HIDDEN * OUT  # the last layer's input gradient


def test_one_step_of_the_mlp_is_its_known_gemms_and_nothing_else():
    got = figures(MNIST)
    # forward and weight gradients of all three layers, input gradients of the last two (the images need none)
    step = 2 * BATCH * (2 * IN * HIDDEN + 3 * HIDDEN * HIDDEN + 3 * HIDDEN * OUT)
    assert sum(f.flops or 0 for f in got.values()) == step
    assert all(k.startswith("gemm_fusion") for k in got)  # loop and reduction fusions have no matrix FLOPs
    assert {f.precision for f in got.values()} == {"tf32"}


def test_the_bf16_transformers_projections():
    got = figures(KJAX)
    tokens, width = 32 * 256, 512  # workloads/keras_transformer.py: batch 32 × 256 tokens, width 512, MLP 4 × width
    assert got["gemm_fusion_dot_37"].flops == 2 * tokens * width * width
    assert got["gemm_fusion_dot_14"].flops == 2 * tokens * 4 * width * width
    assert {f.precision for f in got.values()} == {"bf16"}


def module(body: str, params: str) -> xla_hlo.Module:
    return xla_hlo.Module(f"%fused (p: f32[1]) -> f32[1] {{\n{params}\n  ROOT {body}\n}}\n\n"
                          "ENTRY %main () -> f32[1] {\n  ROOT %f = f32[1]{0} fusion(), kind=kCustom, calls=%fused\n}\n")


def test_a_convolution_and_shapes_that_are_not_known():
    conv = module("%c = f32[8,30,30,64]{3,2,1,0} convolution(%x, %w), window={size=3x3}, dim_labels=b01f_01io->b01f",
                  "  %x = f32[8,32,32,16]{3,2,1,0} parameter(0)\n  %w = f32[3,3,16,64]{3,2,1,0} parameter(1)")
    assert xla_flops.instruction_flops(conv, "f") == 2 * 8 * 30 * 30 * 64 * (3 * 3 * 16)
    dynamic = module("%d = f32[<=8,64]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                     "  %x = f32[<=8,16]{1,0} parameter(0)\n  %w = f32[16,64]{1,0} parameter(1)")
    assert xla_flops.instruction_flops(dynamic, "f") is None
    assert xla_flops.instruction_flops(dynamic, "x") is None  # no fusion


def fig(module: str, flops: float | None, kernel: str = "gemm_fusion_dot_3") -> xla_flops.LaunchFlops:
    return xla_flops.LaunchFlops(kernel, module, "gemm_fusion_dot.3", flops, "tf32")


def by_op(rows):
    return {r.op: (r.flops, r.launches, r.total_ns) for _cid, r in rows}


def test_launches_take_the_figure_of_the_module_whose_execution_range_holds_them():
    figs = [fig("module_14586.jit_update", 128.0), fig("module_121088.jit_update", 96.0)]
    kernels = [(1, 7, "gemm_fusion_dot_3", 10, 1000), (1, 7, "other", 5, 50)]
    scoped = [(1, 7, "XlaModule:#hlo_module=jit_update,program_id=14586#", "gemm_fusion_dot_3", 8, 800),
              (1, 7, "XlaModule:#hlo_module=jit_update,program_id=121088#", "gemm_fusion_dot_3", 1, 90),
              (1, 7, "XlaModule:#hlo_module=jit_update,program_id=5#", "gemm_fusion_dot_3", 1, 110)]
    got = by_op(xla_flops.per_capture(figs, kernels, scoped))
    # the launch of a module the dump lacks gets no figure, nor does a name the dump does not launch
    assert got == {"xla:module_14586.jit_update": (1024.0, 8, 800), "xla:module_121088.jit_update": (96.0, 1, 90)}


def test_launches_outside_xlas_ranges_only_where_every_module_agrees():
    kernels = [(1, None, "gemm_fusion_dot_3", 4, 400)]
    differ = [fig("module_14586.jit_update", 128.0), fig("module_121088.jit_update", 96.0)]
    assert xla_flops.per_capture(differ, kernels, []) == []
    alike = [fig("module_14586.jit_update", 96.0), fig("module_121088.jit_update", 96.0)]
    assert by_op(xla_flops.per_capture(alike, kernels, [])) == {
        "xla:module_121088.jit_update (and 1 more module(s) alike)": (384.0, 4, 400)}
    assert xla_flops.per_capture([fig("module_1.jit_f", None)], kernels, []) == []  # its instructions differ


# -- a report, end to end ------------------------------------------------------------------------------------------

def test_a_run_folder_with_xla_dumps_says_its_achieved_tflops(tmp_path, capsys):
    rep = analyze(run_folder(tmp_path), health=False)
    launches = {k.name: k for k in rep.kernels}
    bf16, tf32 = rep.achieved["bf16"], rep.achieved["tf32"]
    assert bf16.flops == launches["gemm_fusion_dot_37"].launches * 2 * 8192 * 512 * 512
    assert bf16.seconds == launches["gemm_fusion_dot_37"].total_ns / 1e9
    assert tf32.flops == launches["gemm_fusion_dot_3"].launches * 2 * BATCH * IN * HIDDEN + launches[
        "gemm_fusion_dot_general_12"].launches * 2 * BATCH * HIDDEN * OUT
    assert bf16.peak_tflops and tf32.peak_tflops  # the H200's tensor-core rates
    assert {k.name for k in rep.achieved_kernels} == {"gemm_fusion_dot_37", "gemm_fusion_dot_3",
                                                      "gemm_fusion_dot_general_12"}  # fusion_23 has no dot
    assert rep.xla_modules == 2
    text = render("table", rep)
    assert "Achieved (the ops' FLOPs" in text and "bf16" in text and "torch.profiler" not in text
    data = json.loads(render("json", rep))
    assert data["xla_modules"] == 2 and data["achieved"]["bf16"]["flops"] == bf16.flops


def test_a_store_kept_between_reports_keeps_no_figure_of_a_dump_it_is_not_given(tmp_path):
    run = run_folder(tmp_path, dumps=False)
    store = tmp_path / "s.sqlite"
    assert analyze(run, health=False, xla_dump=[KJAX], store=store).achieved
    again = analyze(run, health=False, store=store)
    assert again.achieved is None and again.xla_modules is None
    assert "xla_modules" not in json.loads(render("json", again))


JAX = RUNS / "jax_mnist_nsys"


@pytest.mark.parametrize("dump, said", [(None, HOW_JAX), (MNIST, NONE_IN_DUMP)])
def test_a_jax_run_without_flops_is_told_its_own_way(dump, said):
    rep = analyze(JAX, health=False, xla_dump=dump)
    assert rep.achieved is None  # its steps' kernels ran inside CUDA graphs
    text = " ".join(render("table", rep).split())
    assert said in text and HOW not in text and ("--xla_dump_to" in text) == (dump is None)


# -- cuBLAS's GEMMs of XLA's custom calls --------------------------------------------------------------------------
# jax's MNIST example computes its accuracy after each epoch with jax.numpy outside jit: one jit_dot module per
# layer and data set, whole (tests/data/xla_dump/xla_mnist_dot). XLA gives the two wide layers' dots to cuBLAS
# (custom-call.1, __cublas$lt$matmul), the narrow last layer's to a Triton GEMM fusion. The capture
# (jax_mnist_eval.nsys.sqlite.gz) is one epoch's end and accuracy, run outside CUDA graphs: each custom call's
# kernels inside XLA's range of its thunk.
DOTS, EVAL = DUMPS / "xla_mnist_dot", DUMPS / "jax_mnist_eval.nsys.sqlite.gz"
TRAIN, TEST = 60000, 10000
CUBLAS = {226266: 2 * TRAIN * IN * HIDDEN, 242806: 2 * TRAIN * HIDDEN * HIDDEN,
          288450: 2 * TEST * IN * HIDDEN, 306312: 2 * TEST * HIDDEN * HIDDEN}


def test_a_cublas_custom_calls_flops_from_its_shapes_and_dimension_numbers():
    modules = xla_flops.xla_hlo.by_program({*CUBLAS, 258020, 322848, 1}, [DOTS])
    assert set(modules) == {*CUBLAS, 258020, 322848}  # a program the dump lacks is not there
    for program, flops in CUBLAS.items():
        prefix, module, _folder = modules[program]
        assert prefix == f"module_{program}.jit_dot"
        assert xla_flops.custom_call_flops(module, "custom-call.1") == flops
        answer = module.answer("custom-call.1")
        assert answer is not None and answer.precision == "tf32"  # f32 at DEFAULT precision
        assert xla_flops.custom_call_flops(module, "a.1") is None  # a parameter
    # the last layer's dot is a Triton fusion, not a custom call: counted as a fusion's
    assert xla_flops.custom_call_flops(modules[258020][1], "gemm_fusion_dot_general.1") is None


def test_a_dump_trimmed_of_its_backend_configs_gives_no_cublas_figure():
    prefix, module, _folder = xla_flops.xla_hlo.by_program({15251}, [KJAX])[15251]
    assert prefix == "module_15251.jit_train_step"
    call = module.computations[module.where["custom-call.10"]]["custom-call.10"]
    assert call.first == (1536, 8192) and call.dims is None  # the result of (bf16[1536,8192], s8[33554432] workspace)
    assert xla_flops.custom_call_flops(module, "custom-call.10") is None  # no dot_dimension_numbers in it: no guess


def test_a_custom_call_on_an_element_of_a_multi_output_fusion_has_its_shape_and_type():
    # jax's MNIST step (tests/data/h100_runs/jax_mnist_cublas_graphs_nsys): %custom-call.12's lhs is
    # '%input_reduce_select_fusion.1#1', element 1 (f32[128,1024]) of that fusion's (f32[1024], f32[128,1024])
    dump = H100_RUNS / "jax_mnist_cublas_graphs_nsys" / "xla-dump"
    module = xla_hlo.by_program({14586}, [dump])[14586][1]
    assert xla_flops.custom_call_flops(module, "custom-call.12") == 2 * 128 * 1024 * 1024
    answer = module.answer("custom-call.12")
    assert answer is not None and (answer.tensor_core, answer.precision) == ("yes", "tf32")


def thunk(program: int, hlo: str = "custom-call.1") -> tuple[str, str]:
    return (f"XlaModule:#hlo_module=jit_dot,program_id={program}#",
            f"Thunk:#name=jit(dot)/dot_general,hlo_op={hlo},unique_hlo_op_id=4294967298#")


def test_each_thunks_flops_go_to_the_kernels_inside_its_range():
    rows = [(1, 7, *thunk(226266), "gemm", 3, 300), (1, 7, *thunk(226266), "splitKreduce_kernel", 3, 100),
            (1, 7, *thunk(5), "gemm", 1, 10),  # a module the dump lacks
            (1, 7, *thunk(242806, "b.1"), "gemm", 1, 10),  # an instruction that is no custom call
            (1, 7, "XlaModule:#hlo_module=gemm_fusion_dot.3#", "Thunk:#hlo_op=custom-call.1#", "gemm", 9, 90)]
    got = {r.name: (r.op, r.precision, r.flops, r.launches, r.total_ns) for _c, r in xla_flops.per_thunk([DOTS], rows)}
    # three executions (the most launches of one kernel), split by the kernels' time; the autotuner's range is no
    # module's execution
    total = 3 * CUBLAS[226266]
    assert got == {"gemm": ("xla:module_226266.jit_dot %custom-call.1", "tf32", total * 0.75, 3, 300),
                   "splitKreduce_kernel": ("xla:module_226266.jit_dot %custom-call.1", "tf32", total * 0.25, 3, 100)}


def test_an_accuracy_pass_says_cublass_achieved_tflops():
    rep = analyze(EVAL, health=False, xla_dump=[DOTS])
    rates = {k.name: k for k in rep.achieved_kernels}
    wide = ("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x256x32_warpgroupsize1x1x1_execute_segment_k_off_"
            "kernel__5x_cublas")
    narrow = wide.replace("64x256x32", "128x128x32")
    assert rates[wide].flops == CUBLAS[226266] + CUBLAS[242806]  # the training set's two wide layers, once each
    assert rates[narrow].flops == CUBLAS[288450] + CUBLAS[306312]  # the test set's
    assert rates["gemm_fusion_dot_general_1"].flops == 2 * (TRAIN + TEST) * HIDDEN * OUT
    launches = {k.name: k for k in rep.kernels}
    assert rates[wide].seconds == launches[wide].total_ns / 1e9 and launches[wide].launches == 2
    tf32 = rep.achieved["tf32"]
    assert tf32.flops == sum(CUBLAS.values()) + 2 * (TRAIN + TEST) * HIDDEN * OUT
    assert tf32.peak_tflops and 0.3 * tf32.peak_tflops < rates[wide].tflops < tf32.peak_tflops  # 350 of 494.7
    # its steps (jit_update) ran as CUDA graphs, their math untraced: the accuracy pass's FLOPs make no MFU
    assert rep.mfu is None
    # without the dump: no figure, and the way to get one
    assert analyze(EVAL, health=False).achieved is None
