"""The tracer's ctypes binding (nvprof_wrap/tracer/ccupti.py) on the real libcupti, where this machine has one.

Without a GPU driver CUPTI refuses the subscription, which is what a traced job on such a machine must say in one
line. The tables the binding carries (activity kinds, launch-call ids) are checked against CUPTI's own headers
where a CUDA toolkit or an NVIDIA wheel provides them. What needs a GPU (a whole traced run on this binding) is
checked on the H200: benchmarks/gpu/tracer_binding_cost.sh, docs/cupti-tracer.md.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import re
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from nvprof_wrap.tracer import ccupti
from nvprof_wrap.tracer._util import _launch_cbids
from tests.tracer.test_tracer import WORK, captures, only_capture, run_job, script


def _real_library() -> str | None:
    for where in ccupti.candidates():
        try:
            ctypes.CDLL(where)
            return where
        except OSError:
            continue
    return None


LIBCUPTI = _real_library() if not os.environ.get(ccupti.ENV_LIBRARY) else None
needs_libcupti = pytest.mark.skipif(LIBCUPTI is None, reason="no libcupti on this machine (CUDA toolkit or "
                                                             "nvidia-cuda-cupti wheel)")
NO_DRIVER = ctypes.util.find_library("cuda") is None


def _headers(name: str) -> list[Path]:
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), *glob.glob("/usr/local/cuda*")]
    found = [Path(r) / "include" / name for r in roots if r]
    found += [Path(p) / "nvidia" / sub / "include" / name for p in sys.path for sub in ("cu13", "cuda_cupti")]
    return [p for p in found if p.is_file()]


def _enum(header: Path, prefix: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(rf"\b{prefix}(\w+)\s*=\s*(\d+)", header.read_text())}


# ---------------------------------------------------------------------------------------------- the search

def test_the_search_follows_cuda_pathfinder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = tmp_path / "site" / "nvidia" / "cu13" / "lib"
    wheel.mkdir(parents=True)
    (wheel / "libcupti.so.13").write_bytes(b"")
    toolkit = tmp_path / "cuda" / "extras" / "CUPTI" / "lib64"
    toolkit.mkdir(parents=True)
    (toolkit / "libcupti.so.12").write_bytes(b"")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site"), *sys.path])
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    monkeypatch.delenv(ccupti.ENV_LIBRARY, raising=False)
    found = ccupti.candidates()
    assert found[0] == str(wheel / "libcupti.so.13")  # the wheel first, as cuda.pathfinder
    assert found.index("libcupti.so.13") < found.index(str(toolkit / "libcupti.so.12"))  # loader before CUDA_HOME
    assert found[-1] == str(toolkit / "libcupti.so.12")
    monkeypatch.setenv(ccupti.ENV_LIBRARY, "/opt/x/libcupti.so")
    assert ccupti.candidates() == ["/opt/x/libcupti.so"]


def test_a_file_that_is_no_library_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "libcupti.so.13"
    fake.write_text("not an ELF file\n")
    monkeypatch.setenv(ccupti.ENV_LIBRARY, str(fake))
    with pytest.raises(ccupti.Unavailable, match=rf"^no usable libcupti \({re.escape(str(fake))}: .*\)$"):
        ccupti.load()


def test_a_library_without_cupti_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    other = ctypes.util.find_library("m") or "libm.so.6"
    monkeypatch.setenv(ccupti.ENV_LIBRARY, other)
    with pytest.raises(ccupti.Unavailable, match=r"lacks .*cuptiSubscribe"):
        ccupti.load()


# ---------------------------------------------------------------------------------------- the real library

@needs_libcupti
def test_the_real_library_answers_version_clock_and_errors() -> None:
    b = ccupti.load()
    raw = ctypes.c_uint32()
    assert ctypes.CDLL(b.path).cuptiGetVersion(ctypes.byref(raw)) == 0
    assert b.get_version() == raw.value >= 18  # CUPTI_API_VERSION 18 = CUDA 12.0
    t1, t2 = b.get_timestamp(), b.get_timestamp()
    assert 0 < t1 <= t2
    assert getattr(b, ccupti.LIBRARY_ATTR) is b._lib  # raw.py reads buffers through this same handle
    if NO_DRIVER:
        with pytest.raises(ccupti.CuptiError) as e:
            b.subscribe(None, None)
        assert e.value.status != 0 and str(e.value).startswith("CUPTI_ERROR_")
        assert b.Result(e.value.status).name == str(e.value).removeprefix("CUPTI_")
    assert b.Result(39).name == "ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"


@needs_libcupti
def test_the_launch_calls_are_the_23_of_cupti_python() -> None:
    b = ccupti.load()
    runtime = _launch_cbids(b, "RuntimeApiTraceCbid", "cuda")
    driver = _launch_cbids(b, "DriverApiTraceCbid", "cu")
    # 23: what the tracer enabled through cupti-python 13.4 on the H200 (meta api_records of its captures)
    assert (len(runtime), len(driver)) == (11, 12)
    assert {211, 430} <= set(runtime) and {307, 652} <= set(driver)  # cudaLaunchKernel, …ExC; cuLaunchKernel, …Ex


def test_the_tracer_and_the_readers_know_the_same_launch_calls() -> None:
    """The injected tracer enables exactly the launch calls the readers count when a capture lacks kernels (the
    readers' table lacked cudaLaunch_ptsz_v7000, 213: a capture of such launches without kernels was not refused)."""
    from nvprof_wrap.readers import _no_kernels

    assert sorted(ccupti.RuntimeApiTraceCbid) == sorted(_no_kernels.RUNTIME_LAUNCH_CBIDS)
    assert sorted(ccupti.DriverApiTraceCbid) == sorted(_no_kernels.DRIVER_LAUNCH_CBIDS)


@pytest.mark.skipif(not _headers("cupti_runtime_cbid.h"), reason="no CUPTI headers on this machine")
def test_the_tables_match_cuptis_headers() -> None:
    for header in _headers("cupti_runtime_cbid.h"):
        launch = {k: v for k, v in _enum(header, "CUPTI_RUNTIME_TRACE_CBID_").items()
                  if re.match(r"cuda(Graph)?Launch(?!HostFunc)", k)}
        assert launch == {m.name: m.value for m in ccupti.RuntimeApiTraceCbid}, header
    for header in _headers("cupti_driver_cbid.h"):
        launch = {k: v for k, v in _enum(header, "CUPTI_DRIVER_TRACE_CBID_").items()
                  if re.match(r"cu(Graph)?Launch(?!HostFunc)", k)}
        assert launch == {m.name: m.value for m in ccupti.DriverApiTraceCbid}, header
    for header in _headers("cupti_activity.h"):
        kinds = _enum(header, "CUPTI_ACTIVITY_KIND_")
        assert {m.name: kinds[m.name] for m in ccupti.ActivityKind} == {m.name: m.value for m in ccupti.ActivityKind}
    for header in _headers("cupti_result.h"):
        assert _enum(header, "CUPTI_")["ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"] == 39


# ------------------------------------------------------------------------------------------ traced jobs

@needs_libcupti
@pytest.mark.skipif(not NO_DRIVER, reason="a GPU driver is installed: CUPTI would trace (checked on the H200)")
def test_a_job_on_a_machine_without_driver_gets_one_line_and_no_cupti_python(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = run_job(script(WORK.format(n=2), "import sys; print('cupti-python imported:', 'cupti' in sys.modules)"), out,
                NVPROF_WRAP_CUPTI_BINDING="ctypes")
    assert r.returncode == 0 and "work done" in r.stdout
    assert "cupti-python imported: True" in r.stdout  # the job itself imports the (fake) cupti-python
    # CUPTI's own status here is CUPTI_ERROR_UNKNOWN; the driver's plain words stand in for it where it has them
    from nvprof_wrap.tracer._util import no_gpu_reason

    status = re.escape(no_gpu_reason() or str(_subscribe_error()))
    assert re.fullmatch(rf"nvprof-wrap: CUPTI could not be started \({status}\); this process is not traced\n",
                        r.stderr), r.stderr
    assert "CUPTI_ERROR_UNKNOWN" not in r.stderr
    assert captures(out) == []


@needs_libcupti
@pytest.mark.skipif(not NO_DRIVER, reason="a GPU driver is installed")
def test_the_tracer_never_imports_cupti_python_on_the_binding(tmp_path: Path) -> None:
    r = run_job("import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('cupti', 'numpy', "
                "'elftools')))", tmp_path / "run", NVPROF_WRAP_CUPTI_BINDING="ctypes")
    assert r.stdout == "[]\n", r.stdout + r.stderr


def test_without_a_library_the_tracer_falls_back_to_cupti_python(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = run_job(WORK.format(n=3), out, NVPROF_WRAP_CUPTI_BINDING="ctypes",
                NVPROF_WRAP_LIBCUPTI=str(tmp_path / "missing" / "libcupti.so.13"))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    cap = only_capture(out)
    binding = cap["meta"]["binding"]
    assert binding.startswith("cupti-python (ctypes binding not used: no usable libcupti ("), binding
    assert str(tmp_path / "missing") in binding
    assert len(cap["kernel"]) == 3


def _subscribe_error() -> ccupti.CuptiError:
    with pytest.raises(ccupti.CuptiError) as e:
        ccupti.load().subscribe(None, None)
    return e.value


def test_doctor_names_the_library_the_tracer_would_drive(tmp_path: Path) -> None:
    import json
    import subprocess

    env = {**os.environ, "NO_COLOR": "1"}
    env.pop(ccupti.ENV_LIBRARY, None)
    out = subprocess.run([sys.executable, "-m", "nvprof_wrap", "doctor", "--no-probe", "--format", "json"], env=env,
                         capture_output=True, text=True, check=True).stdout
    lib = json.loads(out)["libcupti"]
    if LIBCUPTI is None:
        assert lib["path"] is None and lib["why"].startswith("no usable libcupti (")
    else:
        assert os.path.isabs(lib["path"]) and os.path.basename(lib["path"]).startswith("libcupti.so")
        assert lib["api_version"] >= 18
    env[ccupti.ENV_LIBRARY] = str(tmp_path / "none" / "libcupti.so.13")
    text = subprocess.run([sys.executable, "-m", "nvprof_wrap", "doctor", "--no-probe"], env=env,
                          capture_output=True, text=True, check=True).stdout
    lib = tmp_path / "none" / "libcupti.so.13"
    assert f"libcupti (the cupti backend's tracer): no usable libcupti ({lib}: " in text


@pytest.mark.skipif(not _headers("cuda.h"), reason="no CUDA headers on this machine")
def test_the_driver_attributes_asked_without_cuda_bindings_match_cuda_h() -> None:
    """Without cupti-python there may be no cuda-bindings: the tracer then asks the driver through ctypes (device
    facts, the synchronize before the last flush), with attribute numbers that must be cuda.h's."""
    from nvprof_wrap.tracer import devices

    for header in _headers("cuda.h"):
        attrs = _enum(header, "CU_DEVICE_ATTRIBUTE_")
        assert (attrs["MULTIPROCESSOR_COUNT"], attrs["COMPUTE_CAPABILITY_MAJOR"], attrs["COMPUTE_CAPABILITY_MINOR"]) \
            == (devices._SM_COUNT, devices._CC_MAJOR, devices._CC_MINOR)


class _FakeDriver:
    """The libcuda calls the tracer makes without cuda-bindings, answering as the H200's driver does (CUresult 0 is
    CUDA_SUCCESS, 101 CUDA_ERROR_INVALID_DEVICE); pointers arrive as ctypes.byref of the tracer's own variables.
    A fake only because the driver cannot run without a GPU."""

    ATTRIBUTES: ClassVar[dict[int, int]] = {16: 132, 75: 9, 76: 0}  # multiprocessors, compute capability major, minor

    def __init__(self, context: int) -> None:
        self.context, self.synchronized = context, 0

    def cuCtxGetCurrent(self, pctx):
        pctx._obj.value = self.context
        return 0

    def cuCtxSynchronize(self):
        self.synchronized += 1
        return 0

    def cuDeviceGet(self, pdev, ordinal):
        if ordinal != 0:
            return 101
        pdev._obj.value = 0
        return 0

    def cuDeviceGetAttribute(self, pi, attribute, dev):
        if attribute not in self.ATTRIBUTES:
            return 1
        pi._obj.value = self.ATTRIBUTES[attribute]
        return 0

    def cuDeviceGetName(self, name, length, dev):
        name.value = b"NVIDIA H200"
        return 0

    def cuDeviceGetUuid_v2(self, uuid, dev):
        uuid[:] = list(range(16))
        return 0


@pytest.mark.parametrize("context", [0x7F00, 0])
def test_without_cuda_bindings_the_driver_is_asked_through_ctypes(monkeypatch: pytest.MonkeyPatch, context) -> None:
    """Without cupti-python there may be no cuda-bindings: the device facts and the synchronize before the last
    flush then go to the driver library the process loaded."""
    from nvprof_wrap.tracer import devices

    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # import raises ImportError, as where it is missing
    driver = _FakeDriver(context)
    monkeypatch.setattr(devices, "_libcuda", lambda: driver)
    assert devices._driver_device(0) == (0, "NVIDIA H200", 9, 0, 132, "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f")
    assert devices._driver_device(1) is None  # no such device
    devices._synchronize_current_context()
    assert driver.synchronized == (1 if context else 0)  # no current context: nothing to wait for
