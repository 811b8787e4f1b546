"""Every command's JSON document (docs/json.md) and the one JSON Schema of them all (nvprof_wrap/json.schema.json,
``schema()``): an object with ``schema`` (the document's kind and version) and ``schema_version``, and one key per
thing across commands — a run's or a kernel's tensor-core verdict is ``verdict`` / ``tensor_core``, its share of
kernel time ``tensor_core_share``, its precisions ``tensor_core_precisions``, kernel time ``kernel_ns``, launches
``launches``. The report's document is report/serialise.py's; the others are made here from the same walk over
their records (serialise.record), and their schemas from the same types (serialise.record_schema), so that a key
renamed in one place is renamed in the other."""
from __future__ import annotations

import typing
from typing import Any

from nvprof_wrap.model import Classification
from nvprof_wrap.renderers import _rows
from nvprof_wrap.report import KernelRow, serialise
from nvprof_wrap.report.compare import Comparison, DeltaRow, Predicted, Side
from nvprof_wrap.report.experiment import ExperimentRow
from nvprof_wrap.report.kinds import Classifications, Doctor, Experiment, Kernels, Reports, Runs
from nvprof_wrap.store.history import HistoryRow

# The documents, each with its schema's version: the report's keys only grew (version 1, as `schema` said before);
# compare's renamed keys (version 2, see _SIDE, _ROW); the others were bare lists or an unversioned object (1).
VERSIONS = {"report": serialise.SCHEMA_VERSION, "compare": 2, "kernels": 1, "classify": 1, "experiment": 1,
            "runs": 1, "doctor": 1, "reports": 1}

# Keys of the records' own fields → the one key for the thing (docs/json.md, "One key per thing").
_SIDE = {"tc_share": "tensor_core_share", "precisions": "tensor_core_precisions", "idle": "idle_share"}
_ROW = {"before_tc_share": "before_tensor_core_share", "after_tc_share": "after_tensor_core_share"}
_EXPERIMENT = {"tc_share": "tensor_core_share", "tc_precisions": "tensor_core_precisions"}
_RUN = {"precisions": "tensor_core_precisions", "kernel_time_ns": "kernel_ns"}
_PROBE = {"verdict": "message", "tensor_cores_visible": "tensor_cores_used"}
TABLES = ("families", "precisions", "ops", "split", "budget")  # compare's tables (renderers/_compare.py TABLES)


def envelope(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"schema": f"nvprof-wrap.{kind}/{VERSIONS[kind]}", "schema_version": VERSIONS[kind], **body}


def compare(c: Comparison) -> dict[str, Any]:
    def rows(rs: tuple[DeltaRow, ...]) -> list[dict[str, Any]]:
        return [serialise.record(r, _ROW) | {"delta_ns": r.delta_ns} for r in rs]

    return envelope("compare", {
        "before": serialise.record(c.before, _SIDE), "after": serialise.record(c.after, _SIDE),
        "tensor_core_share_delta": round(c.tc_share_delta, 6), "speedup": c.speedup, "findings": list(c.findings),
        **{key: rows(getattr(c, key)) for key in TABLES},
        "speedup_predicted": serialise.record(c.ceiling, {}) if c.ceiling else None})


def kernels(k: Kernels) -> dict[str, Any]:
    return envelope("kernels", {"kernels": [serialise.to_json(r) for r in k.rows]})


def classify(c: Classifications) -> dict[str, Any]:
    return envelope("classify", {"kernels": [_rows.classification(x) for x in c.items]})


def experiment_row(r: ExperimentRow) -> dict[str, Any]:
    d = serialise.record(r, _EXPERIMENT)
    d["tensor_core_precisions"] = r.tc_precisions.split(" + ") if r.tc_precisions else []
    return d


def experiment(e: Experiment) -> dict[str, Any]:
    return envelope("experiment", {"rows": [experiment_row(r) for r in e.rows]})


def runs(r: Runs) -> dict[str, Any]:
    return envelope("runs", {"runs": [{_RUN.get(k, k): v for k, v in row.items()} for row in r.rows]})


def doctor(d: Doctor) -> dict[str, Any]:
    facts = dict(d.facts)
    if isinstance(facts.get("probe"), dict):
        facts["probe"] = {_PROBE.get(k, k): v for k, v in facts["probe"].items()}
    return envelope("doctor", facts)


def reports(r: Reports) -> dict[str, Any]:
    return envelope("reports", {"reports": {item.key: serialise.to_dict(item.report) for item in r.items}})


# ---- the schema of them all ----

SCHEMA_ID = "nvprof-wrap.schema.json"
_REF = "#/$defs/"


def _nullable(s: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [s, {"type": "null"}]}


def _doc(kind: str, props: dict[str, Any], loose: bool = False) -> dict[str, Any]:
    body = {"schema": {"const": f"nvprof-wrap.{kind}/{VERSIONS[kind]}"}, "schema_version": {"const": VERSIONS[kind]},
            **props}
    return {"type": "object", "properties": body, "required": list(body), "additionalProperties": loose}


def _list_of(ref: str) -> dict[str, Any]:
    return {"type": "array", "items": {"$ref": _REF + ref}}


def _report() -> dict[str, Any]:
    """The report's schema (serialise.schema()) with its shared records by reference."""
    s = serialise.schema()
    body = {k: v for k, v in s.items() if k not in ("$schema", "title", "description")}
    body["properties"]["kernels"] = body["properties"]["disagreements"] = _list_of("kernel")
    return body


def _compare() -> dict[str, Any]:
    side = serialise.record_schema(Side, _SIDE)
    row = serialise.record_schema(DeltaRow, _ROW)
    row["properties"]["delta_ns"] = {"type": "integer"}
    row["required"].append("delta_ns")
    doc = _doc("compare", {"before": {"$ref": _REF + "compare_side"}, "after": {"$ref": _REF + "compare_side"},
                            "tensor_core_share_delta": {"type": "number"}, "speedup": _nullable({"type": "number"}),
                            "findings": {"type": "array", "items": {"type": "string"}},
                            **{key: _list_of("compare_row") for key in TABLES},
                            "speedup_predicted": _nullable(serialise.record_schema(Predicted))})
    doc["properties"]["gates"] = {"type": "array", "items": {"type": "object"}}  # only with a gate, as the report's
    return doc | {"$defs_used": {"compare_side": side, "compare_row": row}}


def _classification() -> dict[str, Any]:
    s = serialise.record_schema(Classification)
    del s["properties"]["evidence"]
    s["required"].remove("evidence")
    return s


def _experiment_row() -> dict[str, Any]:
    s = serialise.record_schema(ExperimentRow, _EXPERIMENT)
    s["properties"]["tensor_core_precisions"] = {"type": "array", "items": {"type": "string"}}
    return s


def _run_row() -> dict[str, Any]:
    props = {_RUN.get(k, k): serialise.type_schema(t) for k, t in typing.get_type_hints(HistoryRow).items()}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _doctor() -> dict[str, Any]:
    """What doctor finds differs by machine (docs/json.md): its members are checked, not every nested key."""
    obj, flag = {"type": "object"}, {"type": "boolean"}
    probe = {"type": "object", "properties": {"ran": flag, "backend": {"type": "string"}, "folder": {"type": "string"},
                                              "message": {"type": "string"}, "tensor_cores_used": flag,
                                              "why": {"type": "string"}},
             "required": ["ran"], "additionalProperties": False}
    d = _doc("doctor", {"gpus": {"type": "array", "items": obj}, "profilers": obj, "cupti_python": flag,
                        "libcupti": _nullable(obj), "hardware_sampling": obj, "python_packages": obj,
                        "keras_backend": {"type": "string"}, "probe": probe})
    d["required"].remove("probe")  # doctor --no-probe, or no GPU
    return d


def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of every command's ``--format json``: one $defs entry per document (report —
    also run, verify and demo's each —, compare, kernels, classify, experiment, runs, doctor, reports) and per
    shared record (kernel, classification …); the file nvprof_wrap/json.schema.json holds its text
    (tests/renderers/test_json_schema.py checks that, and every command's output against it)."""
    cmp = _compare()
    defs = {
        "report": _report(), "compare": {k: v for k, v in cmp.items() if k != "$defs_used"},
        "kernels": _doc("kernels", {"kernels": _list_of("kernel")}),
        "classify": _doc("classify", {"kernels": _list_of("classification")}),
        "experiment": _doc("experiment", {"rows": _list_of("experiment_row")}),
        "runs": _doc("runs", {"runs": _list_of("run")}), "doctor": _doctor(),
        "reports": _doc("reports", {"reports": {"type": "object", "additionalProperties": {"$ref": _REF + "report"}}}),
        "kernel": serialise.record_schema(KernelRow), "classification": _classification(),
        **cmp["$defs_used"], "experiment_row": _experiment_row(), "run": _run_row()}
    return {"$schema": serialise.SCHEMA_URI, "$id": SCHEMA_ID,
            "title": "nvprof-wrap JSON documents",
            "description": "What `nvprof-wrap COMMAND --format json` writes, one $defs entry per document "
                           "(docs/json.md); made by nvprof_wrap.renderers._documents.schema() from the records' types.",
            "oneOf": [{"$ref": _REF + k} for k in VERSIONS], "$defs": defs}
