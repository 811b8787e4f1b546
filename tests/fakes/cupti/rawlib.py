"""The fake's libcupti: the four functions nvprof-wrap's raw path calls through ctypes, and raw activity
buffers written byte for byte in the struct layouts of a chosen CUPTI version (records.py: ctypes mirrors of
cupti_activity.h), so the tracer's bulk reader is tested on real layouts.

Like libcupti: cuptiActivityRegisterCallbacks(requested, completed) takes two C callbacks (ctypes CFUNCTYPE
objects); requested(&buffer, &size, &maxRecords) hands a buffer (or NULL: records are then dropped and counted);
records are written one after another, each its struct's size, and a full buffer goes to
completed(context, streamId, buffer, size, validSize) on a worker thread; a flush hands over the rest in the
calling thread. cuptiActivityGetNextRecord steps through a buffer by each record's kind and size (status 12,
MAX_LIMIT_REACHED, at the end; 21, INVALID_KIND, on a kind it does not know); cuptiActivityGetNumDroppedRecords
returns the drops since its last call; cuptiGetVersion the version's CUPTI_API_VERSION.

FAKE_CUPTI_VERSION picks the layouts: 12.9 (Kernel9), 13.0 (Kernel10, the default: the H200 image's
libcupti 13.0.85), 13.4 (Kernel13, Memcpy7, Memset5, Device6), or "future" (a kernel record of a size no
header shows, to test the fallback).
"""
from __future__ import annotations

import ctypes
import os
from typing import Any

from . import records as R

MAX_LIMIT_REACHED, INVALID_KIND = 12, 21


class FutureKernel(ctypes.Structure):  # a Kernel14 nobody has checked: 8 bytes more than Kernel13
    _pack_ = 1
    _fields_ = [("base", R.Kernel13), ("extra", ctypes.c_uint64)]


_BASE = {1: "Memcpy", 2: "Memset", 3: "Kernel", 4: "API", 5: "API", 8: "Device", 10: "Kernel", 12: "Marker2",
         22: "MemcpyPtoP4"}
VERSIONS = {
    "12.9": (28, {"Kernel": R.Kernel9, "Memcpy": R.Memcpy6, "Memset": R.Memset4, "Device": R.Device5}),
    "13.0": (130001, {"Kernel": R.Kernel10, "Memcpy": R.Memcpy6, "Memset": R.Memset4, "Device": R.Device5}),
    "13.4": (130401, {"Kernel": R.Kernel13, "Memcpy": R.Memcpy7, "Memset": R.Memset5, "Device": R.Device6}),
    "future": (140000, {"Kernel": FutureKernel, "Memcpy": R.Memcpy7, "Memset": R.Memset5, "Device": R.Device6}),
}


def version() -> str:
    return os.environ.get("FAKE_CUPTI_VERSION", "13.0")


def struct_of(kind: int) -> type[ctypes.Structure] | None:
    base = _BASE.get(int(kind))
    if base is None:
        return None
    return VERSIONS[version()][1].get(base) or getattr(R, base)


def _camel(name: str) -> str:
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(part.title() for part in rest)


class Strings:
    """C strings that live as long as the process: one address per distinct text (as CUPTI's kernel names)."""

    def __init__(self) -> None:
        self.held: dict[str, Any] = {}

    def address(self, text: str | None) -> int:
        if text is None:
            return 0
        buf = self.held.get(text)
        if buf is None:
            buf = self.held[text] = ctypes.create_string_buffer(text.encode())
        return ctypes.addressof(buf)


def encode(record: Any, address: int, strings: Strings) -> int:
    """Write a fake record object at address in its version's struct; returns the bytes used."""
    cls = struct_of(record.kind)
    target = cls.from_address(address)
    ctypes.memset(address, 0, ctypes.sizeof(cls))
    c = target.base if isinstance(target, FutureKernel) else target
    for attr, value in vars(record).items():
        name = _camel(attr)
        if attr in ("name", "domain"):
            setattr(c, name, strings.address(value))
        elif attr == "uuid":
            ctypes.memmove(ctypes.addressof(c) + type(c).uuid.offset, value.bytes, 16)
        elif attr == "object_id":
            c.objectId[0], c.objectId[1] = value.pt.process_id, value.pt.thread_id
        elif hasattr(type(c), name) and isinstance(value, int):
            setattr(c, name, int(value))
    return ctypes.sizeof(cls)


class FakeLibcupti:
    """The functions, as attributes that accept ``.argtypes`` like a ctypes CDLL's."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

        # the C names, as a CDLL has them
        def cuptiGetVersion(out: Any) -> int:
            _target(out).value = VERSIONS[version()][0]
            return 0

        def cuptiActivityRegisterCallbacks(requested: Any, completed: Any) -> int:
            state["raw_callbacks"] = (requested, completed)
            state["callbacks"] = None  # like libcupti: one pair of buffer callbacks at a time
            return 0

        def cuptiActivityGetNextRecord(buffer: Any, valid: int, record: Any) -> int:
            base = buffer if isinstance(buffer, int) else ctypes.addressof(buffer)
            rec = _target(record)
            if rec.value is None:
                nxt = base
            else:
                cls = struct_of(ctypes.c_uint32.from_address(rec.value).value)
                if cls is None:
                    return INVALID_KIND
                nxt = rec.value + ctypes.sizeof(cls)
            if nxt >= base + valid:
                return MAX_LIMIT_REACHED
            if struct_of(ctypes.c_uint32.from_address(nxt).value) is None:
                return INVALID_KIND
            rec.value = nxt
            return 0

        def cuptiActivityGetNumDroppedRecords(context: Any, stream_id: int, dropped: Any) -> int:
            _target(dropped).value, state["dropped"] = state["dropped"], 0
            return 0

        def cuptiFinalize() -> int:
            # libcupti: detach from the process — every kind off, the subscriber and the buffer callbacks gone
            # (any later CUPTI call initializes it again, lazily)
            state["enabled"].clear()
            state["api_cbids"].clear()
            state["subscriber"] = state["callbacks"] = state["raw_callbacks"] = None
            return 0

        for fn in (cuptiGetVersion, cuptiActivityRegisterCallbacks, cuptiActivityGetNextRecord,
                   cuptiActivityGetNumDroppedRecords, cuptiFinalize):
            setattr(self, fn.__name__, fn)


def _target(ref: Any) -> Any:
    """What a ctypes.byref(x) or pointer(x) argument points to."""
    return ref._obj if hasattr(ref, "_obj") else ref.contents


def request_buffer(state: dict[str, Any]) -> tuple[int, int]:
    """Ask the tracer for a buffer, as libcupti does: (address, size); (0, 0) when it gave none."""
    requested = state["raw_callbacks"][0]
    buf, size, most = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t()
    requested(ctypes.pointer(buf), ctypes.pointer(size), ctypes.pointer(most))
    return (buf.value or 0, size.value) if buf.value else (0, 0)
