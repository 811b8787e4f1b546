"""Steps in unmodified PyTorch scripts (issue 22): `run` puts an NVTX range 'optimizer step N' around every step of
every Python process's first optimizer (nvprof_wrap/tracer/annotate.py), through torch.optim's global step hook. torch
is not installed on the CPU machines (CI, developers): a stand-in package named torch, placed on the job's path,
offers the two calls the marks use with torch's own signatures and module layout (torch/optim/optimizer.py
register_optimizer_step_post_hook: hook(optimizer, args, kwargs), a handle with remove(); torch/cuda/nvtx.py
range_start(msg) -> id, range_end(id)) and records what it is asked. On the H200 the same path runs on real torch
(benchmarks/gpu/public_scripts_steps.sh)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests._paths import FAKE_BIN, ROOT

TORCH = '''
import json, os, sys, types
_log = open(os.environ["STAND_IN_LOG"], "a")
_hooks, _ids = [], iter(range(1, 1 << 30))

def _say(*what):
    _log.write(json.dumps(what) + "\\n"); _log.flush()

class _Handle:
    def __init__(self, hook): self.hook = hook
    def remove(self): _hooks.remove(self.hook)

def register_optimizer_step_post_hook(hook):
    _hooks.append(hook); return _Handle(hook)

class Optimizer:
    def step(self):
        for hook in list(_hooks): hook(self, (), {})

def range_start(msg):
    i = next(_ids); _say("start", i, msg); return i

def range_end(i):
    _say("end", i)

# as torch 2.11: torch.optim.optimizer is in sys.modules, but torch/optim/__init__.py deletes the attribute
optim = types.ModuleType("torch.optim"); _optimizer = types.ModuleType("torch.optim.optimizer")
_optimizer.register_optimizer_step_post_hook = register_optimizer_step_post_hook
optim.Optimizer = _optimizer.Optimizer = Optimizer
sys.modules["torch.optim"], sys.modules["torch.optim.optimizer"] = optim, _optimizer
cuda = types.ModuleType("torch.cuda"); cuda.nvtx = types.ModuleType("torch.cuda.nvtx")
cuda.nvtx.range_start, cuda.nvtx.range_end = range_start, range_end
'''

JOB = '''
import torch
generator, critic = torch.optim.Optimizer(), torch.optim.Optimizer()
for _ in range(3):       # a GAN-style loop: two optimizers, one training step
    critic.step()
    generator.step()
'''


def _run(tmp_path, *flags: str) -> tuple[subprocess.CompletedProcess, list]:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(TORCH)
    (tmp_path / "job.py").write_text(JOB)
    log = tmp_path / "nvtx.jsonl"
    env = {"NVPROF_WRAP_HISTORY": "off", "PATH": f"{FAKE_BIN}:/usr/local/bin:/usr/bin:/bin",
           "FAKE_GPUS": "NVIDIA H200:9.0", "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]), "NO_COLOR": "1",
           "STAND_IN_LOG": str(log), "HOME": os.environ.get("HOME", "/root")}
    proc = subprocess.run([sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "-o", str(tmp_path / "run"),
                           "--no-report", *flags, "--", sys.executable, str(tmp_path / "job.py")],
                          capture_output=True, text=True, env=env, timeout=120, check=False, cwd=tmp_path)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, calls


def test_run_marks_the_first_optimizers_steps_in_an_unmodified_script(tmp_path):
    proc, calls = _run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    # step 0 opens at torch's import; each step of the first optimizer to step (the critic) closes one, opens the next;
    # the generator's steps mark nothing; the last range is closed at exit
    assert calls == [["start", 1, "optimizer step 0"], ["end", 1], ["start", 2, "optimizer step 1"], ["end", 2],
                     ["start", 3, "optimizer step 2"], ["end", 3], ["start", 4, "optimizer step 3"], ["end", 4]]
    assert "annotate" not in proc.stderr and "sitecustomize" not in proc.stderr  # nothing went wrong inside the job


def test_no_step_marks_leaves_the_job_alone(tmp_path):
    proc, calls = _run(tmp_path, "--no-step-marks")
    assert proc.returncode == 0, proc.stderr
    assert calls == []


def test_a_failing_mark_never_breaks_the_training_step(tmp_path):
    """range_start raising in the middle of training (an NVTX library gone, say): one line, the marks stop, the job
    goes on and exits 0."""
    global TORCH
    saved = TORCH
    TORCH = TORCH.replace("def range_start(msg):\n",
                          "def range_start(msg):\n    if msg.endswith(' 2'): raise OSError('gone')\n")
    try:
        proc, calls = _run(tmp_path)
    finally:
        TORCH = saved
    assert proc.returncode == 0, proc.stderr
    assert [c[0] for c in calls] == ["start", "end", "start", "end", "end"]  # the stuck range is closed at exit
    lines = [line for line in proc.stderr.splitlines() if line.startswith("nvprof-wrap: annotate")]
    assert lines == ["nvprof-wrap: annotate: step marks stopped: OSError: gone"]


def test_annotate_takes_only_the_kinds_it_knows(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "nvprof_wrap", "run", "--annotate", "foo", "--", "true"],
                          capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
                          env={**os.environ, "NVPROF_WRAP_HISTORY": "off", "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and "'foo': give keras, torch or keras,torch" in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_step_names_are_the_ones_the_readers_look_for():
    from nvprof_wrap.timeline.window import _OPTIMIZER_STEP, STEP_LIKE
    from nvprof_wrap.tracer.annotate import STEP_NAME

    assert _OPTIMIZER_STEP.match(STEP_NAME.format(12)).group(1) == "12"
    assert any(textwrap.dedent(p).replace("%", "12") == STEP_NAME.format(12) for p in STEP_LIKE)


def test_the_optimizer_steps_run_marks_are_counted_as_the_jobs_steps(tmp_path):
    """A real H200 cupti run (tests/data/h200_runs/hw_phases_cupti: benchmarks/gpu/hardware_phases.py) marks no
    'step N' of
    its own; run's step marks opened 'optimizer step 0' at torch's import, and the job never called
    optimizer.step(), so all its kernels ran in that one range. The steps a job ran are then the 'optimizer step N'
    ranges run marked — what a failed job's headline counts ("failed after N steps"); a job's own step ranges win
    where there are both (store.steps_marked, as timeline/window.py prefers them)."""
    import shutil

    from nvprof_wrap.pipeline import evidence
    from nvprof_wrap.pipeline.ingest import ingest
    from nvprof_wrap.store import Store
    from tests._paths import RUNS

    run = tmp_path / "run"
    shutil.copytree(RUNS / "hw_phases_cupti", run, ignore=shutil.ignore_patterns("run.sqlite*"))
    store = Store()
    ingest(store, [run], None)
    evidence.prepare(store)
    assert store.steps_marked() == 1
