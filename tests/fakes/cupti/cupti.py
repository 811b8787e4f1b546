"""A fake of cupti-python 13.4's ``cupti.cupti`` module, for testing nvprof-wrap's tracer without a GPU.

It has the names, values and shapes the tracer relies on, taken from the real wheel (cupti/cupti.pyi,
cupti-python-samples/cupti_common.py) and CUPTI's headers:

* enums ActivityKind, Result, ActivityObjectKind, ActivityMemcpyKind with CUPTI's numeric values;
* ``cuptiError(status)`` carrying ``.status`` (a Result value);
* ``subscribe_v2(callback, userdata, params.ptr)`` with ``SubscriberParams`` (``old_subscriber_name`` is
  filled when another subscriber holds CUPTI), ``subscribe``, ``unsubscribe``;
* ``activity_enable/disable(kind)``, ``activity_register_callbacks(requested, completed)`` where
  ``requested()`` returns ``(buffer_bytes, max_records)`` and ``completed(activities)`` receives a list of
  record objects; full buffers are handed over on a worker thread, like CUPTI's own thread;
  ``activity_flush_all(flag)`` hands over the rest in the calling thread; ``get_timestamp()``.
* records with the real attribute names (ActivityKernel11, ActivityMemcpy6, ActivityMemset4,
  ActivityMarker2 with ``flags_``, ActivityDevice5 with a CUuuid-like ``uuid``);
* libcupti itself, for the raw path (rawlib.py): ``cupti._libcupti`` (cupti-python has no such attribute: the
  tracer opens the loaded libcupti with ctypes) with the C functions the tracer calls; once raw callbacks are
  registered there, records are written into raw buffers in the real struct layouts of FAKE_CUPTI_VERSION.

Test programs "run GPU work" with the ``_fake_*`` functions. Behaviour switches come from the environment
variable FAKE_CUPTI (comma-separated) or ``_fake_configure``: busy (subscribe fails with
MULTIPLE_SUBSCRIBERS), busy_enable (activity_enable fails so), no_lib (libcupti cannot be loaded),
no_concurrent, no_marker, bad_flush, no_raw (no libcupti for ctypes: the tracer uses the record objects).
FAKE_CUPTI_RECORDS_PER_BUFFER sets the records per buffer.
"""
from __future__ import annotations

import ctypes
import enum
import os
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from . import rawlib


class ActivityKind(enum.IntEnum):
    INVALID = 0
    MEMCPY = 1
    MEMSET = 2
    KERNEL = 3
    DRIVER = 4
    RUNTIME = 5
    DEVICE = 8
    CONTEXT = 9
    CONCURRENT_KERNEL = 10
    NAME = 11
    MARKER = 12
    MARKER_DATA = 13
    OVERHEAD = 17
    MEMCPY2 = 22


class ActivityObjectKind(enum.IntEnum):
    UNKNOWN = 0
    PROCESS = 1
    THREAD = 2
    DEVICE = 3
    CONTEXT = 4
    STREAM = 5


class ActivityMemcpyKind(enum.IntEnum):
    UNKNOWN = 0
    HTOD = 1
    DTOH = 2
    HTOA = 3
    ATOH = 4
    ATOA = 5
    ATOD = 6
    DTOA = 7
    DTOD = 8
    HTOH = 9
    PTOP = 10


class RuntimeApiTraceCbid(enum.IntEnum):  # a few members, with CUPTI's values (cupti_runtime_cbid.h)
    INVALID = 0
    cudaGetDevice_v3020 = 17
    cudaLaunchKernel_v7000 = 211
    cudaLaunchKernel_ptsz_v7000 = 214
    cudaLaunchHostFunc_v10000 = 284
    cudaGraphLaunch_v10000 = 311


class DriverApiTraceCbid(enum.IntEnum):  # cupti_driver_cbid.h
    INVALID = 0
    cuCtxGetCurrent = 304
    cuLaunchKernel = 307
    cuLaunchKernel_ptsz = 442
    cuGraphLaunch = 514
    cuLaunchHostFunc = 527
    cuLaunchKernelEx = 652


class ActivityFlag(enum.IntEnum):  # like the real binding: no MARKER_END member
    NONE = 0
    MARKER_INSTANTANEOUS = 1
    MARKER_START = 2


class Result(enum.IntEnum):
    SUCCESS = 0
    ERROR_INVALID_PARAMETER = 1
    ERROR_INVALID_DEVICE = 2
    ERROR_INVALID_CONTEXT = 3
    ERROR_INVALID_OPERATION = 7
    ERROR_OUT_OF_MEMORY = 8
    ERROR_NOT_INITIALIZED = 15
    ERROR_INVALID_KIND = 21
    ERROR_NOT_SUPPORTED = 27
    ERROR_INSUFFICIENT_PRIVILEGES = 35
    ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39
    ERROR_UNKNOWN = 999


class cuptiError(Exception):  # the real binding's name
    def __init__(self, status: int) -> None:
        self.status = status
        super().__init__(f"CUPTI_{Result(status).name}")


SUBSCRIBER_PARAMS_SIZE = 48
OTHER_PROFILER = "CUPTI for Nsight Systems"
_PARAMS: dict[int, SubscriberParams] = {}


class SubscriberParams:
    def __init__(self) -> None:
        self.struct_size = 0
        self.subscriber_name = ""
        self.old_subscriber_name = ""
        self.allow_multiple_subscribers = 0
        _PARAMS[id(self)] = self

    @property
    def ptr(self) -> int:
        return id(self)


class _Record:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__dict__})"


class ActivityKernel11(_Record):
    pass


class ActivityMemcpy6(_Record):
    pass


class ActivityMemset4(_Record):
    pass


class ActivityMarker2(_Record):
    pass


class ActivityDevice5(_Record):
    pass


class ActivityAPI(_Record):
    pass


class CUuuid:
    def __init__(self, raw: bytes) -> None:
        self.bytes = raw


# ------------------------------------------------------------------------------------------- fake state

_lock = threading.RLock()
_state: dict[str, Any] = {}
calls: list[tuple] = []  # API calls, for in-process tests


def _fake_reset() -> None:
    """Forget everything (in-process tests); modes come back from FAKE_CUPTI."""
    with _lock:
        _state.clear()
        _state.update(modes=set(filter(None, os.environ.get("FAKE_CUPTI", "").split(","))),
                      subscriber=None, enabled=set(), api_cbids=set(), callbacks=None, buffer=[], capacity=0,
                      threads=[], clock=1_000_000_000, devices=set(), next_id=1, stack=[],
                      raw_callbacks=None, raw_buffer=None, dropped=0, strings=rawlib.Strings())
        _state["lib"] = rawlib.FakeLibcupti(_state)
        calls.clear()


def _fake_configure(*modes: str) -> None:
    _state["modes"] = set(modes)


def _mode(name: str) -> bool:
    return name in _state["modes"]


def __getattr__(name: str) -> Any:
    if name == "_libcupti" and not _mode("no_raw"):
        return _state["lib"]
    raise AttributeError(f"module 'cupti.cupti' has no attribute {name!r}")


_fake_reset()


# ------------------------------------------------------------------------------------------- the API

def _check_lib() -> None:
    if _mode("no_lib"):
        raise RuntimeError("libcupti.so.13: cannot open shared object file: No such file or directory")


def subscribe_v2(callback: Callable, userdata: Any, p_params: int) -> int:
    calls.append(("subscribe_v2",))
    _check_lib()
    if _mode("busy") or _state["subscriber"] is not None:
        _PARAMS[p_params].old_subscriber_name = OTHER_PROFILER
        raise cuptiError(Result.ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    _state["subscriber"] = 0x5EB
    return _state["subscriber"]


def subscribe(callback: Callable, userdata: Any) -> int:
    calls.append(("subscribe",))
    _check_lib()
    if _mode("busy") or _state["subscriber"] is not None:
        raise cuptiError(Result.ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    _state["subscriber"] = 0x5EB
    return _state["subscriber"]


def unsubscribe(subscriber: int) -> None:
    calls.append(("unsubscribe",))
    _state["subscriber"] = None


def activity_enable(kind: int) -> None:
    calls.append(("activity_enable", ActivityKind(kind).name))
    _check_lib()
    if _mode("busy_enable"):
        raise cuptiError(Result.ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    if _mode("no_concurrent") and kind == ActivityKind.CONCURRENT_KERNEL:
        raise cuptiError(Result.ERROR_NOT_SUPPORTED)
    if _mode("no_marker") and kind == ActivityKind.MARKER:
        raise cuptiError(Result.ERROR_INVALID_KIND)
    _state["enabled"].add(int(kind))


def _enable_api(kind: ActivityKind, cbid: int, enable: int) -> None:
    """Per-call API records (CUPTI 12.6+): on without enabling the whole RUNTIME/DRIVER kind."""
    calls.append((f"activity_enable_{kind.name.lower()}_api", int(cbid), enable))
    if _mode("no_api_filter"):
        raise cuptiError(Result.ERROR_NOT_SUPPORTED)
    (_state["api_cbids"].add if enable else _state["api_cbids"].discard)((int(kind), int(cbid)))


def activity_enable_runtime_api(cbid: int, enable: int) -> None:
    _enable_api(ActivityKind.RUNTIME, cbid, enable)


def activity_enable_driver_api(cbid: int, enable: int) -> None:
    _enable_api(ActivityKind.DRIVER, cbid, enable)


def activity_disable(kind: int) -> None:
    calls.append(("activity_disable", ActivityKind(kind).name))
    _state["enabled"].discard(int(kind))


def activity_register_callbacks(func_buffer_requested: Callable, func_buffer_completed: Callable) -> None:
    calls.append(("activity_register_callbacks",))
    _state["callbacks"] = (func_buffer_requested, func_buffer_completed)
    _state["raw_callbacks"] = None  # one pair of buffer callbacks at a time, as in libcupti


def activity_flush_all(flag: int) -> None:
    calls.append(("activity_flush_all", flag))
    if _mode("bad_flush"):
        raise cuptiError(Result.ERROR_UNKNOWN)
    _fake_wait_delivered()
    with _lock:
        records, _state["buffer"] = _state["buffer"], []
        raw, _state["raw_buffer"] = _state["raw_buffer"], None
    if records and _state["callbacks"] is not None:
        _state["callbacks"][1](records)
    if raw is not None:
        _complete_raw(raw)


def get_timestamp() -> int:
    with _lock:
        _state["clock"] += 1000
        return _state["clock"]


# ------------------------------------------------------------------------- "GPU work" for test programs

def _emit(record: _Record) -> None:
    """Queue a record like CUPTI does; a full buffer is handed over on a worker thread."""
    with _lock:
        if _state["callbacks"] is None and _state["raw_callbacks"] is None:
            return
        if int(record.kind) not in _state["enabled"] and \
                (int(record.kind), getattr(record, "cbid", None)) not in _state["api_cbids"]:
            return
        if _state["raw_callbacks"] is not None:
            _emit_raw(record)
            return
        if not _state["buffer"]:
            size, max_records = _state["callbacks"][0]()
            per = int(os.environ.get("FAKE_CUPTI_RECORDS_PER_BUFFER", "0")) or max(1, size // 256)
            _state["capacity"] = min(per, max_records) if max_records else per
        _state["buffer"].append(record)
        if len(_state["buffer"]) < _state["capacity"]:
            return
        full, _state["buffer"] = _state["buffer"], []
        thread = threading.Thread(target=_state["callbacks"][1], args=(full,), name="fake-cupti-worker")
        _state["threads"].append(thread)
        thread.start()


def _emit_raw(record: _Record) -> None:
    """Write the record into the current raw buffer (asked of the tracer when there is none)."""
    need = ctypes.sizeof(rawlib.struct_of(record.kind))
    per = int(os.environ.get("FAKE_CUPTI_RECORDS_PER_BUFFER", "0"))
    buf = _state["raw_buffer"]
    if buf is not None and buf["used"] + need > buf["size"]:
        _hand_over_raw()
        buf = None
    if buf is None:
        address, size = rawlib.request_buffer(_state)
        if not address:
            _state["dropped"] += 1  # no buffer: CUPTI drops the record and counts it
            return
        buf = _state["raw_buffer"] = {"address": address, "size": size, "used": 0, "count": 0}
    buf["used"] += rawlib.encode(record, buf["address"] + buf["used"], _state["strings"])
    buf["count"] += 1
    if per and buf["count"] >= per:
        _hand_over_raw()


def _hand_over_raw() -> None:
    full, _state["raw_buffer"] = _state["raw_buffer"], None
    thread = threading.Thread(target=_complete_raw, args=(full,), name="fake-cupti-worker")
    _state["threads"].append(thread)
    thread.start()


def _complete_raw(buf: dict[str, Any]) -> None:
    _state["raw_callbacks"][1](None, 0, buf["address"], buf["size"], buf["used"])


def _fake_wait_delivered() -> None:
    """Wait until every full buffer has been handed over (what a test needs before os._exit)."""
    while True:
        with _lock:
            threads, _state["threads"] = _state["threads"], []
        if not threads:
            return
        for thread in threads:
            thread.join()


def _next_id() -> int:
    with _lock:
        _state["next_id"] += 1
        return _state["next_id"]


def _device_record(device: int) -> None:
    if device in _state["devices"]:
        return
    _state["devices"].add(device)
    _emit(ActivityDevice5(kind=ActivityKind.DEVICE, id=device, name="NVIDIA H200",
                          compute_capability_major=9, compute_capability_minor=0, num_multiprocessors=132,
                          uuid=CUuuid(bytes(range(16))), global_memory_size=141 << 30))


def _fake_kernel(name: str = "_Z6vecAddPKfS0_Pfi", device: int = 0, stream: int = 7,
                 duration: int = 1000, grid: tuple = (256, 1, 1), block: tuple = (128, 1, 1),
                 api: str = "runtime") -> None:
    """A kernel launched through cudaLaunchKernel (api="runtime", as PyTorch's own kernels are) or
    cuLaunchKernelEx (api="driver", as cuBLAS launches its GEMMs), after a cudaGetDevice call — the real
    RUNTIME kind records many calls per launch, per-call enabling only the launches."""
    _device_record(device)
    kind = ActivityKind.CONCURRENT_KERNEL if ActivityKind.CONCURRENT_KERNEL in _state["enabled"] \
        else ActivityKind.KERNEL
    tid, t = threading.get_native_id(), get_timestamp()
    _emit(ActivityAPI(kind=ActivityKind.RUNTIME, cbid=RuntimeApiTraceCbid.cudaGetDevice_v3020,
                      correlation_id=_next_id(), start=t, end=t + 5, process_id=os.getpid(), thread_id=tid,
                      return_value=0))
    corr = _next_id()
    api_kind, cbid = ((ActivityKind.RUNTIME, RuntimeApiTraceCbid.cudaLaunchKernel_v7000) if api == "runtime"
                      else (ActivityKind.DRIVER, DriverApiTraceCbid.cuLaunchKernelEx))
    t = get_timestamp()
    _emit(ActivityAPI(kind=api_kind, cbid=int(cbid), correlation_id=corr, start=t, end=t + 50,
                      process_id=os.getpid(), thread_id=tid, return_value=0))
    start = get_timestamp()
    _emit(ActivityKernel11(
        kind=kind, start=start, end=start + duration, device_id=device, context_id=1, stream_id=stream,
        correlation_id=corr, name=name, grid_x=grid[0], grid_y=grid[1], grid_z=grid[2],
        block_x=block[0], block_y=block[1], block_z=block[2], registers_per_thread=32,
        static_shared_memory=0, dynamic_shared_memory=4096, queued=0, submitted=0, completed=0,
        graph_id=0, graph_node_id=0, channel_id=1, channel_type=1))


def _fake_memcpy(nbytes: int = 4096, copy_kind: int = ActivityMemcpyKind.HTOD, device: int = 0,
                 stream: int = 7) -> None:
    start = get_timestamp()
    _emit(ActivityMemcpy6(kind=ActivityKind.MEMCPY, start=start, end=start + 500, device_id=device,
                          context_id=1, stream_id=stream, correlation_id=_next_id(), bytes=nbytes,
                          copy_kind=int(copy_kind), src_kind=1, dst_kind=3, flags_=0,
                          runtime_correlation_id=0, graph_id=0, graph_node_id=0))


def _fake_memset(nbytes: int = 1024, value: int = 0, device: int = 0, stream: int = 7) -> None:
    start = get_timestamp()
    _emit(ActivityMemset4(kind=ActivityKind.MEMSET, start=start, end=start + 200, device_id=device,
                          context_id=1, stream_id=stream, correlation_id=_next_id(), bytes=nbytes,
                          value=value, flags_=0, memory_kind=3))


def _marker(flags: int, mid: int, name: str | None, domain: str | None) -> None:
    pt = SimpleNamespace(process_id=os.getpid(), thread_id=threading.get_native_id())
    _emit(ActivityMarker2(kind=ActivityKind.MARKER, flags_=flags, id=mid, timestamp=get_timestamp(),
                          name=name, domain=domain, object_kind=ActivityObjectKind.THREAD,
                          object_id=SimpleNamespace(pt=pt, dcs=None)))


def _fake_nvtx_push(name: str, domain: str | None = None) -> None:
    mid = _next_id()
    _state["stack"].append(mid)
    _marker(1 << 1, mid, name, domain)


def _fake_nvtx_pop() -> None:
    _marker(1 << 2, _state["stack"].pop(), None, None)  # CUPTI: an END marker has a NULL name


def _fake_nvtx_mark(name: str, domain: str | None = None) -> None:
    _marker(1 << 0, _next_id(), name, domain)


def _fake_raw(record: Any) -> None:
    """Queue any object as a record (tests of odd records)."""
    _emit(record)
