"""A stand-in for nvidia-ml-py's pynvml on a machine without an NVIDIA driver: the GPM calls nvprof-wrap's sampler
makes (launch/gpm.py), with the same names, structures and errors as nvidia-ml-py 13 (NVMLError on a bad call,
c_nvmlGpmMetricsGet_t with per-metric nvmlReturn), on one Hopper-like GPU whose tensor pipes are 70% active for
FAKE_GPM_BUSY_S seconds after nvmlInit, then idle. Tests put this folder first on sys.path."""
from __future__ import annotations

import ctypes
import os
import time

NVML_GPM_METRICS_GET_VERSION = 1
NVML_GPM_METRIC_MAX = 210
_SUPPORTED = {2: "sm", 5: "tensor", 6: "dfma", 7: "hmma", 8: "dmma", 9: "imma"}
_state = {"init": 0, "t0": None}


class NVMLError(Exception):
    pass


class c_nvmlGpmMetric_t(ctypes.Structure):
    _fields_ = [("metricId", ctypes.c_uint), ("nvmlReturn", ctypes.c_uint), ("value", ctypes.c_double)]


class c_nvmlGpmMetricsGet_t(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("numMetrics", ctypes.c_uint), ("sample1", ctypes.py_object),
                ("sample2", ctypes.py_object), ("metrics", c_nvmlGpmMetric_t * NVML_GPM_METRIC_MAX)]


class _Support:
    isSupportedDevice = 1


class _Pci:
    busId = b"00000000:00:06.0"


def _check() -> None:
    if not _state["init"]:
        raise NVMLError("Uninitialized")


def nvmlInit() -> None:
    _state["init"] += 1
    _state["t0"] = _state["t0"] or time.monotonic()


def nvmlShutdown() -> None:
    _check()
    _state["init"] -= 1


def nvmlDeviceGetCount() -> int:
    _check()
    return 1


def nvmlDeviceGetHandleByIndex(i: int):
    _check()
    if i != 0:
        raise NVMLError("Invalid Argument")
    return ("gpu", 0)


def nvmlDeviceGetUUID(h) -> str:
    return "GPU-8cb78979-6fcd-3e7c-aa52-961344831e45"


def nvmlDeviceGetPciInfo(h):
    return _Pci()


def nvmlDeviceGetMigMode(h):
    return [0, 0]


def nvmlGpmQueryDeviceSupport(h):
    _check()
    return _Support()


def nvmlGpmSampleAlloc():
    _check()
    return {"t": None}


def nvmlGpmSampleFree(s) -> None:
    s["t"] = "freed"


def nvmlGpmSampleGet(h, s):
    _check()
    if s.get("t") == "freed":
        raise NVMLError("Invalid Argument")
    s["t"] = time.monotonic()
    return s


def nvmlGpmMetricsGet(get):
    _check()
    a, b = get.sample1, get.sample2
    if get.version != NVML_GPM_METRICS_GET_VERSION or a["t"] is None or b["t"] is None:
        raise NVMLError("Invalid Argument")
    busy = (b["t"] - _state["t0"]) < float(os.environ.get("FAKE_GPM_BUSY_S", "0.2"))
    for k in range(get.numMetrics):
        m = get.metrics[k]
        name = _SUPPORTED.get(m.metricId)
        m.nvmlReturn = 0 if name else 3  # NVML_ERROR_NOT_SUPPORTED
        m.value = {"sm": 95.0, "tensor": 70.0, "hmma": 70.0}.get(name, 0.0) if busy else 0.0
    return get
