"""The speed-up ceiling of a precision change (analyses/ceiling.py), on real H200 runs: the fp32 run's ceiling at
bf16 bounds the speed-up the bf16 run of the same model measured; a run already in bf16 gains nothing from tf32; a
GPU without a peak table row gets no ceiling; the rates a kernel is taken to run at."""
from __future__ import annotations

from dataclasses import replace

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.analyses import peaks
from nvprof_wrap.analyses.ceiling import ceiling, current_rate
from nvprof_wrap.model import Gpu
from nvprof_wrap.report import GpuRow
from nvprof_wrap.report.build import _ceiling
from tests._paths import ROOT

RUNS = ROOT / "tests" / "data" / "h200_runs"
H200 = peaks.lookup("NVIDIA H200")


def test_the_fp32_runs_ceiling_at_bf16_bounds_the_bf16_runs_measured_speed_up() -> None:
    fp32 = analyze(RUNS / "kineto_gpt_fp32_shapes", health=False)
    bf16 = analyze(RUNS / "kineto_gpt_bf16_shapes", health=False)
    assert fp32.ceiling is not None and fp32.time_budget is not None and bf16.time_budget is not None
    measured = fp32.time_budget.step_s / bf16.time_budget.step_s
    at_most = fp32.ceiling.factors["bf16"]
    assert 1.1 < measured < at_most  # 1.25x measured, at most 2.33x: the GPU work shrank, the host did not
    assert fp32.ceiling.info.gpu == "H200 SXM"
    assert fp32.to_dict()["speedup_ceiling"] == fp32.ceiling.factors
    # the bf16 run: its matrix math is bf16 already, so tf32 gains nothing, fp8 at most its matrix math halved
    c = bf16.ceiling
    assert c is not None and c.factors["tf32"] == 1.0 and 1.0 < c.factors["fp8"] < 1.2


def test_no_ceiling_without_the_gpus_peaks() -> None:
    report = analyze(RUNS / "kineto_gpt_fp32_shapes", health=False)
    budget = report.time_budget
    assert budget is not None
    unknown = GpuRow(Gpu(0, "NVIDIA H800"), 9.0, True)  # no datasheet row: never a neighbour's
    assert _ceiling(budget, (unknown,)) is None
    two = (report.gpus[0], replace(report.gpus[0], gpu=Gpu(1, "NVIDIA A100-SXM4-40GB")))
    assert _ceiling(budget, two) is None  # two models: whose peaks?
    a100 = _ceiling(budget, (two[1],))
    assert a100 is not None and a100.info.gpu.startswith("A100") and "fp8" not in a100.factors


@pytest.mark.parametrize(("kind", "precision", "rate"), [
    ("tensor_core", "bf16", 989.4), ("tensor_core", "fp32 (3xTF32)", 494.7 / 3), ("tensor_core", "", 494.7),
    ("tensor_core", "fp32", 494.7), ("other_math", "fp32", 66.9), ("math_unknown", "", 66.9),
    ("other_math", "fp64", 33.5)])
def test_the_rate_a_kernel_runs_its_math_at(kind: str, precision: str, rate: float) -> None:
    assert H200 is not None
    assert current_rate(kind, precision, H200) == pytest.approx(rate)


def test_a_budget_with_no_kernels_gains_nothing() -> None:
    report = analyze(RUNS / "kineto_gpt_bf16_shapes", health=False)
    b = report.time_budget
    assert b is not None and H200 is not None
    idle_only = replace(b, parts=tuple(p for p in b.parts if not p.gpu), kernels=())
    c = ceiling(idle_only, H200)
    assert c is not None and all(f.factor == 1.0 for f in c.factors)
