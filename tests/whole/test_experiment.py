"""`nvprof-wrap experiment` end to end on the CPU: the real reuters_mlp workload (1 epoch, small) under the fake
nsys, one run per precision, then the side-by-side table from the run folders."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests._paths import FAKE_BIN, ROOT


@pytest.mark.slow
def test_experiment_table_from_real_workload_runs(tmp_path):
    pytest.importorskip("keras")
    pytest.importorskip("torch")
    env = {**os.environ, "PATH": f"{FAKE_BIN}:{os.environ['PATH']}", "KERAS_BACKEND": "torch", "NO_COLOR": "1",
           "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    env.pop("NVPROF_WRAP_NSYS", None)
    out = tmp_path / "exp"
    cmd = [sys.executable, "-m", "nvprof_wrap", "experiment", "reuters_mlp", "--backend", "nsys",
           "--precisions", "fp32,mixed", "-o", str(out), "--format", "json", "--",
           "--epochs", "2", "--samples", "512", "--verbose", "2"]
    proc = subprocess.run(cmd, capture_output=True, check=False, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["precision"]: r for r in json.loads(proc.stdout)["rows"]}
    assert set(rows) == {"fp32", "mixed"}
    for r in rows.values():
        assert r["steps"] == 2 and r["wall_per_step_ms"] > 0  # 512 samples, batch 512, 2 epochs
        assert r["health"] in ("healthy", "unknown") and r["final_loss"] is not None
        assert r["launches"] == 22  # what the fake nsys' real-schema capture holds
    # The same table again from the folders, without running anything.
    again = subprocess.run([sys.executable, "-m", "nvprof_wrap", "experiment", "reuters_mlp", "--no-run",
                            "--precisions", "fp32,mixed", "-o", str(out), "--format", "markdown"],
                           capture_output=True, check=False, text=True, env=env, timeout=120)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("| precision | ms/step |") and "| mixed |" in again.stdout


def test_a_failing_precision_fails_the_experiment_and_says_so_in_the_table(tmp_path):
    """One precision's workload exits 3 (as a crash in fp16 would): the experiment exits non-zero and its row says
    'failed (exit 3)' instead of a health verdict for a run that did not finish."""
    script = tmp_path / "workload.py"
    script.write_text("import sys\nsys.exit(3 if sys.argv[sys.argv.index('--precision') + 1] == 'fp16' else 0)\n")
    env = {**os.environ, "PATH": f"{FAKE_BIN}:{os.environ['PATH']}", "NO_COLOR": "1", "PYTHONPATH": str(ROOT),
           "COLUMNS": "160"}
    env.pop("NVPROF_WRAP_NSYS", None)
    cmd = [sys.executable, "-m", "nvprof_wrap", "experiment", str(script), "--backend", "nsys",
           "--precisions", "fp32,fp16", "-o", str(tmp_path / "exp")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 3, proc.stderr[-2000:]
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.split()[:1] in (["fp32"], ["fp16"])}
    assert "failed (exit 3)" in rows["fp16"] and "failed" not in rows["fp32"]


def test_read_metrics_takes_what_the_job_wrote_without_raising(tmp_path):
    """metrics.jsonl is the job's file: steps or times that are not numbers (or overflow) are skipped, they were
    a ValueError out of compare / experiment."""
    from nvprof_wrap.report.experiment import read_metrics

    path = tmp_path / "metrics.jsonl"
    path.write_text('{"epoch": 1, "steps": 10, "epoch_time_s": 2.5}\n{"epoch": 2, "steps": "n/a"}\n'
                    '{"epoch": 3, "steps": 1e400}\n{"epoch": 4, "steps": 5, "epoch_time_s": 0.5}\n[[[[\n')
    assert read_metrics(path) == (15, 3.0)
