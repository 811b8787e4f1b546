"""The FLOPs of cuBLAS's kernels that XLA ran inside CUDA graphs, from the node each ran in (readers/_xla_graphs.py,
classify/xla_flops.py per_graph_node) — checked against the same job run with XLA's command buffers off, where XLA's
NVTX range around each thunk says which custom call launched each kernel.

tests/data/h100_runs/jax_mnist_cublas_{graphs,nographs}_nsys: jax's MNIST example, unmodified, with
--xla_gpu_enable_triton_gemm=false (its dots as cuBLAS custom calls), under `nvprof-wrap run --backend nsys` on an
H100, as XLA runs it (its jitted step one CUDA graph) and with --xla_gpu_enable_command_buffer= (every thunk on its
own): benchmarks/gpu/xla_graph_gemms.sh; steps 100..109 of each, with the step module's dump (README beside them).
"""
from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.classify import xla_flops, xla_hlo
from nvprof_wrap.pipeline import evidence
from nvprof_wrap.readers import nsys_sqlite
from nvprof_wrap.renderers import render
from nvprof_wrap.store import Store
from tests._paths import H100_RUNS
from tests._xla_dump import with_dump

GRAPHS, NOGRAPHS = H100_RUNS / "jax_mnist_cublas_graphs_nsys", H100_RUNS / "jax_mnist_cublas_nographs_nsys"
PROGRAM = 14586  # the step module (module_14586.jit_update, batches of 128)
STEPS = 10


def _capture(folder: Path, tmp_path: Path) -> Path:
    """The run folder's capture, unpacked beside nothing else (the nsys reader reads a .sqlite)."""
    out = tmp_path / f"{folder.name}.sqlite"
    with gzip.open(folder / "nsys.sqlite.gz") as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def test_each_graph_kernel_has_its_place_in_the_step_modules_command_buffer(tmp_path: Path) -> None:
    nodes = nsys_sqlite.read(_capture(GRAPHS, tmp_path)).graph_nodes
    assert {(n.module, n.graph) for n in nodes} == {("XlaModule:#hlo_module=jit_update,program_id=14586#", 18)}
    assert {n.launches for n in nodes} == {STEPS}  # every node once per step
    (commands,) = xla_hlo.command_buffers(GRAPHS / "xla-dump", "module_14586.jit_update")
    own = {n.slot: n.name for n in nodes if n.child is None}
    assert own == {i: c.kernel for i, c in enumerate(commands) if c.kind == "kCustomKernel"}  # each of its fusions
    # the GEMMs' kernels ran in graphs of their own, in the nodes no kernel of the step's graph holds: each right after
    # its slot, a cuBLAS command (a split-K GEMM: its kernel and its reduction in one node)
    nested = {n.slot + 1 for n in nodes if n.child is not None}
    assert nested == {i for i, c in enumerate(commands) if c.kind == "kCublasLtMatmul"} and len(nested) == 8
    assert {n.child for n in nodes if n.child is not None} == set(range(23, 34))  # numbered after the graph's 23
    # run with command buffers off, nothing ran in a graph
    assert nsys_sqlite.read(_capture(NOGRAPHS, tmp_path)).graph_nodes == ()


def _custom_calls(folder: Path, tmp_path: Path, dump: Path | None = None) -> dict[tuple[str, str], tuple[float, int]]:
    """(custom call, kernel name) → (FLOPs, launches) of the capture's cuBLAS kernels, as the report counts them."""
    store_path = tmp_path / f"{folder.name}.store.sqlite"
    analyze(folder, store=store_path, health=False)
    store = Store(store_path)
    try:
        evidence.attach_flops(store, [dump or folder / "xla-dump"])
        return {(r["op"].split(" %")[1], r["name"]): (r["flops"], r["launches"]) for r in store.op_flops_rows()
                if " %" in r["op"]}
    finally:
        store.conn.close()


def test_a_gemm_in_a_cuda_graph_gets_the_flops_its_thunk_range_gives_it(tmp_path: Path) -> None:
    graphs, truth = _custom_calls(GRAPHS, tmp_path), _custom_calls(NOGRAPHS, tmp_path)
    assert len({call for call, _name in truth}) == 8  # the step's eight cuBLAS GEMMs
    # the same custom calls launched the same kernels, as often (the two dumps number them alike; cuBLAS chose other
    # tiles of the same kernels for three of them: their template arguments differ)
    assert _launched(graphs) == _launched(truth)
    per_call: dict[str, list[float]] = {}
    for (call, _name), (flops, _n) in graphs.items():
        per_call.setdefault(call, [0.0, 0.0])[0] += flops
    for (call, _name), (flops, _n) in truth.items():
        per_call[call][1] += flops
    for call, (got, want) in per_call.items():
        assert got == pytest.approx(want, rel=1e-12), call  # each call's FLOPs × its executions, exactly
    # what the user reads: a step's FLOPs are the MLP's (784-1024-1024-10, batches of 128): the forward pass, the
    # weights' gradients, and the inputs' gradients of the two upper layers, 2 x M x N x K each; and an MFU
    forward = 2 * 128 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
    step = 2 * forward + 2 * 128 * (1024 * 1024 + 1024 * 10)
    with_graphs, without = analyze(GRAPHS, health=False), analyze(NOGRAPHS, health=False)
    for rep in (with_graphs, without):
        assert sum(a.flops for a in rep.achieved.values()) == STEPS * step
        # one GEMM (the last layer's, 2 x 128 x 1024 x 10) ran on cuBLAS's FFMA kernel, without tensor cores: in
        # fp32 (analyses/achieved.ran_as), the rest tf32 on tensor cores
        assert set(rep.achieved) == {"tf32", "fp32"} and rep.achieved["fp32"].flops == STEPS * 2 * 128 * 1024 * 10
        assert rep.achieved["fp32"].tensor_core_share == 0.0
        assert rep.mfu is not None and rep.mfu.flops_per_step == step
    assert with_graphs.achieved["tf32"].coverage == pytest.approx(without.achieved["tf32"].coverage, abs=0.01)


def test_a_dump_whose_command_buffers_are_not_the_graphs_gives_no_figure(tmp_path: Path) -> None:
    # the run without command buffers compiled the same module: its dump has no command buffer, so no graph of the
    # capture is one of its modules' — no FLOPs are guessed for the graph's cuBLAS kernels
    assert _custom_calls(GRAPHS, tmp_path, dump=NOGRAPHS / "xla-dump") == {}


def _launched(calls: dict[tuple[str, str], tuple[float, int]]) -> dict[str, list[tuple[str, int]]]:
    """Each custom call's kernels (their names without template arguments or parameters) and launches."""
    out: dict[str, list[tuple[str, int]]] = {}
    for (call, name), (_flops, launches) in calls.items():
        out.setdefault(call, []).append((re.sub(r"^void |<.*|\(.*", "", name), launches))
    return {call: sorted(kernels) for call, kernels in out.items()}


def _graph(rows: list[tuple[int, int | None, str]], commands: tuple[xla_hlo.Command, ...],
           monkeypatch: pytest.MonkeyPatch) -> dict[str, set[str]]:
    """per_graph_node's custom calls → kernel names of one graph (rows: slot, nested node, name), on commands."""
    monkeypatch.setattr(xla_hlo, "command_buffers", lambda folder, prefix: [commands])
    grouped: xla_flops.Grouped = {}
    modules = xla_hlo.by_program({PROGRAM}, [GRAPHS / "xla-dump"])
    xla_flops.per_graph_node({(1, 7, PROGRAM, 18): [(s, c, name, STEPS, 100) for s, c, name in rows]}, modules,
                             grouped)
    return {hlo: set(names) for (_c, _p, _program, hlo), names in grouped.items()}


def test_nested_kernels_after_several_library_calls_are_placed_only_where_they_can_be(
        monkeypatch: pytest.MonkeyPatch) -> None:
    k, gemm = (lambda name: xla_hlo.Command("kCustomKernel", name, name)), \
        (lambda hlo: xla_hlo.Command("kCublasLtMatmul", "kCublasLtMatmul", hlo))
    two = (k("a"), gemm("g1"), gemm("g2"), k("b"))
    own = [(0, None, "a"), (3, None, "b")]
    # one nested node per call: each call its own, in node order
    assert _graph(own + [(0, 10, "x"), (0, 11, "y")], two, monkeypatch) == {"g1": {"x"}, "g2": {"y"}}
    # three nested nodes for two calls (a split-K GEMM beside a plain one): which is whose is unknown
    assert _graph(own + [(0, 10, "x"), (0, 11, "y"), (0, 12, "z")], two, monkeypatch) == {}
    # a kernel of the graph's own that is not its command's kernel: the graph is not this command buffer
    assert _graph([(0, None, "a"), (3, None, "c"), (0, 10, "x"), (0, 11, "y")], two, monkeypatch) == {}
    # a nested kernel whose slot is followed by a kernel command: no call of a library there
    assert _graph(own + [(3, 10, "x")], two, monkeypatch) == {}


def test_a_library_call_in_a_graph_ran_once_per_launch_of_its_graph_however_many_nodes_it_has(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # cuDNN's convolution launched as two layout transforms (one kernel name, two nodes) and a GEMM: 2 × and 1 × the
    # graph's launches by name, but each node ran once a launch — the call ran STEPS times, not twice that
    monkeypatch.setattr(xla_hlo, "command_buffers", lambda folder, prefix: [(
        xla_hlo.Command("kCustomKernel", "a", "a"), xla_hlo.Command("kCuDnn", "kCuDnn", "conv"),
        xla_hlo.Command("kCustomKernel", "b", "b"))])
    grouped: xla_flops.Grouped = {}
    executions: xla_flops.Executions = {}
    rows = [(0, None, "a"), (2, None, "b"), (0, 10, "nchwToNhwc"), (0, 11, "nchwToNhwc"), (0, 12, "fprop")]
    xla_flops.per_graph_node({(1, 7, PROGRAM, 18): [(s, c, name, STEPS, 100) for s, c, name in rows],
                              (1, 7, PROGRAM, 19): [(s, c, name, 1, 100) for s, c, name in rows]},
                             xla_hlo.by_program({PROGRAM}, [GRAPHS / "xla-dump"]), grouped, None, executions)
    assert grouped[(1, 7, PROGRAM, "conv")] == {"nchwToNhwc": (2 * STEPS + 2, 400), "fprop": (STEPS + 1, 200)}
    assert executions == {(1, 7, PROGRAM, "conv"): STEPS + 1}  # summed over the graphs it ran in


def test_a_job_of_more_steps_than_a_series_keeps_still_gets_its_mfu(monkeypatch: pytest.MonkeyPatch) -> None:
    # a whole MNIST run holds 4,690 steps: its series merges them (3 a row). Its MFU is the same step's FLOPs (the
    # capture's over the steps it marks, one by one) over the mean step (the budget's, of one step)
    from nvprof_wrap.timeline import series
    monkeypatch.setattr(series, "MAX_STEPS", 4)  # ten steps: rows of three
    rep = analyze(GRAPHS, health=False)
    assert rep.series is not None and (rep.series.folded, rep.series.marked, len(rep.series.rows)) == (3, STEPS, 4)
    forward = 2 * 128 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
    assert rep.mfu is not None and rep.mfu.flops_per_step == 2 * forward + 2 * 128 * (1024 * 1024 + 1024 * 10)
    budget = rep.time_budget
    assert budget is not None and rep.mfu.step_s == budget.step_s
    assert (budget.steps, budget.first, budget.last) == (6, 3, 8)  # rows 1 and 2: the first and the last left out


EPOCH_END = H100_RUNS / "jax_mnist_cublas_epoch_end_nsys"  # steps 464..473: the first epoch's end (the same job)


def test_mfu_counts_the_step_programs_own_flops_not_the_accuracy_pass_between_steps() -> None:
    # at each epoch's end jax's MNIST example runs its accuracy pass (predict on 60,000 + 10,000 images, op by op:
    # eager programs of their own, jit_dot …) and trains on the epoch's last 96 images (jit_update recompiled: program
    # 60208), all inside one step's window. MFU's FLOPs a step are the step program's own (jit_update, program 14586,
    # whose executions are the steps), over its executions: the MLP's step, as mid-epoch (it read 22x that)
    rep = analyze(EPOCH_END, health=False)
    forward = 2 * 128 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
    step = 2 * forward + 2 * 128 * (1024 * 1024 + 1024 * 10)
    assert rep.series is not None and (rep.series.program, rep.series.marked) == (f"jit_update#{PROGRAM}", STEPS)
    assert rep.mfu is not None and (rep.mfu.flops_per_step, rep.mfu.program) == (step, f"jit_update#{PROGRAM}")
    every = sum(a.flops for a in rep.achieved.values())
    assert every > 20 * STEPS * step  # the capture's FLOPs: the accuracy pass's most of them
    budget = rep.time_budget
    assert budget is not None and rep.mfu.step_s == budget.step_s
    assert rep.mfu.mfu == round(step / budget.step_s / 1e12 / rep.mfu.peak_tflops, 4)
    # the same figure where no other program ran between the steps (mid-epoch)
    mid = analyze(GRAPHS, health=False)
    assert mid.mfu is not None and mid.mfu.flops_per_step == step and mid.mfu.program == f"jit_update#{PROGRAM}"


def test_keras_on_jax_gemms_get_the_same_flops_with_command_buffers_and_without(tmp_path: Path) -> None:
    # the Keras transformer on Keras's JAX backend in bf16 (workloads/keras_transformer.py, steps 20..23), as XLA
    # runs it (its train step CUDA graphs) and with command buffers off. Without graphs each cuBLAS call runs in
    # XLA's thunk range inside its execution range — inside Keras's batch range ('train batch N'), which was the
    # launches' scope, so no thunk was found in an execution range and the calls had no FLOPs (bf16 0.96 of 2.47
    # TFLOP, no tf32). The batch marks no scope now: both runs give every call's FLOPs, to the FLOP
    got = {}
    for mode in ("graphs", "nographs"):
        rep = analyze(with_dump(H100_RUNS / f"keras_jax_transformer_{mode}_nsys", tmp_path), health=False)
        got[mode] = {p: (a.flops, a.kernels) for p, a in rep.achieved.items()}
        assert rep.series is not None and rep.series.source == "keras batches" and rep.series.marked == 4
        assert {s.op.split(",")[0] for s in rep.scopes} >= {"XlaModule:#hlo_module=jit_train_step"}
        assert not any(s.op.startswith("train batch") for s in rep.scopes)
    assert got["graphs"] == got["nographs"]
    # the GEMMs' 2,473,901,162,496 bf16 and cuDNN's attention's 120,259,084,288 (test_xla_cudnn_flops.py; 14
    # kernels with its own), the float32 logits head's tf32
    assert got["nographs"] == {"bf16": (2_594_160_246_784, 14), "tf32": (824_633_720_832, 3)}


def test_a_dump_without_thunk_files_says_its_graphs_library_calls_have_no_flops(tmp_path: Path) -> None:
    # an XLA that writes no thunk_sequence_after_thunk_passes.txt / thunk_metadata.txt (older ones): the Keras
    # transformer's dump with those files removed. Its graphs' cuBLAS and cuDNN calls cannot be placed, so they have
    # no FLOPs — which the report said only through a lower coverage; it names the module now, and a dump with the
    # files says nothing
    folder = with_dump(H100_RUNS / "keras_jax_transformer_graphs_nsys", tmp_path / "old")
    for name in ("thunk_sequence_after_thunk_passes.txt", "thunk_metadata.txt"):
        (folder / "xla-dump" / f"module_15251.jit_train_step.{name}").unlink()
    whole = analyze(with_dump(H100_RUNS / "keras_jax_transformer_graphs_nsys", tmp_path / "new"), health=False)
    rep = analyze(folder, health=False)
    assert whole.xla_without_thunks is None and "xla_without_thunks" not in whole.to_dict()
    assert rep.xla_without_thunks == ("module_15251.jit_train_step",)
    assert rep.to_dict()["xla_without_thunks"] == ["module_15251.jit_train_step"]
    # what is left: XLA's own GEMM fusions (Triton's, named after their instruction: no thunk file needed)
    assert {k.name for k in rep.achieved_kernels} == {f"gemm_fusion_dot_{n}" for n in (12, 14, 36, 37)}
    assert {p: a.flops for p, a in rep.achieved.items()} == {"bf16": 893_353_197_568}
    assert sum(a.flops for a in whole.achieved.values()) == 2_594_160_246_784 + 824_633_720_832
    for fmt in ("table", "markdown", "html"):
        said = " ".join(render(fmt, rep).replace("\\", "").split())  # Markdown escapes . and _
        assert "no FLOPs for the cuBLAS and cuDNN calls in the CUDA graphs of module_15251.jit_train_step" in said, fmt
        assert "no FLOPs for the cuBLAS" not in render(fmt, whole), fmt


def test_a_module_is_named_when_any_of_its_graphs_ran_a_library_call(tmp_path: Path) -> None:
    # the Keras transformer's one step graph (id 112), and the same graph's own kernels again as a graph of a lower
    # id without library calls (a module's graphs are met in id order): the module is named from whichever of its
    # graphs ran one — looking at its first graph only missed it
    folder = with_dump(H100_RUNS / "keras_jax_transformer_graphs_nsys", tmp_path)
    for name in ("thunk_sequence_after_thunk_passes.txt", "thunk_metadata.txt"):
        (folder / "xla-dump" / f"module_15251.jit_train_step.{name}").unlink()
    analyze(folder, store=tmp_path / "s.sqlite", health=False)
    store = Store(tmp_path / "s.sqlite")
    try:
        nodes = store.launches_in_xla_graphs()
    finally:
        store.conn.close()
    assert {graph for _c, _p, _m, graph, *_ in nodes} == {112}
    plain = [(c, p, m, 1, slot, child, name, n, ns) for c, p, m, _g, slot, child, name, n, ns in nodes if child is None]
    for rows in (nodes, plain + nodes):
        without: list[str] = []
        xla_flops.per_thunk([folder / "xla-dump"], [], rows, without)
        assert without == ["module_15251.jit_train_step"]
    without = []
    xla_flops.per_thunk([folder / "xla-dump"], [], plain, without)
    assert without == []  # no library call in any graph: nothing unplaced
