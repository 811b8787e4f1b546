"""A JAX job's steps for `run --capture-steps A:B` (tracer/jit_calls.py): the calls of the function its `jax.jit`
made that it calls most, counted in a real Python process with real JAX (on the CPU: what is counted is the job's
calls, the same on any device). On the H200 the same path ran jax's unmodified MNIST example under nsys
(docs/jax.md)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests._paths import ROOT

pytest.importorskip("jax", reason="JAX is not installed (pip install jax: the test extra has it)")

# A job as JAX users write one: a jitted update called per batch, a jitted evaluation called now and then, a jitted
# helper called inside the update (traced, never run on its own), a jitted method and jit(**options) as a decorator.
JOB = textwrap.dedent("""
    import functools, json, os, sys
    from nvprof_wrap.tracer import window
    window.install()  # what the injected sitecustomize does when $NVPROF_WRAP_CAPTURE is set
    import jax, jax.numpy as jnp
    from jax import jit

    @jit
    def helper(x):
        return jnp.tanh(x)

    @jax.jit
    def update(w, x):
        return w - 0.1 * helper(x @ w)

    @functools.partial(jax.jit, static_argnums=1)
    def evaluate(w, scale):
        return jnp.sum(w) * scale

    @jax.jit(static_argnames=("k",))  # jit(**options) as a decorator (JAX 0.7 on)
    def init(k=1):
        return jnp.ones((4, 4)) * k

    class Model:
        @functools.partial(jax.jit, static_argnums=0)
        def apply(self, w):
            return w * 2

    w = init(k=1)
    for _ in range(3):  # an init-time function called more than once before the loop
        w = Model().apply(w) / 2
    x = jnp.ones((4, 4))
    plain = w
    for step in range(int(sys.argv[1])):
        w = update(w, x)
        plain = plain - 0.1 * jnp.tanh(x @ plain)
        if step % 4 == 3:
            evaluate(w, 2)
    lowered = update.lower(w, x)  # the function's own API is still there
    print(json.dumps({"same": bool(jnp.allclose(w, plain)), "name": update.__name__,
                      "lowered": type(lowered).__name__, "calls": sorted(
                          __import__("nvprof_wrap.tracer.jit_calls", fromlist=["x"])._JIT_CALLS.calls.values())}))
""")


def run_job(tmp_path: Path, spec: str, steps: int) -> tuple[dict, list[dict]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NVPROF_WRAP_CAPTURE": spec, "NVPROF_WRAP_CAPTURE_BY": "self",
           "NVPROF_WRAP_RUN_DIR": str(tmp_path), "JAX_PLATFORMS": "cpu"}
    script = tmp_path / "job.py"
    script.write_text(JOB)
    done = subprocess.run([sys.executable, str(script), str(steps)], env=env, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    events = [json.loads(line) for line in (tmp_path / "windows.jsonl").read_text().splitlines()]
    return json.loads(done.stdout.strip().splitlines()[-1]), events


def test_a_jax_jobs_steps_are_the_calls_of_its_most_called_jitted_function(tmp_path):
    out, events = run_job(tmp_path, "steps:5:9", 12)
    assert out["same"] and out["name"] == "update" and out["lowered"] == "Lowered"
    # update 12, Model.apply 3, evaluate 3, init 1; helper never runs on its own (only traced inside update)
    assert out["calls"] == [1, 3, 3, 12]
    assert [(e["event"], e.get("step"), e.get("source")) for e in events] == [
        ("open", 5, "XLA executions"), ("close", 9, "XLA executions"), ("end", 11, "XLA executions")]


def test_a_window_past_the_jobs_last_step_never_opens_and_says_the_last_step(tmp_path):
    _, events = run_job(tmp_path, "steps:50:60", 6)
    assert [(e["event"], e.get("step"), e.get("state")) for e in events] == [("end", 5, "never opened")]
