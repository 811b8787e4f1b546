"""FLOPs per kernel name from a torch.profiler trace's recorded op shapes (readers/_kineto_flops.py, model.OpFlops):
real H200 traces recorded with record_shapes=True (tests/data/h200_runs/kineto_*_shapes), public traces from the
shared fixtures, and hand-made traces for what no real one holds (hostile arguments)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from nvprof_wrap import readers
from nvprof_wrap.pipeline.ingest import ingest
from nvprof_wrap.store import Store
from nvprof_wrap.timeline.window import Window
from tests._paths import PUBLIC, RUNS, WILD

MATMUL = RUNS / "kineto_matmul_bf16_shapes" / "matmul.pt.trace.json.gz"
GPT_BF16 = RUNS / "kineto_gpt_bf16_shapes" / "bf16.pt.trace.json.gz"
GPT_FP32 = RUNS / "kineto_gpt_fp32_shapes" / "fp32.pt.trace.json.gz"
H200_BF16_DENSE_TFLOPS = 989.4  # NVIDIA H200 SXM datasheet: 1,979 TFLOP/s bf16 with sparsity, half that dense


def events(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        data = json.load(f)
    return data["traceEvents"] if isinstance(data, dict) else data


def test_bf16_matmul_loop_rate_matches_its_own_timing():
    """20 bf16 8192³ matmuls: the loop's own timing said 773.8 TFLOP/s."""
    rows = readers.read(MATMUL).op_flops
    assert [(r.op, r.precision, r.launches) for r in rows] == [("aten::mm", "bf16", 20)]
    assert rows[0].flops == 20 * 2 * 8192**3
    tflops = rows[0].flops / rows[0].total_ns / 1e3
    assert tflops == pytest.approx(773.8, rel=0.10) and tflops < H200_BF16_DENSE_TFLOPS


def model_flops(trace: Path, layers: int = 6, d: int = 512, heads: int = 8, block: int = 256, vocab: int = 8192,
                batch: int = 16) -> float:
    """The matrix FLOPs of workloads/gpt_train.py's default model for the steps the trace holds, from the model's
    configuration: 6·N·T for the linear layers (forward 2, backward 4 per weight and token; the head tied to the
    embedding), causal attention 4·B·H·L²·(d/H)/2 forward and 2.5× that backward per layer."""
    steps = len({e["name"] for e in events(trace) if str(e.get("name")).startswith("ProfilerStep#")})
    weights = layers * 12 * d * d + d * vocab  # qkv 3d², proj d², fc 4d², out 4d²; the head
    attention = 4 * batch * heads * block * block * (d // heads) // 2
    return steps * (6 * weights * batch * block + layers * attention * 3.5)


ATTENTION = ("aten::_cudnn_attention_forward", "aten::_cudnn_attention_backward", "aten::_efficient_attention_forward",
             "aten::_efficient_attention_backward")


def shape_flops(trace: Path) -> dict[str, float]:
    """Per precision: the FLOPs of the trace's innermost matrix ops, recounted from their Input Dims with plain
    json (the GPT traces: mm, addmm, and the attention ops SDPA runs inside its own op, causal here)."""
    out: dict[str, float] = {}
    short = {"c10::BFloat16": "bf16", "float": "fp32"}
    for e in events(trace):
        args, name = e.get("args") or {}, e.get("name")
        dims = args.get("Input Dims")
        if name == "aten::mm":
            (m, k), (_, n) = dims[0], dims[1]
            flops = 2 * m * n * k
        elif name == "aten::addmm":
            (m, k), (_, n) = dims[1], dims[2]
            flops = 2 * m * n * k
        elif name in ATTENTION:
            q = dims[1 if name.endswith("backward") else 0]
            b, h, seq, dh = q if "cudnn" in name else (q[0], q[2], q[1], q[3])  # (B, H, L, D); efficient: (B, L, H, D)
            flops = 4 * b * h * seq * seq * dh // 2 * (2.5 if name.endswith("backward") else 1)
        else:
            continue
        precision = short[args["Input type"][1 if name == "aten::addmm" else 0]]
        out[precision] = out.get(precision, 0) + flops
    return out


@pytest.mark.parametrize(("trace", "precision"), [(GPT_BF16, "bf16"), (GPT_FP32, "fp32")])
def test_gpt_training_flops_match_the_model_and_the_shapes(trace, precision):
    """Every op counted once, though the attention backward launched several kernels and the fp32 GEMMs their
    split-K reductions; the linear layers (aten::linear → aten::addmm) and the head (aten::matmul → aten::mm) once."""
    rows = readers.read(trace).op_flops
    total = sum(r.flops for r in rows)
    assert {r.precision for r in rows} == {precision}
    assert total == pytest.approx(shape_flops(trace)[precision], rel=1e-9)
    assert total == pytest.approx(model_flops(trace), rel=1e-9)
    assert {r.op for r in rows} == {"aten::mm", "aten::addmm",
                                    "aten::_cudnn_attention_forward" if precision == "bf16" else
                                    "aten::_efficient_attention_forward",
                                    "aten::_cudnn_attention_backward" if precision == "bf16" else
                                    "aten::_efficient_attention_backward"}
    rate = total / sum(r.total_ns for r in rows) / 1e3  # TFLOP/s
    assert (300 < rate < H200_BF16_DENSE_TFLOPS) if precision == "bf16" else (20 < rate < 67)  # fp32 peak: 67


def test_gpt_window_keeps_its_steps_flops():
    whole = sum(r.flops for r in readers.read(GPT_BF16).op_flops)
    one = sum(r.flops for r in readers.read(GPT_BF16, Window(steps=(3, 4))).op_flops)
    assert one == pytest.approx(whole / 3, rel=1e-9)


def test_store_keeps_the_rows():
    store = Store()
    ingest(store, [MATMUL, GPT_FP32])
    rows = store.op_flops_rows()
    assert {r["precision"] for r in rows} == {"bf16", "fp32"}
    assert sum(r["flops"] for r in rows if r["precision"] == "bf16") == 20 * 2 * 8192**3
    assert all(isinstance(r["launches"], int) and r["total_ns"] > 0 for r in rows)


def test_a_summary_keeps_the_rows(tmp_path):
    """`summarize` writes every field of what the reader gave; reading the summary gives the same FLOPs."""
    from nvprof_wrap.readers import summary

    capture = readers.read(MATMUL)
    out = tmp_path / "matmul.summary.json.gz"
    summary.write(capture, "id", None, out)
    assert readers.read(out).op_flops == capture.op_flops != ()


def test_autocast_nesting_counts_the_inner_op():
    """wild/kineto-particle-transformer-amp-a100 (A100, AMP): autocast records an op twice, the outer call with the
    fp32 inputs around the inner one with fp16; aten::conv1d → convolution → _convolution → cudnn_convolution. Only
    the innermost op with FLOPs counts."""
    trace = WILD / "kineto-particle-transformer-amp-a100.json"
    rows = readers.read(trace).op_flops
    assert {r.precision for r in rows} == {"fp16"}
    assert {r.op for r in rows} == {"aten::addmm", "aten::baddbmm", "aten::bmm", "aten::cudnn_convolution"}
    inner_bmm = [e for e in events(trace) if e.get("name") == "aten::bmm" and e["args"]["Input type"][0] == "c10::Half"]
    want = sum(2 * a * m * k * n for (a, m, k), (_, _, n) in (e["args"]["Input Dims"] for e in inner_bmm))
    assert len(inner_bmm) == 10 and sum(r.flops for r in rows if r.op == "aten::bmm") == pytest.approx(want, rel=1e-9)


def test_conv_without_recorded_stride_is_not_guessed():
    """pytorch/kineto's ResNet-50 sample (torch 1.8, V100): no Concrete Inputs, so the forward convs have no count;
    the input gradients (cudnn_convolution_backward_input: shapes enough) and the fc layer's GEMMs do."""
    rows = readers.read(PUBLIC / "pytorch__kineto__worker0.1623143089861.pt.trace.json.gz").op_flops
    assert {r.op for r in rows} == {"aten::cudnn_convolution_backward_input", "aten::addmm", "aten::mm"}
    assert {r.precision for r in rows} == {"fp32"}


# -- hand-made traces: what no real trace holds ----------------------------------------------------------------
def _trace(tmp_path: Path, ops: list[tuple[str, object, float, float, float]]) -> Path:
    """ops: (name, args, start µs, duration µs, kernel duration µs or 0: no launch) on one thread; each op with a
    kernel launches it 1 µs after it starts."""
    evs: list[dict] = []
    for i, (name, args, ts, dur, kdur) in enumerate(ops):
        evs.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 7, "tid": 7, "ts": ts, "dur": dur, "args": args})
        if kdur:
            evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7,
                        "ts": ts + 1, "dur": 0.5, "args": {"correlation": i + 1}})
            evs.append({"ph": "X", "cat": "kernel", "name": f"gemm_{i}", "pid": 0, "tid": 1, "ts": ts + 2,
                        "dur": kdur, "args": {"correlation": i + 1, "device": 0}})
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": evs}))
    return path


MM = {"Input Dims": [[64, 32], [32, 16]], "Input type": ["c10::Half", "c10::Half"]}
GOOD = 2 * 64 * 32 * 16


@pytest.mark.parametrize("dims", [
    "[[64, 32], [32, 16]]", [[64, -32], [-32, 16]], [[2**50, 32], [32, 16]], [[64, [32]], [32, 16]],
    [[64, 32]], [[64.0, 32.0], [32.0, 16.0]], [[True, 32], [32, 16]], [[[64, 32]], [[32, 16]]], {"0": [64, 32]},
    None, [[64, 32], [32, 16]] * 100, [[64, 32], [33, 16]], [[2**31, 2**31], [2**31, 2**31]],
])
def test_odd_input_dims_give_no_row_and_no_error(tmp_path, dims):
    """Beside one good mm in the same trace (which must give its row: the reader did read the ops)."""
    path = _trace(tmp_path, [("aten::mm", {**MM, "Input Dims": dims}, 100, 10, 5), ("aten::mm", MM, 200, 10, 5)])
    rows = readers.read(path).op_flops
    assert [(r.name, r.flops) for r in rows] == [("gemm_1", GOOD)]


def test_deeply_nested_input_dims(tmp_path):
    """As deep as the reader takes (readers refuse JSON nested beyond 100 levels as no profiler trace)."""
    deep: object = [64, 32]
    for _ in range(90):
        deep = [deep]
    path = _trace(tmp_path, [("aten::mm", {**MM, "Input Dims": deep}, 100, 10, 5), ("aten::mm", MM, 200, 10, 5)])
    assert [r.name for r in readers.read(path).op_flops] == ["gemm_1"]


def test_op_without_shapes_gives_no_row(tmp_path):
    path = _trace(tmp_path, [("aten::mm", {}, 100, 10, 5), ("aten::mm", {"Input type": ["float"] * 2}, 200, 10, 5)])
    capture = readers.read(path)
    assert capture.op_flops == () and sum(k.launches for k in capture.kernels) == 2


def test_a_flops_argument_wins_and_outer_ops_are_not_counted(tmp_path):
    """An older trace's "flops" argument beats the shapes; an op holding another op with FLOPs is not counted, and
    the kernel it launched outside the inner one gets none."""
    path = _trace(tmp_path, [
        ("aten::mm", {**MM, "flops": 1000}, 100, 10, 5),
        ("aten::mm", MM, 200, 50, 5),  # autocast's outer call: it launches gemm_1 itself, then holds gemm_2's op
        ("aten::mm", MM, 210, 10, 5),
    ])
    rows = readers.read(path).op_flops
    assert sorted((r.name, r.flops) for r in rows) == [("gemm_0", 1000), ("gemm_2", GOOD)]


def test_an_op_with_two_kernels_splits_its_flops_by_their_time(tmp_path):
    """The mm's own kernels are launched from ops inside it (a GEMM and its split-K reduction, say)."""
    path = _trace(tmp_path, [("aten::mm", MM, 100, 50, 0), ("aten::add_", {}, 110, 3, 30),
                             ("aten::add_", {}, 120, 3, 10)])
    rows = readers.read(path).op_flops
    assert sorted((r.name, r.flops, r.launches, r.total_ns) for r in rows) == \
        [("gemm_1", GOOD * 0.75, 1, 30_000), ("gemm_2", GOOD * 0.25, 1, 10_000)]
