"""CUPTI set-up and tear-down of the tracer: the subscription, the activity kinds, the launch-call records and
NVTX injection. A base of cupti_trace.Tracer; runs inside the user's process, never raises into the job."""
# ruff: noqa: BLE001, S110
from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from nvprof_wrap.tracer import host_calls
from nvprof_wrap.tracer._util import _describe, _is_busy, _launch_cbids, _loaded_libcupti, _quietly, _warn
from nvprof_wrap.tracer.capture_file import _text

# meta 'api_records' of a capture that recorded the launch calls and the calls that make a step's host time
# (timeline/series.py reads it: only then is the time outside CUDA calls known)
HOST_CALLS = "kernel launch calls, copies, waits and allocations"
ENV_RUNTIME = "NVPROF_WRAP_CUPTI_RUNTIME"  # "0": no runtime-API records (lower overhead, no per-op table)
# For measuring CUPTI's own cost (benchmarks/h200_tune.sh; cupti-python only): "NAME=VALUE,…" with NAME an
# ActivityAttribute member without its ATTR_ prefix (DEVICE_BUFFER_SIZE=67108864, PER_THREAD_BUFFER=1),
# hw_trace=1, or kinds=CONCURRENT_KERNEL+MARKER (the concurrent-kernel kind and only those named of copies, sets,
# devices, markers). Each setting's result, and every attribute's value before it, go into meta 'tune'.
ENV_TUNE = "NVPROF_WRAP_CUPTI_TUNE"
_ONE_BYTE = ("ENABLE_", "PER_THREAD_BUFFER", "ZEROED_OUT_BUFFER")


class CuptiSetup:
    """What the tracer asks of CUPTI before the first record and after the last."""

    cupti: Any
    kinds: list[Any]  # the ActivityKind members we enabled
    api_cbids: list[tuple[Callable[..., object], int]]  # (enable function, cbid) of the launch calls enabled
    notes: dict[str, str]  # extra meta rows
    subscriber: Any
    other_profiler: str | None

    def _subscribe(self, callback: Callable[..., object]) -> None:
        """Be CUPTI's subscriber first, as NVIDIA recommends: another holder shows up here, by name."""
        c = self.cupti
        if not (hasattr(c, "subscribe_v2") and hasattr(c, "SubscriberParams")):
            self.subscriber = c.subscribe(callback, None)
            return
        params = c.SubscriberParams()
        params.struct_size = c.SUBSCRIBER_PARAMS_SIZE
        params.subscriber_name = "nvprof-wrap"
        try:
            self.subscriber = c.subscribe_v2(callback, None, params.ptr)
        except Exception as e:
            if _is_busy(c, e):
                try:
                    self.other_profiler = _text(params.old_subscriber_name)
                except Exception:
                    pass
                raise
            # Measured on an H200 (libcupti 13.0.85 and 13.4.92, cupti-python 13.4.0): subscribe_v2 answers
            # INVALID_PARAMETER (its params struct is newer than the library); the v1 call works.
            self.notes["subscribe"] = f"subscribe_v2 failed ({_describe(c, e)}); used subscribe"
            self.subscriber = c.subscribe(callback, None)

    def _tune(self) -> dict[str, str]:
        """Apply $NVPROF_WRAP_CUPTI_TUNE (benchmarks only); never raises. Returns the settings asked for."""
        asked = dict(item.split("=", 1) for item in os.environ.get(ENV_TUNE, "").split(",") if "=" in item)
        if not asked:
            return asked
        c, report = self.cupti, {}
        import ctypes

        for name, value in asked.items():
            try:
                if name == "hw_trace":  # CUPTI answers NOT_INITIALIZED before the driver is
                    ctypes.CDLL("libcuda.so.1").cuInit(0)
                    c.activity_enable_hw_trace(int(value))
                elif name != "kinds":
                    attr = c.ActivityAttribute["ATTR_" + name]
                    ctype = ctypes.c_uint8 if name.startswith(_ONE_BYTE) else ctypes.c_size_t
                    before, size = ctype(0), ctypes.c_size_t(ctypes.sizeof(ctype))  # value_size is a size_t*
                    _quietly(c.activity_get_attribute, attr, ctypes.addressof(size), ctypes.addressof(before))
                    v, size = ctype(int(value)), ctypes.c_size_t(ctypes.sizeof(ctype))
                    c.activity_set_attribute(attr, ctypes.addressof(size), ctypes.addressof(v))
                    name = f"{name} (was {before.value})"
                report[name] = f"{value}: ok"
            except Exception as e:
                report[name] = f"{value}: {_describe(c, e)}"
        self.notes["tune"] = json.dumps(report)
        return asked

    def _enable_kinds(self) -> None:
        k = self.cupti.ActivityKind
        tune = self._tune()
        if not self._enable(k.CONCURRENT_KERNEL, required=False):
            self._enable(k.KERNEL, required=True)
            _warn("CUPTI could not trace concurrent kernels; using the KERNEL kind, which serializes kernels")
        others = [k.MEMCPY, k.MEMSET, k.DEVICE, k.MARKER]
        if "kinds" in tune:  # "CONCURRENT_KERNEL+MARKER": the concurrent-kernel kind and these
            others = [kind for kind in others if kind.name in tune["kinds"].split("+")]
        for kind in others:
            self._enable(kind, required=False)
        self._enable_api_records()
        self.notes["kinds"] = json.dumps([kind.name for kind in self.kinds])

    def _enable_api_records(self) -> None:
        """Records of the API calls that launch kernels (runtime and driver), for kernel -> thread -> NVTX.
        Per-cbid enabling (CUPTI 12.6+) keeps it to one record per launch; otherwise every runtime and driver
        call is recorded. meta 'api_records' says which."""
        if os.environ.get(ENV_RUNTIME, "1") == "0":
            self.notes["api_records"] = f"none ({ENV_RUNTIME}=0)"
            return
        c = self.cupti
        if os.environ.get(ENV_RUNTIME) == "kinds":  # every runtime and driver call, through the activity kinds
            for kind in (c.ActivityKind.RUNTIME, c.ActivityKind.DRIVER):
                self._enable(kind, required=False)
            self.notes["api_records"] = f"every runtime and driver call ({ENV_RUNTIME}=kinds)"
            return
        picked = [(c.activity_enable_runtime_api, cbid) for cbid in _launch_cbids(c, "RuntimeApiTraceCbid", "cuda")]
        picked += [(c.activity_enable_driver_api, cbid) for cbid in _launch_cbids(c, "DriverApiTraceCbid", "cu")]
        launches = len(picked)
        # the calls that shape a step's host time besides launches: copies, waits, allocations (report --per-step)
        picked += [(c.activity_enable_runtime_api, cbid) for cbid in host_calls.RUNTIME_HOST_CBIDS]
        picked += [(c.activity_enable_driver_api, cbid) for cbid in host_calls.DRIVER_HOST_CBIDS]
        done: list[tuple[Callable[..., object], int]] = []
        try:
            if not launches:
                raise AttributeError("this cupti-python has no callback-id enums")
            for i, (enable, cbid) in enumerate(picked):
                try:
                    enable(cbid, 1)
                except Exception as e:
                    if i < launches or _is_busy(c, e):
                        raise
                    continue  # a copy/wait/alloc call this CUPTI does not know (an id newer than it): not recorded
                done.append((enable, cbid))
            self.api_cbids = done
            self.notes["api_records"] = f"{HOST_CALLS} ({launches} launch and {len(done) - launches} other " \
                                        "callback ids)"
            return
        except Exception as e:
            if _is_busy(c, e):
                raise
            for enable, cbid in done:
                _quietly(enable, cbid, 0)
            reason = _describe(c, e) if not isinstance(e, AttributeError) else str(e)
        for kind in (c.ActivityKind.RUNTIME, c.ActivityKind.DRIVER):
            self._enable(kind, required=False)
        self.notes["api_records"] = f"every runtime and driver call (per-call enabling failed: {reason})"

    def _enable(self, kind: Any, *, required: bool) -> bool:
        try:
            self.cupti.activity_enable(kind)
        except Exception as e:
            if required or _is_busy(self.cupti, e):
                raise
            self.notes[f"kind_{kind.name.lower()}"] = f"not enabled: {_describe(self.cupti, e)}"
            return False
        self.kinds.append(kind)
        return True

    def enable_nvtx_injection(self) -> None:
        """NVTX reaches CUPTI only through NVTX_INJECTION64_PATH = the libcupti in use (cupti-python docs).
        NVTX reads it at its first call, which comes after this start-up hook; children inherit it."""
        if not any(kind.name == "MARKER" for kind in self.kinds):
            self.notes["nvtx"] = "unavailable: the MARKER kind is not enabled"
            return
        current, lib = os.environ.get("NVTX_INJECTION64_PATH"), _loaded_libcupti()
        if current:
            same = lib is not None and os.path.realpath(current) == os.path.realpath(lib)
            self.notes["nvtx"] = "enabled" if same else f"unavailable: NVTX_INJECTION64_PATH is {current}"
        elif lib is None:
            self.notes["nvtx"] = "unavailable: the loaded libcupti was not found in /proc/self/maps"
        else:
            os.environ["NVTX_INJECTION64_PATH"] = lib
            self.notes["nvtx"] = "enabled"

    def teardown(self) -> None:
        """Disable our kinds and unsubscribe, ignoring errors (CUPTI may be half set up)."""
        for kind in reversed(self.kinds):
            _quietly(self.cupti.activity_disable, kind)
        for enable, cbid in self.api_cbids:
            _quietly(enable, cbid, 0)
        self.api_cbids = []
        if self.subscriber is not None:
            try:
                self.cupti.unsubscribe(self.subscriber)
            except Exception:
                pass
            self.subscriber = None
