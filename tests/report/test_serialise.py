"""The Report's JSON is its serialisation (report/serialise.py): one walk over the records' field metadata, and the
JSON Schema made from the same types (the report's entry of nvprof_wrap/json.schema.json, the schema of every
command's JSON: tests/renderers/test_json_schema.py checks the file). tests/whole/test_same_reports.py checks every
golden input's JSON against the schema; here: a report validates, drift is caught.

To rewrite the schema file after a change of the types: PYTHONPATH=$PWD python3 -m tests.report.test_serialise"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import ClassVar

import jsonschema
import pytest

from nvprof_wrap import analyze
from nvprof_wrap.report import JobEnd, serialise
from nvprof_wrap.report.fields import js
from tests._paths import RUNS


def test_a_report_with_a_job_ranks_and_a_series_validates_and_is_its_to_dict():
    r = analyze(RUNS / "ddp_nsys", health=False)
    r = replace(r, job=JobEnd("failed", 1, None, None, None, 12, "capture"))
    d = r.to_dict()
    jsonschema.Draft202012Validator(serialise.schema()).validate(json.loads(json.dumps(d)))
    assert d["job"]["message"] == r.headline[0]
    assert list(d)[:4] == ["schema", "schema_version", "rules_version", "tensor_cores_used"]
    assert d["ranks"] and "lock_held" not in d["job"] and d["devices"][0]["device_id"] is not None


def test_the_schema_refuses_a_key_it_does_not_know_and_one_missing():
    d = analyze(RUNS / "gemm_cupti", health=False).to_dict()
    check = jsonschema.Draft202012Validator(serialise.schema())
    assert not list(check.iter_errors(d))
    assert list(check.iter_errors(d | {"surprise": 1}))
    assert list(check.iter_errors({k: v for k, v in d.items() if k != "kernels"}))
    assert list(check.iter_errors(d | {"kernels": [d["kernels"][0] | {"share": "12%"}]}))


@dataclass(frozen=True)
class _Row:
    JSON_ORDER: ClassVar[tuple[str, ...]] = ("b", "renamed")

    a: int = field(metadata=js("renamed", digits=1))
    b: str = field(default="", metadata=js(empty_none=True))
    hidden: int = field(default=0, metadata=js(omit=True))


def test_metadata_names_the_key_rounds_omits_and_orders():
    assert list(serialise.to_json(_Row(1.26)).items()) == [("b", None), ("renamed", 1.3)]  # type: ignore[arg-type]


def test_a_key_without_its_place_in_the_order_is_caught():
    @dataclass(frozen=True)
    class Drift:
        JSON_ORDER: ClassVar[tuple[str, ...]] = ("a",)
        a: int
        b: int

    with pytest.raises(AssertionError, match="JSON_ORDER"):
        serialise.to_json(Drift(1, 2))


if __name__ == "__main__":
    import runpy
    runpy.run_module("tests.renderers.test_json_schema", run_name="__main__")
