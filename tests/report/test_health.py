"""The training-health check, on logs recorded from real runs (tests/data/keras_logs).

How the logs were made (CPU, synthetic Reuters-shaped data, see docs/seed-collapse.md):
  seed_keras2_fp16.log                  the seed user's own Keras 2 lines, verbatim
  keras3_tf_fp32_reuters.log            reuters_mlp.py --precision fp32 --epochs 20 (TensorFlow)
  keras3_torch_fp16_keras2optimizer_nan.log
                                        KERAS_BACKEND=torch reuters_mlp.py --precision fp16
                                        --keras2-numerics optimizer --epochs 3
  keras3_torch_fp32_progress_tty.log    KERAS_BACKEND=torch reuters_mlp.py --epochs 3 --samples 2048
                                        --verbose 1, under `script` (a tty: \\r, \\b, ANSI colours)
  keras2_tfkeras_fp32_progress_tty.log  the same model on tf_keras (Keras 2 API), verbose=1 under
                                        `script`, followed by a model.evaluate() progress bar
  keras2_tfkeras_fp32_verbose2.log      the same, verbose=2
  metrics_*.jsonl                       NVPROF_WRAP_METRICS files of reuters_mlp.py runs
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from nvprof_wrap.report.health import (
    EpochMetrics,
    HealthVerdict,
    assess,
    health_from_run,
    metrics_header,
    parse_keras_log,
    parse_keras_logs,
    parse_metrics_jsonl,
)
from tests._paths import DATA, RUNS

LOGS = DATA / "keras_logs"


def read_log(name: str) -> str:
    # Bytes, not text mode: universal newlines would turn the \r of progress
    # bars into \n, and the parser must cope with the raw stream.
    return (LOGS / name).read_bytes().decode("utf-8")


# --------------------------------------------------------------------------
# The seed
# --------------------------------------------------------------------------


def test_seed_log_parses_keras2_format() -> None:
    epochs = parse_keras_log(read_log("seed_keras2_fp16.log"))
    assert epochs == [
        EpochMetrics(1, loss=0.3068, accuracy=0.0063, val_loss=0.0, val_accuracy=0.0061),
        EpochMetrics(2, loss=0.0, accuracy=0.0061, val_loss=0.0, val_accuracy=0.0061),
    ]


def test_seed_log_is_collapsed_with_class_count() -> None:
    verdict = assess(parse_keras_log(read_log("seed_keras2_fp16.log")), num_classes=46)
    assert verdict.status == "collapsed"
    assert verdict.epochs == 2
    assert verdict.findings == (
        ("loss stuck at exactly 0.0 from epoch 2 while accuracy is 0.6% (chance for 46 classes "
         "is 2.2%): training collapsed — typical of pure fp16 training, see docs/seed-collapse.md"),
    )


def test_seed_log_is_collapsed_without_class_count() -> None:
    verdict = assess(parse_keras_log(read_log("seed_keras2_fp16.log")))
    assert verdict.status == "collapsed"
    assert "accuracy is 0.6%" in verdict.findings[0]


# --------------------------------------------------------------------------
# Real Keras 3 and Keras 2 logs
# --------------------------------------------------------------------------


def test_healthy_keras3_fp32_log() -> None:
    epochs = parse_keras_log(read_log("keras3_tf_fp32_reuters.log"))
    assert [e.epoch for e in epochs] == list(range(1, 21))
    assert epochs[0] == EpochMetrics(1, loss=2.9288, accuracy=0.3093, val_loss=2.4229, val_accuracy=0.481)
    verdict = assess(epochs, num_classes=46)
    assert verdict.status == "healthy"
    assert verdict.final == epochs[-1]
    assert verdict.findings[0].startswith("loss fell from 2.929 (epoch 1) to 0.0021 (epoch 20)")


def test_nan_log() -> None:
    epochs = parse_keras_log(read_log("keras3_torch_fp16_keras2optimizer_nan.log"))
    assert len(epochs) == 3
    assert all(math.isnan(e.loss) and math.isnan(e.val_loss) for e in epochs)  # type: ignore[arg-type]
    assert epochs[0].accuracy == 0.005
    verdict = assess(epochs, num_classes=46)
    assert verdict.status == "nan"
    assert verdict.findings == ("loss became NaN at epoch 1",)


def test_keras3_progress_bar_takes_final_record_per_epoch() -> None:
    raw = read_log("keras3_torch_fp32_progress_tty.log")
    assert "\r" in raw and "\x08" in raw and "\x1b[" in raw  # really a terminal stream
    epochs = parse_keras_log(raw)
    # Keras 3 prints the last step twice, the second time with val_*; that one counts.
    assert epochs == [
        EpochMetrics(1, loss=3.5066, accuracy=0.2036, val_loss=3.0357, val_accuracy=0.252),
        EpochMetrics(2, loss=2.8053, accuracy=0.3101, val_loss=2.7599, val_accuracy=0.37),
        EpochMetrics(3, loss=2.4964, accuracy=0.375, val_loss=2.5764, val_accuracy=0.449),
    ]
    assert assess(epochs).status == "healthy"


def test_keras3_progress_bar_read_in_text_mode() -> None:
    # Python's text mode turns \r into \n; the result must not change.
    raw = read_log("keras3_torch_fp32_progress_tty.log")
    as_text = (LOGS / "keras3_torch_fp32_progress_tty.log").read_text(encoding="utf-8")
    assert parse_keras_log(as_text) == parse_keras_log(raw)


def test_keras2_progress_bar_ignores_eta_records_and_evaluate() -> None:
    epochs = parse_keras_log(read_log("keras2_tfkeras_fp32_progress_tty.log"))
    assert [e.epoch for e in epochs] == [1, 2, 3]
    # The 63/63 model.evaluate() bar after fit() must not replace epoch 3.
    assert epochs[-1] == EpochMetrics(3, loss=1.3459, accuracy=0.7273, val_loss=1.3496,
                                      val_accuracy=0.724)


def test_keras2_verbose2_log() -> None:
    epochs = parse_keras_log(read_log("keras2_tfkeras_fp32_verbose2.log"))
    assert epochs[0] == EpochMetrics(1, loss=2.9855, accuracy=0.3042, val_loss=2.407, val_accuracy=0.412)
    assert epochs[-1].epoch == 3 and epochs[-1].val_loss == 1.3211


# --------------------------------------------------------------------------
# Parser details on small strings
# --------------------------------------------------------------------------


def test_carriage_return_updates_on_one_line() -> None:
    text = ("Epoch 1/2\n"
            " 512/7982 [>.....] - ETA: 3s - loss: 3.8000 - acc: 0.0100\r"
            "7982/7982 [======] - 1s 101us/step - loss: 0.3068 - acc: 0.0063 - val_loss: nan"
            " - val_acc: 0.0061\n"
            "Epoch 2/2\n"
            "\x1b[1m 512/7982\x1b[0m [>.....] - ETA: 3s - loss: inf - acc: 0.0061\r"
            "7982/7982 [======] - 0s 56us/step - loss: -inf - acc: 0.0061\n")
    epochs = parse_keras_log(text)
    assert epochs[0].loss == 0.3068 and math.isnan(epochs[0].val_loss)  # type: ignore[arg-type]
    assert epochs[1].loss == -math.inf and epochs[1].val_loss is None
    assert assess(epochs).findings == ("val_loss became NaN at epoch 1",)


def test_partial_epoch_stands_in_when_job_was_killed() -> None:
    text = "Epoch 1/5\n 3/16 ━━━━━━━━━━━━━━━━━━━━ 1s 35ms/step - accuracy: 0.2 - loss: nan\r"
    epochs = parse_keras_log(text)
    assert len(epochs) == 1 and math.isnan(epochs[0].loss)  # type: ignore[arg-type]


def test_one_epoch_keras3_log_has_no_header() -> None:
    # Real output of `reuters_mlp.py --epochs 1 --samples 512` (Keras 3 omits "Epoch 1/1").
    text = ("data: synthetic (Reuters not in the Keras cache)\n"
            "1/1 - 1s - 800ms/step - accuracy: 0.0293 - loss: 3.8249 - val_accuracy: 0.2620"
            " - val_loss: 3.6483\n")
    assert parse_keras_log(text) == [
        EpochMetrics(1, loss=3.8249, accuracy=0.0293, val_loss=3.6483, val_accuracy=0.262)]


def test_log_without_metrics_is_unknown() -> None:
    assert parse_keras_log("Traceback (most recent call last):\nOSError\n") == []
    verdict = assess([])
    assert verdict == HealthVerdict("unknown", ("no per-epoch loss found",), 0, None)


# --------------------------------------------------------------------------
# assess() rules
# --------------------------------------------------------------------------


def _run(*losses: float, accuracy: float = 0.5) -> list[EpochMetrics]:
    return [EpochMetrics(i + 1, loss=loss, accuracy=accuracy) for i, loss in enumerate(losses)]


def test_divergence() -> None:
    verdict = assess(_run(1.2, 0.4, 0.9, 2.9))
    assert verdict.status == "diverged"
    assert "2.9 at epoch 4" in verdict.findings[0] and "minimum 0.4 (epoch 2)" in verdict.findings[0]


def test_rise_below_first_epoch_is_not_divergence() -> None:
    assert assess(_run(3.0, 0.5, 1.1)).status == "healthy"


def test_flat_loss_is_not_called_healthy() -> None:
    verdict = assess(_run(3.8, 3.8, 3.81))
    assert verdict.status == "no-learning"
    assert verdict.findings[0].startswith("loss did not fall")


def test_a_fall_under_one_percent_over_the_run_is_no_learning() -> None:
    """Issue 45: a 0.5% fall read 'healthy' where nothing was learned; a 1.5% fall is learning."""
    verdict = assess(_run(2.0, 1.995, 1.99))
    assert verdict.status == "no-learning"
    assert verdict.findings[0].startswith("loss did not fall by more than 1% from 2 (epoch 1) to 1.99 (epoch 3)")
    assert assess(_run(2.0, 1.99, 1.97)).status == "healthy"
    assert assess(_run(2.0)).status == "healthy"  # one epoch: too short to judge, as before


def test_zero_loss_with_high_accuracy_is_not_collapse() -> None:
    verdict = assess(_run(0.5, 0.0, accuracy=0.99), num_classes=46)
    assert verdict.status == "healthy"
    assert any("exactly 0.0" in f for f in verdict.findings)


def test_collapse_uses_chance_when_class_count_known() -> None:
    # 15% is below 2x chance for 10 classes (20%), above it for 46 (4.3%),
    # and above the 5% used when the class count is unknown.
    run = _run(0.3, 0.0, accuracy=0.15)
    assert assess(run, num_classes=10).status == "collapsed"
    assert assess(run, num_classes=46).status != "collapsed"
    assert assess(run).status != "collapsed"


def test_overfitting_is_reported_but_healthy() -> None:
    run = [EpochMetrics(i + 1, loss=2.0 / (i + 1), accuracy=0.9, val_loss=v)
           for i, v in enumerate([1.0, 0.8, 0.9, 1.2])]
    verdict = assess(run)
    assert verdict.status == "healthy"
    assert any("overfitting" in f for f in verdict.findings)


def test_dataclasses_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        EpochMetrics(1).loss = 1.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        assess([]).status = "healthy"  # type: ignore[misc]


# --------------------------------------------------------------------------
# Metrics JSONL and health_from_run
# --------------------------------------------------------------------------


def test_parse_metrics_jsonl_maps_nan_strings() -> None:
    path = LOGS / "metrics_torch_fp16_keras2all_nan.jsonl"
    epochs = parse_metrics_jsonl(path)
    assert [e.epoch for e in epochs] == [1, 2, 3]
    assert math.isnan(epochs[0].loss)  # type: ignore[arg-type]
    assert metrics_header(path)["num_classes"] == 46
    assert health_from_run(path, None).findings == ("loss became NaN at epoch 1",)


def test_parse_metrics_jsonl_mixed_is_healthy() -> None:
    verdict = health_from_run(LOGS / "metrics_torch_mixed.jsonl", None)
    assert verdict.status == "healthy" and verdict.epochs == 3


def test_health_from_run_prefers_jsonl(tmp_path: Path) -> None:
    log = read_log("seed_keras2_fp16.log")
    assert health_from_run(LOGS / "metrics_torch_mixed.jsonl", log).status == "healthy"
    # Missing or empty metrics file: fall back to the log.
    assert health_from_run(tmp_path / "missing.jsonl", log).status == "collapsed"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert health_from_run(empty, log).status == "collapsed"
    assert health_from_run(None, None).status == "unknown"


def test_jsonl_tolerates_truncated_last_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"event": "start", "workload": "x", "num_classes": 46}\n'
                    '{"epoch": 1, "loss": 0.3068, "accuracy": 0.0063, "val_loss": 0.0}\n'
                    '{"epoch": 2, "loss": 0.0, "accuracy": 0.0061, "val_loss": 0.0, "val_accuracy": 0.0061}\n'
                    '{"epoch": 3, "loss": 0.')
    verdict = health_from_run(path, None)  # num_classes comes from the start line
    assert verdict.status == "collapsed" and "chance for 46 classes" in verdict.findings[0]
    assert verdict.final == EpochMetrics(2, loss=0.0, accuracy=0.0061, val_loss=0.0, val_accuracy=0.0061)


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")))
def test_streamed_logs_give_what_the_whole_text_gives(name: str, tmp_path: Path) -> None:
    """`report RUN_DIR` reads the job's logs streamed (parse_keras_logs): the same epochs as parse_keras_log on the
    whole text, also when the text is split between stdout.log and stderr.log at any line."""
    text = read_log(name)
    assert parse_keras_logs([LOGS / name]) == parse_keras_log(text)
    lines = (LOGS / name).read_bytes().splitlines(keepends=True)
    (tmp_path / "out.log").write_bytes(b"".join(lines[: len(lines) // 2]))
    (tmp_path / "err.log").write_bytes(b"".join(lines[len(lines) // 2:]))
    assert parse_keras_logs([tmp_path / "out.log", tmp_path / "err.log"]) == parse_keras_log(text)


def test_a_job_that_printed_gigabytes_is_read_in_bounded_memory(capsys, tmp_path: Path, monkeypatch) -> None:
    """The job's logs were read whole for the training-health check, on every `report RUN_DIR` and at the end of
    `run` (1.6 GB of log: MemoryError under a 2 GB limit, a traceback and exit 1 instead of the job's code). They
    are streamed, each line bounded: memory stays flat, the verdict is the same."""
    import shutil
    import tracemalloc

    from nvprof_wrap.cli import main
    from nvprof_wrap.report import health

    monkeypatch.setattr(health, "MAX_LINE_BYTES", 1 << 20)
    run = RUNS / "gpt_fp32_nsys"
    folders = {}
    for kind in ("plain", "huge"):
        folder = folders[kind] = tmp_path / kind
        folder.mkdir()
        shutil.copy(run / "manifest.json", folder)
        shutil.copy(run / "nsys.sqlite.gz", folder)
        with open(folder / "stdout.log", "wb") as f:
            f.write((LOGS / "keras3_torch_fp16_keras2optimizer_nan.log").read_bytes())
            if kind == "huge":
                f.writelines(b"step %d loss 0.25 lr 1e-4 and some NCCL INFO chatter\n" % i for i in range(600_000))
                f.write(b"x" * (24 << 20))  # and a line without end
        (folder / "stderr.log").write_bytes(b"")
    peaks, health_of = {}, {}
    for kind, folder in folders.items():
        tracemalloc.start()
        try:
            assert main(["report", str(folder), "--format", "json"]) == 0
            peaks[kind] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        health_of[kind] = json.loads(capsys.readouterr().out)["health"]
    assert (folders["huge"] / "stdout.log").stat().st_size > 56 << 20
    assert health_of["huge"] == health_of["plain"] and health_of["plain"]["status"] == "nan"
    assert peaks["huge"] - peaks["plain"] < 8 << 20, peaks
