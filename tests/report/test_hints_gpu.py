"""Hints that know the GPU (issue 26), per GPU generation, on real reports: the bundled H200 captures of a GPT
training step in fp32 (74% of its kernel time is fp32 GEMMs on CUDA cores: cuBLAS ``sm80_xmma_*_ffma``, cutlass
``simt_sgemm``) and in bf16, with the GPU facts (report.gpus) of another GPU, as the report builds them from a
capture that names that GPU: its compute capability and tensor cores from classify/gpus.toml.

What the advice may say on each (CUDA programming guide, warp matrix functions: fp16 from sm_70, bf16 and TF32 from
sm_80; GTX 16xx, MX450, T400-T2000 are Turing TU116/TU117 without tensor cores; Jetson TX1/Nano are Maxwell, TX2
Pascal, Xavier Volta, Orin Ampere): no tensor cores → one line saying so, nothing advised; Volta/Turing → fp16
mixed precision, never TF32 or bf16; Ampere and newer → TF32, fp16 or bf16."""
from __future__ import annotations

import functools
from dataclasses import replace

import pytest

from nvprof_wrap.classify.rank import gpu_facts
from nvprof_wrap.model import Gpu
from nvprof_wrap.pipeline import analyze
from nvprof_wrap.report import GpuRow, Report
from nvprof_wrap.report.hints import hints
from tests._paths import RUNS

FP32 = RUNS / "gpt_fp32_nsys"  # GPT step, fp32, on the H200
BF16 = RUNS / "gpt_bf16_nsys"  # the same step in bf16: 31% of its kernel time bf16 GEMMs on tensor cores
# Words of advice that reach tensor cores: none of them may be said where the GPU has none
_ADVICE = ("TF32", "allow_tf32", "mixed precision", "mixed_float16", "mixed_bfloat16", "autocast", "16-bit")


@functools.cache
def _report(run) -> Report:
    return analyze(run, health=False)


def _on(run, name: str | None, cc: float | None = None) -> tuple[str, ...]:
    """The hints of a run's report as if its one GPU were ``name`` (or compute capability ``cc`` without a name):
    the facts the report would hold for a capture that names that GPU."""
    report = _report(run)
    cc, has = gpu_facts(cc, name)
    return hints(replace(report, gpus=(GpuRow(Gpu(0, name), cc, has),)))


NO_TENSOR_CORES = [
    ("Kepler", "Tesla K80", "sm_37"),
    ("Kepler", "Tesla K20c", "sm_35"),
    ("Maxwell", "GeForce GTX 950", "sm_52"),
    ("Maxwell, Jetson Nano / TX1", "NVIDIA Tegra X1", "sm_53"),
    ("Pascal", "TITAN Xp", "sm_61"),
    ("Pascal", "NVIDIA TITAN X (Pascal)", "sm_61"),
    ("Pascal", "Tesla P100-PCIE-16GB", "sm_60"),
    ("Pascal, Jetson TX2", "NVIDIA Tegra X2", "sm_62"),
    ("Turing GTX 16xx", "NVIDIA GeForce GTX 1660 Ti", "sm_75"),
    ("Turing TU117", "NVIDIA T1000", "sm_75"),
]


@pytest.mark.parametrize(("generation", "name", "sm"), NO_TENSOR_CORES)
def test_no_tensor_cores_one_line_and_no_setting_advised(generation, name, sm):
    """The fp32 step on a GPU without tensor cores: 'TF32 is off' or 'use mixed precision' cannot work there;
    the one line says why not instead."""
    out = _on(FP32, name)
    assert out[0].startswith(f"This GPU ({name}, {sm}) has no tensor cores")
    assert "no setting uses them" in out[0]
    assert ("GTX 16xx" in out[0]) == (sm == "sm_75")  # Turing without them: its chip, not its generation
    assert not [h for h in out if any(word in h for word in _ADVICE)], generation
    assert len(out) == 1  # the fp32 GEMMs would be the only other line: nothing else in this step is worth one


@pytest.mark.parametrize("name", ["NVIDIA Tegra X1", "GeForce GTX 1650"])
def test_no_bf16_or_fp16_advice_where_there_are_no_tensor_cores(name):
    out = _on(BF16, name)
    assert "has no tensor cores" in out[0]
    assert not [h for h in out if "bf16" in h or any(word in h for word in _ADVICE)]


FP16_ONLY = [
    ("Volta", "Tesla V100-SXM2-16GB", "sm_70"),
    ("Volta", "TITAN V", "sm_70"),
    ("Volta, Jetson Xavier", "Xavier", "sm_72"),
    ("Turing", "NVIDIA GeForce RTX 2080 Ti", "sm_75"),
    ("Turing", "Tesla T4", "sm_75"),
]


@pytest.mark.parametrize(("generation", "name", "sm"), FP16_ONLY)
def test_volta_and_turing_get_fp16_mixed_precision_never_tf32(generation, name, sm):
    """TF32 arrived with Ampere: on sm_70-sm_75 'turn TF32 on' changes nothing; fp16 mixed precision is what
    reaches their tensor cores."""
    (line,) = _on(FP32, name)
    assert line.startswith("74% of kernel time is fp32 matrix math on CUDA cores")
    assert f"on this GPU ({name}, {sm}) only fp16 reaches the tensor cores" in line
    assert "TF32 needs compute capability 8.0+" in line and "mixed_float16" in line
    assert "allow_tf32" not in line and "mixed_bfloat16" not in line and "TF32 is off" not in line, generation


@pytest.mark.parametrize(("generation", "name", "sm"), FP16_ONLY)
def test_bf16_before_ampere_is_pointed_at_and_fp16_advised(generation, name, sm):
    """The bf16 step on a Volta or Turing GPU: bf16 has no tensor cores there (sm_80+), fp16 has."""
    out = _on(BF16, name)
    (line,) = [h for h in out if "bf16" in h]
    assert "of kernel time is bf16 (e.g. " in line
    assert f"this GPU ({name}, {sm}) has no bf16 tensor cores (bf16 needs compute capability 8.0+)" in line
    assert "use fp16 instead" in line and "mixed_bfloat16" not in line, generation


AMPERE_AND_NEWER = [
    ("Ampere", "NVIDIA A100-SXM4-40GB"),
    ("Ampere", "NVIDIA GeForce RTX 3090"),
    ("Ampere, Jetson Orin", "Orin"),
    ("Ada", "NVIDIA L4"),
    ("Hopper", "NVIDIA H100 80GB HBM3"),
    ("Blackwell", "NVIDIA B200"),
]


@pytest.mark.parametrize(("generation", "name"), AMPERE_AND_NEWER)
def test_ampere_and_newer_get_tf32(generation, name):
    (line,) = _on(FP32, name)
    assert "TF32 is off" in line and "allow_tf32 = True" in line and "mixed_bfloat16" in line, generation
    assert not [h for h in _on(BF16, name) if "no bf16 tensor cores" in h]


def test_the_h200_capture_with_its_own_gpu_facts():
    """Hopper as the capture records it (NVIDIA H200, sm_90, from the nsys export's TARGET_INFO_GPU)."""
    report = _report(FP32)
    assert [(g.name, g.cc, g.has_tensor_cores) for g in report.gpus] == [("NVIDIA H200", 9.0, True)]
    (line,) = report.hints
    assert "TF32 is off" in line and "allow_tf32" in line


def test_kernel_names_built_for_sm80_settle_an_unknown_gpu():
    """No GPU recorded at all, but cuBLAS ran ``sm80_xmma_gemm_*`` and cutlass ``cutlass_80_simt_sgemm_*``: code
    built for sm_80 runs on Ampere or newer only, so TF32 exists there and the plain advice holds. So with a GPU
    named by a name the table does not know. (A GPU of unknown capability whose kernel names do not settle it:
    tests/report/test_hints_wild.py, the 2021 ResNet-50 trace.)"""
    for gpus in ((), (GpuRow(Gpu(0, "Some Future GPU"), None, True),)):
        (line,) = hints(replace(_report(FP32), gpus=gpus))
        assert "TF32 is off" in line and "the capture does not say" not in line


def test_a_capture_with_a_compute_capability_and_no_name():
    """XPlane records sm_75 without a name: a Turing, with tensor cores unless it is a GTX 16xx, which only a name
    would tell: the fp16 advice says so. A named Turing with tensor cores gets no such words."""
    (line,) = _on(FP32, None, 7.5)
    assert "on this GPU (sm_75) only fp16 reaches the tensor cores" in line and "unless the GPU is a GTX 16xx" in line
    assert "unless" not in _on(FP32, "Tesla T4")[0] and "unless" not in _on(FP32, None, 7.0)[0]


def test_mixed_gpus_name_those_without_tensor_cores_and_advise_for_the_others():
    report = _report(FP32)
    gpus = tuple(GpuRow(Gpu(i, name), *gpu_facts(None, name))
                 for i, name in enumerate(["NVIDIA H200", "GeForce GTX 1080"]))
    devices = (report.devices[0], replace(report.devices[0], key="1"))
    out = hints(replace(report, gpus=gpus, devices=devices))
    assert out[0] == ("This GPU (GeForce GTX 1080, sm_61) has no tensor cores: no setting uses them there; the "
                      "other GPUs of the job have them.")
    assert "TF32 is off" in out[1]


def test_only_the_gpus_that_ran_kernels_count():
    """A trace that lists the machine's GPUs (Kineto's deviceProperties: 8) of which the job used one."""
    report = _report(FP32)
    gpus = (report.gpus[0], *(GpuRow(Gpu(i, "Tesla K80", 3, 7), 3.7, False) for i in range(1, 8)))
    out = hints(replace(report, gpus=gpus))
    assert not [h for h in out if "no tensor cores" in h] and "TF32 is off" in out[0]
