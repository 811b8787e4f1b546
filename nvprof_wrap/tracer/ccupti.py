"""The few CUPTI calls the tracer makes, through ctypes on libcupti itself: the tracer's default binding.

cupti-python costs 0.40 s to import (pyelftools, cuda.pathfinder, numpy, its Cython modules; measured with
``-X importtime`` on the H200), paid by every traced Python process at start-up. The tracer needs a dozen CUPTI
functions and reads CUPTI's buffers with ctypes already (raw.py), so this module offers those functions under
cupti-python's names (``subscribe``, ``activity_enable``, ``ActivityKind``, ``Result``…) and the tracer takes
either. When no libcupti is found here, or one lacks a function, ``load()`` says why and the tracer imports
cupti-python instead (which also holds the record-object path that raw buffers fall back to).

libcupti is searched where cuda.pathfinder (cupti-python's finder) searches, in its order: the NVIDIA wheels in
site-packages (``nvidia/cu13/lib``, ``nvidia/cuda_cupti/lib``), ``$CONDA_PREFIX/lib``, the dynamic loader's path
(``libcupti.so.13``, ``libcupti.so.12``), then ``$CUDA_HOME`` / ``$CUDA_PATH`` (``extras/CUPTI/lib64``, ``lib``).
``$NVPROF_WRAP_LIBCUPTI`` names a file and skips the search.

Runs inside the user's process: standard library only; errors are ``CuptiError`` with cupti-python's ``status``.
"""
from __future__ import annotations

import ctypes
import enum
import os
import sys
from typing import Any

from nvprof_wrap.tracer import layouts as L
from nvprof_wrap.tracer._util import _loaded_libcupti

ENV_LIBRARY = "NVPROF_WRAP_LIBCUPTI"
SONAMES = ("libcupti.so.13", "libcupti.so.12")
WHEEL_DIRS = ("nvidia/cu13/lib", "nvidia/cuda_cupti/lib")
TOOLKIT_DIRS = ("extras/CUPTI/lib64", "lib")
# The library handle on a bindings module: raw.open_library takes it instead of a second dlopen (this binding's, and
# the test fake's stand-in; cupti-python has none).
LIBRARY_ATTR = "_libcupti"


class ActivityKind(enum.IntEnum):
    """CUpti_ActivityKind values the tracer enables (layouts.py holds them, from cupti_activity.h)."""

    MEMCPY = L.MEMCPY
    MEMSET = L.MEMSET
    KERNEL = L.KERNEL
    DRIVER = L.DRIVER
    RUNTIME = L.RUNTIME
    DEVICE = L.DEVICE
    CONCURRENT_KERNEL = L.CONCURRENT_KERNEL
    MARKER = L.MARKER


# The launch calls' ids, by name for setup.py's choice (_util._launch_cbids). readers/_no_kernels.py holds the same
# ids for the readers: the layers keep the code injected into jobs and the readers apart, so tests/tracer/test_ccupti.py
# keeps the two tables equal (and both equal to CUPTI's headers where a machine has them).
class RuntimeApiTraceCbid(enum.IntEnum):
    """The runtime calls that launch kernels or graphs (cupti_runtime_cbid.h, CUDA 13.0; values never change)."""

    cudaLaunch_v3020 = 13
    cudaLaunchKernel_v7000 = 211
    cudaLaunch_ptsz_v7000 = 213
    cudaLaunchKernel_ptsz_v7000 = 214
    cudaLaunchCooperativeKernel_v9000 = 269
    cudaLaunchCooperativeKernel_ptsz_v9000 = 270
    cudaLaunchCooperativeKernelMultiDevice_v9000 = 272
    cudaGraphLaunch_v10000 = 311
    cudaGraphLaunch_ptsz_v10000 = 312
    cudaLaunchKernelExC_v11060 = 430
    cudaLaunchKernelExC_ptsz_v11060 = 431


class DriverApiTraceCbid(enum.IntEnum):
    """The driver calls that launch kernels or graphs (cupti_driver_cbid.h, CUDA 13.0)."""

    cuLaunch = 115
    cuLaunchGrid = 116
    cuLaunchGridAsync = 117
    cuLaunchKernel = 307
    cuLaunchKernel_ptsz = 442
    cuLaunchCooperativeKernel = 477
    cuLaunchCooperativeKernel_ptsz = 478
    cuLaunchCooperativeKernelMultiDevice = 480
    cuGraphLaunch = 514
    cuGraphLaunch_ptsz = 515
    cuLaunchKernelEx = 652
    cuLaunchKernelEx_ptsz = 653


class CuptiError(RuntimeError):
    """A CUPTI call that did not return CUPTI_SUCCESS; ``status`` is the CUptiResult, as in cupti-python."""

    def __init__(self, status: int, name: str) -> None:
        super().__init__(name)
        self.status = status


class Unavailable(Exception):
    """No usable libcupti here: the tracer falls back to cupti-python."""


CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)
_SIGNATURES: dict[str, list[Any]] = {
    "cuptiSubscribe": [ctypes.POINTER(ctypes.c_void_p), CALLBACK, ctypes.c_void_p],
    "cuptiUnsubscribe": [ctypes.c_void_p],
    "cuptiActivityEnable": [ctypes.c_int],
    "cuptiActivityDisable": [ctypes.c_int],
    "cuptiActivityFlushAll": [ctypes.c_uint32],
    "cuptiGetTimestamp": [ctypes.POINTER(ctypes.c_uint64)],
    "cuptiGetVersion": [ctypes.POINTER(ctypes.c_uint32)],
    "cuptiGetResultString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
}
_PER_CALL = {  # CUPTI 12.6+: one record per chosen launch call; older ones lack them (the tracer copes)
    "cuptiActivityEnableRuntimeApi": [ctypes.c_uint32, ctypes.c_uint8],
    "cuptiActivityEnableDriverApi": [ctypes.c_uint32, ctypes.c_uint8],
}


def candidates() -> list[str]:
    """Where libcupti is looked for, in order: file paths, or bare sonames for the dynamic loader."""
    explicit = os.environ.get(ENV_LIBRARY)
    if explicit:
        return [explicit]
    wheels = [os.path.join(entry or ".", d, so) for entry in sys.path for d in WHEEL_DIRS for so in SONAMES]
    conda = [os.path.join(os.environ["CONDA_PREFIX"], "lib", so) for so in SONAMES] \
        if os.environ.get("CONDA_PREFIX") else []
    toolkits = [os.path.join(os.environ[var], d, so) for var in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(var)
                for d in TOOLKIT_DIRS for so in SONAMES]
    return list(dict.fromkeys([*_files(wheels), *_files(conda), *SONAMES, *_files(toolkits)]))


def _files(paths: list[str]) -> list[str]:
    return [p for p in paths if os.path.isfile(p)]


class Binding:
    """cupti-python's names for the CUPTI calls the tracer makes, on one loaded libcupti."""

    ActivityKind = ActivityKind
    RuntimeApiTraceCbid = RuntimeApiTraceCbid
    DriverApiTraceCbid = DriverApiTraceCbid

    def __init__(self, lib: Any, path: str) -> None:
        self.path = path
        setattr(self, LIBRARY_ATTR, lib)
        self._lib = lib
        self._callbacks: list[Any] = []  # ctypes callbacks must outlive the subscription
        for name, args in _SIGNATURES.items():
            getattr(lib, name).argtypes = args  # AttributeError: not a libcupti this binding can drive
        self._per_call = {}
        for name, args in _PER_CALL.items():
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes = args
                self._per_call[name] = fn

    # -- errors -----------------------------------------------------------------------------------------

    class Result:
        """cupti-python's Result: Result(status).name, and the one member the tracer compares with."""

        ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39

        def __init__(self, status: int) -> None:
            self.value, self.name = status, _result_names.get(status, f"ERROR_{status}")

    def _check(self, status: int) -> None:
        if status != 0:
            text = ctypes.c_char_p()
            if self._lib.cuptiGetResultString(status, ctypes.byref(text)) == 0 and text.value:
                _result_names[status] = text.value.decode("ascii", "replace").removeprefix("CUPTI_")
            raise CuptiError(status, "CUPTI_" + Binding.Result(status).name)

    # -- the calls ----------------------------------------------------------------------------------------

    def subscribe(self, callback: Any, userdata: Any) -> int:
        handle = ctypes.c_void_p()
        c_callback = CALLBACK(lambda *_: None)  # no callback domain is ever enabled: CUPTI never calls it
        self._callbacks.append(c_callback)
        self._check(self._lib.cuptiSubscribe(ctypes.byref(handle), c_callback, None))
        return int(handle.value or 0)

    def unsubscribe(self, subscriber: int) -> None:
        self._check(self._lib.cuptiUnsubscribe(subscriber))

    def activity_enable(self, kind: int) -> None:
        self._check(self._lib.cuptiActivityEnable(int(kind)))

    def activity_disable(self, kind: int) -> None:
        self._check(self._lib.cuptiActivityDisable(int(kind)))

    def activity_enable_runtime_api(self, cbid: int, enable: int) -> None:
        self._enable_call("cuptiActivityEnableRuntimeApi", cbid, enable)

    def activity_enable_driver_api(self, cbid: int, enable: int) -> None:
        self._enable_call("cuptiActivityEnableDriverApi", cbid, enable)

    def _enable_call(self, name: str, cbid: int, enable: int) -> None:
        fn = self._per_call.get(name)
        if fn is None:  # before CUPTI 12.6: setup.py then records every runtime and driver call instead
            raise AttributeError(f"{self.path} has no {name}")
        self._check(fn(int(cbid), int(enable)))

    def activity_flush_all(self, flag: int) -> None:
        self._check(self._lib.cuptiActivityFlushAll(int(flag)))

    def get_timestamp(self) -> int:
        ts = ctypes.c_uint64()
        self._check(self._lib.cuptiGetTimestamp(ctypes.byref(ts)))
        return int(ts.value)

    def get_version(self) -> int:
        v = ctypes.c_uint32()
        self._check(self._lib.cuptiGetVersion(ctypes.byref(v)))
        return int(v.value)

    def activity_register_callbacks(self, *_: Any) -> None:
        """Record objects need cupti-python: the tracer then starts again on it."""
        raise Unavailable("record objects need cupti-python")


_result_names: dict[int, str] = {39: "ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"}


def load() -> Binding:
    """The binding on the first libcupti found that has every function; Unavailable says what was tried."""
    tried = []
    for where in candidates():
        try:
            lib = ctypes.CDLL(where)
        except OSError as e:
            tried.append(f"{where}: {str(e).split(':')[-1].strip()}")
            continue
        if os.sep not in where:  # found by the dynamic loader: name the file it loaded
            where = _loaded_libcupti() or where
        try:
            return Binding(lib, where)
        except AttributeError as e:
            tried.append(f"{where}: lacks {e}")
    raise Unavailable("no usable libcupti (" + "; ".join(tried) + ")")


def main() -> int:
    """`python -m nvprof_wrap.tracer.ccupti`: the library this interpreter's tracer would drive (exit 0), or why
    there is none (exit 1). The launcher asks the job's interpreter so before starting a `--backend cupti` run."""
    try:
        b = load()
        print(f"{b.path} (CUPTI API {b.get_version()})")
        return 0
    except (Unavailable, CuptiError) as e:
        print(e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
