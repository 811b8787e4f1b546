"""Report building on real captures: verdict, split, groups, per-op attribution through NVTX."""
from __future__ import annotations

from nvprof_wrap import report
from nvprof_wrap.pipeline import analyze, evidence
from nvprof_wrap.pipeline.ingest import ingest
from nvprof_wrap.renderers._rows import mix_text, split_label
from nvprof_wrap.store import Store
from tests._paths import H200, PUBLIC, ROOT, RUNS


def build(*paths):
    return analyze(*paths, health=False)


def test_ops_from_emit_nvtx_ranges_say_which_aten_ops_ran_on_tensor_cores():
    r = build(PUBLIC / "GindaChen__nsys-ai__mfu_2gpu_after.sqlite")
    ops = {o.op: o for o in r.ops}
    assert ops["aten::addmm"].tc_share == 1.0 and mix_text(ops["aten::addmm"].precisions) == "bf16 100.0%"
    assert ops["flash_attn::_flash_attn_forward"].tc_share == 1.0
    assert ops["aten::mul"].tc_share == 0.0 and mix_text(ops["aten::native_layer_norm"].precisions) == "fp32 100.0%"
    attributed = sum(o.launches for o in r.ops if o.op != "(no NVTX range)")
    assert attributed == 3577 and r.verdict.launches == 3587  # 10 launches have no runtime record to follow
    assert any(s.op.startswith("FSDP::pre_forward (blocks.") for s in r.scopes)


def test_ingesting_the_same_capture_twice_changes_nothing(tmp_path):
    store = Store(tmp_path / "run.sqlite")
    ingest(store, [H200 / "nsys_torch_ops.sqlite"])
    before = store.rows("SELECT COUNT(*) AS n, SUM(launches) AS l FROM kernels")
    ingest(store, [H200 / "nsys_torch_ops.sqlite", H200 / "nsys_torch_ops.sqlite"])
    assert store.rows("SELECT COUNT(*) AS n, SUM(launches) AS l FROM kernels") == before
    assert store.rows("SELECT COUNT(*) AS n FROM captures")[0]["n"] == 1


def test_classification_is_cached_per_distinct_name(tmp_path):
    store = Store(tmp_path / "run.sqlite")
    ingest(store, [PUBLIC / "GindaChen__nsys-ai__h100_2gpu_1s.sqlite"])
    assert evidence.classify_pending(store) == 41  # 82 (process, device, name) rows, 41 distinct names
    assert evidence.classify_pending(store) == 0


def test_idle_and_split_on_the_titan_v_capture():
    r = build(PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp")
    (d,) = r.devices
    assert d.label == "TITAN V (sm_70)" and d.launches == 38
    # 112 ms busy from the first kernel's start to the last kernel's end (141 ms); the whole capture spans 2.17 s
    # (start-up copies), which the idle share no longer counts
    assert (d.busy_ns, d.span_ns) == (112_150_244, 141_322_093) and 0.20 < d.idle_share < 0.21
    cats = {split_label(s): s for s in r.split}
    assert cats["memcpy HtoD"].count == 20 and "tensor-core kernels" not in cats
    assert r.verdict.tensor_cores == "no" and "fp32" in r.verdict.message


def test_a_moved_run_folder_is_not_counted_twice(tmp_path):
    import shutil


    src = RUNS / "gemm_cupti"
    first = tmp_path / "a"
    shutil.copytree(src, first)
    store = Store(first / "run.sqlite")
    ingest(store, [first])
    store.close()
    moved = tmp_path / "b"
    shutil.move(first, moved)  # the store inside now names paths that no longer exist
    store = Store(moved / "run.sqlite")
    skipped = ingest(store, [moved])
    evidence.rank(store)
    r = report.build(store, skipped)
    assert r.verdict.launches == 96 and len(r.sources) == 1


def test_hints_say_why_not_from_the_numbers():

    seed = build(ROOT / "nvprof_wrap" / "samples" / "keras_reuters_fp16")
    assert any(h.startswith("78% of GPU time is memory copies, mostly HtoD") for h in seed.hints)
    # host-bound from its steady state's time budget (the mean Keras batch after the first, the epoch's last batch
    # with its validation left out), with what the host did while the GPU sat idle
    assert any(h.startswith("Host-bound: in the mean step (steps 2-16, 1 slow one left out) of 17 ms the GPU is idle "
                            "15.9 ms (93%): the host spends 14.5 ms outside CUDA calls") for h in seed.hints)
    volta = build(PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp")
    assert any("TF32 needs compute capability 8.0+" in h for h in volta.hints)
    hopper = build(PUBLIC / "GindaChen__nsys-ai__h100_2gpu_1s.sqlite")
    assert any("fp32 matrix math on CUDA cores" in h and "allow_tf32" in h for h in hopper.hints)
    # a test binary: tensor cores fine, the GPU busy 395 µs in all — too little work to call it host-bound
    fuser = build(PUBLIC / "NVIDIA__Fuser__report1.sqlite")
    assert fuser.hints == () and fuser.tone == "partial"  # tensor cores ran 22% of the kernel time: not green
