"""Every fixture capture, read by its reader: facts about kernels, launches, devices and processes."""
from __future__ import annotations

import json

import pytest

from nvprof_wrap import readers
from nvprof_wrap.classify import classify
from nvprof_wrap.text.demangle import demangle
from tests._paths import H200, PUBLIC, ROOT, RUNS


def _distinct(c):
    return {k.name for k in c.kernels}


def _launches(c):
    return sum(k.launches for k in c.kernels)


def _tc(c):
    return {k.name for k in c.kernels if classify(k.name).tensor_core == "yes"}


@pytest.mark.parametrize("file, fmt, distinct, launches", [
    ("public/NVIDIA__Fuser__report1.sqlite", "nsys-sqlite", 15, 19),
    ("public/GindaChen__nsys-ai__mfu_2gpu_after.sqlite", "nsys-sqlite", 27, 3587),
    ("public/GindaChen__nsys-ai__h100_2gpu_1s.sqlite", "nsys-sqlite", 41, 3442),
    ("public/LeiWang1999__memfusion_artifact__report1.sqlite", "nsys-sqlite", 14, 36),
    ("public/wenscarl__cutlass_benchmark__report1.sqlite", "nsys-sqlite", 1, 6),
    ("public/m-goldstein__GPU_ML__timeline.nvvp", "nvprof", 15, 38),
    ("public/josiahdavis__profiling-lm__net.sql", "nvprof", 42, 160),
    ("public/josiahdavis__profiling-lm__lm.csv", "pyprof-csv", 31, 160),
    ("public/facebookresearch__HolisticTraceAnalysis__nccl_data.json.gz", "kineto-json", 70, 2700),
    ("public/facebookresearch__HolisticTraceAnalysis__benchmark_result_2869224_1695835535_trace.json.gz", "kineto-json",
     16, 79),
    ("public/facebookresearch__HolisticTraceAnalysis__sampled_rank-0.json.gz", "kineto-json", 194, 1154),
    ("public/facebookresearch__HolisticTraceAnalysis__inference_rank_1.json.gz", "kineto-json", 4, 4),
    ("public/pytorch__kineto__worker0.1623143089861.pt.trace.json.gz", "kineto-json", 67, 8772),
    ("public/facebookresearch__param__resnet_kineto.json.gz", "kineto-json", 54, 9628),
    ("public/nanzifan__nvprof-result__print-gpu-summary.csv", "nvprof-csv", 4, 14003),
    ("h200/nsys_torch_ops.sqlite", "nsys-sqlite", 36, 122),
    ("h200/nsys_two_child_processes.sqlite", "nsys-sqlite", 2, 22),
    ("h200/ncu_tensor_metrics.csv", "ncu-csv", 24, 85),
])
def test_counts(fixtures, file, fmt, distinct, launches):
    path = fixtures / file
    assert readers.detect(path) == fmt
    c = readers.read(path)
    assert (len(_distinct(c)), _launches(c)) == (distinct, launches)


def test_fuser_h200_fp16_nvjet_and_half_elementwise():
    c = readers.read(PUBLIC / "NVIDIA__Fuser__report1.sqlite")
    assert {d.name for d in c.devices} == {"NVIDIA H200"} and c.devices[0].compute_capability == "9.0"
    assert _tc(c) == {"nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT"}
    assert classify("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT").precision == "fp16"


def test_nsys_ai_two_devices_bf16_nvjet_and_flash_without_gpu_table():
    c = readers.read(PUBLIC / "GindaChen__nsys-ai__mfu_2gpu_after.sqlite")
    assert c.devices == () and any("TARGET_INFO_GPU" in n for n in c.notes)
    assert {k.device_id for k in c.kernels} == {0, 1}
    assert len(c.processes) == 2
    tc = _tc(c)
    assert any(n.startswith("nvjet_tst_") for n in tc) and any("flash_fwd_kernel" in n for n in tc)
    assert {classify(n).precision for n in tc} == {"bf16"}
    assert not any("nccl" in n.lower() for n in tc)


def test_h100_fp32_xmma_ffma_is_never_tensor_core():
    c = readers.read(PUBLIC / "GindaChen__nsys-ai__h100_2gpu_1s.sqlite")
    ffma = [k.name for k in c.kernels if "xmma" in k.name and "ffma" in k.name]
    assert ffma and all(n.startswith("sm80_") for n in ffma)
    assert all(classify(n).tensor_core == "no" for n in ffma)
    assert _tc(c) == set()


def test_tensorrt_3090_fp16_xmma_yes_pooling_no():
    c = readers.read(PUBLIC / "LeiWang1999__memfusion_artifact__report1.sqlite")
    assert {d.name for d in c.devices} == {"NVIDIA GeForce RTX 3090"} and len(c.devices) == 4
    tc = _tc(c)
    xmma = [k.name for k in c.kernels if k.name.startswith("sm80_xmma_fprop_implicit_gemm")]
    assert len(xmma) == 9 and set(xmma) <= tc  # 9 distinct names, 20 launches
    assert "trt_ampere_h16816gemm_64x64_ldg8_relu_stages_64x5_tn_v1" in tc
    assert not any("pooling" in n for n in tc)
    assert any("pooling" in k.name for k in c.kernels)


def test_nvprof_titan_v_fp32_is_demangled_and_has_no_tensor_cores():
    c = readers.read(PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp")
    assert [(d.name, d.compute_capability) for d in c.devices] == [("TITAN V", "7.0")]
    assert [p.pid for p in c.processes] == [463]
    assert not any(k.name.startswith("_Z") for k in c.kernels)
    assert any(k.name.startswith("void mshadow::cuda::MapPlanKernel") for k in c.kernels)
    assert {"volta_sgemm_128x128_tn", "volta_scudnn_128x64_relu_interior_nn_v1",
            "volta_gcgemm_64x32_nt"} <= _distinct(c)
    assert _tc(c) == set()
    htod = [m for m in c.memops if m.direction == "HtoD"]
    assert htod[0].count == 20 and htod[0].bytes == 208996184


def test_nvprof_concurrent_kernel_table_when_kernel_table_is_empty():
    c = readers.read(PUBLIC / "josiahdavis__profiling-lm__net.sql")
    assert c.devices[0].name == "Tesla V100-SXM2-16GB"
    assert _launches(c) == 160 and _tc(c) == set()
    assert any(k.name.startswith("volta_sgemm_") for k in c.kernels)


def test_pyprof_csv_keeps_its_own_tc_flag_as_a_note():
    c = readers.read(PUBLIC / "josiahdavis__profiling-lm__lm.csv")
    assert c.notes == ("pyprof marked 0 launches as tensor-core (its own TC column)",)
    assert _tc(c) == set()


def test_kineto_a100_tf32_cutlass_and_xmma():
    c = readers.read(PUBLIC / "facebookresearch__HolisticTraceAnalysis__nccl_data.json.gz")
    assert c.devices[0].name == "NVIDIA A100-PG509-200" and c.devices[0].compute_capability == "8.0"
    tc = _tc(c)
    assert any("cutlass_80_tensorop_s1688gemm" in n for n in tc)
    assert any("sm80_xmma_wgrad_implicit_gemm" in n and "tf32f32" in n for n in tc)
    assert {classify(n).precision for n in tc} <= {"tf32", ""}
    assert any(k.name.startswith("ncclKernel_") for k in c.kernels)


def test_kineto_alexnet_tf32_conv_and_ampere_sgemm():
    c = readers.read(PUBLIC / ("facebookresearch__HolisticTraceAnalysis__benchmark_result_2869224_1695835535"
                               "_trace.json.gz"))
    tc = _tc(c)
    assert any(n.startswith("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32") for n in tc)
    assert classify("ampere_sgemm_32x32_sliced1x4_tn").tensor_core == "no"
    assert "ampere_sgemm_32x32_sliced1x4_tn" in _distinct(c)


def test_kineto_sampled_rank0_53_tf32_cutlass_kernels():
    c = readers.read(PUBLIC / "facebookresearch__HolisticTraceAnalysis__sampled_rank-0.json.gz")
    assert c.devices == () and c.processes[0].rank == 0
    assert sum("cutlass_80_tensorop_s1688gemm" in n for n in _tc(c)) == 53


def test_kineto_inference_fp16_wmma():
    c = readers.read(PUBLIC / "facebookresearch__HolisticTraceAnalysis__inference_rank_1.json.gz")
    (n,) = [n for n in _tc(c)]
    assert "cutlass_70_wmma_tensorop_f16_s161616gemm_f16_32x32_64x2_tn_align8" in n
    assert classify(n).precision == "fp16" and c.processes[0].rank == 1


@pytest.mark.parametrize("file, device", [
    ("pytorch__kineto__worker0.1623143089861.pt.trace.json.gz", "Tesla V100-DGXS-32GB"),
    ("facebookresearch__param__resnet_kineto.json.gz", "NVIDIA GeForce RTX 2080 Ti"),
])
def test_kineto_fp32_volta_names_have_no_tensor_cores(file, device):
    c = readers.read(PUBLIC / file)
    assert c.devices[0].name == device
    assert _tc(c) == set()
    assert any(k.name.startswith(("volta_sgemm", "cudnn_volta_scudnn", "volta_scudnn")) for k in c.kernels)


def test_nvprof_gpu_summary_csv_units_and_memcpy():
    c = readers.read(PUBLIC / "nanzifan__nvprof-result__print-gpu-summary.csv")
    flux = next(k for k in c.kernels if k.name.startswith("cuda_compute_flux"))
    assert (flux.launches, flux.total_ns, flux.min_ns, flux.max_ns) == (6000, 268352833, 43106, 1791976)
    assert c.processes[0].pid == 308050
    dtod = next(m for m in c.memops if m.direction == "DtoD")
    assert dtod.count == 2000


def test_two_child_processes_are_two_processes_with_fp16_tensor_cores():
    c = readers.read(H200 / "nsys_two_child_processes.sqlite")
    assert len({k.pid for k in c.kernels}) == 2
    nvjet = [k for k in c.kernels if k.name == "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"]
    assert sum(k.launches for k in nvjet) == 20 and classify(nvjet[0].name).tensor_core == "yes"


def test_cupti_python_records_arrive_mangled_and_demangle():
    records = json.loads((H200 / "cupti_python_records.json").read_text())
    names = [r[0] for r in records]
    assert names[0].startswith("_ZN2at6native")
    demangled = demangle(names[0])
    assert demangled.startswith("void at::native::") and "c10::Half" in demangled
    assert classify(demangled).tensor_core == "no"
    assert [classify(demangle(n)).tensor_core for n in names[1:]] == ["yes"] * (len(names) - 1)


def test_a_path_given_as_text_reads_as_the_path():
    """readers.read("x.sqlite") blamed the file: "unreadable nsys-sqlite capture (AttributeError: 'str' object has no
    attribute 'stat')", exit 2."""
    sample = ROOT / "nvprof_wrap" / "samples" / "torch_ops" / "nsys_torch_ops.sqlite"
    assert readers.read(str(sample)) == readers.read(sample)


def test_torch_ops_h200_capture_devices_and_memops():
    c = readers.read(H200 / "nsys_torch_ops.sqlite")
    assert [(d.name, d.compute_capability, d.sm_count) for d in c.devices] == [("NVIDIA H200", "9.0", 132)]
    assert {m.kind for m in c.memops} == {"memcpy", "memset"}
    (a,) = c.activity
    assert 0 < a.busy_ns <= a.last_ns - a.first_ns


def test_torch_profiler_traces_get_a_per_op_table_from_their_cpu_ops():
    """A real torch.profiler trace (ResNet training on an RTX 2080 Ti — the seed's GPU generation): each kernel's
    correlation id leads to its runtime call, the CPU op ranges open on that thread name the op."""
    trace = readers.read(PUBLIC / "facebookresearch__param__resnet_kineto.json.gz")
    assert sum(o.launches for o in trace.ops) == sum(k.launches for k in trace.kernels) == 9628  # all attributed
    by_op: dict[str, list] = {}
    for o in trace.ops:
        by_op.setdefault(o.op, []).append(o)
    conv = by_op["aten::cudnn_convolution"]
    assert sum(o.launches for o in conv) == 1980
    assert {o.name for o in conv} >= {"volta_sgemm_64x64_nn", "cudnn_volta_scudnn_128x128_relu_small_nn_v1"}
    assert {o.scope for o in conv} == {"aten::conv2d"}  # the outermost op range on the launching thread
    backward = {o.scope for o in by_op["aten::convolution_backward"]}
    assert backward == {"autograd::engine::evaluate_function: ConvolutionBackward0"}
    from nvprof_wrap import report
    from nvprof_wrap.pipeline import evidence
    from nvprof_wrap.pipeline.ingest import ingest
    from nvprof_wrap.store import Store

    store = Store()
    skipped = ingest(store, [PUBLIC / "facebookresearch__param__resnet_kineto.json.gz"])
    evidence.rank(store)
    r = report.build(store, skipped)
    ops = {o.op: o for o in r.ops}
    assert ops["aten::cudnn_convolution"].tc_share == 0.0  # fp32 winograd / sgemm / scudnn: CUDA cores
    assert ops["aten::convolution_backward"].share > 0.45


def test_torch_profiler_kernels_launched_by_driver_calls_get_their_op():
    """PyTorch 2.x records cuBLAS' cuLaunchKernelEx under cat 'cuda_driver': this project's torch.profiler trace of
    a GPT bf16 step on the H200 (297 of its 1,323 launches, all the nvjet GEMMs) — once '(no NVTX range)'."""
    trace = readers.read(RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz")
    assert sum(o.launches for o in trace.ops) == sum(k.launches for k in trace.kernels) == 1323
    assert "(no NVTX range)" not in {o.op for o in trace.ops}  # every launch under an op range
    gemms = {o.op for o in trace.ops if o.name.startswith("nvjet_")}
    assert gemms == {"aten::mm", "aten::addmm"}


def test_nsys_exports_without_nvtx_text_ids_attribute_the_same(tmp_path):
    """Exports whose NVTX_EVENTS has no textId column (strings inline in `text`) give the same per-op table."""
    import shutil
    import sqlite3

    src = H200 / "nsys_torch_ops.sqlite"
    old = tmp_path / "no_textid.sqlite"
    shutil.copy(src, old)
    with sqlite3.connect(old) as conn:
        conn.execute("UPDATE NVTX_EVENTS SET text = (SELECT value FROM StringIds WHERE id = textId) "
                     "WHERE text IS NULL AND textId IS NOT NULL")
        conn.execute("ALTER TABLE NVTX_EVENTS DROP COLUMN textId")
    new_ops, old_ops = readers.read(src).ops, readers.read(old).ops
    assert len(new_ops) > 10 and sorted(old_ops, key=repr) == sorted(new_ops, key=repr)


def test_a_raw_nsys_stream_is_named_and_how_to_import_it_said(tmp_path):
    from nvprof_wrap.errors import BadInput
    from nvprof_wrap.readers import QDSTRM, detect

    raw = tmp_path / "nsys.qdstrm"
    raw.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(BadInput) as e:
        detect(raw)
    assert e.value.why == QDSTRM and "QdstrmImporter" in QDSTRM
