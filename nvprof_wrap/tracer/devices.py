"""Device facts for the CUPTI tracer when CUPTI delivered no DEVICE record for a device that ran work,
and the synchronisation before the final flush. Runs inside the user's process: never raises."""
# ruff: noqa: BLE001, S110
from __future__ import annotations

import sys
from typing import Any

from nvprof_wrap.tracer.capture_file import format_uuid


def _device_rows(device_ids: list[int]) -> list[tuple]:
    rows = []
    for dev in device_ids:
        row = _torch_device(dev) or _driver_device(dev)
        if row is not None:
            rows.append(row)
    return rows

def _torch_device(dev: int) -> tuple | None:
    """From torch, only if the job imported it and initialized CUDA (we never import it ourselves)."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return None
        p = torch.cuda.get_device_properties(dev)
        return (dev, p.name, p.major, p.minor, p.multi_processor_count, format_uuid(getattr(p, "uuid", None)))
    except Exception:
        return None

def _driver_device(dev_id: int) -> tuple | None:
    """From the CUDA driver through cuda-bindings (a dependency of cupti-python); the process used CUDA."""
    try:
        from cuda.bindings import driver as drv

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

        err, ctx = drv.cuCtxGetCurrent()
        if err == drv.CUresult.CUDA_SUCCESS and ctx is not None and int(ctx) != 0:
            drv.cuCtxSynchronize()
    except Exception:
        pass
