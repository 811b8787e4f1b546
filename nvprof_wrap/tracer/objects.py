"""The fallback path: cupti-python's record objects (one Python object per record) turned into writer items.

Used when the raw path (raw.py) is not available: no libcupti found through ctypes, a struct size layouts.py
does not know, or NVPROF_WRAP_CUPTI_RAW=0. Slower (about 20 µs per kernel launch on an H200, most of it
cupti-python building the objects), same capture. Runs inside the user's process: never raises.
"""
# ruff: noqa: BLE001
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from nvprof_wrap.tracer.capture_file import (
    _DEVICE_GET,
    _KERNEL_GET,
    _MEMCPY_GET,
    _MEMSET_GET,
    _RUNTIME_GET,
    BATCH_ROWS,
    DEVICE_FIELDS,
    KERNEL_FIELDS,
    MEMCPY_FIELDS,
    MEMSET_FIELDS,
    RUNTIME_FIELDS,
    _read_fields,
    _text,
    format_uuid,
    marker_values,
)
from nvprof_wrap.tracer.items import Item, Row

# (table, row) of one record; a MARKER record's row is its MarkerValues, under the table name "marker_rows"
Converted = tuple[str, Row]


class ObjectConverter:
    """ActivityKind value → record-to-(table, row) function (KERNEL and MEMCPY2 share tables)."""

    def __init__(self, kind_enum: Any, on_error: Callable[[BaseException], None]) -> None:
        self.on_error = on_error
        self.missing: set[str] = set()  # record attributes that did not exist (NULL written)
        self.devices_seen: set[int] = set()
        self.devices_described: set[int] = set()
        self.convert = self._converters(kind_enum)

    def _converters(self, kind_enum: Any) -> dict[int, Callable[[Any], Converted]]:
        missing = self.missing

        def kernel(a: Any) -> Converted:
            row = _read_fields(a, KERNEL_FIELDS, _KERNEL_GET, missing)
            self.devices_seen.add(row[2])
            return "kernel", row if isinstance(row[6], str) else row[:6] + (_text(row[6]),) + row[7:]

        def copy(table: str, fields: tuple[str, ...], getter: Callable[[Any], Row]) -> Callable[[Any], Converted]:
            def convert(a: Any) -> Converted:
                row = _read_fields(a, fields, getter, missing)
                self.devices_seen.add(row[2])
                return table, row
            return convert

        def device(a: Any) -> Converted:
            d = _read_fields(a, DEVICE_FIELDS, _DEVICE_GET, missing)
            self.devices_described.add(d[0])
            return "device", (d[0], _text(d[1]), d[2], d[3], d[4], format_uuid(d[5]))

        table: dict[tuple[str, ...], Callable[[Any], Converted]] = {("CONCURRENT_KERNEL", "KERNEL"): kernel,
                 ("MEMCPY", "MEMCPY2"): copy("memcpy", MEMCPY_FIELDS, _MEMCPY_GET),
                 ("MEMSET",): copy("memset", MEMSET_FIELDS, _MEMSET_GET),
                 ("DEVICE",): device, ("MARKER",): lambda a: ("marker_rows", marker_values(a)),
                 ("RUNTIME",): lambda a: ("runtime", _read_fields(a, RUNTIME_FIELDS, _RUNTIME_GET, missing)),
                 ("DRIVER",): lambda a: ("driver", _read_fields(a, RUNTIME_FIELDS, _RUNTIME_GET, missing))}
        out: dict[int, Callable[[Any], Converted]] = {}
        for names, fn in table.items():
            for name in names:
                member = getattr(kind_enum, name, None)
                if member is not None:
                    out[int(member)] = fn
        return out

    def items(self, activities: Iterable[Any]) -> Iterable[Item]:
        """Writer items of at most BATCH_ROWS rows each, produced while the writer inserts them."""
        pending: dict[str, list[Row]] = {}
        for record in activities:
            try:
                fn = self.convert.get(int(record.kind))
                converted = fn(record) if fn is not None else None
            except Exception as e:
                self.on_error(e)
                continue
            if converted is None:
                continue
            table, row = converted
            rows = pending.setdefault(table, [])
            rows.append(row)
            if len(rows) >= BATCH_ROWS:
                pending[table] = []
                yield _item(table, rows)
        for table, rows in pending.items():
            yield _item(table, rows)


def _item(table: str, rows: list[Row]) -> Item:
    # "marker_rows": the rows are MarkerValues (the MARKER converter above); Row's Any fields let them pass
    return ("marker_rows", rows) if table == "marker_rows" else ("rows", table, rows)
