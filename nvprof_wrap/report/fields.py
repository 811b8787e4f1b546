"""How a field of the report's types is written in JSON (docs/json.md): its key, its rounding, whether it is left
out, and how its value is shaped. Each type says it once, on its fields (``field(metadata=js(...))``); one walker,
report/serialise.py, writes every type by it, and the JSON Schema (nvprof_wrap/json.schema.json) is made from it too.
A field without metadata is written under its own name, as it is."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

META = "json"


@dataclass(frozen=True)
class Key:
    name: str | None = None  # the JSON key; None: the field's name
    digits: int | None = None  # rounded to this many decimals (a share: 6)
    omit: bool = False  # not written (kept for the renderers, or internal)
    empty_none: bool = False  # an empty value ('' or ()) is written null
    convert: Callable[[Any], Any] | None = None  # the value written is convert(value); its return type is the schema's
    flatten: bool = False  # the value's keys join its owner's, where the owner says (Report.verdict)
    when_none: Mapping[str, Any] | None = None  # a flattened value that is None: these keys and values instead
    group: str | None = None  # written inside an object under this key, with the other fields of that group
    rename: Mapping[str, str] = field(default_factory=dict)  # keys of the value's own object renamed
    pairs: tuple[str, ...] = ()  # a tuple of tuples: each becomes an object with these keys
    absent_none: bool = False  # None is not written at all (a key added to a record whose JSON is pinned); optional


def js(name: str | None = None, **kw: Any) -> dict[str, Key]:
    """A field's metadata: ``field(metadata=js("tensor_core_share", digits=6))``."""
    return {META: Key(name, **kw)}


def key_of(metadata: Mapping[str, Any]) -> Key:
    found = metadata.get(META)
    return found if isinstance(found, Key) else Key()
