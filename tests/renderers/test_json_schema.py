"""One JSON Schema for every command's `--format json` (nvprof_wrap/json.schema.json, shipped in the package; made by
renderers/_documents.py schema() from the records' types; docs/json.md): the file is the function's, and the real
output of each command — report, run/verify (a report), demo, compare, kernels, classify, experiment, runs, doctor —
on the bundled samples and the H200 captures of tests/data validates against its own $defs entry, carries its
`schema` and `schema_version`, and names each shared thing with the one key.

To rewrite the schema file after a change of the types: PYTHONPATH=$PWD python3 -m tests.renderers.test_json_schema"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from nvprof_wrap.cli import main
from nvprof_wrap.renderers import _documents
from tests._paths import ROOT, RUNS, run_copy

SCHEMA_FILE = ROOT / "nvprof_wrap" / "json.schema.json"
SAMPLES = ROOT / "nvprof_wrap" / "samples"
# Every H200 run folder the report reads as one run (triton_ptx and verify_compile are read by other tests).
H200_REPORTS = ("gemm_cupti", "gpt_bf16_nsys", "ddp_nsys", "kineto_gpt_bf16_shapes", "jax_bf16_xplane",
                "crash_kill_cupti", "hw_phases_nsys")


def schema_text() -> str:
    return json.dumps(_documents.schema(), indent=2, ensure_ascii=False) + "\n"


def check(doc: Any, kind: str) -> Any:
    """doc validates against its own entry and against the whole schema (whose oneOf picks it by `schema`)."""
    whole = json.loads(SCHEMA_FILE.read_text())
    errors = list(jsonschema.Draft202012Validator(whole | {"oneOf": [{"$ref": f"#/$defs/{kind}"}]}).iter_errors(doc))
    assert not errors, [f"{e.message} at {list(e.absolute_path)}" for e in errors[:5]]
    jsonschema.Draft202012Validator(whole).validate(doc)
    assert doc["schema_version"] == _documents.VERSIONS[kind] and doc["schema"].startswith(f"nvprof-wrap.{kind}/")
    return doc


def run_json(capsys: pytest.CaptureFixture[str], *argv: object) -> Any:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_the_schema_file_is_the_one_made_from_the_types_and_is_package_data():
    assert SCHEMA_FILE.read_text() == schema_text(), "PYTHONPATH=$PWD python3 -m tests.renderers.test_json_schema"
    assert '"json.schema.json"' in (ROOT / "pyproject.toml").read_text()
    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_FILE.read_text()))


@pytest.mark.parametrize("source", [*sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()), *H200_REPORTS])
def test_report_and_kernels_validate(capsys, tmp_path, source):
    path = SAMPLES / source if (SAMPLES / source).is_dir() else run_copy(RUNS / source, tmp_path)
    report = check(run_json(capsys, "report", path, "--format", "json"), "report")
    kernels = check(run_json(capsys, "kernels", path, "--format", "json"), "kernels")
    assert kernels["kernels"] == report["kernels"]  # one record, one shape
    assert report["kernel_ns"] == report["kernel_time_ns"]  # the old key, for one release
    assert report["tensor_core_share"] == report["tensor_core_time_fraction"]


def test_a_report_with_gates_and_demo_validate(capsys, tmp_path):
    doc = check(run_json(capsys, "report", run_copy(RUNS / "gemm_cupti", tmp_path), "--format", "json",
                         "--min-tensor-core-share", "0.1"), "report")
    assert doc["gates"][0]["passed"] is True
    demo = check(run_json(capsys, "demo", "--format", "json"), "reports")
    assert set(demo["reports"]) == {"keras_reuters_fp16", "torch_ops", "two_children"}


def test_verify_from_an_ncu_export_validates_as_a_report(capsys):
    doc = check(run_json(capsys, "verify", "--from", RUNS / "verify_compile" / "ncu.csv", "--format", "json"),
                "report")
    assert any(k["counter_verdict"] for k in doc["kernels"])


def test_compare_validates_with_the_shared_keys(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", "off")
    fp32, bf16 = (shutil.copytree(RUNS / n, tmp_path / n) for n in ("gpt_fp32_nsys", "gpt_bf16_nsys"))
    doc = check(run_json(capsys, "compare", fp32, bf16, "--format", "json"), "compare")
    after = run_json(capsys, "report", bf16, "--format", "json")
    side = doc["after"]
    assert (side["verdict"], side["kernel_ns"], side["launches"], side["tensor_core_precisions"]) == \
        (after["verdict"], after["kernel_ns"], after["launches"], after["tensor_core_precisions"])
    assert side["tensor_core_share"] == pytest.approx(after["tensor_core_share"], abs=1e-6)
    assert "before_tensor_core_share" in doc["families"][0] and "tc_share" not in side


def test_classify_validates_as_the_kernel_records_verdicts(capsys):
    doc = check(run_json(capsys, "classify", "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn", "--format", "json"),
                "classify")
    assert doc["kernels"][0]["tensor_core"] == "yes" and doc["kernels"][0]["precision"] == "bf16"


def test_experiment_rebuilt_from_run_folders_validates(capsys, tmp_path, monkeypatch):
    """experiment --no-run over two H200 runs laid out as an experiment folder (one folder per precision)."""
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", "off")
    for precision, name in (("fp32", "gpt_fp32_nsys"), ("bf16", "gpt_bf16_nsys")):
        shutil.copytree(RUNS / name, tmp_path / "exp" / precision)
    doc = check(run_json(capsys, "experiment", "gpt", "--no-run", "-o", tmp_path / "exp", "--precisions", "fp32,bf16",
                         "--format", "json"), "experiment")
    bf16, report = doc["rows"][1], run_json(capsys, "report", tmp_path / "exp" / "bf16", "--format", "json")
    assert bf16["precision"] == "bf16" and bf16["tensor_core_precisions"] == report["tensor_core_precisions"]
    assert (bf16["kernel_ns"], bf16["launches"]) == (report["kernel_ns"], report["launches"])
    assert bf16["tensor_core_share"] == pytest.approx(report["tensor_core_share"], abs=1e-6) and "tc_share" not in bf16


def test_runs_validates_with_the_report_keys(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", str(tmp_path / "history.sqlite"))
    folder = shutil.copytree(RUNS / "gpt_bf16_nsys", tmp_path / "gpt_bf16_nsys")
    report = run_json(capsys, "report", folder, "--format", "json")
    doc = check(run_json(capsys, "runs", "--format", "json"), "runs")
    row = doc["runs"][0]
    assert (row["verdict"], row["kernel_ns"], row["launches"], row["tensor_core_precisions"]) == \
        (report["verdict"], report["kernel_ns"], report["launches"], report["tensor_core_precisions"])


def test_doctor_validates_with_and_without_its_probe(capsys):
    doc = check(run_json(capsys, "doctor", "--no-probe", "--format", "json"), "doctor")
    assert "probe" not in doc
    # the probe's record as pipeline/doctor.py makes it: its sentence is "message", its yes/no "tensor_cores_used"
    from nvprof_wrap.renderers import render
    from nvprof_wrap.renderers._options import Options
    from nvprof_wrap.report.kinds import Doctor
    probe = {"ran": True, "backend": "nsys", "folder": "f", "verdict": "Tensor cores: YES",
             "tensor_cores_visible": True}
    facts = {k: v for k, v in doc.items() if not k.startswith("schema")} | {"probe": probe}
    got = check(json.loads(render("json", Doctor(facts), Options())), "doctor")
    assert got["probe"] == {"ran": True, "backend": "nsys", "folder": "f", "message": "Tensor cores: YES",
                            "tensor_cores_used": True}


def test_docs_name_every_document_and_every_key_of_the_shared_records():
    text = (ROOT / "docs" / "json.md").read_text()
    defs = json.loads(SCHEMA_FILE.read_text())["$defs"]
    for kind, version in _documents.VERSIONS.items():
        assert f"`nvprof-wrap.{kind}/{version}`" in text, kind
    for name in ("kernel", "classification", "compare_side", "compare_row", "experiment_row", "run", "report"):
        missing = [k for k in defs[name]["properties"] if f"`{k}`" not in text]
        assert not missing, (name, missing)


def test_a_document_with_an_old_or_unknown_key_is_refused():
    whole = json.loads(SCHEMA_FILE.read_text())
    kernels = {"schema": "nvprof-wrap.kernels/1", "schema_version": 1, "kernels": []}
    assert jsonschema.Draft202012Validator(whole).is_valid(kernels)
    assert not jsonschema.Draft202012Validator(whole).is_valid(kernels | {"schema_version": 2})
    assert not jsonschema.Draft202012Validator(whole).is_valid([])  # the bare list the command wrote before


if __name__ == "__main__":
    Path(SCHEMA_FILE).write_text(schema_text())
    print(f"wrote {SCHEMA_FILE.relative_to(ROOT)}", file=sys.stderr)
