"""The hardware's own tensor-pipe activity (issue "Hardware truth"): nsys GPU metrics read from a capture, NVML GPM
samples a run's launcher took, matched to the kernels, deciding kernels the names leave unknown and cross-checking
the others. The captures are real, made on the H200 by
benchmarks/gpu/hardware_metrics_explore.sh running benchmarks/gpu/hardware_phases.py (phases of known truth) and
trimmed to a part of each phase (benchmarks/trim_capture.py):
- hw_phases_nsys: `nsys profile --gpu-metrics-devices=0 --gpu-metrics-frequency=10000` (100 µs samples);
- hw_phases_cupti: `nvprof-wrap run --backend cupti` with GPM sampled beside it every 100 ms (gpm.jsonl).
"""
from __future__ import annotations

import gzip
import itertools
import json
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

from nvprof_wrap import analyze, readers
from nvprof_wrap.classify import hardware
from nvprof_wrap.cli import main
from nvprof_wrap.launch import nsys as nsys_backend
from nvprof_wrap.timeline.gpm import read as read_gpm
from nvprof_wrap.timeline.hardware import SERIES_POINTS
from tests._paths import FAKES, RUNS

NSYS_CAPTURE = RUNS / "hw_phases_nsys" / "hw_phases_nsys.sqlite.gz"
CUPTI_RUN = RUNS / "hw_phases_cupti"
NVJET = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
FP32_GEMM = ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_"
             "execute_kernel__5x_cublas")


@pytest.fixture
def no_ptx(tmp_path) -> list[Path]:
    """An empty Triton cache: the Triton kernel's compiled code is not on this machine (it was on the H200's)."""
    d = tmp_path / "no-triton-cache"
    d.mkdir()
    return [d]


def _by_name(rows):
    return {k.name: k for k in rows}


def test_nsys_gpu_metrics_are_read_and_matched_to_each_kernel():
    cap = readers.read(NSYS_CAPTURE)
    (dev,) = cap.hw_devices
    assert dev.source == "nsys gpu metrics" and dev.interval_ns == 100_000 and dev.device_id == 0
    assert dev.busy_samples > 10_000 and 90 < dev.sm_busy <= 100 and 25 < dev.tensor_busy < 45
    hw = _by_name(cap.hw_kernels)
    assert hw[NVJET].tensor > 80 and hw["matmul_kernel"].tensor > 60  # cuBLAS bf16, Triton tl.dot bf16
    assert hw[FP32_GEMM].tensor < 1  # fp32 GEMM with TF32 off: CUDA cores
    norm = next(k for n, k in hw.items() if "layer_norm" in n)
    assert norm.tensor < hardware.thresholds().no_below  # HFMA2 work, not matrix math
    assert all(k.samples >= 100 for k in (hw[NVJET], hw["matmul_kernel"], hw[FP32_GEMM], norm))
    assert 0 < len(cap.hw_series) <= SERIES_POINTS


def test_the_hardware_decides_a_kernel_the_names_leave_unknown_and_checks_the_rest(no_ptx):
    rep = analyze(NSYS_CAPTURE, triton_cache=no_ptx)
    k = _by_name(rep.kernels)
    assert k["matmul_kernel"].tensor_core == "yes" and k["matmul_kernel"].evidence == "hardware"
    assert k["matmul_kernel"].name_verdict == "unknown"
    assert "nsys gpu metrics: tensor pipes" in k["matmul_kernel"].counter_detail
    assert k[NVJET].evidence == "name" and k[FP32_GEMM].tensor_core == "no"  # the names decide what they can
    assert rep.hardware_checks == ()  # every named verdict agrees with the hardware here
    (row,) = rep.hardware
    assert row.disagreements == 0 and row.names_tc_share > 0.3
    d = rep.to_dict()
    assert d["hardware"][0]["source"] == "nsys gpu metrics"
    assert "consistent with the names" in d["hardware"][0]["message"]
    ops = {o["op"]: o["hardware_tensor_pct"] for o in d["ops"]}
    assert ops["phase cublas_bf16"] > 80 and ops["phase triton_bf16"] > 60 and ops["phase fp32_tf32_off"] < 1


def test_gpm_samples_of_the_run_are_matched_to_the_cupti_capture(no_ptx, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(CUPTI_RUN, run, ignore=shutil.ignore_patterns("run.sqlite*"))
    rep = analyze(run, triton_cache=no_ptx)
    (row,) = rep.hardware
    assert row.source == "nvml gpm" and row.interval_ns == 100_000_000 and row.busy_samples >= 20
    k = _by_name(rep.kernels)
    assert k["matmul_kernel"].tensor_core == "yes" and k["matmul_kernel"].evidence == "hardware"
    assert "mostly HMMA" in k["matmul_kernel"].counter_detail  # GPM tells the pipes apart
    assert rep.hardware_checks == ()
    # without the samples, the same capture is what the names say (and the store reads it again)
    (run / "gpm.jsonl").unlink()
    again = analyze(run, triton_cache=no_ptx)
    assert again.hardware == () and _by_name(again.kernels)["matmul_kernel"].tensor_core == "unknown"


def _edited(plain: Path, sql: str) -> Path:
    """The real nsys capture, unpacked to ``plain`` with one statement applied (what each test says it changes)."""
    with gzip.open(NSYS_CAPTURE) as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with sqlite3.connect(plain) as c:
        c.execute(sql)
    return plain


def test_a_name_the_hardware_contradicts_is_listed(tmp_path, no_ptx):
    """The real capture with the Triton GEMM's name replaced by an fp32 SIMT one: the names say CUDA cores, the
    tensor pipes were ~75% busy while it ran alone. The verdict stays the names' (the hardware settles only what
    they leave unknown) and the report lists the contradiction."""
    plain = _edited(tmp_path / "renamed.sqlite", "UPDATE StringIds SET value = "
                    "'cutlass_80_simt_sgemm_128x128_8x4_nn_align1' WHERE value = 'matmul_kernel'")
    rep = analyze(plain, triton_cache=no_ptx)
    (check,) = rep.hardware_checks
    assert check.name == "cutlass_80_simt_sgemm_128x128_8x4_nn_align1" and check.name_verdict == "no"
    assert check.tensor > 60 and "tensor pipes were" in check.message
    assert rep.hardware[0].disagreements == 1
    assert _by_name(rep.kernels)[check.name].tensor_core == "no"
    for fmt in ("table", "markdown", "html"):
        code = main(["report", str(plain), "--format", fmt, "--triton-cache", str(no_ptx[0]), "-o",
                     str(tmp_path / f"r.{fmt}")])
        shown = "cutlass\\_80\\_simt\\_sgemm" if fmt == "markdown" else "cutlass_80_simt_sgemm"  # escaped there
        assert code == 0 and shown in (tmp_path / f"r.{fmt}").read_text() and "tensor pipes were" in \
            (tmp_path / f"r.{fmt}").read_text()


def test_kernels_too_short_to_fill_a_sample_are_named(tmp_path, no_ptx):
    """Every sample the layer-norm phase took, its kernels' launches cut to a third of their length (the real
    capture, the kernel rows shortened): no sample is filled by one kernel any more, and the report says which share
    of kernel time the hardware cannot tell apart."""
    plain = _edited(tmp_path / "short.sqlite", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + (end - start) / 3 "
                    "WHERE demangledName IN (SELECT id FROM StringIds WHERE value LIKE '%layer_norm%')")
    rep = analyze(plain, triton_cache=no_ptx)
    (row,) = rep.hardware
    assert 0.05 < row.unsampled_share < 0.3
    assert "never filled a 100 µs sample alone" in rep.to_dict()["hardware"][0]["message"]
    assert "--gpu-metrics-frequency" in rep.to_dict()["hardware"][0]["message"]


def test_a_window_keeps_the_samples_of_its_time_only():
    whole = readers.read(NSYS_CAPTURE).hw_devices[0]
    part = readers.read(NSYS_CAPTURE, window=(0.0, 0.5)).hw_devices[0]
    assert 0 < part.samples < whole.samples / 3


@pytest.mark.parametrize(("samples", "interval_ns", "tensor", "want"), [
    (15, 100_000_000, 67.6, "yes"), (15, 100_000_000, 6.6, "no"), (15, 100_000_000, 12.0, "unknown"),
    (2, 100_000_000, 80.0, None), (5, 100_000, 80.0, None), (20, 100_000, 80.0, "yes")])
def test_the_thresholds_decide_only_with_enough_samples(samples, interval_ns, tensor, want):
    got = hardware.judge(samples, interval_ns, tensor, "nvml gpm")
    assert (got and got[0]) == want


def test_turing_metric_that_counts_fp16_never_decides():
    got = hardware.judge(100, 100_000, 90.0, "nsys gpu metrics (tensor or fp16)")
    assert got[0] == "unknown" and "FP16 arithmetic" in got[1]


def test_a_damaged_or_foreign_gpm_file_is_a_note_not_an_error(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(CUPTI_RUN, run, ignore=shutil.ignore_patterns("run.sqlite*"))
    lines = (run / "gpm.jsonl").read_text().splitlines()
    (run / "gpm.jsonl").write_text("\n".join([*lines[:80], lines[80][:17], "\x00garbage", *lines[81:]]) + "\n")
    assert readers.read(next(run.glob("*.sqlite.gz"))).hw_devices  # a cut line and junk are skipped
    (run / "gpm.jsonl").write_text('{"something": "else"}\n')
    cap = readers.read(next(run.glob("*.sqlite.gz")))
    assert cap.hw_devices == () and any("not a GPM sample file" in n for n in cap.notes)


def test_gpm_samples_are_never_read_as_a_capture(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(CUPTI_RUN, run, ignore=shutil.ignore_patterns("run.sqlite*"))
    rep = analyze(run)
    assert [Path(s.path).name for s in rep.sources] == ["cupti-vm-687.sqlite.gz"] and rep.skipped == ()


# The real answer of `nsys profile --gpu-metrics-devices=help` on the H200 (nsys 2025.3.1), and on a machine with
# no GPU it can sample.
HELP_H200 = """Possible --gpu-metrics-devices values are:
\t0: Hopper GH100 | NVIDIA H200 PCI[0000:00:06.0]
\tall: Select all supported GPUs
\tcuda-visible: Select GPUs that match CUDA_VISIBLE_DEVICES
\tnone: Disable GPU Metrics [Default]
"""
HELP_NONE = """Possible --gpu-metrics-devices values are:
\tall: Select all supported GPUs
\tnone: Disable GPU Metrics [Default]
"""


@pytest.mark.parametrize(("answer", "want"), [
    (HELP_H200, ["--gpu-metrics-devices=cuda-visible", "--gpu-metrics-frequency=20000"]), (HELP_NONE, [])])
def test_nsys_runs_record_gpu_metrics_where_the_gpu_has_them(tmp_path, answer, want):
    exe = tmp_path / f"nsys-{len(want)}"
    exe.write_text(f"#!/bin/sh\ncat <<'EOF'\n{answer}EOF\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    assert nsys_backend.gpu_metrics_args(str(exe), 20_000) == want


def test_run_says_why_there_is_no_sampler_and_opts_out(tmp_path, monkeypatch):
    from nvprof_wrap.launch import gpm
    from nvprof_wrap.launch.base import Plan, RunSpec
    from nvprof_wrap.launch.runner import _sampler

    plan = Plan("nsys", ["nsys", "profile", "--gpu-metrics-devices=cuda-visible", "python"])
    monkeypatch.setattr(gpm, "available", lambda: ([], "GPU 0 has no GPM (Hopper and newer have it)"))
    sampler, why = _sampler(RunSpec(["python"]), tmp_path, plan)
    assert sampler is None and why == ("no GPM sampler: GPU 0 has no GPM (Hopper and newer have it); nsys GPU "
                                       "metrics in the capture")
    assert _sampler(RunSpec(["python"], hardware=False), tmp_path, plan) == (None, "not sampled (--no-hardware)")
    assert not (tmp_path / gpm.FILE).exists()


def test_gpm_header_names_the_devices_in_the_jobs_order(tmp_path):
    f = tmp_path / "gpm.jsonl"
    f.write_text(json.dumps({"gpm": 1, "interval_s": 0.1, "devices": [{"device": 3}, {"device": 1}]}) + "\n"
                 + json.dumps({"device": 1, "t0_ns": 0, "t_ns": 100_000_000, "sm": 90.0, "tensor": 70.0}) + "\n")
    seen = []
    devices, *_ = read_gpm(f, lambda d: seen.append(d) or iter([(0, 100_000_000, "k")]), 0)
    assert seen == [0, 1] and [d.device_id for d in devices] == [1]  # NVML GPU 1 is the job's CUDA device 1


def test_the_sampler_writes_what_the_reader_reads(tmp_path, monkeypatch):
    """The GPM sampler's thread on the fake pynvml (tests/fakes/pynvml: nvidia-ml-py's calls and structures, one GPU
    70% tensor-active for 0.2 s): a header naming the device, then intervals that follow each other, which the
    reader matches to launches on the same clock."""
    import sys
    import time

    from nvprof_wrap.launch import gpm

    monkeypatch.syspath_prepend(str(FAKES / "pynvml"))
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    devices, why = gpm.available()
    assert devices == [0] and why is None
    start = time.time_ns()
    s = gpm.Sampler(tmp_path / gpm.FILE, devices, 0.02).start()
    time.sleep(0.5)
    s.stop()
    assert s.problem is None and s.samples >= 10
    header, *rows = [json.loads(line) for line in (tmp_path / gpm.FILE).read_text().splitlines()]
    assert header == {"gpm": 1, "interval_s": 0.02, "devices": [{"device": 0, "uuid": "GPU-8cb78979-6fcd-3e7c-aa52-"
                                                                 "961344831e45", "pci": "00000000:00:06.0"}]}
    assert all(a["t_ns"] == b["t0_ns"] and b["t_ns"] > b["t0_ns"] for a, b in itertools.pairwise(rows))
    assert {"sm", "tensor", "hmma", "imma", "dfma", "dmma"} <= set(rows[0]) and rows[0]["tensor"] == 70.0
    assert rows[-1]["tensor"] == 0.0  # idle after 0.2 s
    busy_end = next(r["t0_ns"] for r in rows if r["tensor"] == 0.0)
    devs, kernels, _, _ = read_gpm(tmp_path / gpm.FILE, lambda d: iter([(start, busy_end, "gemm")]), 0)
    (k,) = kernels
    assert devs[0].busy_samples >= 3 and k.name == "gemm" and k.tensor == 70.0 and k.hmma == 70.0
