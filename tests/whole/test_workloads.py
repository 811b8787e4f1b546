"""The bundled workloads, run for real on the CPU: small, one epoch each.

Skipped when Keras (with a usable backend) is not installed.  The backend is
whatever KERAS_BACKEND says (TensorFlow by default).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._paths import ROOT

pytestmark = pytest.mark.tf  # Keras on TensorFlow (its default backend): the tf group

WORKLOADS = ROOT / "workloads"
TIMEOUT_S = 240  # generous: a cold TensorFlow import alone takes seconds on 2 cores


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_workload(script: str, args: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    metrics = tmp_path / f"{script}.jsonl"
    env = dict(os.environ, NVPROF_WRAP_METRICS=str(metrics), CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, str(WORKLOADS / f"{script}.py"), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc, metrics


def check_training_metrics(metrics: Path, workload: str, precision: str) -> list[dict[str, Any]]:
    records = read_jsonl(metrics)
    assert len(records) == 3, records
    start, epoch, end = records
    assert start["event"] == "start" and start["workload"] == workload
    assert start["precision"] == precision and start["epochs"] == 1
    assert start["data"] in ("reuters", "synthetic") and isinstance(start["backend"], str)
    assert epoch["epoch"] == 1 and epoch["steps"] >= 1 and epoch["epoch_time_s"] > 0
    assert isinstance(epoch["loss"], float) and math.isfinite(epoch["loss"])
    for key in ("accuracy", "val_loss", "val_accuracy"):
        assert key in epoch
    assert end["event"] == "end" and end["wall_s"] > 0
    return records


@pytest.fixture(scope="module")
def keras_available() -> None:
    pytest.importorskip("keras", reason='the tf group needs Keras and TensorFlow: pip install -e ".[tf]"')


@pytest.mark.slow
def test_reuters_mlp_one_epoch(keras_available: None, tmp_path: Path) -> None:
    proc, metrics = run_workload("reuters_mlp", ["--epochs", "1", "--samples", "512"], tmp_path)
    assert "data: " in proc.stdout
    _, epoch, _ = check_training_metrics(metrics, "reuters_mlp", "fp32")
    assert epoch["steps"] == 1  # 512 samples, batch 512
    assert isinstance(epoch["val_loss"], float)


@pytest.mark.slow
def test_reuters_mlp_mixed_records_loss_scale(keras_available: None, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # TensorFlow's CPU float16 matmuls are very slow (~75 s for this run on
    # 2 cores); PyTorch's are not, and the GPU machine uses torch anyway.
    pytest.importorskip("torch")
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    proc, metrics = run_workload("reuters_mlp", ["--epochs", "1", "--samples", "512",
                                                 "--precision", "mixed", "--batch-size", "256"],
                                 tmp_path)
    assert "LossScaleOptimizer" in proc.stdout
    _, epoch, _ = check_training_metrics(metrics, "reuters_mlp", "mixed")
    assert epoch["steps"] == 2 and epoch["loss_scale"] > 1
    assert read_jsonl(metrics)[0]["backend"] == "torch"


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["channels_last", "channels_first"])
def test_convnet_one_epoch(keras_available: None, tmp_path: Path, layout: str) -> None:
    if layout == "channels_first" and os.environ.get("KERAS_BACKEND", "tensorflow") == "tensorflow":
        # TensorFlow 2.21 has no NCHW convolution gradient on the CPU ("Conv2DCustomBackpropFilterOp only supports
        # NHWC"); these tests hide the GPU (CUDA_VISIBLE_DEVICES=""), so NCHW trains only on the other backends.
        pytest.skip("TensorFlow trains channels_first convolutions only on a GPU (its CPU kernels are NHWC only)")
    flag = "--" + layout.replace("_", "-")
    _, metrics = run_workload("convnet", ["--epochs", "1", "--samples", "512", flag], tmp_path)
    start, epoch, _ = check_training_metrics(metrics, "convnet", "fp32")
    assert start["data_format"] == layout and epoch["steps"] == 4


@pytest.mark.slow
def test_matmul_probe_without_gpu_skips(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(WORKLOADS / "matmul_probe.py")],
                          env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no GPU: skipped" in proc.stdout


@pytest.mark.slow
def test_matmul_probe_on_cpu_writes_metrics(tmp_path: Path) -> None:
    if not any(_importable(m) for m in ("torch", "keras")):
        pytest.skip("neither torch nor keras installed")
    _, metrics = run_workload("matmul_probe", ["--allow-cpu", "--size", "128", "--iters", "2",
                                               "--dtypes", "fp32,bf16"], tmp_path)
    records = read_jsonl(metrics)
    assert records[0]["event"] == "start" and records[0]["device"] == "cpu"
    assert [r["dtype"] for r in records[1:-1]] == ["fp32", "bf16"]
    assert records[-1]["event"] == "end"


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_workloads_import_our_package_by_name_and_shadow_nothing() -> None:
    """Run as a script, a workload's own folder is sys.path[0]: in a wheel that is nvprof_wrap/workloads. A workload
    that put its parent folder on sys.path there would let nvprof_wrap/keras.py shadow Keras (`experiment
    reuters_mlp` failed every precision after `pip install .` with 'partially initialized module keras'). So they
    import nvprof_wrap.workloads by name, never touch sys.path, and no module beside them is named like a package
    they import."""
    import ast

    imported: set[str] = set()
    for path in sorted(WORKLOADS.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", "") == "sys":
                parent = next((n for n in ast.walk(tree) if isinstance(n, ast.Call)
                               and isinstance(n.func, ast.Attribute) and n.func.value is node), None)
                assert parent is None, f"{path.name} changes sys.path"
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
                if node.module.startswith("nvprof_wrap"):
                    assert node.module.startswith("nvprof_wrap.workloads"), f"{path.name}: {node.module}"
                assert not node.module.startswith("workloads"), f"{path.name} imports workloads by path"
            elif isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
    siblings = {p.stem for p in WORKLOADS.glob("*.py")} | {p.name for p in WORKLOADS.iterdir() if p.is_dir()}
    assert {"keras", "torch", "numpy"} <= imported  # the check below looks at real imports
    assert siblings & (imported | {"keras", "torch", "jax", "tensorflow", "numpy"}) == set()


@pytest.mark.slow
def test_the_wheel_carries_the_workloads_for_experiment_and_doctor(tmp_path):
    """A non-editable install has no top-level workloads/ folder: `experiment reuters_mlp` and `doctor`'s
    probe look in nvprof_wrap/workloads, a link in the source tree and a copy in the wheel."""
    import importlib.util
    import zipfile

    # Without build isolation when setuptools here can build a wheel (fast, offline): setuptools 70.1+, or older with
    # the wheel package (which TensorFlow brings along: a venv without the tf extra has setuptools 65 and no wheel).
    can_build = importlib.util.find_spec("setuptools") is not None and (
        importlib.util.find_spec("wheel") is not None or importlib.util.find_spec("setuptools.command.bdist_wheel"))
    isolation = ["--no-build-isolation"] if can_build else []
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation,
                           "-w", str(tmp_path), str(ROOT)], capture_output=True, check=False, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("nvprof_wrap-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"nvprof_wrap/workloads/reuters_mlp.py", "nvprof_wrap/workloads/_common.py",
            "nvprof_wrap/workloads/matmul_probe.py"} <= names
    # and what a rebuild in place and the users' type checkers need: the helper's source, its signatures, PEP 561
    assert {"nvprof_wrap/timeline/_cattr.c", "nvprof_wrap/timeline/_cattr.pyi", "nvprof_wrap/readers/_ckineto.c",
            "nvprof_wrap/readers/_ckineto.pyi", "nvprof_wrap/py.typed"} <= names
    # and the helpers compiled, where this machine can build them (the Kineto reader's loop beside the timeline's)
    if any(n.startswith("nvprof_wrap/timeline/_cattr.") and n.endswith(".so") for n in names):
        assert any(n.startswith("nvprof_wrap/readers/_ckineto.") and n.endswith(".so") for n in names)
    from nvprof_wrap.cli import doctor, experiment_cmd

    assert (experiment_cmd.WORKLOADS / "reuters_mlp.py").is_file() and doctor.PROBE.is_file()
