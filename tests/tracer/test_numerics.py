"""The numerics recorder (`run --numerics`, tracer/numerics*.py), run for real on the CPU under `run --backend none`:
the seed's fp16 collapse and its mixed-precision fix in Keras 3 (TensorFlow, JAX, and the torch backend where torch
is installed), a PyTorch fp16 overflow with a GradScaler and its bf16 twin, the file's bounds, and that recording
changes no result. The records are read here with plain json, never through the code under test.

The torch tests need torch in the interpreter running the tests (CI has none: they skip); on a machine whose
Python lacks it, run this file with a venv's Python that has it (--system-site-packages)."""
from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nvprof_wrap.tracer import numerics
from tests._paths import ROOT

TIMEOUT_S = 300  # a cold TensorFlow import alone takes seconds on 2 cores
HAS_KERAS = importlib.util.find_spec("keras") is not None and importlib.util.find_spec("tensorflow") is not None
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None
needs_keras = pytest.mark.skipif(not HAS_KERAS, reason='needs Keras and TensorFlow: pip install -e ".[tf]"')
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch in this interpreter (run with a Python that has "
                                                       "it: see the module's docstring)")
needs_jax = pytest.mark.skipif(not HAS_JAX, reason='needs JAX (Keras on the jax backend): pip install -e ".[test]"')
SEED = [str(ROOT / "workloads" / "reuters_mlp.py"), "--samples", "2048", "--verbose", "0"]  # 4 steps an epoch


def run(tmp_path: Path, name: str, job: list[str], *options: str, env: dict[str, str] | None = None
        ) -> tuple[subprocess.CompletedProcess[str], Path]:
    folder = tmp_path / name
    proc = subprocess.run([sys.executable, "-m", "nvprof_wrap", "run", "--backend", "none", *options,
                           "-o", str(folder), "--", sys.executable, *job], capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False, cwd=tmp_path,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3",
                               "PYTHONPATH": str(ROOT), **(env or {})})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc, folder


def records(folder: Path) -> list[dict[str, Any]]:
    files = sorted(folder.glob("numerics-*.jsonl"))
    assert len(files) == 1, sorted(p.name for p in folder.iterdir())
    return [json.loads(line) for line in files[0].read_text().splitlines()]


def tensors(recs: list[dict[str, Any]], **match: Any) -> list[dict[str, Any]]:
    return [r for r in recs if r["kind"] == "tensor" and all(r.get(k) == v for k, v in match.items())]


def check_seed_collapse(recs: list[dict[str, Any]], backend: str) -> None:
    """Step ≤ 2, the first Dense layer: the RMSprop accumulator mostly 0 or subnormal, the update/weight ratio huge,
    then activations that are not finite."""
    meta = recs[0]
    assert meta["kind"] == "meta" and meta["v"] == 1 and meta["framework"] == "keras" and meta["backend"] == backend
    assert meta["policy"] == "float16" and meta["layers"][0] == "dense"
    state = tensors(recs, layer="dense", tensor="optimizer_state", name="dense/kernel:velocity", step=0)
    assert state and state[0]["zeros"] + state[0]["subnormal"] > 0.9 and state[0]["dtype"] == "float16", state
    update = tensors(recs, layer="dense", tensor="update", name="dense/kernel", step=0)
    assert update and update[0]["ratio"] > 50, update
    bad = [r for r in tensors(recs, layer="dense", tensor="activation") if r["nan"] + r["inf"] > 0]
    assert bad and bad[0]["step"] <= 2 and bad[0]["phase"] == "forward", tensors(recs, tensor="activation")
    assert recs[-1]["kind"] == "end" and recs[-1]["dropped"] == 0 and recs[-1]["steps"] == 8


@needs_keras
@pytest.mark.tf
def test_the_seeds_fp16_collapse_is_recorded_under_backend_none(tmp_path):
    proc, folder = run(tmp_path, "fp16", [*SEED, "--precision", "fp16", "--keras2-numerics", "all", "--epochs", "2"],
                       "--numerics")
    check_seed_collapse(records(folder), "tensorflow")
    losses = [r for r in records(folder) if r["kind"] == "loss"]
    assert [r["step"] for r in losses] == list(range(8)) and not losses[-1]["finite"] and losses[-1]["loss"] is None
    assert "No profiler capture (--backend none)" in proc.stdout  # the report, not a refusal
    assert "Training health: nan" in proc.stdout
    assert json.loads((folder / "manifest.json").read_text())["captures"] == []  # the records are not captures


@needs_keras
@pytest.mark.tf
def test_mixed_precision_records_a_loss_scale_and_nothing_non_finite(tmp_path):
    _, folder = run(tmp_path, "mixed", [*SEED, "--precision", "mixed", "--keras2-numerics", "all", "--epochs", "2"],
                    "--numerics")
    recs = records(folder)
    assert recs[0]["policy"] == "mixed_float16"
    assert tensors(recs, tensor="activation") and tensors(recs, tensor="optimizer_state")
    assert [r for r in tensors(recs) if r["nan"] or r["inf"]] == []
    losses = [r for r in recs if r["kind"] == "loss"]
    assert len(losses) == 8 and all(r["finite"] and r["scale"] and r["scale"] > 1 for r in losses)
    assert all(r["skipped"] in (True, False) for r in losses)


@needs_keras
@pytest.mark.tf
def test_recording_changes_no_result(tmp_path):
    job = [*SEED, "--precision", "fp32", "--epochs", "2"]
    _, plain = run(tmp_path, "plain", job, "--no-report")
    _, recorded = run(tmp_path, "recorded", job, "--no-report", "--numerics")
    assert not list(plain.glob("numerics-*.jsonl")) and records(recorded)

    def losses(folder: Path) -> list[Any]:
        lines = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]
        return [(r["loss"], r["accuracy"], r["val_loss"]) for r in lines if "epoch" in r]

    assert len(losses(plain)) == 2 and losses(plain) == losses(recorded)


HOSTILE = """
import keras, numpy as np
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((8,)), *[keras.layers.Dense(8, activation="relu") for _ in range(150)],
                          keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
x = np.random.default_rng(0).normal(size=(256, 8)).astype("float32")
model.fit(x, x[:, :1], batch_size=32, epochs=3, verbose=0)
"""


@needs_keras
@pytest.mark.tf
def test_a_huge_model_stays_within_the_files_limit(tmp_path):
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE)
    limit = 40_000
    _, folder = run(tmp_path, "hostile", [str(script)], "--numerics", "--no-report",
                    env={numerics.ENV_MAX_BYTES: str(limit), numerics.ENV_FIRST: "24"})
    path = next(folder.glob("numerics-*.jsonl"))
    lines = path.read_text().splitlines()
    assert path.stat().st_size <= limit
    assert json.loads(lines[-1]) == {"kind": "truncated"}  # the last record; no "end" after it
    meta = json.loads(lines[0])
    assert len(meta["layers"]) == numerics.LAYERS and meta["layers"][0] == "dense" and meta["layers"][-1] == "dense_150"


# ------------------------------------------------------------------------------------------------ PyTorch


@needs_torch
def test_a_collapsing_grad_scaler_and_the_overflowing_layer_are_recorded(tmp_path):
    _, folder = run(tmp_path, "fp16", [str(ROOT / "workloads" / "fp16_overflow.py"), "--precision", "fp16"],
                    "--numerics", "--no-report")
    recs = records(folder)
    assert recs[0]["framework"] == "torch" and recs[0]["policy"] == "autocast fp16"
    assert recs[0]["layers"] == ["fc1", "norm", "act", "fc2"]
    losses = [r for r in recs if r["kind"] == "loss"]
    scales = [r["scale"] for r in losses]
    assert len(losses) == 12 and all(r["skipped"] for r in losses)
    assert all(b < a for a, b in itertools.pairwise(scales)) and scales[-1] < scales[0] / 1000
    fc1 = tensors(recs, layer="fc1", tensor="activation", step=0)
    assert fc1 and fc1[0]["dtype"] == "float16" and fc1[0]["inf"] > 0 and fc1[0]["max_abs"] == 65504.0
    assert tensors(recs, layer="fc1", tensor="gradient", step=0)


@needs_torch
def test_the_same_model_in_bf16_records_nothing_non_finite(tmp_path):
    _, folder = run(tmp_path, "bf16", [str(ROOT / "workloads" / "fp16_overflow.py"), "--precision", "bf16"],
                    "--numerics", "--no-report")
    recs = records(folder)
    assert recs[0]["policy"] == "autocast bf16"
    assert [r for r in tensors(recs) if r["nan"] or r["inf"]] == []
    assert tensors(recs, layer="fc1", tensor="activation")[0]["max_abs"] > 65504  # fine in bf16's range
    updates = tensors(recs, layer="fc1", tensor="update", name="fc1.weight")
    assert updates and all(0 < u["ratio"] < 1 for u in updates)
    states = {r["name"] for r in tensors(recs, tensor="optimizer_state")}
    assert {"fc1.weight:exp_avg", "fc1.weight:exp_avg_sq"} <= states
    assert all(r["kind"] != "loss" or (r["finite"] and r["scale"] is None) for r in recs)


@needs_torch
@needs_keras
def test_keras_on_the_torch_backend_records_the_collapse_too(tmp_path):
    _, folder = run(tmp_path, "keras-torch",
                    [*SEED, "--precision", "fp16", "--keras2-numerics", "all", "--epochs", "2"],
                    "--numerics", "--no-report", env={"KERAS_BACKEND": "torch"})
    check_seed_collapse(records(folder), "torch")


@needs_jax
@needs_keras
def test_keras_on_the_jax_backend_records_the_collapse_with_its_gradients(tmp_path):
    """Keras's JAX trainer keeps the step's state apart from the variables during fit: reading a weight after the
    first step raised TypeError and the recording stopped (one step of eight, no collapse recorded); and JAX has no
    tape, so no gradient was recorded. Every step now, with the gradients, and the losses as without recording."""
    job = [*SEED, "--precision", "fp16", "--keras2-numerics", "all", "--epochs", "2"]
    proc, folder = run(tmp_path, "keras-jax", job, "--numerics", "--no-report", env={"KERAS_BACKEND": "jax"})
    assert "stopped recording" not in proc.stderr, proc.stderr[-2000:]
    recs = records(folder)
    check_seed_collapse(recs, "jax")
    grads = {r["name"]: r for r in tensors(recs, tensor="gradient", step=0)}
    assert set(grads) == {f"{layer}/{w}" for layer in ("dense", "dense_1", "dense_2") for w in ("kernel", "bias")}
    kernel = grads["dense/kernel"]
    assert kernel["dtype"] == "float16" and kernel["n"] == 10_000 * 256 and 0 < kernel["max_abs"] < 1, kernel
    assert kernel["phase"] == "backward" and kernel["zeros"] > 0.5  # most of the multi-hot input's words are absent
    _, plain = run(tmp_path, "keras-jax-plain", job, "--no-report", env={"KERAS_BACKEND": "jax"})

    def losses(folder: Path) -> list[Any]:
        lines = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]
        return [(r["loss"], r["accuracy"]) for r in lines if "epoch" in r]

    assert len(losses(plain)) == 2 and losses(plain) == losses(folder)


# ------------------------------------------------------------------------------------------------ the parts


def test_the_writer_never_writes_a_non_finite_number_nor_past_its_limit(tmp_path):
    w = numerics.Writer(str(tmp_path), 300)
    assert w.write({"kind": "loss", "step": 0, "loss": numerics.finite_or_none(float("nan"))})
    assert not w.write({"kind": "loss", "step": 1, "loss": float("inf")})  # refused, counted
    assert not w.write({"kind": "tensor", "name": "x" * (numerics.MAX_LINE + 1)})
    while w.write({"kind": "loss", "step": 2, "loss": 1.5}):
        pass
    w.flush()
    text = Path(w.path).read_text()
    assert len(text.encode()) <= 300 and text.splitlines()[-1] == '{"kind":"truncated"}'
    assert "Infinity" not in text and "NaN" not in text and w.dropped >= 3


def test_the_statistics_of_a_float16_tensor():
    np = pytest.importorskip("numpy")
    a = np.array([0.0, 0.0, 1e-6, 3e-5, 1.0, -np.inf, np.nan, 2.0], dtype=np.float16)
    got = numerics.np_stats(a)
    assert got == {"dtype": "float16", "n": 8, "max_abs": 2.0, "zeros": 0.25, "subnormal": 0.25, "nan": 1, "inf": 1}
    assert numerics.np_stats(np.arange(4)) is None  # not floating point


def test_layers_are_spread_over_the_model():
    names = [f"l{i}" for i in range(200)]
    picked = numerics.spread(names, 64)
    assert len(picked) == 64 and picked[0] == "l0" and picked[-1] == "l199"
    assert picked == sorted(picked, key=names.index)


@needs_keras
@pytest.mark.tf
@pytest.mark.slow
def test_experiment_try_fix_runs_the_fix_and_it_trains(tmp_path):
    """The seed's fp16 run breaks; its numerics name the optimizer's underflow; --try-fix re-runs it in mixed
    precision (float32 master weights and state, loss scaling), whose row is healthy (the issue's CPU check)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "150", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-m", "nvprof_wrap", "experiment", "reuters_mlp", "--backend", "none",
                           "--precisions", "fp16", "--try-fix", "-o", str(tmp_path / "x"), "--format", "json",
                           "--", "--samples", "2048", "--verbose", "0", "--keras2-numerics", "all", "--epochs", "2"],
                          capture_output=True, text=True, env=env, timeout=2 * TIMEOUT_S, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    (broken, fixed) = rows
    assert broken["precision"] == "fp16" and broken["health"] == "nan"
    assert any("optimizer state dense/kernel:velocity" in f for f in broken["findings"])
    assert fixed["precision"] == "mixed (fix for fp16)" and fixed["health"] == "healthy"
    assert fixed["findings"][0] == "the fix for fp16's numerics: healthy"
