"""The time budget and the speed-up ceiling on public training scripts that mark no steps of their own, run on the
H200 under `nvprof-wrap run` (issue 41): Lightning's transformer example in bf16-mixed, and timm's ResNet-50
train.py in fp32 and with --amp (bf16). Their steps are the 'optimizer step N' ranges `run` adds.

The fixtures are the runs' nsys exports trimmed to a few steps (benchmarks/trim_steps.py says how), so each figure
below is the window's; the comments give the whole run's, from the report the H200 printed
(benchmarks/results/precision_public_scripts)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.report import Report
from nvprof_wrap.report.compare import Comparison, compare
from tests._paths import ROOT, RUNS

LIGHTNING = RUNS / "lightning_bf16_steps_nsys"  # steps 29-40 kept: 29 the warm-up, 30-40 the steady state
TIMM_FP32 = RUNS / "timm_fp32_steps_nsys"  # steps 19-26 kept: 19 the warm-up, 20-26 the steady state
TIMM_AMP = RUNS / "timm_amp_steps_nsys"


@pytest.fixture(scope="module")
def timm() -> tuple[Report, Report, Comparison]:
    before, after = analyze(TIMM_FP32, health=False), analyze(TIMM_AMP, health=False)
    return before, after, compare(before, after, ("fp32", "amp"))


def test_a_lightning_script_gets_the_budget_of_its_optimizer_steps_and_a_host_bound_verdict() -> None:
    report = analyze(LIGHTNING, health=False)
    b = report.time_budget
    assert b is not None and b.kind == "steps" and (b.first, b.last, b.steps) == (30, 40, 11)
    assert b.host == "all"  # every CUDA call recorded: the idle rest is the host outside them, not unknown
    # the whole run (steps 1-99): a 33 ms step, the GPU idle 93.0% of it, 25.6 ms outside CUDA calls
    assert b.idle_s >= 0.5 * b.step_s
    assert 0.030 < b.step_s < 0.036 and b.idle_s > 0.85 * b.step_s
    largest = max(b.parts, key=lambda p: p.seconds)
    assert largest.name == "outside_cuda" and largest.share > 0.6
    hints = [h for h in report.hints if h.startswith("Host-bound:")]
    assert len(hints) == 1 and "outside CUDA calls" in hints[0]
    # a precision change cannot help a step the host paces: the whole run's ceiling at bf16 was 1.01x
    assert report.ceiling is not None and report.ceiling.factors["bf16"] < 1.05
    assert f"at most {report.ceiling.factors['bf16']:.2f}× faster" in hints[0]


def test_timm_fp32_to_amp_the_budget_rows_add_up_to_the_mean_steps_change(timm) -> None:
    before, after, cmp = timm
    b, a = before.time_budget, after.time_budget
    assert b is not None and a is not None
    assert (b.first, b.last, a.first, a.last) == (20, 26, 20, 26)
    # the whole run (steps 1-49): mean steps 70.84 → 66.01 ms; this window's 71.24 → 65.76 ms
    assert b.step_s == pytest.approx(0.07084, rel=0.03) and a.step_s == pytest.approx(0.06601, rel=0.03)
    delta_ns = (a.step_s - b.step_s) * 1e9
    assert delta_ns < 0
    assert sum(r.delta_ns for r in cmp.budget) == pytest.approx(delta_ns, rel=0.05)
    rows = {r.key: r.delta_ns for r in cmp.budget}
    # the whole run: tensor-core kernels −9.09 ms, elementwise and the other kernels +4.05 ms (they ran longer in
    # bf16: the casts AMP adds) — the largest change first
    assert cmp.budget[0].key == "tensor-core kernels" and -11e6 < rows["tensor-core kernels"] < -7e6
    assert 2e6 < rows["other kernels"] < 6e6


def test_timm_fp32_to_amp_the_ceiling_bounds_the_measured_speed_up(timm) -> None:
    before, after, cmp = timm
    b, a = before.time_budget, after.time_budget
    assert b is not None and a is not None
    p = cmp.ceiling
    assert p is not None and p.precision == "bf16" and p.gpu == "H200 SXM"
    assert p.measured == pytest.approx(b.step_s / a.step_s, abs=0.001)
    assert p.measured <= p.at_most
    # the whole run: measured 1.07× of a predicted ≤ 1.74× (this window: 1.08×, ≤ 1.74×)
    assert 1.03 < p.measured < 1.12 and p.at_most == pytest.approx(1.74, abs=0.05)
    mean_step = [f for f in cmp.findings if f.startswith("mean step (time budget):")]
    speed_up = [f for f in cmp.findings if f.startswith("speed-up: measured")]
    assert len(mean_step) == 1 and f"{b.step_s * 1e3:.2f} → {a.step_s * 1e3:.2f} ms" in mean_step[0]
    assert len(speed_up) == 1 and f"{p.measured:.2f}× of a predicted ≤ {p.at_most:.2f}× (bf16" in speed_up[0]


def test_the_compare_command_gives_the_same_split_and_ceiling_as_json(timm) -> None:
    _, _, cmp = timm
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "nvprof_wrap", "compare", str(TIMM_FP32), str(TIMM_AMP),
                           "--format", "json"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    p = cmp.ceiling
    assert p is not None
    assert out["speedup_predicted"] == {"precision": "bf16", "at_most": p.at_most, "measured": p.measured,
                                      "gpu": "H200 SXM"}
    assert [(r["key"], r["delta_ns"]) for r in out["budget"]] == [(r.key, r.delta_ns) for r in cmp.budget]
    assert any(f.startswith("speed-up: measured") for f in out["findings"])
