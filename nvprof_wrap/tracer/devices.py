"""Device facts for the CUPTI tracer when CUPTI delivered no DEVICE record for a device that ran work,
and the synchronisation before the final flush. Runs inside the user's process: never raises."""
# ruff: noqa: BLE001, S110
from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

from nvprof_wrap.tracer.capture_file import format_uuid
from nvprof_wrap.tracer.items import DeviceRow


def _device_rows(device_ids: list[int]) -> list[DeviceRow]:
    rows = []
    for dev in device_ids:
        row = _torch_device(dev) or _driver_device(dev)
        if row is not None:
            rows.append(row)
    return rows

def _torch_device(dev: int) -> DeviceRow | None:
    """From torch, only if the job imported it and initialized CUDA (we never import it ourselves)."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return None
        p = torch.cuda.get_device_properties(dev)
        return (dev, p.name, p.major, p.minor, p.multi_processor_count, format_uuid(getattr(p, "uuid", None)))
    except Exception:
        return None

def _libcuda() -> Any | None:
    """The CUDA driver library this process has already loaded, through ctypes (RTLD_NOLOAD: never loads it; a
    process that never used CUDA has nothing to ask or wait for). For jobs without cuda-bindings, which comes with
    cupti-python: the tracer's ctypes binding needs neither."""
    try:
        return ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except (OSError, AttributeError):
        return None


def _driver_device_ctypes(dev_id: int) -> DeviceRow | None:
    cuda = _libcuda()
    if cuda is None:
        return None
    try:
        dev, value, name = ctypes.c_int(), ctypes.c_int(), ctypes.create_string_buffer(256)
        if cuda.cuDeviceGet(ctypes.byref(dev), dev_id) != 0:
            return None

        def get(which: int) -> int | None:
            return int(value.value) if cuda.cuDeviceGetAttribute(ctypes.byref(value), which, dev) == 0 else None

        text = name.value.decode("utf-8", "replace") if cuda.cuDeviceGetName(name, 256, dev) == 0 else None
        raw = (ctypes.c_ubyte * 16)()
        uuid_fn = getattr(cuda, "cuDeviceGetUuid_v2", None) or cuda.cuDeviceGetUuid
        uuid = format_uuid(bytes(raw)) if uuid_fn(raw, dev) == 0 else None
        return dev_id, text, get(_CC_MAJOR), get(_CC_MINOR), get(_SM_COUNT), uuid
    except Exception:
        return None


_SM_COUNT, _CC_MAJOR, _CC_MINOR = 16, 75, 76  # CU_DEVICE_ATTRIBUTE_* (cuda.h)


def _driver_device(dev_id: int) -> DeviceRow | None:
    """From the CUDA driver through cuda-bindings (a dependency of cupti-python), else through ctypes; the process
    used CUDA."""
    try:
        from cuda.bindings import driver as drv
    except ImportError:
        return _driver_device_ctypes(dev_id)
    try:

        ok, attr = drv.CUresult.CUDA_SUCCESS, drv.CUdevice_attribute
        err, dev = drv.cuDeviceGet(dev_id)
        if err != ok:
            return None

        def get(which: Any) -> int | None:
            e, value = drv.cuDeviceGetAttribute(which, dev)
            return int(value) if e == ok else None

        err, raw = drv.cuDeviceGetName(256, dev)
        name = raw.split(b"\0", 1)[0].decode("utf-8", "replace") if err == ok and isinstance(raw, bytes) else None
        uuid = None
        try:
            err, u = drv.cuDeviceGetUuid(dev)
            uuid = format_uuid(u) if err == ok else None
        except Exception:
            pass
        return (dev_id, name, get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
                get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), uuid)
    except Exception:
        return None

def _synchronize_current_context() -> None:
    """Wait for this thread's queued GPU work, so the forced flush finds complete records (no-op without CUDA)."""
    try:
        from cuda.bindings import driver as drv
    except ImportError:
        drv = None
    try:
        if drv is not None:
            err, ctx = drv.cuCtxGetCurrent()
            if err == drv.CUresult.CUDA_SUCCESS and ctx is not None and int(ctx) != 0:
                drv.cuCtxSynchronize()
            return
        cuda = _libcuda()
        current = ctypes.c_void_p()
        if cuda is not None and cuda.cuCtxGetCurrent(ctypes.byref(current)) == 0 and current.value:
            cuda.cuCtxSynchronize()
    except Exception:
        pass
