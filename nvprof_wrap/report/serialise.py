"""The Report's JSON (``--format json``, ``Report.to_dict()``, docs/json.md): one walk of the typed records, each
field written as its metadata says (report/fields.py), plus the few keys computed from a record (COMPUTED), in the
order a record names (its ``JSON_ORDER``, else its fields'). The JSON Schema of the same (``schema()``, the report's
entry of nvprof_wrap/json.schema.json) is made by the same walk over the types instead of the values, so the two
cannot drift."""
from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from nvprof_wrap.model import HealthVerdict
from nvprof_wrap.report import headline
from nvprof_wrap.report.fields import Key, key_of
from nvprof_wrap.report.series import API_KINDS, StepRow
from nvprof_wrap.report.types import LATE, GpuRow, HardwareRow, JobEnd, Report, Scope, SplitRow

SCHEMA = "nvprof-wrap.report/1"
# Every JSON document nvprof-wrap writes says its schema's version (docs/json.md): the report's keys only grow within
# version 1 (``schema`` names it too, as it did before the version had a key of its own).
SCHEMA_VERSION = 1
SCHEMA_URI = "https://json-schema.org/draft/2020-12/schema"

# Records of other packages, whose fields carry no metadata: the order their JSON keys are written in.
FOREIGN_ORDER: dict[type, tuple[str, ...]] = {
    HealthVerdict: ("status", "findings", "epochs", "unit", "final", "numerics")}
# ... and the metadata of their fields that have some: the numerics verdict only where the run recorded numerics
# (a report of any other run is the same, byte for byte, as before it existed).
FOREIGN_KEYS: dict[type, dict[str, Key]] = {HealthVerdict: {"numerics": Key(absent_none=True)}}


def _schema_name(r: Report, root: Report | None) -> str:
    return SCHEMA


def _schema_version(r: Report, root: Report | None) -> int:
    return SCHEMA_VERSION


def _kernel_ns(r: Report, root: Report | None) -> int:
    return r.verdict.kernel_ns


def _tc_share(r: Report, root: Report | None) -> float:
    return round(r.verdict.tc_fraction, 6)


def _tc_used(r: Report, root: Report | None) -> bool:
    return r.verdict.tensor_cores == "yes"


def _tone(r: Report, root: Report | None) -> str:
    return r.tone


def _memcpy(r: Report, root: Report | None) -> dict[str, dict[str, float]]:
    """Copy time by direction: {count, total_ns, share}."""
    return {s.direction: {"count": s.count, "total_ns": s.total_ns, "share": round(s.share, 6)}
            for s in r.split if s.kind == "memcpy"}


def _headline(r: Report, root: Report | None) -> list[str]:
    return list(r.headline)


def _category(s: SplitRow, root: Report | None) -> str:
    return s.category


def _option(s: Scope, root: Report | None) -> str:
    return s.option


def _description(s: Scope, root: Report | None) -> str | None:
    return headline.scope_text(s)


def _job_message(j: JobEnd, root: Report | None) -> str | None:
    return headline.job_line(j, root.verdict if root is not None else None)


def _hardware_message(h: HardwareRow, root: Report | None) -> str:
    return headline.hardware_text(h)


def _gpu_device(g: GpuRow, root: Report | None) -> int | None:  # the schema's type since the key existed
    return g.gpu.device_id


def _gpu_name(g: GpuRow, root: Report | None) -> str | None:
    return g.gpu.name


def _step_tc_share(x: StepRow, root: Report | None) -> float:
    return round(x.tc_share, 6)


def _step_idle(x: StepRow, root: Report | None) -> int:
    return x.idle_ns


def _api(kind: str) -> Callable[[StepRow, Report | None], int | None]:
    def api(x: StepRow, root: Report | None) -> int | None:
        return x.api_ns.get(kind) if x.api_ns is not None else None
    return api


# Keys computed from a record (the record and the report it belongs to) → their values; their return types are
# the schema's. Words come from report/headline.py, written once for JSON and every renderer.
COMPUTED: dict[type, dict[str, Callable[[Any, Report | None], Any]]] = {
    Report: {"schema": _schema_name, "schema_version": _schema_version, "kernel_ns": _kernel_ns,
             "tensor_core_share": _tc_share, "tensor_cores_used": _tc_used, "verdict_tone": _tone, "memcpy": _memcpy,
             "headline": _headline},
    SplitRow: {"category": _category},
    Scope: {"option": _option, "description": _description},
    JobEnd: {"message": _job_message},
    HardwareRow: {"message": _hardware_message},
    GpuRow: {"device_id": _gpu_device, "name": _gpu_name},
    StepRow: {"tensor_core_share": _step_tc_share, "gpu_idle_ns": _step_idle,
              **{f"api_{k}_ns": _api(k) for k in API_KINDS}},
}


# Keys computed above that are placed in a record's JSON_ORDER beside an existing key (key → the one it goes after, or
# before where the name starts with "<"): the schema's one key per thing (docs/json.md) next to the key it replaces.
PLACED: dict[type, dict[str, str]] = {
    Report: {"schema_version": "schema", "tensor_core_share": "<tensor_core_time_fraction",
             "kernel_ns": "<kernel_time_ns"}}
# The keys a record still writes for one release beside the one key for the thing (PLACED), and that key: the
# schema marks them deprecated. kernel_time_ns and tensor_core_time_fraction were the report's own names; the report
# page (renderers/_sections_html.py) and tests read them (docs/json.md, "Renamed keys").
DEPRECATED: dict[type, dict[str, str]] = {
    Report: {"kernel_time_ns": "kernel_ns", "tensor_core_time_fraction": "tensor_core_share"}}


def _order_of(cls: type) -> tuple[str, ...] | None:
    order = getattr(cls, "JSON_ORDER", None) or FOREIGN_ORDER.get(cls)
    if not order:
        return None
    out = list(order)
    for name, at in PLACED.get(cls, {}).items():
        out.insert(out.index(at[1:]) if at.startswith("<") else out.index(at) + 1, name)
    return tuple(out)


def to_dict(report: Report) -> dict[str, Any]:
    """Exactly what ``--format json`` prints for a report (without the command line's gates)."""
    return _object(report, report, {})


def record(obj: object, rename: Mapping[str, str]) -> dict[str, Any]:
    """One record (a dataclass) as the walk writes it, its keys renamed as ``rename`` says: the other commands'
    documents (renderers/_documents.py), whose schema is ``record_schema`` of the same type and names."""
    return _object(obj, None, rename)


def to_json(record: object) -> Any:
    """One record of the report (a KernelRow, an OpRow …) as it appears inside the report's JSON."""
    return _plain(record, None, {})


@dataclass(frozen=True)
class _Plan:
    """How one record type is written, worked out once per type (a report of thousands of rows walks it often)."""

    fields: tuple[tuple[str, str, Key, bool], ...]  # (attribute, JSON key, metadata, written as it is)
    computed: tuple[tuple[str, Callable[[Any, Report | None], Any]], ...]
    order: tuple[str, ...] | None
    optional: frozenset[str]  # keys not written when None (absent_none)


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _make_plan(cls)
    return plan


def _make_plan(cls: type) -> _Plan:
    found = []
    for f in fields(cls):
        k = FOREIGN_KEYS.get(cls, {}).get(f.name) or key_of(f.metadata)
        if not k.omit:
            found.append((f.name, k.name or f.name, k, k == _PLAIN or k == Key(k.name)))
    order = _order_of(cls)
    return _Plan(tuple(found), tuple(COMPUTED.get(cls, {}).items()), order,
                 frozenset(name for _, name, k, _ in found if k.absent_none))


_PLAIN = Key()
_ATOMS = (str, int, bool, type(None))  # written as they are; a float goes through json_number


def json_number(v: float) -> float | None:
    """A float as JSON can hold it: NaN and +-inf (a collapsed run's loss, read from its metrics) are no JSON number
    — json.dumps wrote the bare word NaN, which strict parsers (JavaScript's, jq's) refuse — so null, as JavaScript's
    JSON.stringify writes them; the report's words (health "nan", the numerics' evidence) say what it was."""
    return v if v - v == 0 else None


def _object(obj: Any, root: Report | None, rename: Mapping[str, str]) -> dict[str, Any]:
    plan = _plan(type(obj))
    out: dict[str, Any] = {}
    for attr, name, k, plain in plan.fields:
        v = getattr(obj, attr)
        if plain:
            out[rename.get(name, name) if rename else name] = v if type(v) in _ATOMS else _plain(v, root, _NONE)
            continue
        if k.flatten:
            out.update({n: list(x) if isinstance(x, list) else x for n, x in (k.when_none or {}).items()}
                       if v is None else _object(v, root, _NONE))
            continue
        if v is None and k.absent_none:
            continue
        name = rename.get(name, name) if rename else name
        value = _value(v, k, root)
        if k.group:
            out.setdefault(k.group, {})[name] = value
        else:
            out[name] = value
    for name, fn in plan.computed:
        out[name] = fn(obj, root)
    if plan.order:
        if not set(out) <= set(plan.order) or not all(n in out or n in plan.optional for n in plan.order):
            # a key added to a record without its place in the order: say which
            raise AssertionError(f"{type(obj).__name__}.JSON_ORDER vs its keys: {sorted(set(plan.order) ^ set(out))}")
        out = {n: out[n] for n in plan.order if n in out}
    return out


_NONE: Mapping[str, str] = {}


def _value(v: Any, k: Key, root: Report | None) -> Any:
    if k.convert is not None:
        v = k.convert(v)
    if k.digits is not None and v is not None:
        v = round(v, k.digits)
    if k.empty_none and not v:
        return None
    if k.pairs:
        return [dict(zip(k.pairs, t)) for t in v]
    return v if type(v) in _ATOMS else _plain(v, root, k.rename)


def _plain(v: Any, root: Report | None, rename: Mapping[str, str]) -> Any:
    if type(v) in _ATOMS:
        return v
    if type(v) is float:
        return json_number(v)
    if isinstance(v, (tuple, list)):
        return [x if type(x) in _ATOMS else _plain(x, root, rename) for x in v]
    if isinstance(v, dict):
        return {n: _plain(x, root, _NONE) for n, x in v.items()}
    if is_dataclass(v) and not isinstance(v, type):
        return _object(v, root, rename)
    return v


# ---- the JSON Schema: the same walk over the types ----

def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``--format json`` for a report, made from the types (the "report" entry of
    nvprof_wrap/json.schema.json, renderers/_documents.py; tests/renderers/test_json_schema.py checks that file,
    tests/whole/test_same_reports.py every golden input's JSON against it). Every key is required and no other is
    allowed, but "gates" (only with --min-tensor-core-share / --expect-precision)."""
    body = _object_schema(Report, {})
    body["properties"]["gates"] = {"type": "array", "items": {"type": "object"}}
    body["properties"]["schema"] = {"const": SCHEMA}
    body["properties"]["schema_version"] = {"const": SCHEMA_VERSION}
    return {"$schema": SCHEMA_URI, "title": f"nvprof-wrap report ({SCHEMA})",
            "description": "The JSON of `nvprof-wrap report --format json` (docs/json.md); made by "
                           "nvprof_wrap.report.serialise.schema() from the report's types.", **body}


def record_schema(cls: type, rename: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The JSON Schema of one record type as the walk writes it, its keys renamed as ``rename`` says (the other
    commands' documents, renderers/_documents.py)."""
    return _object_schema(cls, rename or {})


def type_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema of a type (int, str | None, list[str], a record …)."""
    return _type_schema(hint, {})


def _object_schema(cls: type, rename: Mapping[str, str]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {}
    optional = set()
    for f in fields(cls):
        k = FOREIGN_KEYS.get(cls, {}).get(f.name) or key_of(f.metadata)
        if k.omit:
            continue
        if k.absent_none:
            optional.add(k.name or f.name)
        if k.flatten:
            inner = _unwrap_optional(hints[f.name])
            sub = _object_schema(inner, {})["properties"]
            for n in (k.when_none or {}):
                if (k.when_none or {})[n] is None:
                    sub[n] = {"anyOf": [sub[n], {"type": "null"}]}
            props.update(sub)
            continue
        name = rename.get(k.name or f.name, k.name or f.name)
        s = _field_schema(hints[f.name], k)
        if k.group:
            group = props.setdefault(k.group, {"type": "object", "properties": {}, "additionalProperties": False})
            group["properties"][name] = s
            group["required"] = list(group["properties"])
        else:
            props[name] = s
    for name, fn in COMPUTED.get(cls, {}).items():
        props[name] = _type_schema(typing.get_type_hints(fn)["return"], {})
    order = _order_of(cls)
    if order:
        props = {n: props[n] for n in order}
    for old, new in DEPRECATED.get(cls, {}).items():
        props[old] = props[old] | {"deprecated": True, "description": f"the same as {new}; removed in the next "
                                                                      "release"}
    return {"type": "object", "properties": props, "required": [n for n in props if n not in optional],
            "additionalProperties": False}


def _field_schema(hint: Any, k: Key) -> dict[str, Any]:
    if k.convert is not None:
        hint = typing.get_type_hints(k.convert)["return"]
    if k.pairs:
        return {"type": "array", "items": {"type": "object", "properties": {n: {"type": "string"} for n in k.pairs},
                                           "required": list(k.pairs), "additionalProperties": False}}
    s = _type_schema(hint, k.rename)
    return {"anyOf": [s, {"type": "null"}]} if k.empty_none else s


_SIMPLE = {int: "integer", float: "number", str: "string", bool: "boolean", type(None): "null"}


def _type_schema(hint: Any, rename: Mapping[str, str]) -> dict[str, Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    if hint is Any:
        return {}
    if origin in (types.UnionType, typing.Union):
        return {"anyOf": [_type_schema(a, rename) for a in args]}
    if origin in (tuple, list):
        item = args[0] if args and (origin is list or args[-1] is Ellipsis or len(args) == 1) else Any
        return {"type": "array", "items": _type_schema(item, rename)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(args[1] if args else Any, {})}
    if isinstance(hint, type) and is_dataclass(hint):
        return _object_schema(hint, rename)
    raise TypeError(f"no JSON Schema for {hint!r}")


def _unwrap_optional(hint: Any) -> type:
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    found = args[0]
    if not isinstance(found, type):
        raise TypeError(f"a flattened field is a record or None, not {hint!r}")
    return found


LATE.to_dict = to_dict
