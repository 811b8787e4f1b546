"""Issue 26 (inputs) on the real files of ../shared/fixtures/wild (public repositories, byte for byte; their README
lists the sources): pasted nsys stats tables, TensorFlow 1 timelines, ncu counters and durations, DLProf reports, an
nsys capture that set memory only. Each docstring says what a person judging the file by its kernel names and its GPU
would conclude, and why; the test checks that the report says the same, or refuses saying what the file is."""
from __future__ import annotations

import json

import pytest

from nvprof_wrap import readers
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers import ncu_csv
from tests._paths import WILD


def _json(capsys, path) -> dict:
    assert main(["report", str(path), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _refused(capsys, path) -> str:
    assert main(["report", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err
    return err


def _counters(path) -> dict:
    return {v.name: v for v in ncu_csv.read(path).counters}


# --- nsys stats tables pasted into Markdown ------------------------------------------------------------------------
def test_laplace_readme_tables_of_two_gpus(capsys):
    """reguly/laplace_vector's README pastes `nsys stats` kernel tables (no nsys lines around them, some numbers with
    separators, some without) of a stencil and a copy kernel in float, __half, float4 and __half2, under "# Results
    from A100-4GB PCI-e" and "# Results from H100-80GB PCI-e" — the H100 section twice. A person would read: two GPUs,
    hand-written memory-bound kernels, no matrix math, nothing on tensor cores; the H100 numbers counted once."""
    path = WILD / "nsys-stats-tables-laplace-a100-h100-readme.md"
    assert readers.detect(path) == "console-text"
    c = readers.read(path)
    assert [(d.device_id, d.name) for d in c.devices] == [(0, "A100-4GB PCI-e"), (1, "H100-80GB PCI-e")]
    by = {(k.device_id, k.name): k for k in c.kernels}
    assert len(by) == 16 and {k.launches for k in c.kernels} == {2}
    a100 = by[(0, "stencil(int, int, float *, float *)")]
    assert (a100.total_ns, a100.min_ns, a100.max_ns) == (919_138, 458_721, 460_417)  # "919,138"
    assert by[(1, "stencil(int, int, float *, float *)")].total_ns == 730_788  # "730788", counted once
    assert any("repeated verbatim" in n and "counted once" in n for n in c.notes)
    d = _json(capsys, path)
    assert d["tensor_cores_used"] is False and d["tensor_core_kernels"] == 0
    assert [(g["device_id"], g["label"], g["launches"]) for g in d["devices"]] == [
        (0, "A100-4GB PCI-e", 16), (1, "H100-80GB PCI-e", 16)]
    assert not any(k["tensor_core"] == "yes" for k in d["kernels"])


def test_flash_attention_markdown_with_a_skipped_run(capsys):
    """dclahan/flashattn-proj's results page: the program prints "Name: NVIDIA GeForce RTX 4070" / "Compute
    Capability: 8.9", then two `nsys profile --stats=true` runs. The naive run's kernel table was SKIPPED by nsys
    although its cuda_api_sum counts 5 cudaLaunchKernel; the flash run has one hand-written
    flash_attn_forward_kernel(const float *, …) of 27.9 ms, plus 4 host-to-device copies and 3 sets. A person would
    read: one fp32 hand-written kernel on an RTX 4070 (its arguments are float pointers: CUDA cores), and the naive
    run's kernels missing from the file — which the report must say rather than sum silently."""
    path = WILD / "nsys-stats-console-flashattn-rtx4070.md"
    c = readers.read(path)
    assert [(d.name, d.compute_capability) for d in c.devices] == [("NVIDIA GeForce RTX 4070", "8.9")]
    (k,) = c.kernels
    assert k.name.startswith("flash_attn_forward_kernel(const float *") and k.device_id == 0
    assert (k.launches, k.total_ns) == (1, 27_869_780)
    assert sorted((m.kind, m.direction, m.count, m.total_ns) for m in c.memops) == [
        ("memcpy", "HtoD", 4, 6_720_723), ("memset", "", 3, 15_168)]
    skipped = next(n for n in c.notes if "no CUDA kernel data in report1.sqlite" in n)
    assert "5 kernel launch calls" in skipped and "not in this report" in skipped
    assert any("2 nsys reports (report1.nsys-rep, report2.nsys-rep)" in n for n in c.notes)
    d = _json(capsys, path)
    assert d["tensor_core_kernels"] == 0 and d["devices"][0]["label"] == "NVIDIA GeForce RTX 4070 (sm_89)"


def test_jetson_log_with_four_digit_groups():
    """A Jetson Orin's `nsys profile --stats=true` of a TensorRT YOLOv4-tiny (F64081169/Nvprof_Jetson_Nano_Example),
    printed in a zh_CN locale: numbers in groups of four ("8,4521,1450" ns, "3,8928" launches). A person would read
    845 ms over 38,928 launches of TensorRT's fp16 h1688 cuDNN kernel — tensor cores, on a GPU the log never names."""
    c = readers.read(WILD / "nsys-stats-console-trt-jetson-orin.txt")
    k = next(k for k in c.kernels if k.name == "trt_ampere_h1688cudnn_256x64_ldg8_relu_exp_small_nhwc_linkable_tn_v1")
    assert (k.launches, k.total_ns, k.min_ns, k.max_ns) == (38_928, 845_211_450, 9_120, 39_265)
    htod = next(m for m in c.memops if m.direction == "HtoD")
    assert (htod.count, htod.total_ns) == (12_981, 2_218_247_417)  # "1,2981", "22,1824,7417"
    assert c.devices == () and all(k.device_id is None for k in c.kernels)


def test_console_summary_without_a_device_says_so(capsys):
    """ncu's console output of a PyTorch GCN (YKTian-x2b/AI4Materials_EvaluationTool) names no device: the per-device
    row says that in words — '-', "not recorded in the capture" — instead of printing None."""
    d = _json(capsys, WILD / "ncu-console-gcn.txt")
    assert [(g["device_id"], g["label"]) for g in d["devices"]] == [(None, "not recorded in the capture")]
    assert main(["report", str(WILD / "ncu-console-gcn.txt")]) == 0
    table = capsys.readouterr().out
    assert "not recorded in the capture" in table and "None" not in table


# --- TensorFlow 1 timelines ----------------------------------------------------------------------------------------
def test_tf1_timeline_of_a_k80_is_refused_as_op_names():
    """aistein/dlprof's feed_dict timeline (TF1, a K80): every event of the GPU's stream rows is named by its op type
    (Conv2D, MatMul, UnsortedSegmentSum, ApplyAdam…), never by a kernel. A person would say: this file cannot tell
    which kernels ran (and a K80 has no tensor cores anyway); capture with nsys. Reading the op names as kernel names
    called them 'kernels whose name says neither'; now it is refused, naming what the file holds."""
    path = WILD / "tf1-timeline-k80.json"
    assert readers.detect(path) == "tf-trace-json"
    with pytest.raises(BadInput) as e:
        readers.read(path)
    why = e.value.why
    assert why.startswith("a TensorFlow 1 timeline: its GPU rows hold 132 events named by TensorFlow op (")
    assert "UnsortedSegmentSum" in why and "not kernel names" in why and "nsys profile --trace=cuda" in why
    assert "MEMCPY" not in why


def test_tf1_xla_timeline_is_refused_as_op_names(capsys):
    """The same repository's XLA build: the GPU rows hold _XlaLaunch (a whole compiled cluster) and
    ApplyGradientDescent. A person would say: no kernel is named, so nothing can be said of tensor cores; the old
    report's "_XlaLaunch — no rule matched" was an op taken for a kernel."""
    err = _refused(capsys, WILD / "tf1-timeline-xla.ctf.json")
    assert "a TensorFlow 1 timeline" in err and "16 events named by TensorFlow op (_XlaLaunch, ApplyGradientDescent)" \
        in err and "TensorBoard profiler" in err


# --- Nsight Compute CSV counters and durations ---------------------------------------------------------------------
def test_bert_flash_attention_counters_prove_what_the_hfma_count_bounds(capsys):
    """leleucas' BERT attention export (ncu of CUDA 11.4 on an A100; no Device / CC columns) has no HFMA2 split, only
    sm__inst_executed_pipe_tensor.sum: 2,048 for fmha_fwd_loop_kernel<…__half>, but also 320 for a random-number
    kernel and 1 for an index kernel — HFMA2.MMA, the fp16x2 FMA the compiler sends to the tensor pipe in plain code,
    counts there too. Beside it, the fp16 FMA thread-instruction count (sm__sass_thread_inst_executed_op_hfma_pred_on):
    10,240 = 32 × 320 in the RNG kernel, 0 in the FMHA kernel. HFMA2.MMA can be at most that many of the pipe's
    instructions, so FMHA's 2,048 are matrix instructions (a person reads it as fp16 tensor-core attention), while the
    RNG kernel's 320 prove nothing and must not turn it into a tensor-core kernel."""
    path = WILD / "ncu-metrics-bert-flashattn-a100.csv"
    v = _counters(path)
    fmha = next(x for n, x in v.items() if n.startswith("void fmha_fwd_loop_kernel<"))
    assert fmha.tensor_core == "yes" and fmha.value == 2048
    assert fmha.detail.startswith("at least 2,048 matrix instructions (tensor pipe 2,048)") and \
        "HFMA thread instructions 0" in fmha.detail
    cutlass = [x for n, x in v.items() if "cutlass_80_wmma_tensorop" in n]
    assert sorted(x.value for x in cutlass) == [3072, 6144] and {x.tensor_core for x in cutlass} == {"yes"}
    split_k = next(x for n, x in v.items() if n.startswith("void splitKreduce_kernel<"))  # 960 pipe, 30,720 HFMA
    assert split_k.tensor_core == "unknown" and "without the HFMA2 split" in split_k.detail
    rng = next(x for n, x in v.items() if "normal_and_transform" in n)
    assert rng.tensor_core == "unknown" and rng.value == 320
    # a zero with no GPU named: not a proof on Blackwell (tcgen05 on the tc pipe), so unknown, said why
    zero = next(x for n, x in v.items() if "uniform_and_transform" in n)
    assert zero.tensor_core == "unknown" and "names no GPU" in zero.detail
    d = _json(capsys, path)
    rng_row = next(k for k in d["kernels"] if "normal_and_transform" in k["name"])
    assert rng_row["tensor_core"] == "no" and rng_row["counter_verdict"] == "unknown"
    fmha_row = next(k for k in d["kernels"] if "fmha_fwd_loop_kernel" in k["name"])
    assert fmha_row["tensor_core"] == "yes" and fmha_row["evidence"] == "counters" and fmha_row["precision"] == "fp16"
    assert [k["name"][:40] for k in d["kernels"] if k["tensor_core"] == "unknown"] == []  # every kernel decided


def test_cutlass_v100_counters_decide_every_kernel(capsys):
    """wangzy0327/cuda-roofline on a V100 (CC 7.0 in the export): the CUTLASS fp16 GEMMs executed 33,554,432,000
    tensor-pipe instructions, the InitializeMatrix kernels none. Volta has no HFMA2.MMA, so its tensor pipe runs
    matrix instructions only: a person would call the GEMMs tensor-core and the initialisers not, and so do the
    counters now — the initialisers were 'no rule matched' before."""
    path = WILD / "ncu-metrics-cutlass-v100.csv"
    v = _counters(path)
    init = [x for n, x in v.items() if n.startswith("void InitializeMatrix_kernel")]
    assert len(init) == 2 and {x.tensor_core for x in init} == {"no"}
    gemms = [x for n, x in v.items() if "cutlass::Kernel" in n]
    assert len(gemms) == 2 and {x.tensor_core for x in gemms} == {"yes"}
    assert all(x.value == 33_554_432_000 and "tensor pipe of sm_70 runs matrix instructions only" in x.detail
               for x in gemms)
    d = _json(capsys, path)
    assert {k["evidence"] for k in d["kernels"]} == {"counters"}


def test_cutlass_a100_counters_rule_out_but_do_not_prove(capsys):
    """The same benchmark on an A100 (CC 8.0): InitializeMatrix ran no tensor-pipe instruction at all (a proof of
    "no"); the GEMMs' 8,388,608,000 could hold HFMA2.MMA (A100 has it, and the export has no HFMA2 split), so their
    verdict stays with their names (CUTLASS tensorop, ampere_s16816gemm: yes) — what a person would conclude too."""
    path = WILD / "ncu-metrics-cutlass-a100.csv"
    v = _counters(path)
    assert {x.tensor_core for n, x in v.items() if n.startswith("void InitializeMatrix_kernel")} == {"no"}
    gemm = v["ampere_s16816gemm_fp16_256x128_ldg8_stages_64x3_nn"]
    assert gemm.tensor_core == "unknown" and "without the HFMA2 split" in gemm.detail
    d = _json(capsys, path)
    verdicts = {k["name"][:40]: (k["tensor_core"], k["evidence"]) for k in d["kernels"]}
    assert verdicts["ampere_s16816gemm_fp16_256x128_ldg8_stag"] == ("yes", "name")
    assert verdicts["void InitializeMatrix_kernel<__half, (bo"] == ("no", "counters")


def test_numba_section_export_duration_is_read(capsys):
    """brycelelbach/nsightful's numba copy kernel on a T4, exported with ncu's default sections: its "GPU Speed Of
    Light Throughput" section has Duration 21,058,944 ns, on a row that ends at its value (the rule columns after it
    left off). A person would read one 21 ms copy kernel; the report asked for the SpeedOfLight section the file
    already has."""
    path = WILD / "ncu-sections-numba-t4.csv"
    (k,) = readers.read(path).kernels
    assert (k.launches, k.total_ns) == (1, 21_058_944)
    d = _json(capsys, path)
    assert d["kernel_time_ns"] == 21_058_944 and "not captured" not in d["message"]


# --- DLProf --------------------------------------------------------------------------------------------------------
def test_dlprof_op_report_is_refused_with_its_own_verdict(capsys):
    """fenfaqingnian/dlprof_v100's TF1 Keras op report: op names and DLProf's 'Using TC' column, no kernel. A person
    would say DLProf itself counted 13 of 387 ops on tensor cores; the report now says that, and which file to read
    instead, rather than 'not a profiler capture'."""
    err = _refused(capsys, WILD / "dlprof-detailed-tf1-v100.csv")
    assert "DLProf op report: not read" in err and "13 of 387 ops used tensor cores (74.7% of their GPU time)" in err
    assert "nsys_profile.qdrep" in err


def test_dlprof_summary_is_refused_with_its_own_verdict(capsys):
    """chelseajohn/Nvidia-DLProf's summary of a PyTorch run on four A100s: 3 of 22 kernels used tensor cores by
    DLProf's count, and no kernel name anywhere."""
    err = _refused(capsys, WILD / "dlprof-summary-a100.csv")
    assert "DLProf summary report (DLProf v1.7.0 / r21.11, 4 × NVIDIA A100-SXM4-40GB): not read" in err
    assert "3 of 22 kernels used tensor cores (43.8 ms, 16.2% of kernel GPU time)" in err


# --- Nsight Systems without kernels --------------------------------------------------------------------------------
def test_memset_only_capture_says_what_it_saw(capsys):
    """frasertajima/WeatherBench2's report1.sqlite (an RTX 4060): CUDA runtime records (16 stream creations, a
    cudaMemsetAsync, a cudaMalloc…) and one memset on the GPU, no kernel. A person would say: CUDA was traced, the
    profiled part of the job only set memory up — not "was CUDA tracing on?"."""
    err = _refused(capsys, WILD / "nsys-memset-only-rtx4060.sqlite")
    assert "no kernel ran while the job was profiled: CUDA was traced (23 CUDA API calls, none a kernel launch: " \
           "cudaStreamCreateWithFlags ×16" in err
    assert "NVIDIA GeForce RTX 4060 recorded 1 memset but no kernel" in err and "was CUDA tracing on" not in err


def test_capture_with_two_api_calls_and_nothing_on_the_gpu(capsys):
    """CO18326/uvmTorch's report1.sqlite (an RTX A5000): two CUDA API calls, none a launch, nothing on the GPU —
    CUDA was traced; the job did nothing on the GPU while profiled."""
    err = _refused(capsys, WILD / "nsys-nokernels-rtxa5000.sqlite")
    assert "CUDA was traced (2 CUDA API calls, none a kernel launch: cuModuleGetLoadingMode, " \
           "cudaGetDeviceProperties) and NVIDIA RTX A5000 recorded nothing" in err
