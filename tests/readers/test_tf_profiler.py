"""TensorFlow / JAX profiler output: TensorBoard trace JSON and XSpace (.xplane.pb).

Real files: two public TensorBoard profile runs (Keras on TensorFlow 2.4/2.5, a Turing GPU and a V100), each as the
trace JSON and the XSpace TensorFlow wrote side by side (tests/README.md: sources; read from the shared fixtures,
their repositories state no licence). Built files: a JAX step on an H200 in XLA's structure (tests/xspace_build.py).
"""
from __future__ import annotations

import json

import pytest

from nvprof_wrap import readers
from nvprof_wrap.classify import classify
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers import _xplane_schema, tf_trace_json, xplane
from tests import xspace_build as xb
from tests._paths import RUNS, fixture_file

TURING = "public/aoberai__chess-engine__aoberai"
V100 = "public/mholmeslinder__semi-supervised-cv__a0ecb7033138"


def _key(c):
    return sorted((k.device_id, k.name, k.launches, k.total_ns) for k in c.kernels)


@pytest.mark.parametrize("run, distinct, launches, kernel_ns, cc, sms", [
    (TURING, 57, 145, 719_853, (7, 5), 30),
    (V100, 91, 1158, 363_659_396, (7, 0), 80),
])
def test_real_tensorboard_runs_trace_json_and_xplane_agree(run, distinct, launches, kernel_ns, cc, sms):
    trace, space = fixture_file(f"{run}.trace.json.gz"), fixture_file(f"{run}.xplane.pb")
    assert (readers.detect(trace), readers.detect(space)) == ("tf-trace-json", "xplane")
    t, x = readers.read(trace), readers.read(space)
    assert _key(t) == _key(x)
    assert (len(x.kernels), sum(k.launches for k in x.kernels), sum(k.total_ns for k in x.kernels)) == \
        (distinct, launches, kernel_ns)
    assert sorted(t.ops, key=repr) == sorted(x.ops, key=repr) and t.memops == x.memops and t.activity == x.activity
    (dev,) = x.devices  # the GPU plane's stats; the trace JSON does not carry them
    assert ((dev.cc_major, dev.cc_minor), dev.sm_count) == (cc, sms)
    assert not any(k.name.startswith("_Z") for k in x.kernels)
    assert not any(classify(k.name).tensor_core == "yes" for k in x.kernels)  # fp32 Keras: no tensor cores


def test_real_v100_run_per_op_table_from_the_tf_ops():
    x = readers.read(fixture_file(f"{V100}.xplane.pb"))
    assert sum(o.launches for o in x.ops) == 1158  # every launch once: the ops add up to the kernels
    by_op: dict[str, int] = {}
    for o in x.ops:
        by_op[o.op] = by_op.get(o.op, 0) + o.launches
    assert (by_op["Conv2DBackpropFilter"], by_op["Conv2DBackpropInput"], by_op["Conv2D"]) == (192, 216, 181)
    conv = {o.name for o in x.ops if o.op == "Conv2D"}
    assert "volta_scudnn_128x64_relu_interior_nn_v1" in conv
    assert {o.scope for o in x.ops if o.op == "Conv2DBackpropFilter"} >= {"gradient_tape/model_1/conv1_conv/Conv2D"}
    htod = next(m for m in x.memops if m.direction == "HtoD")
    assert (htod.count, htod.bytes) == (5, 100_667_404)  # from memcpy_details "size:…"


def test_real_trace_that_used_to_report_no_kernels(capsys):
    """The TensorBoard trace of a real run: before, "No GPU kernels were recorded" with exit 0."""
    code = main(["report", str(fixture_file(f"{TURING}.trace.json.gz")), "--format", "json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["verdict"] != "no-kernels" and d["launches"] == 145


def _jax(tmp_path, S=None):
    path = tmp_path / "h200.xplane.pb"
    path.write_bytes(xb.xspace(xb.h200_jax_step(), S or _xplane_schema.own()))
    return path


def test_jax_h200_xplane_kernels_ops_devices_and_busy_time(tmp_path):
    c = readers.read(_jax(tmp_path))
    assert c.format == "xplane"
    assert [(d.device_id, d.compute_capability, d.sm_count) for d in c.devices] == [(0, "9.0", 132)]
    kernels = {k.name: k for k in c.kernels}
    assert set(kernels) == {xb.NVJET_BF16, "fusion_12", xb.FFMA_FP32}  # the "XLA Ops" line is not read as kernels
    assert (kernels[xb.NVJET_BF16].launches, kernels[xb.NVJET_BF16].total_ns) == (2, 98_000)
    ops = {(o.scope, o.op, o.name): o.launches for o in c.ops}
    assert ops == {("jit_train_step", "custom-call", xb.NVJET_BF16): 2, ("jit_train_step", "fusion", "fusion_12"): 1,
                   ("jit_train_step", "custom-call", xb.FFMA_FP32): 1}
    assert {(m.direction, m.count, m.bytes) for m in c.memops} == {("HtoD", 1, 4096), ("DtoH", 1, 512)}
    (a,) = c.activity
    # the span runs from the first kernel's start to the last kernel's end: the HtoD copy before (900 ns at 1.000 ms)
    # and the DtoH copy after (700 ns) are start-up and tear-down, not idle or busy time of the steady state
    assert (a.first_ns, a.last_ns, a.busy_ns) == (1_001_000, 1_138_000, 50_000 + 4_000 + 30_000 + 48_000)


def test_jax_h200_report_per_op_tensor_cores(tmp_path, capsys):
    assert main(["report", str(_jax(tmp_path)), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["verdict"] == "yes" and d["tensor_core_precisions"] == ["bf16"]
    ops = {o["op"]: o for o in d["ops"]}
    assert ops["custom-call"]["tensor_core_share"] == pytest.approx(98 / 128)  # the fp32 GEMM ran on CUDA cores
    assert ops["fusion"]["tensor_core_share"] == 0


def test_the_trace_json_of_the_same_step_reads_the_same(tmp_path):
    path = tmp_path / "h200.trace.json.gz"
    path.write_bytes(xb.trace_json(xb.h200_jax_step()))
    assert readers.detect(path) == "tf-trace-json"
    t, x = readers.read(path), readers.read(_jax(tmp_path))
    assert _key(t) == _key(x) and sorted(t.ops, key=repr) == sorted(x.ops, key=repr) and t.memops == x.memops


def test_xplane_lines_are_parsed_in_bounded_chunks(tmp_path, monkeypatch):
    path = _jax(tmp_path)
    whole = readers.read(path)
    monkeypatch.setattr(xplane, "_CHUNK", 1)  # one event per chunk
    assert readers.read(path) == whole


def _copies_only(tmp_path, fmt):
    planes = xb.h200_jax_step()
    gpu = planes[1]
    gpu.lines = [ln for ln in gpu.lines if "Memcpy" in ln.name]
    path = tmp_path / ("x.xplane.pb" if fmt == "xplane" else "x.trace.json.gz")
    path.write_bytes(xb.xspace(planes, _xplane_schema.own()) if fmt == "xplane" else xb.trace_json(planes))
    return path


@pytest.mark.parametrize("fmt", ["xplane", "json"])
def test_gpu_events_without_kernels_are_one_line_exit_2(tmp_path, capsys, fmt):
    code = main(["report", str(_copies_only(tmp_path, fmt))])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "/device:GPU:0" in err and "no kernel" in err and "2 copy/set events" in err


def test_profiler_errors_without_gpu_events_are_reported(tmp_path):
    path = tmp_path / "cpu.xplane.pb"
    path.write_bytes(xb.xspace(xb.h200_jax_step()[:1], _xplane_schema.own(),
                               errors=("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",)))
    with pytest.raises(BadInput, match="CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"):
        readers.read(path)


def test_cpu_only_profile_says_so(tmp_path):
    path = tmp_path / "cpu.trace.json.gz"
    path.write_bytes(xb.trace_json(xb.h200_jax_step()[:1]))
    c = readers.read(path)
    assert c.kernels == () and "without a GPU" in c.notes[0] and "/host:CPU" in c.notes[0]


def test_damaged_xplane_is_one_line(tmp_path, capsys):
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(_jax(tmp_path).read_bytes()[:300])
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a readable XSpace" in err


def test_detection_is_by_content(tmp_path):
    blob = tmp_path / "profile.bin"  # no telling extension
    blob.write_bytes(_jax(tmp_path).read_bytes())
    assert readers.detect(blob) == "xplane"
    csv = tmp_path / "x.csv"  # starts with a newline (0x0A), like an XSpace
    csv.write_text('\n"Start","Duration","Name"\n')
    assert readers.detect(csv) == "nvprof-csv"
    assert not tf_trace_json.sniff_bytes(b'{"schemaVersion": 1, "traceEvents": [{"cat": "kernel"')


@pytest.mark.tf
def test_tensorflows_own_schema_is_used_and_reads_the_same(tmp_path):
    """With TensorFlow installed, its generated xplane_pb2 is the schema (loaded from its file, TensorFlow itself is
    not imported); a file it writes reads the same with our schema."""
    pytest.importorskip("tensorflow", reason="the tf group: pip install -e '.[tf]'")
    _xplane_schema.shipped.cache_clear()
    tf = _xplane_schema.shipped()
    assert tf is not None and tf.source in ("tensorflow", "tsl", "xprof", "tensorboard_plugin_profile")
    path = _jax(tmp_path, tf)
    with_tf = readers.read(path)
    own_schema = _xplane_schema.own()
    assert xplane.read.__module__ and own_schema.XSpace.FromString(path.read_bytes()).planes[1].name == "/device:GPU:0"
    import unittest.mock

    with unittest.mock.patch.object(_xplane_schema, "shipped", lambda: None):
        assert readers.read(path) == with_tf


def test_a_chrome_trace_with_gpu_processes_but_no_known_kernels_is_refused(tmp_path):
    """A trace the TensorFlow sniffer does not catch (no '/device:GPU:' process name) but whose processes say GPU:
    the Kineto reader must not report it as empty."""
    doc = {"traceEvents": [{"ph": "M", "pid": 3, "name": "process_name", "args": {"name": "GPU 0 (stream 7)"}},
                           {"ph": "X", "pid": 3, "tid": 7, "ts": 1.0, "dur": 2.0, "name": xb.NVJET_BF16}]}
    path = tmp_path / "other.json"
    path.write_text(json.dumps(doc))
    assert readers.detect(path) == "kineto-json"
    with pytest.raises(BadInput, match="1 events on GPU processes but none a kernel"):
        readers.read(path)


def test_a_tensorboard_profile_folder_counts_its_run_once(tmp_path, capsys):
    """plugins/profile/<run>/ holds the run as XSpace and as trace JSON, plus the plugin's tool files: the report
    reads the XSpace only and skips the rest silently."""
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "h200.xplane.pb").write_bytes(xb.xspace(xb.h200_jax_step(), _xplane_schema.own()))
    (run / "h200.trace.json.gz").write_bytes(xb.trace_json(xb.h200_jax_step()))
    (run / "h200.kernel_stats.pb").write_bytes(b"\x0a\x05\x0a\x03abc\x00")
    (run / "h200.memory_profile.json.gz").write_bytes(b"\x1f\x8b")
    assert main(["report", str(tmp_path), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["launches"] == 4 and [s["format"] for s in d["sources"]] == ["xplane"] and d["skipped"] == []


# --- a real JAX profile of a bf16 training step on the H200 (workloads/jax_mlp.py, 2026-11-30) --------------------
JAX_H200 = RUNS / "jax_bf16_xplane"


def test_real_jax_h200_xplane():
    """jax.profiler.trace of 11 steps of the seed's MLP in bf16 on an H200 (JAX 0.11.2): the XSpace and the trace
    JSON JAX writes beside it agree; cuBLAS' GEMM is a bf16 tensor-core kernel, XLA's Triton GEMM fusions
    (gemm_fusion_dot*) carry no evidence in their names and stay unknown."""
    from nvprof_wrap import readers

    xs = readers.read(JAX_H200 / "vm.xplane.pb")
    tj = readers.read(JAX_H200 / "vm.trace.json.gz")
    assert xs.format == "xplane" and sum(k.launches for k in xs.kernels) == 308 and len(xs.kernels) == 26
    key = lambda c: sorted((k.name, k.launches, k.total_ns) for k in c.kernels)
    assert key(xs) == key(tj)
    assert xs.devices and xs.devices[0].compute_capability == "9.0"
    from nvprof_wrap import report
    from nvprof_wrap.pipeline import evidence
    from nvprof_wrap.pipeline.ingest import ingest
    from nvprof_wrap.store import Store

    store = Store()
    ingest(store, [JAX_H200 / "vm.xplane.pb"])
    evidence.rank(store)
    rep = report.build(store)
    assert rep.verdict.tensor_cores == "yes" and rep.verdict.precisions == ("bf16",)
    assert rep.verdict.tc_fraction == pytest.approx(0.101, abs=0.001)
    assert {k.tensor_core for k in rep.kernels if k.name.startswith("gemm_fusion_dot")} == {"unknown"}
    assert {o.op for o in rep.scopes} == {"jit_step"}
