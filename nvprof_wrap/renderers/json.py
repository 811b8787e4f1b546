"""JSON: stable keys (schema 'nvprof-wrap.report/1'), documented in docs/json.md. Exact text, with every control
character escaped the JSON way (also C1 and bidi overrides, which json.dumps leaves raw: sanitize.json_safe)."""
from __future__ import annotations

import json as _json

from nvprof_wrap.renderers import _compare, _experiment, _rows
from nvprof_wrap.report import KernelRow, Report
from nvprof_wrap.text.sanitize import json_safe

NAME = "json"
EXTENSION = ".json"


def _with_gates(d: dict, gates: list | None) -> dict:
    """The command line's gates (--min-tensor-core-share, --expect-precision), each with its threshold, the measured
    value and whether it passed; absent when none was given (the JSON is then exactly Report.to_dict())."""
    return d if gates is None else d | {"gates": list(gates)}


def render_report(report: Report, gates: list | None = None, **_: object) -> str:
    return json_safe(_json.dumps(_with_gates(_rows.report(report), gates), indent=2, ensure_ascii=False)) + "\n"


def render_reports(named: list[tuple[str, Report]], **_: object) -> str:
    """Several reports in one document (demo): an object of each report's dict under its name."""
    return json_safe(_json.dumps({n: _rows.report(r) for n, r in named}, indent=2, ensure_ascii=False)) + "\n"


def render_kernels(rows: list[KernelRow], **_: object) -> str:
    return json_safe(_json.dumps([_rows.kernel(k) for k in rows], indent=2, ensure_ascii=False)) + "\n"


def render_classifications(items: list, **_: object) -> str:
    return json_safe(_json.dumps([_rows.classification(c) for c in items], indent=2, ensure_ascii=False)) + "\n"


def render_experiment(rows: list, **_: object) -> str:
    return _experiment.as_json(rows)


def render_doctor(facts: dict, **_: object) -> str:
    return json_safe(_json.dumps(facts, indent=2)) + "\n"


def render_compare(comparison, gates: list | None = None, **_: object) -> str:
    return json_safe(_json.dumps(_with_gates(_compare.as_dict(comparison), gates), indent=2, ensure_ascii=False)) \
        + "\n"


def render_runs(rows: list[dict], **_: object) -> str:
    return json_safe(_json.dumps(rows, indent=2, ensure_ascii=False)) + "\n"
