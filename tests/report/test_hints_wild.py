"""Hints on real files from public repositories (../shared/fixtures/wild, README there: read in place, never copied),
one test per file: the GPU the file names decides which advice can work (issue 26). Each docstring says what a
person who knows GPUs would conclude from the file's kernel names and its GPU, and why; the test checks that the
report says that and nothing that cannot work on that GPU."""
from __future__ import annotations

import functools

import pytest

from nvprof_wrap.pipeline import analyze
from nvprof_wrap.report import Report
from tests._paths import WILD

# Words of advice that reach tensor cores: none of them may be said where the GPU has none
_ADVICE = ("TF32", "allow_tf32", "mixed precision", "mixed_float16", "mixed_bfloat16", "autocast", "16-bit")


@functools.cache
def _report(name: str) -> Report:
    return analyze(WILD / name, health=False)


def _advice(report: Report) -> list[str]:
    return [h for h in report.hints if any(word in h for word in _ADVICE)]


def test_dual_k80_tensorflow_job_gets_the_one_honest_line_not_tf32():
    """nvprof-summary-tf1-2xk80.txt: ``nvprof python "DeepCoNN - dual gpu.py"`` (TensorFlow 1, 2018). The summary's
    own tables name no GPU, but TensorFlow's start-up lines do: "Found device 0 with properties: name: Tesla K80
    major: 3 minor: 7", devices 0 and 1 (a K80 board is two GK210 GPUs). Its GEMMs are ``sgemm_sm35_*``,
    ``implicit_convolve_sgemm`` and cuDNN's ``wgrad_alg0_engine<float>``: fp32 on CUDA cores, as every kernel of a
    Kepler must be — sm_37 has no tensor cores, so "turn TF32 on" or "use mixed precision" cannot change that.
    A person would say: no tensor cores were used because this GPU has none; a Volta or newer GPU is needed."""
    r = _report("nvprof-summary-tf1-2xk80.txt")
    assert [(g.device_id, g.name, g.cc, g.has_tensor_cores) for g in r.gpus] == \
        [(0, "Tesla K80", 3.7, False), (1, "Tesla K80", 3.7, False)]
    assert r.hints == (("These GPUs (2× Tesla K80, sm_37) have no tensor cores: no setting uses them; a Volta or "
                        "newer GPU is needed."),)
    # the GPU decides the kernels the names leave unknown (SwapDimension…, BiasGradNHWC…): no, not "not seen"
    assert r.verdict.tensor_cores == "no"
    assert all(k.tensor_core == "no" for k in r.kernels)
    assert (r.devices[0].key, r.devices[0].label) == ("None", "Tesla K80 (sm_37)")
    assert any("GPU from TensorFlow's start-up lines: Tesla K80 (devices 0, 1)" in n for s in r.sources
               for n in s.notes)


def test_k20c_magma_job_gets_the_one_line():
    """magma-k20c-dgeqrf.nvvp: MAGMA's dgeqrf on a Tesla K20c (the nvvp's device table: sm_35). ``dgemm_sm35_*``
    and ``trmm_right_kernel_core`` are fp64 on CUDA cores; a Kepler has no tensor cores (fp64 ones came with the
    A100), so nothing in the job could have used them."""
    r = _report("magma-k20c-dgeqrf.nvvp")
    assert r.hints == (("This GPU (Tesla K20c, sm_35) has no tensor cores: no setting uses them; a Volta or newer "
                        "GPU is needed."),)


def test_gtx950_vector_add_gets_the_one_line_and_the_copies():
    """nvprof-gputrace-gtx950.csv: a CUDA vectorAdd traced on a GeForce GTX 950 (Maxwell GM206, sm_52: named in
    the trace's Device column, "GeForce GTX 950 (0)"). One elementwise kernel between copies that take 93% of GPU
    time: no tensor cores on that GPU, and the copies are what a person would look at."""
    r = _report("nvprof-gputrace-gtx950.csv")
    assert r.hints[0] == ("This GPU (GeForce GTX 950, sm_52) has no tensor cores: no setting uses them; a Volta or "
                          "newer GPU is needed.")
    assert r.hints[1].startswith("93% of GPU time is memory copies, mostly HtoD")
    assert len(r.hints) == 2 and not _advice(r)


def test_jetson_nano_tensorrt_fp16_gets_no_16bit_advice():
    """nvprof-trt-yolo-jetson-nano.nvvp: TensorRT YOLO on a Jetson Nano, whose GPU the nvvp names "NVIDIA Tegra X1"
    (Maxwell GM20B, sm_53). 83% of kernel time is ``trt_maxwell_fp16x2_*``: fp16 done two at a time on CUDA cores
    (half2), the best a Maxwell does — it has no tensor cores, so "16-bit math that is not on tensor cores: check
    the shapes" would send the user after a cause that is not there."""
    r = _report("nvprof-trt-yolo-jetson-nano.nvvp")
    assert r.hints[0] == ("This GPU (NVIDIA Tegra X1, sm_53) has no tensor cores: no setting uses them; a Volta or "
                          "newer GPU is needed.")
    assert not _advice(r) and len(r.hints) == 2  # and the copies (59% of GPU time)


def test_k80_tf1_timeline_is_refused_with_what_to_capture_instead():
    """tf1-timeline-k80.json: a TensorFlow 1 Chrome timeline from the same repository as the K80 summary, but the
    file itself names only "/device:GPU:0": no GPU name, no compute capability. Its GPU rows are TensorFlow op names
    (Conv2D, MatMul, UnsortedSegmentSum), which do not say what ran on the GPU: a person could not tell whether
    tensor cores were there. The reader refuses it (exit 2) saying so and what to capture instead, so no hint claims
    either way and none advises TF32 or mixed precision."""
    from nvprof_wrap.errors import BadInput

    with pytest.raises(BadInput, match="TensorFlow 1 timeline.*op"):
        _report("tf1-timeline-k80.json")


def test_rtx2080ti_fp32_linear_gets_fp16_mixed_precision_not_tf32():
    """kineto-param-linear-rtx2080ti.json.gz: a PyTorch Linear model in fp32 on an NVIDIA GeForce RTX 2080 Ti (the
    trace's deviceProperties: 8 of them, sm_75; the kernels ran on device 0). 77% of kernel time is
    ``volta_sgemm_*``: fp32 GEMMs on CUDA cores. A Turing has fp16 tensor cores but no TF32 (Ampere's), so
    ``allow_tf32`` would change nothing: fp16 mixed precision is what would put these GEMMs on tensor cores."""
    r = _report("kineto-param-linear-rtx2080ti.json.gz")
    line, host = r.hints  # and host-bound: the GPU idle 63% of the mean step (its Optimizer.step#SGD.step ranges)
    assert host.startswith("Host-bound: in the mean step (steps 1-39) of 24.7 ms the GPU is idle 15.7 ms (63%): the "
                           "host spends 12.4 ms outside CUDA calls") and "step much faster" in host
    assert line.startswith("77% of kernel time is fp32 matrix math on CUDA cores (e.g. volta_sgemm_64x64_tn): on this "
                           "GPU (NVIDIA GeForce RTX 2080 Ti, sm_75) only fp16 reaches the tensor cores")
    assert "mixed_float16" in line and "allow_tf32" not in line and "mixed_bfloat16" not in line


def test_resnet50_trace_of_an_unnamed_gpu_says_what_each_setting_needs():
    """kineto-autograd-api-resnet50-2021.pt.trace.json.gz: PyTorch's ResNet-50 sample (kineto's tb_plugin, 2021).
    The trace records no device properties. cuDNN ran ``implicit_convolve_sgemm`` and ``volta_cgemm_*``: fp32 on
    CUDA cores on a Volta or newer GPU, but which one the file does not say — on an Ampere TF32 would be off, on a
    V100 or T4 only fp16 would help. A person would give both conditions, not claim "TF32 is off"."""
    r = _report("kineto-autograd-api-resnet50-2021.pt.trace.json.gz")
    assert r.gpus == ()
    (line,) = r.hints  # its 6 Optimizer.step#SGD.step ranges mark steps: the GPU is busy over half of the mean one
    assert "of kernel time is fp32 matrix math on CUDA cores" in line
    assert "the capture does not say what this GPU can run. On Ampere or newer (sm_80+) TF32 is off" in line
    assert "from Volta (sm_70) mixed precision (mixed_float16; mixed_bfloat16 from Ampere)" in line


def test_keras_semisup_trace_without_a_gpu_name_says_what_each_setting_needs():
    """tf-keras-semisup.trace.json.gz: a Keras (TF 2) profile of 2020; the trace has a GPU device but neither its
    name nor its compute capability. ``volta_scudnn_128x64_*`` and ``volta_sgemm_*`` (43% of kernel time) are fp32
    on CUDA cores on a Volta-or-newer GPU of unknown generation: TF32 only if it is an Ampere."""
    r = _report("tf-keras-semisup.trace.json.gz")
    assert [(g.name, g.cc) for g in r.gpus] == [(None, None)]
    (line,) = _advice(r)
    assert line.startswith("43% of kernel time is fp32 matrix math on CUDA cores")
    assert "the capture does not say what this GPU can run" in line and "TF32 is off. " not in line


def test_keras_chess_xplane_on_an_unnamed_sm75():
    """tf-keras-chess.xplane.pb: a Keras fit profiled by TensorFlow (2021); XPlane records compute capability 7.5
    but no name: a Turing. ``volta_scudnn_*`` fp32 convolutions on CUDA cores: fp16 mixed precision would reach a
    Turing's tensor cores, TF32 would not (Ampere's). Without the name a person could not rule out a GTX 16xx,
    whose TU116/TU117 chip has none, and would say so."""
    r = _report("tf-keras-chess.xplane.pb")
    (line,) = _advice(r)
    assert "on this GPU (sm_75) only fp16 reaches the tensor cores" in line and "allow_tf32" not in line
    assert line.endswith("(unless the GPU is a GTX 16xx: the capture does not name it, and Turing's TU116/TU117 "
                         "chips have no tensor cores).")


def test_gcn_ncu_console_ampere_kernels_settle_tf32():
    """ncu-console-gcn.txt: ``ncu`` console output of a PyTorch GCN; no device line in it. But the GEMM that takes
    21% of kernel time is ``ampere_sgemm_32x32_sliced1x4_tn``, cuBLAS code for sm_80 that runs on Ampere or newer
    only: there TF32 exists and is off, so the plain TF32 advice is right."""
    r = _report("ncu-console-gcn.txt")
    (line,) = _advice(r)
    assert line.startswith("21% of kernel time is fp32 matrix math on CUDA cores (e.g. ampere_sgemm_32x32_sliced1x4_tn"
                           "): TF32 is off. PyTorch: torch.backends.cuda.matmul.allow_tf32 = True")
