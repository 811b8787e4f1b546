"""The numerics analysis (analyses/numerics.py) and its reader (report/numerics.py): from the recorder's records to
the first bad tensor, the chain before it, the cause and the fix (issue 42). The runs' records are hand-made from
measured facts (tests/analyses/numerics_cases.py says which); the seed's log and capture beside them are real."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from nvprof_wrap.analyses import numerics as analysis
from nvprof_wrap.model import EpochMetrics
from nvprof_wrap.report import numerics as reader
from nvprof_wrap.report import serialise
from nvprof_wrap.system import limits
from tests._paths import DATA, RUNS
from tests.analyses import numerics_cases as cases

SEED_FINAL = EpochMetrics(2, loss=0.0, accuracy=0.0061, val_loss=0.0, val_accuracy=0.0061)  # the seed's log


def _verdict(tmp_path: Path, records: list[dict], final: EpochMetrics | None = None):
    cases.write(tmp_path, records)
    found = reader.diagnose_run(tmp_path, final)
    assert found is not None
    return found


def test_the_seed_names_the_first_dense_layer_its_accumulator_the_update_and_the_overflow(tmp_path: Path) -> None:
    v = _verdict(tmp_path, cases.seed(), SEED_FINAL)
    assert v.status == "broken" and v.framework == "keras" and v.policy == "float16"
    assert v.first_bad is not None and v.first_bad.step <= 2
    assert (v.first_bad.layer, v.first_bad.tensor, v.first_bad.kind) == ("dense", "activation", "overflow")
    assert v.first_bad.layer == cases.SEED_LAYERS[0]  # the first Dense layer
    kinds = [(e.tensor, e.kind) for e in v.evidence]
    assert kinds[:3] == [("optimizer_state", "underflow"), ("update", "large_update"), ("weight", "growth")]
    assert ("activation", "overflow") in kinds and kinds[-1] == ("", "spread")
    assert all(e.layer == "dense" for e in v.evidence[:-1])
    root = v.evidence[0]
    assert (root.step, root.name, root.dtype) == (0, "dense/rms", "float16")
    assert v.evidence[1].ratio == pytest.approx(183, rel=0.01)
    cause = v.cause or ""
    assert cause.index("optimizer state dense/rms") < cause.index("update/weight ratio 183×") \
        < cause.index("overflowed float16's max 65,504 at step 1 forward")
    assert "every layer (3)" in cause and "loss non-finite from step 1" in cause
    assert "mixed_float16" in v.fix[0] and "mixed_bfloat16" in v.fix[1]
    assert any("optimizer state in float32" in f for f in v.fix)
    assert any("RMSprop(epsilon=1e-3)" in f for f in v.fix) and not any("torch" in f for f in v.fix)
    assert v.loss_scale is None
    note = " ".join(v.notes)
    assert "argmax of a NaN row is class 0" in note and "0.61%" in note and "log(1) = 0" in note


def test_the_seed_without_its_metrics_says_nothing_of_argmax(tmp_path: Path) -> None:
    v = _verdict(tmp_path, cases.seed())
    assert v.first_bad is not None and v.notes == ()


def test_mixed_precision_is_healthy_with_nothing_flagged(tmp_path: Path) -> None:
    v = _verdict(tmp_path, cases.mixed())
    assert (v.status, v.first_bad, v.evidence, v.cause, v.fix, v.notes) == ("healthy", None, (), None, (), ())
    assert v.loss_scale is not None and (v.loss_scale.skipped, v.loss_scale.collapsed) == (0, False)
    from nvprof_wrap.renderers import _numerics
    lines = _numerics.lines(serialise.to_json(v))
    assert lines[0].endswith("healthy, nothing flagged") and "policy mixed_float16" in lines[0]


def test_a_gradscaler_whose_scale_collapses_names_the_layer_and_the_scale_history(tmp_path: Path) -> None:
    v = _verdict(tmp_path, cases.scaler())
    assert v.first_bad is not None
    assert (v.first_bad.step, v.first_bad.layer, v.first_bad.tensor, v.first_bad.kind) == \
        (0, "blocks.0.fc2", "activation", "overflow")
    s = v.loss_scale
    assert s is not None and s.collapsed and (s.first, s.last, s.decreases, s.skipped, s.first_skipped) == \
        (65536.0, 0.125, 19, 20, 0)
    assert s.history[:3] == ((0, 65536.0), (1, 32768.0), (2, 16384.0))
    assert "the scale collapsed" in s.text
    assert "bfloat16" in v.fix[0] and "blocks.0.fc2" in v.fix[1] and "torch.autocast" in v.fix[1]
    assert any("loss scale cannot fix" in f for f in v.fix) and not any("keras" in f for f in v.fix)


def test_a_gradscaler_finding_its_scale_is_healthy(tmp_path: Path) -> None:
    """Its first steps' inf gradients and skipped (all-zero) updates are the scaler's check at work."""
    v = _verdict(tmp_path, cases.scaler_healthy())
    assert (v.status, v.first_bad) == ("healthy", None)
    assert v.loss_scale is not None and (v.loss_scale.skipped, v.loss_scale.collapsed) == (2, False)
    assert "normal while the scaler finds its scale" in v.loss_scale.text


def test_the_same_inf_gradients_without_a_scaler_are_the_first_bad_tensor(tmp_path: Path) -> None:
    records = [r for r in cases.scaler_healthy() if r["kind"] != "loss"]
    records = [{**r, "policy": "autocast fp16 (no scaler)"} if r["kind"] == "meta" else r for r in records]
    v = _verdict(tmp_path, records)
    assert v.first_bad is not None and (v.first_bad.step, v.first_bad.tensor, v.first_bad.kind) == \
        (0, "gradient", "overflow")
    assert v.first_bad.layer == "head"  # the backward pass starts at the last layer


def test_bf16_that_trains_flags_nothing(tmp_path: Path) -> None:
    v = _verdict(tmp_path, cases.bf16())
    assert (v.status, v.first_bad, v.evidence, v.loss_scale, v.notes) == ("healthy", None, (), None, ())


def test_pure_fp16_that_trains_is_flagged_not_broken(tmp_path: Path) -> None:
    """Keras 3's RMSprop in pure fp16: the same accumulator underflow, bounded steps (docs/seed-collapse.md §3)."""
    records = [r for r in cases.seed() if not (r["kind"] == "tensor" and r["step"] >= 1) and r["kind"] != "loss"]
    records = [{**r, "ratio": 0.1} if r.get("tensor") == "update" else r for r in records]
    records = [{**r, "max_abs": 0.0302} if r.get("tensor") == "weight" else r for r in records]
    v = _verdict(tmp_path, records)
    assert (v.status, v.first_bad, v.cause) == ("flagged", None, None)
    assert "optimizer state dense/rms 100% zero or below float16's smallest normal" in v.notes[0]


def test_damaged_and_hostile_lines_are_skipped_counted_and_never_crash(tmp_path: Path) -> None:
    good = [json.dumps(r) for r in cases.seed()]
    bad = [
        "x" * (limits.MAX_NUMERICS_LINE_BYTES + 5),  # a line past the limit
        ('{"kind": "tensor", "step": 0, "phase": "forward", "layer": "dense", "tensor": "activation", "name": "o", '
        '"dtype": "float16", "n": 4, "max_abs": NaN, "zeros": 0, "subnormal": 0, "nan": 0, "inf": 0}'),  # NaN literal
        '{"kind": "tensor", "step": "1", "phase": "forward"}',  # wrong types
        '{"kind": "loss", "step": 0, "loss": Infinity, "finite": true}',
        '{"kind": "tensor", "step": 0, "phase": "forward", "layer": ["x"], "tensor": "activation"}',
        '{"kind": "loss", "step": 99999999999999999999999, "loss": 1, "finite": true}',
        ('{"kind": "tensor", "step": 0, "phase": "sideways", "layer": "d", "tensor": "activation", "name": "o", '
        '"dtype": "float16", "n": 4, "max_abs": 1, "zeros": 2.5, "subnormal": 0, "nan": 0, "inf": 0}'),
        "[" * 200_000,  # nesting past the parser's recursion
        "\x00\xff garbage \xfe",
        '"just a string"',
        '{"kind": "nonsense"}',
    ]
    text = "\n".join([good[0], *bad, *good[1:], '{"kind": "truncated"}', '{"kind": "tensor", "st'])
    (tmp_path / "numerics-4242.jsonl").write_bytes(text.encode("utf-8", errors="surrogateescape"))
    v = reader.diagnose_run(tmp_path, SEED_FINAL)
    assert v is not None and v.damaged == len(bad) + 1  # and the cut last line
    assert v.records == len(good)
    clean = _verdict(tmp_path / "clean", cases.seed(), SEED_FINAL)
    assert (v.first_bad, v.cause, v.fix) == (clean.first_bad, clean.cause, clean.fix)


def test_a_file_with_no_line_end_and_odd_files_are_bounded(tmp_path: Path) -> None:
    with open(tmp_path / "numerics-1.jsonl", "wb") as f:
        f.writelines(b"7" * (1 << 20) for _ in range(6))  # 6 MiB, one line, no end
    os.mkfifo(tmp_path / "numerics-2.jsonl")  # a FIFO: never opened for reading (it would block)
    os.symlink("/dev/zero", tmp_path / "numerics-3.jsonl")  # never followed
    cases.write(tmp_path, cases.bf16(), pid=4)
    started = time.monotonic()
    v = reader.diagnose_run(tmp_path)
    assert time.monotonic() - started < 30
    assert v is not None and v.damaged == 1 and v.status == "healthy" and v.records == len(cases.bf16())


def test_the_byte_budget_stops_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_NUMERICS_FILE_BYTES", 64 << 10)
    records = cases.bf16(steps=400)
    path = cases.write(tmp_path, records)
    assert path.stat().st_size > 20 * (64 << 10)
    v = reader.diagnose_run(tmp_path)
    assert v is not None and 0 < v.records < len(records) / 10


def test_a_million_records_cost_bounded_memory() -> None:
    """A million records, each of a tensor never seen before: the analysis follows MAX_KEYS of them."""
    d = analysis.Diagnosis()
    started = time.monotonic()
    for i in range(1_000_000):
        d.add(analysis.TensorStat(1, i // 1000, "forward", f"layer{i}", "activation", "output", "float16", 8, 1.0,
                                  0.0, 0.0, 0, 0))
    assert len(d.history) == analysis.MAX_KEYS and len(d.warned) == 0
    v = d.result()
    assert v.records == 1_000_000 and v.status == "healthy" and v.steps == 1000
    assert time.monotonic() - started < 120


def test_the_verdict_is_strict_json_and_validates(tmp_path: Path) -> None:
    import jsonschema

    v = _verdict(tmp_path, cases.seed(), SEED_FINAL)
    d = serialise.to_json(v)
    json.dumps(d, allow_nan=False)  # nothing non-finite, whatever the records held
    props = serialise.schema()["properties"]["health"]["anyOf"][0]["properties"]["numerics"]
    jsonschema.Draft202012Validator(props).validate(d)


@pytest.mark.parametrize("fmt", ["json", "table", "markdown", "html"])
def test_a_run_folder_with_numerics_shows_the_cause_and_the_fix(fmt: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A real capture and the seed workload's real collapsed log (Keras 2's RMSprop in fp16), with the seed's
    numerics records beside them: the health section says the cause and the fix in every format."""
    from nvprof_wrap.cli import main

    shutil.copy(RUNS / "gpt_fp32_nsys" / "manifest.json", tmp_path)
    shutil.copy(RUNS / "gpt_fp32_nsys" / "nsys.sqlite.gz", tmp_path)
    (tmp_path / "stdout.log").write_bytes((DATA / "keras_logs" / "keras3_torch_fp16_keras2optimizer_nan.log")
                                          .read_bytes())
    (tmp_path / "stderr.log").write_bytes(b"")
    cases.write(tmp_path, cases.seed())
    assert main(["report", str(tmp_path), "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        health = json.loads(out)["health"]
        assert health["status"] == "nan"
        n = health["numerics"]
        assert n["first_bad"] == {"step": 1, "layer": "dense", "tensor": "activation", "kind": "overflow"}
        assert n["evidence"][0]["tensor"] == "optimizer_state" and n["cause"] and n["fix"]
        assert n["loss_scale"] is None
        assert "argmax of a NaN row is class 0" in " ".join(n["notes"])
        assert not any(s["path"].endswith("numerics-4242.jsonl") for s in json.loads(out)["skipped"])
    else:
        flat = " ".join(out.split()).replace("\\", "")  # Markdown escapes _ and |
        assert "First bad: step 1, dense, activation overflow" in flat
        assert "Cause: step 0, dense: optimizer state dense/rms" in flat
        assert "mixed_float16" in flat and "argmax of a NaN row is class 0" in flat


def test_a_run_folder_without_numerics_has_no_numerics_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from nvprof_wrap.cli import main

    shutil.copy(RUNS / "gpt_fp32_nsys" / "manifest.json", tmp_path)
    shutil.copy(RUNS / "gpt_fp32_nsys" / "nsys.sqlite.gz", tmp_path)
    (tmp_path / "stdout.log").write_bytes((DATA / "keras_logs" / "keras3_torch_fp16_keras2optimizer_nan.log")
                                          .read_bytes())
    assert main(["report", str(tmp_path), "--format", "json"]) == 0
    health = json.loads(capsys.readouterr().out)["health"]
    assert health["status"] == "nan" and "numerics" not in health


# ---- real records: the recorder run on the seed workload (tests/data/numerics/README.md) ----

REAL = DATA / "numerics"


def _real(name: str):
    from nvprof_wrap.report.health import health_from_run

    folder = REAL / name
    health = reader.with_numerics(health_from_run(folder / "metrics.jsonl", None), folder)
    assert health.numerics is not None
    return health, health.numerics


def test_the_recorded_seed_collapse_names_the_first_dense_layer_and_the_accumulator() -> None:
    health, v = _real("fp16_keras2_tf")
    assert health.status == "nan" and v.status == "broken" and v.damaged == 0 and v.records == 86
    assert v.first_bad is not None and v.first_bad.step <= 2
    assert (v.first_bad.layer, v.first_bad.tensor) == ("dense_2", "activation")  # the softmax's NaN at step 1
    root, ratio = v.evidence[0], v.evidence[1]
    assert (root.step, root.layer, root.tensor, root.kind) == (0, "dense", "optimizer_state", "underflow")
    assert root.max_abs is not None and root.max_abs < cases.FP16_TINY  # every accumulator zero or subnormal
    assert (ratio.layer, ratio.kind) == ("dense", "large_update") and ratio.ratio is not None and ratio.ratio > 100
    grew = [e for e in v.evidence if e.kind == "growth"]
    assert [e.layer for e in grew] == ["dense", "dense_1"] and all(e.step == 1 for e in grew)
    assert (v.cause or "").startswith("step 0, dense: optimizer state dense/kernel:velocity 100% zero or below")
    assert "mixed_float16" in v.fix[0] and any("epsilon" in f for f in v.fix)
    assert "argmax of a NaN row is class 0" in " ".join(v.notes)


def test_the_recorded_mixed_precision_run_is_healthy_with_nothing_flagged() -> None:
    _, v = _real("mixed_keras2_tf")
    assert (v.status, v.first_bad, v.evidence, v.notes, v.cause) == ("healthy", None, (), (), None)
    assert v.loss_scale is not None and (v.loss_scale.first, v.loss_scale.skipped) == (32768.0, 0)


def test_the_recorded_keras3_fp16_run_is_flagged_not_broken() -> None:
    """Keras 3's RMSprop bounds the step: the same underflow, no collapse (docs/seed-collapse.md §1, §3)."""
    _, v = _real("fp16_keras3_tf")
    assert (v.status, v.first_bad) == ("flagged", None)
    assert "optimizer state dense/kernel:velocity 100% zero or below float16's smallest normal" in v.notes[0]
    assert "more tensors" in v.notes[0]


def test_the_precision_that_checks_the_fix(tmp_path: Path) -> None:
    """`experiment --try-fix` re-runs with mixed for an optimizer-state root, bf16 for a forward overflow."""
    from nvprof_wrap.model import HealthVerdict
    from nvprof_wrap.report.experiment import fix_precision, numerics_findings

    def health(v) -> HealthVerdict:
        return HealthVerdict("nan", (), 1, None, numerics=v)

    assert fix_precision(_real("fp16_keras2_tf")[0]) == "mixed"
    assert fix_precision(health(_verdict(tmp_path / "s", cases.scaler()))) == "bf16"
    assert fix_precision(_real("mixed_keras2_tf")[0]) is None
    assert fix_precision(HealthVerdict("healthy", (), 1, None)) is None
    lines = numerics_findings(_real("fp16_keras2_tf")[0])
    assert lines[0].startswith("numerics: step 0, dense: optimizer state") and lines[1].startswith("fix: keras.")
    assert numerics_findings(_real("mixed_keras2_tf")[0]) == ("numerics: healthy, nothing went non-finite",)


def test_lines_cut_across_pieces_read_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _verdict(tmp_path, cases.seed(), SEED_FINAL)
    monkeypatch.setattr(reader, "PIECE", 7)  # every line split over several reads
    assert reader.diagnose_run(tmp_path, SEED_FINAL) == whole


def test_the_experiment_table_names_the_cause_in_its_health_column() -> None:
    """The seed's recorded collapse: the health cell says the root ('nan ← dense optimizer state underflow, step 0'),
    a healthy run says only 'healthy'."""
    import dataclasses

    from nvprof_wrap.renderers._experiment import _health
    from nvprof_wrap.report.experiment import ExperimentRow, short_cause

    broken, fine = _real("fp16_keras2_tf")[0], _real("mixed_keras2_tf")[0]
    assert short_cause(broken) == "dense optimizer state underflow, step 0"
    assert short_cause(fine) is None
    row = ExperimentRow("fp16", 0, 1.0, 2, 1.0, 0, 0.0, "", 0.0, None, 0, None, None, None, None, "nan", (), "f",
                        cause=short_cause(broken))
    assert _health(row) == "nan ← dense optimizer state underflow, step 0"
    assert _health(dataclasses.replace(row, health="healthy", cause=None)) == "healthy"
    assert _health(dataclasses.replace(row, exit_code=1)) == "failed (exit 1)"
