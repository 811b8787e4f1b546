"""Captures this project recorded with `nvprof-wrap run` on an H200 (tests/data/h200_runs; docs/backends.md):
the same job under both backends, children, crashes, two ranks on two GPUs, counters and compiled code."""
from __future__ import annotations

import gzip
import json
import shutil
import sqlite3

import pytest

from nvprof_wrap import readers
from nvprof_wrap.classify import classify
from nvprof_wrap.classify import static as static_evidence
from nvprof_wrap.pipeline import analyze
from nvprof_wrap.renderers._rows import mix_text, split_label
from tests._paths import ROOT, RUNS

SAMPLES = ROOT / "nvprof_wrap" / "samples"


def build(*paths):
    return analyze(*paths, health=False)


def manifest(run):
    return json.loads((RUNS / run / "manifest.json").read_text())


def test_cupti_and_nsys_backends_see_the_same_gemms():
    cupti = readers.read(next((RUNS / "gemm_cupti").glob("cupti-*.sqlite")))
    nsys = readers.read(RUNS / "gemm_nsys" / "nsys.sqlite")
    assert cupti.format == "cupti" and not cupti.partial
    gemms = {k.name: k.launches for k in nsys.kernels if "gemm" in k.name or k.name.startswith("nvjet")}
    assert gemms == {k.name: k.launches for k in cupti.kernels if k.name in gemms}
    assert len(gemms) == 4 and set(gemms.values()) == {22}
    assert sum(k.launches for k in cupti.kernels) == sum(k.launches for k in nsys.kernels) == 96
    assert [(d.name, d.compute_capability, d.sm_count) for d in cupti.devices][:1] == [("NVIDIA H200", "9.0", 132)]
    r = build(RUNS / "gemm_cupti")
    assert r.verdict.message.startswith("Tensor cores used: yes — 3 of 7 kernels")
    assert r.verdict.precisions == ("tf32", "fp16", "bf16")  # the fp32 GEMM is sm80_xmma_*_ffma_*: CUDA cores


def test_nsys_follows_subprocess_and_spawned_children():
    m = manifest("children_nsys")
    r = build(RUNS / "children_nsys")
    pids = {int(p.key) for p in r.processes}
    assert len(pids) == 4 and pids <= {p["pid"] for p in m["processes"]}
    assert all(p.tc_share > 0.9 and p.precisions == ("fp16",) for p in r.processes)


def test_cupti_writes_one_capture_per_python_process():
    files = sorted((RUNS / "children_cupti").glob("cupti-*.sqlite"))
    captures = [readers.read(f) for f in files]
    with_kernels = [c for c in captures if c.kernels]
    assert len(files) == 7 and len(with_kernels) == 3  # parent + 1 subprocess child + 2 spawned, and helpers
    assert len({c.processes[0].pid for c in captures}) == 7


def test_two_ranks_on_two_gpus_with_nccl_as_communication():
    for run, n_files in (("ddp_cupti", 3), ("ddp_nsys", 1)):
        r = build(RUNS / run)
        assert {g.key for g in r.devices} == {"0", "1"}, run
        ranks = sorted(p.label.rsplit("rank ", 1)[1] for p in r.processes)
        assert ranks == ["0", "1"], run
        split = {split_label(s): s for s in r.split}
        assert split["communication kernels (NCCL, DeepEP, NVSHMEM)"].count > 0
        assert r.verdict.tensor_cores == "yes" and r.verdict.precisions == ("fp16",)
        assert len(r.sources) == n_files
    nccl = [k for k in build(RUNS / "ddp_cupti").kernels if k.family == "nccl"]
    assert nccl and all(k.tensor_core == "no" for k in nccl)


def test_sigkill_leaves_a_partial_capture_that_still_reads():
    m = manifest("crash_kill_cupti")
    assert m["exit_code"] == 137
    (partial,) = (RUNS / "crash_kill_cupti").glob("*.partial")
    c = readers.read(partial)
    assert c.partial and c.kernels == ()  # CUPTI's buffers were never flushed: the records died with the process
    r = build(RUNS / "crash_kill_cupti")
    assert r.verdict.tensor_cores == "no-kernels" and r.sources[0].partial


def test_uncaught_exception_still_flushes_the_capture():
    assert manifest("crash_exc_cupti")["exit_code"] == 1
    r = build(RUNS / "crash_exc_cupti")
    assert not r.sources[0].partial
    assert r.verdict.tensor_cores == "yes" and r.verdict.precisions == ("bf16",)


def test_counters_settle_the_torch_compile_gemm_that_names_cannot():
    c = readers.read(RUNS / "verify_compile" / "ncu.csv")
    v = {x.name: x.tensor_core for x in c.counters}
    assert classify("triton_tem_fused_mm_0").tensor_core == "unknown"
    assert v["triton_tem_fused_mm_0"] == "yes" and v["triton_poi_fused_add_relu_1"] == "no"


def test_compiled_ptx_settles_it_too():
    found = {s.name: s for s in static_evidence.scan({"triton_tem_fused_mm_0", "triton_poi_fused_add_relu_1"},
                                                     [RUNS / "triton_ptx"])}
    assert found["triton_tem_fused_mm_0"].tensor_core == "yes"
    assert "wgmma.mma_async" in found["triton_tem_fused_mm_0"].detail
    assert found["triton_poi_fused_add_relu_1"].tensor_core == "no"


def test_the_seed_workload_per_layer_and_per_op():
    r = build(SAMPLES / "keras_reuters_fp16")
    ops = {o.op: o for o in r.ops}
    assert ops["aten::mm"].tc_share == pytest.approx(0.90, abs=0.01)
    assert mix_text(ops["aten::mm"].precisions) == "fp16 100.0%"
    assert ops["aten::sum"].tc_share == 0.0
    scopes = {o.op: o for o in r.scopes}
    assert scopes["keras:dense (Dense)"].tc_share > 0.5
    assert r.verdict.precisions == ("fp16",)
    memcpy = sum(s.share for s in r.split if s.kind == "memcpy")
    assert memcpy > 0.7  # host-to-device copies of the 10,000-wide inputs dominate GPU time


def test_name_rules_on_counter_labels_from_this_projects_gpu_runs():
    """75 kernels measured with `nvprof-wrap verify` on the H200: no wrong verdict; the Triton template is the
    one name that carries no evidence, and counters decide it."""
    from nvprof_wrap.classify import classify

    rows = [line.split("\t") for line in (ROOT / "benchmarks" / "labels" / "h200_gpu_runs.tsv").read_text().splitlines()
            if line and not line.startswith("#")][1:]
    assert len(rows) == 75 and sum(r[1] == "yes" for r in rows) == 6
    verdicts = [(classify(name).tensor_core, truth) for name, truth, _ in rows]
    assert sum(v == t for v, t in verdicts) == 74
    assert [name for name, truth, _ in rows if classify(name).tensor_core != truth] == ["triton_tem_fused_mm_0"]


def test_cupti_backend_attributes_kernels_to_ops_like_nsys(tmp_path):
    """The H200 re-run with driver records (2026-11-29): `run --backend cupti --annotate keras,torch` on the seed
    workload (fp16, 3 epochs).
    Every kernel is linked to its launch call — cuBLAS GEMMs through driver records — and the per-op table
    matches the nsys run of the same job in that re-run (aten::mm: 14 kernels, 501 launches, 90.0% tensor core)
    and the nsys sample's op set and tensor-core shares."""
    capture = tmp_path / "cupti-vm-559.sqlite"
    with gzip.open(RUNS / "keras_fp16_cupti_ops" / "cupti-vm-559.sqlite.gz") as src, open(capture, "wb") as dst:
        shutil.copyfileobj(src, dst)  # stored gzipped: 3.0 MB raw, 0.65 MB compressed
    with sqlite3.connect(capture) as conn:
        counts = [conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("kernel", "runtime", "driver")]
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert counts == [5152, 4696, 456] and meta["api_records"] == "kernel launch calls only (23 callback ids)"
    r = build(capture)
    ops = {o.op: o for o in r.ops}
    assert (ops["aten::mm"].kernels, ops["aten::mm"].launches) == (14, 501)
    assert ops["aten::mm"].tc_share == pytest.approx(0.900, abs=0.001)
    assert mix_text(ops["aten::mm"].precisions) == "fp16 100.0%"
    assert sum(o.launches for o in r.ops) == 5152  # every launch attributed (to an op or to "no NVTX range")
    scopes = {o.op: o for o in r.scopes}
    assert (scopes["keras:dense (Dense)"].launches, round(scopes["keras:dense (Dense)"].tc_share, 3)) == (221, 0.581)
    nsys = build(SAMPLES / "keras_reuters_fp16")
    assert {o.op: round(o.tc_share, 2) for o in r.ops} == {o.op: round(o.tc_share, 2) for o in nsys.ops}
