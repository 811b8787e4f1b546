"""The XSpace protobuf schema (``xplane.proto``) for the xplane reader: the generated module that TensorFlow, TSL,
XProf or the TensorBoard profile plugin ship, when one is installed; else the same messages built here.

The shipped module is loaded from its file, not imported through its package: ``import tensorflow…`` would load
all of TensorFlow (seconds) to read a file. Our own copy mirrors tsl/profiler/protobuf/xplane.proto (field
numbers are the wire format; they never change) and lives in a private descriptor pool, so it cannot clash with
a copy that TensorFlow registers in the same process.
"""
from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType, SimpleNamespace

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

# (module name once imported, top-level package, the generated file inside it)
SHIPPED = (
    ("tsl.profiler.protobuf.xplane_pb2", "tsl", "profiler/protobuf/xplane_pb2.py"),
    ("tensorflow.tsl.profiler.protobuf.xplane_pb2", "tensorflow", "tsl/profiler/protobuf/xplane_pb2.py"),
    ("xprof.protobuf.xplane_pb2", "xprof", "protobuf/xplane_pb2.py"),
    ("tensorboard_plugin_profile.protobuf.xplane_pb2", "tensorboard_plugin_profile", "protobuf/xplane_pb2.py"),
)
_F = descriptor_pb2.FieldDescriptorProto
# message: [(field, number, type, label, message type)]
_MESSAGES: dict[str, list[tuple[str, int, int, int, str | None]]] = {
    "XSpace": [("planes", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XPlane"), ("errors", 2, _F.TYPE_STRING, 3, None),
               ("warnings", 3, _F.TYPE_STRING, 3, None), ("hostnames", 4, _F.TYPE_STRING, 3, None)],
    "XPlane": [("id", 1, _F.TYPE_INT64, 1, None), ("name", 2, _F.TYPE_STRING, 1, None),
               ("lines", 3, _F.TYPE_MESSAGE, 3, "XLine"),
               ("event_metadata", 4, _F.TYPE_MESSAGE, 3, "XPlane.EventMetadataEntry"),
               ("stat_metadata", 5, _F.TYPE_MESSAGE, 3, "XPlane.StatMetadataEntry"),
               ("stats", 6, _F.TYPE_MESSAGE, 3, "XStat")],
    "XLine": [("id", 1, _F.TYPE_INT64, 1, None), ("display_id", 10, _F.TYPE_INT64, 1, None),
              ("name", 2, _F.TYPE_STRING, 1, None), ("display_name", 11, _F.TYPE_STRING, 1, None),
              ("timestamp_ns", 3, _F.TYPE_INT64, 1, None), ("duration_ps", 9, _F.TYPE_INT64, 1, None),
              ("events", 4, _F.TYPE_MESSAGE, 3, "XEvent")],
    "XEvent": [("metadata_id", 1, _F.TYPE_INT64, 1, None), ("offset_ps", 2, _F.TYPE_INT64, 1, None),
               ("num_occurrences", 5, _F.TYPE_INT64, 1, None), ("duration_ps", 3, _F.TYPE_INT64, 1, None),
               ("stats", 4, _F.TYPE_MESSAGE, 3, "XStat")],
    "XStat": [("metadata_id", 1, _F.TYPE_INT64, 1, None), ("double_value", 2, _F.TYPE_DOUBLE, 1, None),
              ("uint64_value", 3, _F.TYPE_UINT64, 1, None), ("int64_value", 4, _F.TYPE_INT64, 1, None),
              ("str_value", 5, _F.TYPE_STRING, 1, None), ("bytes_value", 6, _F.TYPE_BYTES, 1, None),
              ("ref_value", 7, _F.TYPE_UINT64, 1, None)],
    "XEventMetadata": [("id", 1, _F.TYPE_INT64, 1, None), ("name", 2, _F.TYPE_STRING, 1, None),
                       ("display_name", 4, _F.TYPE_STRING, 1, None), ("metadata", 3, _F.TYPE_BYTES, 1, None),
                       ("stats", 5, _F.TYPE_MESSAGE, 3, "XStat"), ("child_id", 6, _F.TYPE_INT64, 3, None)],
    "XStatMetadata": [("id", 1, _F.TYPE_INT64, 1, None), ("name", 2, _F.TYPE_STRING, 1, None),
                      ("description", 3, _F.TYPE_STRING, 1, None)],
}
_ONEOFS = {"XEvent": ("data", ("offset_ps", "num_occurrences")),
           "XStat": ("value", ("double_value", "uint64_value", "int64_value", "str_value", "bytes_value", "ref_value"))}
_PACKAGE = "tensorflow.profiler"


def _add_fields(msg: descriptor_pb2.DescriptorProto, name: str) -> None:
    oneof = _ONEOFS.get(name)
    if oneof:
        msg.oneof_decl.add(name=oneof[0])
    for fname, number, ftype, label, mtype in _MESSAGES[name]:
        f = msg.field.add(name=fname, number=number, type=ftype, label=label)
        if mtype:
            f.type_name = f".{_PACKAGE}.{mtype}"
        if oneof and fname in oneof[1]:
            f.oneof_index = 0


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="nvprof_wrap/xplane.proto", package=_PACKAGE, syntax="proto3")
    for name in _MESSAGES:
        msg = fd.message_type.add(name=name)
        _add_fields(msg, name)
        if name == "XPlane":
            for entry, value in (("EventMetadataEntry", "XEventMetadata"), ("StatMetadataEntry", "XStatMetadata")):
                e = msg.nested_type.add(name=entry)
                e.options.map_entry = True
                e.field.add(name="key", number=1, type=_F.TYPE_INT64, label=1)
                e.field.add(name="value", number=2, type=_F.TYPE_MESSAGE, label=1, type_name=f".{_PACKAGE}.{value}")
    return fd


@cache
def own() -> SimpleNamespace:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file())
    return SimpleNamespace(source="nvprof-wrap", **{n: message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"{_PACKAGE}.{n}")) for n in _MESSAGES})


def _load_file(top: str, rel: str) -> ModuleType | None:
    spec = importlib.util.find_spec(top)  # a top-level name: found without importing the package
    for base in (spec.submodule_search_locations or []) if spec else []:
        path = Path(base) / rel
        if path.is_file():
            mspec = importlib.util.spec_from_file_location(f"_nvprof_wrap_xplane_pb2_{top}", path)
            if mspec is None or mspec.loader is None:  # a .py file always has both: never taken
                continue
            module = importlib.util.module_from_spec(mspec)
            mspec.loader.exec_module(module)
            return module
    return None


@cache
def shipped() -> SimpleNamespace | None:
    """The schema module an installed TensorFlow / TSL / XProf / profile plugin ships, or None."""
    for name, top, rel in SHIPPED:
        try:
            module = sys.modules.get(name) or _load_file(top, rel)
        except Exception:  # noqa: BLE001, S112 - a broken or mismatched install: the next one, or our own schema
            continue
        if module is not None and all(hasattr(module, n) for n in _MESSAGES):
            return SimpleNamespace(source=top, **{n: getattr(module, n) for n in _MESSAGES})
    return None


def schema() -> SimpleNamespace:
    """XSpace, XPlane, XLine, … message classes; .source says whose."""
    return shipped() or own()
