"""JSON: one document per command, each with its schema and schema_version and one key per thing
(renderers/_documents.py, nvprof_wrap/json.schema.json), documented in docs/json.md. Exact text, with every control
character escaped the JSON way (also C1 and bidi overrides, which json.dumps leaves raw: sanitize.json_safe)."""
from __future__ import annotations

import json as _json
from typing import Any

from nvprof_wrap.renderers import _documents
from nvprof_wrap.renderers._options import Options
from nvprof_wrap.report import Report, serialise
from nvprof_wrap.report.compare import Comparison
from nvprof_wrap.report.kinds import Classifications, Doctor, Experiment, Kernels, Reports, Runs
from nvprof_wrap.text.sanitize import json_safe

NAME = "json"
EXTENSION = ".json"


def _with_gates(d: dict[str, Any], gates: tuple[dict[str, Any], ...] | None) -> dict[str, Any]:
    """The command line's gates (--min-tensor-core-share, --expect-precision), each with its threshold, the measured
    value and whether it passed; absent when none was given (the JSON is then exactly Report.to_dict())."""
    return d if gates is None else d | {"gates": list(gates)}


def render(subject: object, options: Options) -> str:
    """The subject as one JSON document (docs/json.md); the gates given, with their results, under "gates"."""
    match subject:
        case Report():
            return _dump(_with_gates(serialise.to_dict(subject), options.gates))
        case Comparison():
            return _dump(_with_gates(_documents.compare(subject), options.gates))
        case Kernels():
            return _dump(_documents.kernels(subject))
        case Classifications():
            return _dump(_documents.classify(subject))
        case Experiment():
            return _dump(_documents.experiment(subject))
        case Doctor():
            return _dump(_documents.doctor(subject))
        case Runs():
            return _dump(_documents.runs(subject))
        case Reports():  # one object: each report's dict under its key in "reports"
            return _dump(_documents.reports(subject))
    raise TypeError(f"the json renderer has no form for {type(subject).__name__}")


def _dump(value: object) -> str:
    try:  # strict JSON: report/serialise writes a NaN or infinity as null; a value built past it is mended here
        text = _json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = _json.dumps(_finite(value), indent=2, ensure_ascii=False, allow_nan=False)
    return json_safe(text) + "\n"


def _finite(value: Any) -> Any:
    """value with every NaN and infinity made null (serialise.json_number)."""
    if isinstance(value, float):
        return serialise.json_number(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
