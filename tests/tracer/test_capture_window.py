"""Capture windows (`run --capture-steps A:B`, `--capture-after S --capture-for S`; issue 27).

The window inside the job (nvprof_wrap/tracer/window.py) is driven here three ways: its controller in-process with a
recorder that notes what it is asked; real Python processes traced by the CUPTI tracer on the faked cupti-python
(tests/fakes/cupti, which records only the kinds enabled, as CUPTI does) and a stand-in torch with torch's optimizer
step hook (as in test_step_marks.py); and `nvprof-wrap run` end to end on both. On the H200 the same paths ran on
nanoGPT
(benchmarks/gpu/capture_window.sh, results of parts A to E in benchmarks/results/capture_window/): launches per kernel
name inside a window equal to the same steps cut out of a whole-job capture, under cupti and nsys."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nvprof_wrap.tracer import window
from tests._paths import FAKE_BIN, FAKES, ROOT
from tests.tracer.test_step_marks import TORCH

INJECT = ROOT / "nvprof_wrap" / "tracer" / "inject"


# ------------------------------------------------------------------------------- the controller, in-process

class Noting(window.Recorder):
    def __init__(self, fail: list[str] | None = None) -> None:
        self.calls: list[str] = []
        self.fail = list(fail or [])

    def enable(self) -> str | None:
        self.calls.append("enable")
        return self.fail.pop(0) if self.fail else None

    def disable(self) -> str | None:
        self.calls.append("disable")
        return None


def controller(spec: str, recorder: window.Recorder | None = None) -> tuple[window.Controller, list[dict]]:
    events: list[dict] = []
    return window.Controller(spec, recorder or Noting(), events.append), events


def test_a_step_window_opens_when_step_a_begins_and_closes_when_step_b_begins():
    c, events = controller("steps:2:4")
    for n in range(6):
        c.step(n, "optimizer steps")
    c.end()
    assert c.recorder.calls == ["enable", "disable"]
    assert [(e["event"], e.get("step")) for e in events] == [("open", 2), ("close", 4), ("end", 5)]
    assert events[-1]["state"] == "closed" and events[-1]["source"] == "optimizer steps"


def test_the_jobs_own_step_marks_outrank_the_optimizer_steps():
    """'step N' ranges are what the job's author calls a step: once one is seen, optimizer steps no longer count
    (a job stepping its optimizer twice a step would otherwise open the window early)."""
    c, events = controller("steps:3:5")
    c.step(0, "optimizer steps")  # torch's import: claims nothing
    for n in range(6):
        c.step(n, "step marks")
        c.step(2 * n + 1, "optimizer steps")
        c.step(2 * n + 2, "optimizer steps")
    c.end()
    assert [(e["event"], e.get("step"), e.get("source")) for e in events] == [
        ("open", 3, "step marks"), ("close", 5, "step marks"), ("end", 5, "step marks")]


def test_keras_batches_count_where_the_optimizer_never_steps():
    """Keras on the torch backend: torch is imported (optimizer step 0), but Keras' own optimizers never call
    torch.optim's step hook: its training batches are the steps."""
    c, events = controller("steps:1:3")
    c.step(0, "optimizer steps")
    for n in range(4):
        c.step(n, "keras batches")
    c.end()
    assert [(e["event"], e.get("step")) for e in events] == [("open", 1), ("close", 3), ("end", 3)]
    assert events[-1]["source"] == "keras batches"


def test_a_window_of_steps_0_b_opens_at_step_0_and_a_job_ending_inside_closes_it_at_its_end():
    c, events = controller("steps:0:100")
    for n in range(3):
        c.step(n, "optimizer steps")
    c.end()
    assert [(e["event"], e.get("step"), e.get("at")) for e in events] == [
        ("open", 0, None), ("close", None, "end"), ("end", 2, None)]


def test_a_window_the_job_never_reaches_says_so_and_never_records():
    c, events = controller("steps:500:520")
    for n in range(31):
        c.step(n, "optimizer steps")
    c.end()
    assert c.recorder.calls == []
    assert events == [{"event": "end", "state": "never opened", "source": "optimizer steps", "step": 30}]


def test_an_open_that_needs_a_cuda_context_is_tried_again_at_the_next_step():
    """cuProfilerStart at torch's import (step 0 of a 0:B window under nsys) answers CUDA_ERROR_NOT_INITIALIZED:
    measured on the H200. The window opens at the next step; the report says where it opened."""
    rec = Noting(fail=["cuProfilerStart returned CUDA error 3 (CUDA not initialized yet)"])
    c, events = controller("steps:0:5", rec)
    for n in range(7):
        c.step(n, "optimizer steps")
    assert rec.calls == ["enable", "enable", "disable"]
    assert [(e["event"], e.get("step")) for e in events] == [("failed", 0), ("open", 1), ("close", 5)]


def test_an_open_that_cannot_succeed_closes_the_window_for_good():
    rec = Noting(fail=["this process is not traced"])
    c, events = controller("steps:1:3", rec)
    for n in range(5):
        c.step(n, "optimizer steps")
    c.end()
    assert rec.calls == ["enable"]
    assert [e["event"] for e in events] == ["failed", "end"] and events[-1]["state"] == "never opened"


def test_a_seconds_window_opens_and_closes_on_its_timer():
    import time

    c, events = controller("seconds:0.05:0.25")
    c.start_timers(time.time())
    deadline = time.time() + 10
    while len(events) < 2 and time.time() < deadline:
        time.sleep(0.01)
    assert [e["event"] for e in events] == ["open", "close"]
    assert c.recorder.calls == ["enable", "disable"]


@pytest.mark.parametrize("bad", ["steps:5:5", "steps:-1:3", "minutes:1:2", "steps:1", "seconds:a:b"])
def test_a_malformed_window_is_refused(bad):
    with pytest.raises(ValueError):
        window.parse(bad)


def test_a_step_source_raising_never_breaks_the_job():
    class Broken(window.Recorder):
        def enable(self):
            raise RuntimeError("boom")

    c, events = controller("steps:0:2", Broken())
    c.step(0, "optimizer steps")  # no exception
    assert events == []


# ------------------------------------------------------------------------- traced processes (CUPTI faked)

JOB = '''
import torch
from cupti import cupti as c
opt = torch.optim.Optimizer()
for step in range({steps}):
    for _ in range(3):
        c._fake_kernel(f"_Z7kernel{{step}}v")
    c._fake_memcpy(4096, 1)
    opt.step()
print("done", flush=True)
'''


def _job(tmp_path: Path, spec: str, steps: int = 6, by: str = "cupti", job: str = JOB,
         torch: str = TORCH, binding: str = "python", **extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    (tmp_path / "torch").mkdir(exist_ok=True)
    (tmp_path / "torch" / "__init__.py").write_text(torch)
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NVPROF_WRAP_", "FAKE_CUPTI", "NVTX_", "CUDA_"))}
    env.update(PYTHONPATH=os.pathsep.join(map(str, [INJECT, ROOT, tmp_path, FAKES])), NVPROF_WRAP_CUPTI_DIR=str(run),
               NVPROF_WRAP_RUN_DIR=str(run), NVPROF_WRAP_CAPTURE=spec, NVPROF_WRAP_CAPTURE_BY=by,
               NVPROF_WRAP_ANNOTATE="steps", NVPROF_WRAP_CUPTI_BINDING=binding,
               STAND_IN_LOG=str(tmp_path / "nvtx.jsonl"), **extra)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(job.format(steps=steps))], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    return proc, run


def _capture(run: Path) -> dict:
    files = sorted(run.glob("cupti-*.sqlite"))
    assert len(files) == 1, sorted(p.name for p in run.iterdir())
    with sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True) as conn:
        return {"meta": dict(conn.execute("SELECT key, value FROM meta")),
                "kernels": [r[0] for r in conn.execute(
                    "SELECT name FROM kernel ORDER BY start")],
                "memcpy": conn.execute("SELECT COUNT(*) FROM memcpy").fetchone()[0],
                "runtime": [r[0] for r in conn.execute("SELECT cbid FROM runtime")]}


def _events(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "windows.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("mode", ["attach", "idle"])
def test_the_tracer_records_only_the_steps_of_its_window(tmp_path, mode):
    """Both ways of waiting for the window: attached only while it is open (the default) or subscribed and idle."""
    proc, run = _job(tmp_path, "steps:2:4", NVPROF_WRAP_CUPTI_WINDOW=mode)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    cap = _capture(run)
    assert cap["kernels"] == ["_Z7kernel2v"] * 3 + ["_Z7kernel3v"] * 3  # steps 2 and 3, nothing else
    assert cap["memcpy"] == 2
    # the RUNTIME kind records every call (the fake's cudaGetDevice too); only the launches are written
    assert cap["runtime"] == [211] * 6
    meta = cap["meta"]
    assert meta["capture_window"] == "steps:2:4" and "window_opened_ns" in meta and "window_closed_ns" in meta
    assert meta["api_records"].startswith("kernel launch calls, copies, waits and allocations (7 launch and ")
    assert [(e["event"], e.get("step")) for e in _events(run)] == [("open", 2), ("close", 4), ("end", 6)]


def test_a_window_subscribes_only_while_it_is_open(tmp_path):
    """The default (NVPROF_WRAP_CUPTI_WINDOW unset): CUPTI is subscribed when the window opens and the capture
    finished and CUPTI detached (cuptiFinalize) when it closes; the same steps are recorded."""
    job = JOB.replace("opt = torch.optim.Optimizer()\n", "opt = torch.optim.Optimizer()\n"
                      "from nvprof_wrap.tracer import cupti_trace as ct\n"
                      "print('subscribed at start:', c._state['subscriber'] is not None, flush=True)\n")
    job = job.replace('print("done", flush=True)', 'print("subscribed at end:", c._state["subscriber"] is not None)')
    proc, run = _job(tmp_path, "steps:2:4", job=job)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.splitlines() == ["subscribed at start: False", "subscribed at end: False"]
    cap = _capture(run)
    assert cap["kernels"] == ["_Z7kernel2v"] * 3 + ["_Z7kernel3v"] * 3 and cap["runtime"] == [211] * 6
    assert cap["meta"]["exit"] == "window closed"


def test_the_buffers_a_closing_window_flushes_are_written_in_the_job_not_by_a_new_process(tmp_path):
    """A window's records mostly arrive in the flush at its close. A buffer that full once started the writer
    process (sink.py) there — the job waited for a new interpreter at the window's edge to write one buffer. Now
    the writer process is started only while the window records (raw buffers)."""
    job = JOB.replace('for _ in range(3):', 'for _ in range(12_000 if step == 1 else 3):')
    proc, run = _job(tmp_path, "steps:1:2", steps=3, job=job)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    cap = _capture(run)
    assert cap["meta"]["records"].startswith("raw buffers") and len(cap["kernels"]) == 12_000
    assert "writer" not in cap["meta"]  # written here: no process was started


def test_a_process_whose_window_never_opens_writes_no_capture(tmp_path):
    proc, run = _job(tmp_path, "steps:10:20", steps=3)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert not list(run.glob("cupti-*"))
    assert _events(run) == [{**_events(run)[0], "event": "end", "state": "never opened", "step": 3}]


def test_the_jobs_own_step_ranges_drive_the_window(tmp_path):
    """A job that marks its steps itself (torch.cuda.nvtx.range_push('step N'), as workloads/_torch_common.py does):
    its marks count, not the optimizer's steps — here it steps its optimizer twice a step."""
    loop = "for step in range({steps}):\n"
    job = JOB.replace("    opt.step()\n", "    opt.step()\n    opt.step()\n").replace(
        loop, loop + "    torch.cuda.nvtx.range_push(f'step {{step}}')\n")
    torch = TORCH + "cuda.nvtx.range_push = lambda msg: _say('push', msg)\n"
    proc, run = _job(tmp_path, "steps:1:2", steps=4, job=job, torch=torch)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert _capture(run)["kernels"] == ["_Z7kernel1v"] * 3
    assert [(e["event"], e.get("step"), e.get("source")) for e in _events(run)] == [
        ("open", 1, "step marks"), ("close", 2, "step marks"), ("end", 3, "step marks")]


# ----------------------------------------------------------------------------------- `nvprof-wrap run`

def _run(tmp_path: Path, *flags: str, steps: int = 6, backend: str = "cupti") -> tuple[subprocess.CompletedProcess,
                                                                                       Path]:
    (tmp_path / "torch").mkdir(parents=True, exist_ok=True)
    (tmp_path / "torch" / "__init__.py").write_text(TORCH)
    (tmp_path / "job.py").write_text(textwrap.dedent(JOB.format(steps=steps)))
    env = {"NVPROF_WRAP_HISTORY": "off", "PATH": f"{FAKE_BIN}:/usr/local/bin:/usr/bin:/bin",
           "FAKE_GPUS": "NVIDIA H200:9.0", "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path), str(FAKES)]),
           "NO_COLOR": "1", "COLUMNS": "200", "STAND_IN_LOG": str(tmp_path / "nvtx.jsonl"),
           "HOME": os.environ.get("HOME", "/root"), "NVPROF_WRAP_CUPTI_BINDING": "python"}
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "nvprof_wrap", "run", "--backend", backend, "--no-hardware", "-o",
                           str(run), *flags, "--", sys.executable, str(tmp_path / "job.py")],
                          capture_output=True, text=True, env=env, timeout=120, check=False, cwd=tmp_path)
    return proc, run


def test_run_capture_steps_reports_the_window_it_covers(tmp_path):
    proc, run = _run(tmp_path, "--capture-steps", "2:4", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {k["name"]: k["launches"] for k in report["kernels"]} == {"kernel2()": 3, "kernel3()": 3}
    capture = report["capture"]
    # what opening and closing the window cost the job, as its process measured it on its own thread
    assert isinstance(capture["held_s"], float) and 0 < capture["held_s"] < 30
    held = f"; opening and closing it held the job {capture['held_s']:.2f} s" if capture["held_s"] >= 0.005 else ""
    assert report["headline"] == [(
        f"Capture window: steps 2 to 3 (run --capture-steps 2:4, counted by optimizer steps; the job ran 6 steps{held})"
        " — only what ran inside it was recorded; the job's exit and health are of all of it")]
    events = _events(run)
    assert [e["event"] for e in events] == ["open", "close", "end"]
    assert capture["held_s"] == round((events[0]["held_ms"] + events[1]["held_ms"]) / 1e3, 4)
    assert (capture["kind"], capture["start"], capture["end"], capture["opened"], capture["processes"]) == \
        ("steps", 2, 4, 1, 1)
    assert report["job"]["steps"] == 6  # the job's steps, not the window's two
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["capture"] == {"kind": "steps", "start": 2, "end": 4}
    # the same run read again: the same window line, in the table too
    again = subprocess.run([sys.executable, "-m", "nvprof_wrap", "report", str(run)], capture_output=True, text=True,
                           env={**os.environ, "NVPROF_WRAP_HISTORY": "off", "PYTHONPATH": str(ROOT),
                                "NO_COLOR": "1", "COLUMNS": "250"}, timeout=60, check=False)
    assert again.returncode == 0 and again.stdout.startswith("Capture window: steps 2 to 3"), again.stdout[:300]


def test_a_windowed_runs_history_row_says_its_window_not_whole(tmp_path):
    """The run history keyed a windowed run's report as "whole"; it covers the window only."""
    proc, run = _run(tmp_path, "--capture-steps", "2:4", "--no-report")
    assert proc.returncode == 0, proc.stderr
    env = {**os.environ, "NVPROF_WRAP_HISTORY": str(tmp_path / "history.sqlite"), "PYTHONPATH": str(ROOT)}
    for argv in (["report", str(run)], ["report", str(run), "--window", "0:1"]):
        done = subprocess.run([sys.executable, "-m", "nvprof_wrap", *argv], capture_output=True, text=True, env=env,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr
    listed = subprocess.run([sys.executable, "-m", "nvprof_wrap", "runs", "--format", "json"], capture_output=True,
                            text=True, env=env, timeout=60, check=False)
    assert sorted(r["scope"] for r in json.loads(listed.stdout)["runs"]) == ["capture steps 2:4", "window 0:1"]


def test_run_whose_window_never_opens_says_why_and_exits_nonzero(tmp_path):
    proc, run = _run(tmp_path, "--capture-steps", "500:520", steps=3)
    assert proc.returncode == 2  # the job succeeded, its run not recorded: not the gate's 1
    assert ("the cupti run wrote no capture in" in proc.stderr and "the capture window (run --capture-steps 500:520) "
            "never opened: the job's last step was 3 (optimizer steps), before step 500") in proc.stderr, proc.stderr
    report = subprocess.run([sys.executable, "-m", "nvprof_wrap", "report", str(run)], capture_output=True, text=True,
                            env={**os.environ, "NVPROF_WRAP_HISTORY": "off", "PYTHONPATH": str(ROOT)}, timeout=60,
                            check=False)
    assert report.returncode == 2 and "never opened" in report.stderr and report.stderr.count("\n") == 1


def test_nsys_takes_its_capture_range_from_the_window(tmp_path):
    """nsys: steps through cudaProfilerApi ending with 'stop' (its default, stop-shutdown, would end the job), the
    job told to call cuProfilerStart/Stop; seconds through --delay/--duration with --kill=none (measured on the
    H200: without it nsys ends the job with SIGTERM when the duration is over)."""
    proc, run = _run(tmp_path, "--capture-steps", "2:4", "--no-report", backend="nsys")
    assert proc.returncode == 0, proc.stderr
    argv = json.loads((run / "manifest.json").read_text())["profiler_argv"]
    assert "--capture-range=cudaProfilerApi" in argv and "--capture-range-end=stop" in argv
    events = _events(run)
    # no libcuda here: the job's cuProfilerStart cannot be called, which the window record says
    assert events[0]["event"] == "failed" and "CUDA driver" in events[0]["why"]
    proc, run = _run(tmp_path / "t", "--capture-after", "30", "--capture-for", "5", "--no-report", backend="nsys")
    argv = json.loads((run / "manifest.json").read_text())["profiler_argv"]
    assert ["--delay=30", "--duration=5", "--kill=none"] == [a for a in argv if a.startswith(("--delay", "--dur",
                                                                                              "--kill"))]


@pytest.mark.parametrize(("flags", "said"), [
    (["--capture-steps", "5:5"], "give A:B, two whole numbers with 0 <= A < B"),
    (["--capture-steps", "a:b"], "give A:B"),
    (["--capture-steps", "1:5", "--capture-after", "3"], "--capture-steps and --capture-after/--capture-for"),
    (["--capture-steps", "1:5", "--no-step-marks"], "counts the torch optimizer steps that --no-step-marks"),
    (["--capture-after", "-1"], "seconds between 0 and"),
])
def test_contradicting_window_options_are_refused_before_the_job_runs(tmp_path, flags, said):
    marker = tmp_path / "ran"
    proc = subprocess.run([sys.executable, "-m", "nvprof_wrap", "run", *flags, "-o", str(tmp_path / "r"), "--",
                           sys.executable, "-c", f"open({str(marker)!r}, 'w')"], capture_output=True, text=True,
                          env={**os.environ, "NVPROF_WRAP_HISTORY": "off", "PYTHONPATH": str(ROOT)}, timeout=60,
                          check=False)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert not marker.exists() and not (tmp_path / "r").exists()


def test_nvprof_cannot_start_late(monkeypatch):
    from nvprof_wrap.errors import BadInput
    from nvprof_wrap.launch.base import CaptureWindow, RunSpec
    from nvprof_wrap.launch.nvprof import BACKEND

    monkeypatch.setattr(BACKEND, "find", lambda explicit=None: "/opt/cuda-11/bin/nvprof")
    monkeypatch.setattr(BACKEND, "version", lambda exe=None: "11.8")
    late = RunSpec(["python", "x.py"], capture=CaptureWindow("seconds", 5.0, 8.0))
    with pytest.raises(BadInput, match="nvprof cannot start recording after a delay"):
        BACKEND.plan(late, Path("/nonexistent"), [])
    plan = BACKEND.plan(RunSpec(["python", "x.py"], capture=CaptureWindow("steps", 3, 9)), Path("/nonexistent"), [])
    assert plan.argv[1:3] == ["--profile-from-start", "off"]
    assert plan.env == {"NVPROF_WRAP_CAPTURE": "steps:3:9", "NVPROF_WRAP_CAPTURE_BY": "profiler"}


@pytest.mark.tf
def test_keras_fit_batches_drive_the_window(tmp_path):
    """Real Keras 3 (TensorFlow backend, on the CPU): Model.fit calls CallbackList.on_train_batch_begin before every
    training batch, counted over epochs — 2 epochs of 8 batches are batches 0..15; a window of 5:9 opens at batch 5
    and closes at batch 9 (the recorder the controller drives here notes the calls)."""
    pytest.importorskip("keras")
    code = textwrap.dedent("""
        import json, os
        os.environ.setdefault("KERAS_BACKEND", "tensorflow")
        from nvprof_wrap.tracer import window

        class Noting(window.Recorder):
            def enable(self):
                print("enable at", window._CONTROLLER.last, flush=True)
            def disable(self):
                print("disable at", window._CONTROLLER.last, flush=True)

        window.RECORDERS["self"] = Noting
        window.install()
        import numpy as np
        import keras
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
        model.compile("sgd", "mse")
        model.fit(np.zeros((64, 8)), np.zeros((64, 4)), batch_size=8, epochs=2, verbose=0)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NVPROF_WRAP_")}
    env.update(PYTHONPATH=str(ROOT), NVPROF_WRAP_CAPTURE="steps:5:9", NVPROF_WRAP_CAPTURE_BY="self",
               NVPROF_WRAP_RUN_DIR=str(tmp_path), TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["enable at {'keras batches': 5}", "disable at {'keras batches': 9}"]
    events = _events(tmp_path)
    assert [(e["event"], e.get("step"), e.get("source")) for e in events] == [
        ("open", 5, "keras batches"), ("close", 9, "keras batches"), ("end", 15, "keras batches")]
