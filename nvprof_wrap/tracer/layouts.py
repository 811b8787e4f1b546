"""Where the fields the capture keeps sit inside CUPTI's activity records (cupti_activity.h), by record kind.

Knowledge as data: one table per kind of the byte offsets of the fields we read, and the struct versions whose
size identifies them. NVIDIA grows these structs only at their end, so within a kind every field we read sits
at the same offset in every struct version listed here: read with gcc's offsetof from the headers of CUPTI
12.9.79 (Kernel5–9, Memcpy4–6, MemcpyPtoP–PtoP4, Memset2–4, Marker2, Device4–5, API), 13.0.85 (Kernel10)
and 13.4.92 (Kernel11–13, Memcpy7, Memset5, Device6). tests/tracer/test_tracer_raw.py checks the table against any
cupti_activity.h found on the machine, and against the libcupti found there (its record sizes).

A record's size (the distance cuptiActivityGetNextRecord steps) says which struct version the loaded libcupti
writes. The raw reader accepts only the sizes below: a size it does not know means a struct it has not been
checked against, and the tracer then falls back to cupti-python's record objects.

Records are ``__attribute__((packed, aligned(8)))``: no padding inside, each starts on an 8-byte boundary,
and every field read here is naturally aligned within its record (checked by the tests), so a field is read as
an element of the buffer viewed as that field's integer type.
"""
from __future__ import annotations

from dataclasses import dataclass

# CUpti_ActivityKind values (cupti_activity.h)
MEMCPY, MEMSET, KERNEL, DRIVER, RUNTIME, DEVICE, CONCURRENT_KERNEL, MARKER, MEMCPY2 = 1, 2, 3, 4, 5, 8, 10, 12, 22


@dataclass(frozen=True)
class Field:
    column: str  # the capture's column (or, for strings, the name of the pointer read)
    offset: int  # byte offset inside the record
    dtype: str  # numpy type code, little-endian


@dataclass(frozen=True)
class Layout:
    struct: str  # CUpti_Activity<struct><version>, e.g. "Kernel"
    table: str  # the capture table its rows go to ("" : handled apart, e.g. markers, devices)
    fields: tuple[Field, ...]
    sizes: dict[int, str]  # sizeof(struct) -> the struct version of that size


def _f(*spec: tuple[str, int, str]) -> tuple[Field, ...]:
    return tuple(Field(*s) for s in spec)


KERNEL_LAYOUT = Layout("Kernel", "kernel", _f(
    ("start", 16, "<u8"), ("end", 24, "<u8"), ("device_id", 40, "<u4"), ("context_id", 44, "<u4"),
    ("stream_id", 48, "<u4"), ("correlation_id", 92, "<u4"), ("name", 104, "<u8"),
    ("grid_x", 52, "<i4"), ("grid_y", 56, "<i4"), ("grid_z", 60, "<i4"),
    ("block_x", 64, "<i4"), ("block_y", 68, "<i4"), ("block_z", 72, "<i4"),
    ("registers_per_thread", 6, "<u2"), ("static_shared", 76, "<i4"), ("dynamic_shared", 80, "<i4")),
    {160: "Kernel5", 168: "Kernel6", 176: "Kernel7", 200: "Kernel8", 208: "Kernel9", 216: "Kernel10",
     224: "Kernel11", 232: "Kernel12", 248: "Kernel13"})

# Fields are listed in the column order of their table (capture_file.SCHEMA).
_MEMCPY_TIMES = (("start", 16, "<u8"), ("end", 24, "<u8"), ("device_id", 32, "<u4"), ("stream_id", 40, "<u4"))
_MEMCPY_TAIL = (("bytes", 8, "<u8"), ("copy_kind", 4, "u1"), ("src_kind", 5, "u1"), ("dst_kind", 6, "u1"))
MEMCPY_LAYOUT = Layout("Memcpy", "memcpy", _f(*_MEMCPY_TIMES, ("correlation_id", 44, "<u4"), *_MEMCPY_TAIL),
                       {80: "Memcpy4", 88: "Memcpy5", 96: "Memcpy6", 112: "Memcpy7"})
# Peer-to-peer copies (MEMCPY2) share the head of Memcpy but keep the correlation id further on.
MEMCPY2_LAYOUT = Layout("MemcpyPtoP", "memcpy", _f(*_MEMCPY_TIMES, ("correlation_id", 60, "<u4"), *_MEMCPY_TAIL),
                        {72: "MemcpyPtoP", 80: "MemcpyPtoP2", 88: "MemcpyPtoP3", 96: "MemcpyPtoP4"})
MEMSET_LAYOUT = Layout("Memset", "memset", _f(
    ("start", 16, "<u8"), ("end", 24, "<u8"), ("device_id", 32, "<u4"), ("stream_id", 40, "<u4"),
    ("correlation_id", 44, "<u4"), ("bytes", 8, "<u8"), ("value", 4, "<u4")),
    {72: "Memset2", 80: "Memset3", 88: "Memset4", 104: "Memset5"})
API_LAYOUT = Layout("API", "", _f(  # RUNTIME -> table runtime, DRIVER -> table driver
    ("start", 8, "<u8"), ("end", 16, "<u8"), ("correlation_id", 32, "<u4"), ("tid", 28, "<u4"),
    ("cbid", 4, "<u4")), {40: "API"})
MARKER_LAYOUT = Layout("Marker", "", _f(  # paired into nvtx rows by the writer
    ("flags", 4, "<u4"), ("timestamp", 8, "<u8"), ("id", 16, "<u4"), ("object_kind", 20, "<u4"),
    ("tid", 28, "<u4"), ("name", 40, "<u8"), ("domain", 48, "<u8")), {56: "Marker2"})
DEVICE_LAYOUT = Layout("Device", "device", _f(
    ("device_id", 112, "<u4"), ("name", 136, "<u8"), ("cc_major", 104, "<u4"), ("cc_minor", 108, "<u4"),
    ("sm_count", 44, "<u4"), ("uuid", 120, "V16")), {176: "Device4", 184: "Device5", 192: "Device6"})

LAYOUTS: dict[int, Layout] = {
    KERNEL: KERNEL_LAYOUT, CONCURRENT_KERNEL: KERNEL_LAYOUT, MEMCPY: MEMCPY_LAYOUT, MEMCPY2: MEMCPY2_LAYOUT,
    MEMSET: MEMSET_LAYOUT, RUNTIME: API_LAYOUT, DRIVER: API_LAYOUT, MARKER: MARKER_LAYOUT, DEVICE: DEVICE_LAYOUT,
}
API_TABLES = {RUNTIME: "runtime", DRIVER: "driver"}
# CUpti_ActivityObjectKind of a marker whose objectId is the (process, thread) pair
OBJECT_KIND_PROCESS, OBJECT_KIND_THREAD = 1, 2


def struct_version(kind: int, size: int) -> str | None:
    """'Kernel10' for a CONCURRENT_KERNEL record of 216 bytes; None for a kind or size not in the table."""
    layout = LAYOUTS.get(kind)
    return None if layout is None else layout.sizes.get(size)
