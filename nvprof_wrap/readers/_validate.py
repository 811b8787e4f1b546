"""Validate what a reader extracted before it reaches the store: damaged files can hand back bytes where
text belongs, text where numbers belong, NULs, or NULL where a count belongs. Text is decoded (invalid UTF-8
replaced) and cut at MAX_NAME_CHARS, numbers must be numbers (and counts present) — or the capture is bad input.
What had to be changed is said in the capture's notes: names cut, names left mangled by the demangling budget,
negative times."""
from __future__ import annotations

import dataclasses
import functools
import math
import operator
import typing
from typing import TYPE_CHECKING, Any, TypeVar, cast

from nvprof_wrap.model import Capture, KernelAgg, MemAgg, StepKernels
from nvprof_wrap.system.limits import MAX_NAME_CHARS
from nvprof_wrap.text import demangle

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Record = TypeVar("_Record", bound="DataclassInstance")  # a record of the model
_Agg = TypeVar("_Agg", KernelAgg, MemAgg)

# texts cut in the capture being validated (one capture at a time per process), by their hash: a name the capture
# holds in several records (its kernels, its step series) is one name cut
_cut: set[int] = set()


def _text(v: object) -> str | None:
    if v is None:
        return None
    if isinstance(v, bytes):
        v = v.decode("utf-8", errors="replace")
    elif isinstance(v, (tuple, list, dict, bool)):  # a JSON value that is no text (a summary's): '(1,)' was a name
        raise ValueError(f"expected text, found {type(v).__name__} {str(v)[:40]!r}")  # noqa: TRY004  # validate()'s one error: bad input
    s = str(v).replace("\x00", "\\0")
    if len(s) <= MAX_NAME_CHARS:
        return s
    _cut.add(hash(s))
    return s[:MAX_NAME_CHARS] + "…"


_INT64 = 2**63


def _int(v: object) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool):  # JSON's true (a summary edited by hand): no count or time — it was read as 1
        raise ValueError(f"expected a number, found {v!r}")  # noqa: TRY004  # validate()'s one error: bad input
    if isinstance(v, float) and math.isfinite(v):
        v = int(v)
    if isinstance(v, int):
        if -_INT64 <= v < _INT64:
            return v
        raise ValueError(f"number out of range: {v}")
    raise ValueError(f"expected a number, found {type(v).__name__} {str(v)[:40]!r}")


def _float(v: object) -> float | None:
    if v is None:
        return None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise ValueError(f"expected a number, found {type(v).__name__} {str(v)[:40]!r}")


@functools.cache
def _plan(cls: type[DataclassInstance]) -> tuple[tuple[str, str, type[DataclassInstance] | None], ...]:
    """(field, kind, record class) per field of a model dataclass, from its type hints — resolved once per class
    (resolving them for every object cost 0.17 s per 1,000 kernels). "int!": a count that must be there."""
    hints = typing.get_type_hints(cls)
    plan: list[tuple[str, str, type[DataclassInstance] | None]] = []
    for f in dataclasses.fields(cls):
        hint = str(hints[f.name])
        kind = next((k for k in ("tuple", "str", "float", "int", "bool") if k in hint), "any")
        optional = "None" in hint
        plan.append((f.name, "str?" if kind == "str" and optional else "int!" if kind == "int" and not optional
                     else kind, _record_class(hints[f.name])))
    return tuple(plan)


def _record_class(hint: object) -> type[DataclassInstance] | None:
    """The model record a field holds (tuple[KernelAgg, ...] → KernelAgg; StepSeries | None → StepSeries)."""
    return next((a for a in typing.get_args(hint) if isinstance(a, type) and dataclasses.is_dataclass(a)),
                hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None)


def _record(v: object, cls: type[DataclassInstance] | None, where: str) -> object:
    """A record where the model has one must be that record (a summary edited by hand can hold anything)."""
    if cls is None and isinstance(v, tuple):  # StepAgg.api_ns: (kind, ns) pairs
        if len(v) != 2:
            raise ValueError(f"{where} holds a tuple of {len(v)}, not a (name, number) pair")
        return _text(v[0]), _int(v[1])
    if cls is None:
        return _clean(v) if dataclasses.is_dataclass(v) and not isinstance(v, type) else _text(v)
    if type(v) is not cls or not dataclasses.is_dataclass(v) or isinstance(v, type):
        raise ValueError(f"{where} holds {type(v).__name__}, not {cls.__name__}")
    return _clean(v)


_COUNTS = frozenset({"launches", "count"})


_FLAT = frozenset({"int", "int!", "str", "str?"})


@functools.cache
def _flat(cls: type[DataclassInstance]) -> bool:
    """Whether a record class holds only numbers and texts (a step's kernel: ~60k of them in a long series)."""
    return all(c is None and kind in _FLAT for _n, kind, c in _plan(cls))


def _as_is(obj: DataclassInstance) -> bool:
    """Whether a flat record is already what _clean would make of it, so that it is kept as it is and not built
    again field by field."""
    if not _flat(type(obj)):
        return False
    for name, kind, _cls in _plan(type(obj)):
        v = getattr(obj, name)
        if kind.startswith("int"):
            if type(v) is not int or not -_INT64 <= v < _INT64 or (name in _COUNTS and v < 0):
                if v is None and kind == "int":
                    continue
                return False
        elif type(v) is not str or len(v) > MAX_NAME_CHARS or "\x00" in v:
            if v is None and kind == "str?":
                continue
            return False
    return True


def _all_as_is(rows: tuple[object, ...], cls: type[DataclassInstance] | None) -> bool:
    """Whether every row of a tuple is a flat record of cls that _as_is would keep: checked field by field over all
    of them at once (a long series' ~60k step kernels: 0.35 s one by one, ~0.03 s so)."""
    if cls is None or not rows or not _flat(cls) or {type(r) for r in rows} != {cls}:
        return False
    for name, kind, _cls in _plan(cls):
        values = list(map(operator.attrgetter(name), rows))
        types = set(map(type, values))
        if None.__class__ in types and kind in ("int", "str?"):
            types.discard(None.__class__)
            values = [v for v in values if v is not None]
        if not values:
            continue
        if kind.startswith("int"):
            if types != {int} or min(values) < (0 if name in _COUNTS else -_INT64) or max(values) >= _INT64:
                return False
        elif types != {str} or max(map(len, values)) > MAX_NAME_CHARS or "\x00" in "".join(values):
            return False
    return True


# StepKernels' number columns: (column, whether a row may have none, the lowest value it may hold)
_STEP_KERNEL_COLUMNS = (("pid", True, -_INT64), ("step", False, -_INT64), ("name", False, 0), ("launches", False, 0),
                        ("total_ns", False, -_INT64))


def _step_kernels(k: StepKernels) -> StepKernels:
    """A series' step kernels checked column by column (tens of thousands of rows in a long series: no object a
    row): each column a tuple, all as long; numbers integers within int64 (floats and bools made integers, as
    _int makes them), launches not negative, each row's name an index into names; names cut as every name is.
    The record itself where nothing changes."""
    columns: dict[str, tuple[Any, ...]] = {}
    for f in ("names", *(c for c, _none, _lo in _STEP_KERNEL_COLUMNS)):
        col = getattr(k, f)
        if not isinstance(col, tuple):
            raise ValueError(f"StepKernels.{f} is not a sequence")  # noqa: TRY004 (bad input: validate's ValueError)
        columns[f] = col
    if len({len(columns[c]) for c, _none, _lo in _STEP_KERNEL_COLUMNS}) > 1:
        raise ValueError("StepKernels' columns are not all as long")
    names = columns["names"]
    if set(map(type, names)) - {str} or (names and max(map(len, names)) > MAX_NAME_CHARS) or \
            "\x00" in "".join(names):
        columns["names"] = tuple(_text(v) or "" for v in names)
    for c, none, lo in _STEP_KERNEL_COLUMNS:
        col = columns[c]
        if set(map(type, col)) - ({int, type(None)} if none else {int}):
            col = columns[c] = tuple(map(_int, col))
            if not none and None in col:
                raise ValueError(f"StepKernels.{c} is missing in a row")
        held = [v for v in col if v is not None] if none else col
        hi = len(names) if c == "name" else _INT64
        if held and (min(held) < lo or max(held) >= hi):
            what = "negative" if c == "launches" else "out of range"
            raise ValueError(f"StepKernels.{c} holds a value {what}")
    return k if all(columns[f] is getattr(k, f) for f in columns) else StepKernels(**columns)


def _clean(obj: _Record) -> _Record:
    if isinstance(obj, StepKernels):
        return cast(_Record, _step_kernels(obj))
    if _as_is(obj):
        return obj
    values: dict[str, object] = {}
    for name, kind, cls in _plan(type(obj)):
        v = getattr(obj, name)
        if kind == "tuple":
            if not isinstance(v, tuple):
                raise ValueError(f"{type(obj).__name__}.{name} is not a sequence")
            values[name] = v if _all_as_is(v, cls) else \
                tuple(_record(x, cls, f"{type(obj).__name__}.{name}") for x in v)
        elif cls is not None and v is not None:  # a step series: its numbers go to the store too
            values[name] = _record(v, cls, f"{type(obj).__name__}.{name}")
        elif kind == "str?":
            values[name] = _text(v)
        elif kind == "str":
            values[name] = _text(v) if v is not None else ""
        elif kind == "float":
            values[name] = _float(v)
        elif kind == "int":
            values[name] = _int(v)
        elif kind == "int!":
            if v is None:
                raise ValueError(f"{type(obj).__name__}.{name} is missing")
            if name in _COUNTS and isinstance(v, float) and not v.is_integer():  # a count is whole (1.5 was 1)
                raise ValueError(f"{type(obj).__name__}.{name} is not a whole number ({v})")
            n = values[name] = _int(v)
            if name in _COUNTS and n is not None and n < 0:  # summed into every total: a damaged capture
                raise ValueError(f"{type(obj).__name__}.{name} is negative ({n})")
        elif kind == "bool":
            values[name] = bool(v)
        else:
            values[name] = v
    return type(obj)(**values)


_TIMES = ("total_ns", "min_ns", "max_ns")
UNNAMED = ("<unnamed kernel>", "")  # what the readers name a kernel whose name the file does not hold


def validate(capture: Capture) -> Capture:
    """Raises ValueError (reported as bad input) when a field cannot be what the model says it is."""
    _cut.clear()
    if type(capture) is not Capture:
        raise ValueError(f"a {type(capture).__name__} where a capture belongs")
    clean = _clean(capture)
    negative = sum(any((getattr(a, t, 0) or 0) < 0 for t in _TIMES) for a in (*clean.kernels, *clean.memops))
    if negative:  # a reader that passed negative times through (summary CSVs): their time is not counted
        clean = dataclasses.replace(
            clean, kernels=tuple(_no_negative(k) for k in clean.kernels),
            memops=tuple(_no_negative(m) for m in clean.memops))
    unsized = sum((m.bytes or 0) < 0 for m in clean.memops)
    if unsized:  # a damaged byte count summed below zero: the store would refuse itself as damaged, naming no file
        clean = dataclasses.replace(clean, memops=tuple(
            dataclasses.replace(m, bytes=None) if (m.bytes or 0) < 0 else m for m in clean.memops))
    kept = sorted({k.name for k in clean.kernels} & demangle.over_budget)
    notes = [*clean.notes]
    if _cut:
        notes.append(f"{len(_cut):,} name(s) longer than {MAX_NAME_CHARS:,} characters were cut there")
    if kept:
        notes.append(f"{len(kept):,} kernel name(s) left mangled: demangling them went past its budget (time, "
                     f"memory or {MAX_NAME_CHARS:,} characters), e.g. {kept[0][:60]}…")
    if negative:
        notes.append(f"{negative:,} aggregate(s) with a negative time: counted without their time")
    nameless = [k for k in clean.kernels if k.name in UNNAMED]
    if nameless:  # a name id the file's string table does not hold, or an empty name: a damaged file, said
        ns, every = sum(k.total_ns or 0 for k in nameless), sum(k.total_ns or 0 for k in clean.kernels) or 1
        notes.append(f"{sum(k.launches for k in nameless):,} kernel launch(es) ({ns / every:.1%} of kernel time) "
                     "have no name in the file (a name id its strings do not hold, or an empty name): counted as "
                     "one kernel of unknown kind")
    listed = {d.device_id for d in clean.devices}
    stray = [k for k in clean.kernels if k.device_id is not None and (k.device_id < 0 or (
        listed and k.device_id not in listed))]
    if stray:  # a device the capture never names (a damaged record): a GPU of its own in every per-device table
        ids = sorted({k.device_id for k in stray if k.device_id is not None})
        notes.append(f"{sum(k.launches for k in stray):,} kernel launch(es) on device id(s) "
                     f"{', '.join(map(str, ids[:4]))}{' …' if len(ids) > 4 else ''}, which the capture's GPUs "
                     f"({', '.join(map(str, sorted(listed))) or 'none listed'}) do not include: a damaged record?")
    if unsized:
        notes.append(f"{unsized:,} copy or set aggregate(s) with a negative byte count: counted without their bytes")
    return dataclasses.replace(clean, notes=tuple(notes)) if tuple(notes) != clean.notes else clean


def _no_negative(agg: _Agg) -> _Agg:
    if not any((getattr(agg, t, 0) or 0) < 0 for t in _TIMES):
        return agg
    if type(agg) is KernelAgg:  # a kernel's min and max went with its time
        return dataclasses.replace(agg, total_ns=0, min_ns=None, max_ns=None)
    return dataclasses.replace(agg, total_ns=0)
