"""What the PyTorch numerics recorder (tracer/numerics_torch.py) costs on a step it does not sample: no read of a
device value on the host (a host-device synchronisation on a GPU), no forward hook called — while every step's loss
record is still written, the first non-finite step exactly. A small model on the CPU, in a child process (the
recorder patches torch for good); the recorder's own calls are counted, the job's (GradScaler reads its found-inf
flag itself) are not. Needs torch in the interpreter (see tests/tracer/test_numerics.py's docstring)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._paths import ROOT

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="needs torch in this interpreter (see tests/tracer/test_numerics.py)")

# The job: step 0 recorded whole (FIRST=1), steps 1-20 not (EVERY=1000); at step BAD its input turns NaN.
JOB = r"""
import json, sys
import torch
from nvprof_wrap.tracer import numerics, numerics_torch

rec = numerics.begin(sys.argv[1])
numerics_torch.patch(torch)
calls = []  # (step, what) for each read of a tensor's value on the host made by the recorder

def counted(name):
    orig = getattr(torch.Tensor, name)
    def wrapper(self, *a, **k):
        if sys._getframe(1).f_globals.get("__name__", "").startswith("nvprof_wrap"):
            calls.append((rec.steps, name))
        return orig(self, *a, **k)
    setattr(torch.Tensor, name, wrapper)

for name in ("item", "tolist", "cpu", "__bool__", "__float__", "__int__", "__index__"):
    counted(name)
scaler_on, bad = sys.argv[2] == "scaler", int(sys.argv[3])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu", enabled=scaler_on)
losses, hooked = [], []
for step in range(21):
    x = torch.randn(4, 8) * (float("nan") if step == bad else 1.0)
    hooked.append(bool(torch.nn.modules.module._global_forward_hooks))
    loss = model(x).pow(2).mean()
    losses.append(loss.detach().clone())
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
print(json.dumps({"calls": calls, "hooked": hooked, "losses": [float(v) for v in losses]}))
"""


def job(tmp_path: Path, mode: str, bad: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    folder = tmp_path / mode
    folder.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NVPROF_WRAP_NUMERICS_FIRST": "1",
           "NVPROF_WRAP_NUMERICS_EVERY": "1000", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "-c", JOB, str(folder), mode, str(bad)], capture_output=True, text=True,
                          timeout=300, check=False, env=env)
    assert proc.returncode == 0 and "numerics:" not in proc.stderr, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    (path,) = folder.glob("numerics-*.jsonl")
    return out, [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("mode", ["plain", "scaler"])
def test_an_unsampled_step_reads_nothing_on_the_host_and_calls_no_hook(tmp_path, mode):
    out, recs = job(tmp_path, mode, bad=-1)
    unsampled = [c for c in out["calls"] if c[0] >= 1]
    assert unsampled == [], unsampled[:10]  # before: .item() of the loss and of the weights' finiteness, each step
    assert out["hooked"][0] and not any(out["hooked"][1:]), out["hooked"]
    losses = [r for r in recs if r["kind"] == "loss"]
    assert [r["step"] for r in losses] == list(range(21))
    assert [r["loss"] for r in losses] == pytest.approx(out["losses"], rel=1e-6)
    assert all(r["finite"] and r["skipped"] is False for r in losses)  # a scaler object, enabled or not
    assert {r["step"] for r in recs if r["kind"] == "tensor"} == {0}
    assert recs[-1]["kind"] == "end" and recs[-1]["steps"] == 21


@pytest.mark.parametrize("mode", ["plain", "scaler"])
def test_the_first_non_finite_step_is_still_exact(tmp_path, mode):
    out, recs = job(tmp_path, mode, bad=12)
    losses = {r["step"]: r for r in recs if r["kind"] == "loss"}
    assert sorted(losses) == list(range(21))
    first = min(s for s, r in losses.items() if not r["finite"] or r["skipped"])
    assert first == 12 and losses[12]["loss"] is None
    # the step after the first bad one is recorded whole (its hooks back), and no other unsampled step
    tensor_steps = {r["step"] for r in recs if r["kind"] == "tensor"}
    assert {0, 13} <= tensor_steps <= {0, 12, 13}, tensor_steps
    assert [i for i, h in enumerate(out["hooked"]) if h] == [0, 13]
    assert tensors_of(recs, 13, "activation")
    if mode == "scaler":  # the scaler skips step 12 (NaN gradients): the weights stay finite, step 13 trains
        assert losses[12]["skipped"] and losses[11]["skipped"] is False and losses[13]["finite"]


def tensors_of(recs: list[dict[str, Any]], step: int, tensor: str) -> list[dict[str, Any]]:
    return [r for r in recs if r["kind"] == "tensor" and r["step"] == step and r["tensor"] == tensor]


class _Event:
    """A CUDA event's stand-in: the copy has landed once ``done``."""

    def __init__(self) -> None:
        self.done = False

    def query(self) -> bool:
        return self.done

    def synchronize(self) -> None:
        self.done = True


def test_values_read_late_keep_their_step_and_their_order():
    torch = pytest.importorskip("torch")
    from nvprof_wrap.tracer.numerics_torch_flags import DeviceValues

    values = DeviceValues(torch)
    events = []
    for step, loss in enumerate([1.5, float("nan"), 2.5]):
        values.add(step, torch.tensor(loss), torch.tensor(3.0), torch.tensor([256.0]), torch.tensor([0.0]), True)
        events.append(_Event())
        values.unread[-1].event = events[-1]  # as on a GPU: readable once the copy has landed
    assert values.ready() == []
    events[1].done = True
    assert values.ready() == []  # step 1 waits for step 0: the first bad step is found in order
    events[0].done = True
    got = values.ready()
    assert [(v.step, v.bad) for v in got] == [(0, False), (1, True)] and got[1].loss != got[1].loss  # NaN
    assert got[0].loss == 1.5 and got[0].scale == 256.0 and got[0].skipped is False and got[0].weights_finite
    (last,) = values.ready(wait=True)  # a sampled step, or the end: waits
    assert last.step == 2 and not last.bad and len(values.unread) == 0
