"""Small helpers of the CUPTI tracer: one-line messages, CUPTI errors, callback ids, versions, libcupti's path.
Runs inside the user's process: standard library only, never raises."""
# ruff: noqa: BLE001, S110
from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import Any


def _warn(message: str) -> None:
    """One line on stderr, never an exception (stderr may be closed at exit)."""
    try:
        sys.stderr.write("nvprof-wrap: " + " ".join(str(message).split()) + "\n")
        sys.stderr.flush()
    except Exception:
        pass


def _describe(cupti: Any, exc: BaseException) -> str:
    """'CUPTI_ERROR_X' for a cuptiError, else 'Type: message'."""
    status = getattr(exc, "status", None)
    if status is not None and cupti is not None:
        try:
            return f"CUPTI_{cupti.Result(status).name}"
        except Exception:
            pass
    return f"{type(exc).__name__}: {exc}"


# cuInit's answers that say the machine cannot be traced (CUDA's driver API, cuda.h): CUPTI says only
# CUPTI_ERROR_UNKNOWN or NOT_INITIALIZED for each.
_CU_INIT = {100: "no NVIDIA GPU here (the driver sees none; CUDA_VISIBLE_DEVICES may hide them)",
            35: "the NVIDIA driver is older than this CUDA's CUPTI needs (update the driver)",
            3: "the NVIDIA driver could not be initialised",
            999: "the NVIDIA driver could not be initialised (is the kernel module loaded? nvidia-smi says)"}


def no_gpu_reason() -> str | None:
    """Why CUDA cannot run on this machine, in plain words, or None when the driver starts and sees a GPU."""
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no NVIDIA GPU/driver here: libcuda.so.1 not found"
    try:
        status = cuda.cuInit(0)
        count = ctypes.c_int(0)
        if status == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value == 0:
            status = 100
    except Exception:
        return None
    return _CU_INIT.get(status, f"the NVIDIA driver failed to start (cuInit error {status})") if status else None


def _is_busy(cupti: Any, exc: BaseException) -> bool:
    """True for CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: another profiler holds CUPTI."""
    try:
        return bool(getattr(exc, "status", None) == cupti.Result.ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    except Exception:
        return False


def _quietly(fn: Callable[..., object], *args: Any) -> None:
    """Undo a CUPTI setting, ignoring errors (CUPTI may be half set up or gone)."""
    try:
        fn(*args)
    except Exception:
        pass


def _launch_cbids(cupti: Any, enum_name: str, prefix: str) -> list[int]:
    """Callback ids of the calls that launch kernels or graphs (cudaLaunchKernel*, cuLaunchKernelEx,
    cu(da)GraphLaunch, cooperative launches), from cupti-python's enum; [] if it has none."""
    enum = getattr(cupti, enum_name, None)
    if enum is None:
        return []
    pattern = re.compile(rf"^{prefix}(Graph)?Launch(?!HostFunc)")
    return sorted({int(member) for name, member in enum.__members__.items() if pattern.match(name)})


def _cupti_version(cupti: Any, *, ask_cupti: bool) -> str:
    """cupti-python's package version (or the library the ctypes binding drives), plus CUPTI's API version where
    the binding has get_version (cupti-python 13.5+, ccupti).
    ask_cupti=False before we subscribed: NVIDIA wants the subscription to be the first CUPTI call."""
    path = getattr(cupti, "path", None)  # ccupti's binding: the library it drives, no package
    try:
        if path:
            text = f"libcupti through ctypes ({os.path.basename(path)})"
        else:
            from importlib.metadata import version

            text = "cupti-python " + version("cupti-python")
    except Exception:
        text = "cupti-python (version unknown)"
    if ask_cupti and hasattr(cupti, "get_version"):
        try:
            text += f" (CUPTI API {cupti.get_version()})"
        except Exception:
            pass
    return text


def _loaded_libcupti() -> str | None:
    """Path of the libcupti this process has loaded (cupti-python finds it through cuda.pathfinder)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1]
                if "/libcupti.so" in path and os.path.exists(path):
                    return path
    except OSError:
        pass
    return None
