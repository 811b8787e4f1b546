"""Training health of jobs that print per-step losses and no epochs: nanoGPT's `iter N: loss L` lines (real logs of
nanoGPT, unmodified, on this project's CPU machine and on the H200), judged over medians of spans of steps."""
from __future__ import annotations

import json
import math
import shutil
import tarfile
from pathlib import Path

import pytest

from nvprof_wrap.model import HealthVerdict
from nvprof_wrap.report.health import (
    STEP_SPANS,
    StepLosses,
    assess_steps,
    health_from_run,
    parse_step_log,
    parse_step_logs,
)
from tests._paths import DATA, ROOT, RUNS

NANO = DATA / "nanogpt_cpu"
HEALTHY = NANO / "shakespeare_char_fp32.stdout.log"
NAN = NANO / "shakespeare_char_lr1e6_nan.stdout.log"


def _h200_random_tokens(tmp_path: Path) -> Path:
    """nanoGPT on random tokens, 1,000 steps on the H200, unprofiled (the benchmark's archived job output)."""
    archive = ROOT / "benchmarks" / "results" / "capture_window" / "Q4-unprofiled_twin.stdout.tgz"
    with tarfile.open(archive) as tar:
        text = tar.extractfile("q_none_1/stdout.log").read()  # type: ignore[union-attr]
    (out := tmp_path / "stdout.log").write_bytes(text)
    return out


def test_a_nanogpt_job_that_learns_is_healthy():
    h = health_from_run(None, None, log_paths=[HEALTHY])
    assert (h.status, h.unit, h.epochs, h.counted) == ("healthy", "step", 301, "301 steps logged")
    # medians of 10 spans of ~30 steps: iteration 0's 4.19 is one step, not the span's median
    assert h.findings == ("loss fell from 3.599 (median of steps 0-29) to 2.534 (median of steps 271-300)",)
    assert h.final.epoch == 300 and h.final.loss == 2.4922 and h.final.val_loss == 2.5574


def test_the_evaluation_line_gives_the_val_loss_and_the_iteration_line_the_loss():
    found = parse_step_logs([HEALTHY])
    assert len(found) == 301 and list(found.steps[:3]) == [0, 1, 2]
    assert found.losses[0] == 4.1859  # "iter 0: loss 4.1859", printed after "step 0: train loss 4.1821"
    assert found.val == {0: 4.1805, 100: 2.6915, 200: 2.5354, 300: 2.5574}


def test_a_nanogpt_job_whose_loss_became_nan_says_at_which_step():
    h = health_from_run(None, None, log_paths=[NAN])
    assert (h.status, h.findings, h.epochs) == ("nan", ("loss became NaN at step 1",), 101)
    assert math.isnan(h.final.loss)


def test_a_model_that_cannot_learn_is_not_called_healthy(tmp_path):
    """Random tokens: the loss sits at ln(65) = 4.17 all along; 4.18 -> 4.175 is no learning."""
    h = health_from_run(None, None, log_paths=[_h200_random_tokens(tmp_path)])
    assert (h.status, h.epochs) == ("no-learning", 1001)
    assert h.findings[0].startswith("loss did not fall by more than 1% from 4.18 (median of steps 0-99) to 4.175")


@pytest.mark.parametrize("path", [HEALTHY, NAN])
def test_streamed_logs_give_what_the_whole_text_gives(path):
    streamed, whole = parse_step_logs([path]), parse_step_log(path.read_text())
    assert list(streamed.steps) == list(whole.steps) and str(streamed.val) == str(whole.val)
    assert [str(x) for x in streamed.losses] == [str(x) for x in whole.losses]  # NaN == NaN as text


def test_epochs_come_first():
    """A Keras log that also prints step-like lines is judged by its epochs, as before."""
    keras = (DATA / "keras_logs" / "keras3_torch_fp16_keras2optimizer_nan.log").read_text()
    h = health_from_run(None, keras + "step 5: loss 0.25\n")
    assert h.unit == "epoch" and h.status == "nan"


@pytest.mark.parametrize(("line", "step", "loss", "val"), [
    ("iter 100: loss 2.4567, time 12.34ms, mfu 4.56%", 100, 2.4567, None),  # nanoGPT
    ("step 200: train loss 2.5655, val loss 2.5354", 200, 2.5655, 2.5354),  # nanoGPT's evaluation
    ("step:  10  loss:  7.9312  memory:  3.2GiB(4.1%)  tps: 12,345", 10, 7.9312, None),  # torchtitan-like
    ("[step 5] training_loss=0.125 validation loss 0.5", 5, 0.125, 0.5),
    ("Step 7/100, loss = inf", 7, math.inf, None),
])
def test_step_lines(line, step, loss, val):
    found = parse_step_log(line)
    assert list(found.steps) == [step] and str(found.losses[0]) == str(loss)
    assert found.val == ({step: val} if val is not None else {})


@pytest.mark.parametrize("line", [
    "16/16 ━━━━━━━━━━━━━━━━━━━━ 1s 50ms/step - loss: 0.3068",  # Keras 3: not a step line
    "Epoch 3/5 - loss: 0.1",
    "step 10: val loss 2.5",  # a validation loss only: no training loss at this step
    "steps 10 done, loss 1.0",  # "steps" is no step word
    "iter 3: lossy compression ratio 2.0",
])
def test_not_step_losses(line):
    found = parse_step_log(line)
    assert len(found) == 0


def test_a_loss_stuck_at_zero_without_accuracy_is_not_healthy():
    """The seed's collapse, in a job that prints no accuracy: a falling loss that ends at exactly 0.0 for good is
    no proof of a fit."""
    lines = [f"iter {i}: loss {max(0.0, 3.0 - i / 10):.4f}, time 10.00ms, mfu 1.00%" for i in range(100)]
    h = assess_steps(parse_step_log("\n".join(lines)))
    assert h.status == "unknown"
    assert h.findings[0].startswith("loss stuck at exactly 0.0 from step 30 to the job's last logged step (70 steps)")


def test_a_rising_loss_is_divergence_named_by_its_steps():
    lines = [f"iter {i}: loss {2.0 - i / 100 if i < 50 else 1.5 + (i - 50) / 10:.4f}" for i in range(100)]
    h = assess_steps(parse_step_log("\n".join(lines)))
    assert h.status == "diverged" and "(median of steps 40-49)" in h.findings[0], h.findings
    assert "at median of steps 90-99" in h.findings[0]


def test_few_steps_are_their_own_spans():
    h = assess_steps(parse_step_log("iter 0: loss 3.0\niter 1: loss 2.0\n"))
    assert h.status == "healthy" and h.findings == ("loss fell from 3 (step 0) to 2 (step 1)",)
    assert assess_steps(StepLosses()).status == "unknown" and STEP_SPANS == 10


def test_a_long_step_log_is_read_in_bounded_memory(tmp_path):
    import tracemalloc

    log = tmp_path / "stdout.log"
    with open(log, "wb") as f:
        f.writelines(b"iter %d: loss %.4f, time 10.00ms, mfu 1.00%%\n" % (i, 3.0 - i / 1e6) for i in range(300_000))
    tracemalloc.start()
    try:
        h = health_from_run(None, None, log_paths=[log])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert h.status == "healthy" and h.epochs == 300_000
    assert peak < 16 << 20, peak  # two float arrays of 2.4 MB each, and one 1 MiB piece at a time


def test_report_of_a_run_folder_shows_the_steps_health(tmp_path, capsys):
    """`report RUN_DIR` on a run whose job printed nanoGPT's lines: the health line counts logged steps, the JSON
    says the unit, the HTML page counts them too."""
    from nvprof_wrap.cli import main

    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("manifest.json", "nsys.sqlite.gz"):
        shutil.copy(RUNS / "gpt_fp32_nsys" / name, folder)
    shutil.copy(NAN, folder / "stdout.log")
    (folder / "stderr.log").write_bytes(b"")
    assert main(["report", str(folder), "--format", "json"]) == 0
    health = json.loads(capsys.readouterr().out)["health"]
    assert (health["status"], health["unit"], health["epochs"]) == ("nan", "step", 101)
    assert main(["report", str(folder)]) == 0
    assert "Training health: nan (101 steps logged)" in capsys.readouterr().out
    assert main(["report", str(folder), "--format", "html", "-o", str(tmp_path / "r.html")]) == 0
    assert "(101 steps logged)" in (tmp_path / "r.html").read_text()


def test_verdict_counts_its_unit():
    assert HealthVerdict("healthy", (), 1, None).counted == "1 epoch"
    assert HealthVerdict("healthy", (), 20, None).counted == "20 epochs"
    assert HealthVerdict("healthy", (), 1001, None, unit="step").counted == "1,001 steps logged"


def test_nan_steps_the_job_got_past_are_said_first_and_left_out_of_the_trend():
    """A loss scaler's skipped steps print inf/NaN and the job trains on: judged on its finite steps, saying so."""
    losses = [3.0 - i / 50 if not 10 <= i < 13 else (math.inf if i < 12 else math.nan) for i in range(100)]
    h = assess_steps(parse_step_log("\n".join(f"iter {i}: loss {v:.4f}" for i, v in enumerate(losses))))
    assert h.status == "healthy" and h.epochs == 100
    assert h.findings[0] == ("loss was NaN / inf at 3 steps (first step 10, last step 12) and finite after: judged on "
                             "its finite steps")
    assert h.findings[1].startswith("loss fell from 2.9") and "(median of steps 0-9)" in h.findings[1]


def test_a_loss_non_finite_at_the_end_is_nan_from_where_it_began():
    lines = [f"iter {i}: loss {v}" for i, v in enumerate([3.0, 2.5, "nan", 2.4, "inf", "nan"])]
    h = assess_steps(parse_step_log("\n".join(lines)))
    assert (h.status, h.findings) == ("nan", ("loss became NaN at step 2",))
