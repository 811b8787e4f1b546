"""What `doctor` finds on this machine: GPUs, profilers and their versions, the libcupti the tracer would drive,
the frameworks importable, and — where there is a GPU — a matmul probe run under the first usable backend and
reported, so that "can this machine see tensor cores?" is answered by a real run."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Protocol

from nvprof_wrap.errors import ToolMissing
from nvprof_wrap.launch import BACKENDS, cupti, ncu
from nvprof_wrap.launch.base import RunSpec
from nvprof_wrap.launch.gpus import list_gpus
from nvprof_wrap.launch.runner import execute
from nvprof_wrap.pipeline.compose import analyze
from nvprof_wrap.run import Run
from nvprof_wrap.store import Store
from nvprof_wrap.system import tempdirs

PROBE = Path(__file__).resolve().parents[1] / "workloads" / "matmul_probe.py"  # a link; a copy when installed
# What doctor finds, as `doctor --format json` writes it: a JSON object whose members differ by machine (a profiler
# found or not, the probe run or not), read only by the renderers.
Facts = dict[str, Any]


class _Profiler(Protocol):  # a backend of launch.BACKENDS, or Nsight Compute
    name: str

    def find(self, explicit: str | None = None) -> str | None: ...

    def version(self, exe: str | None = None) -> str: ...


def facts() -> Facts:
    # Every backend of the table and Nsight Compute; cupti-python is a package, not a program on the machine.
    every: tuple[_Profiler, ...] = (*BACKENDS, ncu.NCU)
    programs = [b for b in every if b is not cupti.BACKEND]
    found = {b.name: (b, b.find()) for b in programs}
    return {
        "gpus": [g.as_listed() for g in list_gpus()],
        "profilers": {k: ({"path": v, "version": b.version(v)} if v else None) for k, (b, v) in found.items()},
        "cupti_python": cupti.BACKEND.find() is not None,
        "libcupti": _libcupti(),
        "hardware_sampling": _gpm(),
        "python_packages": {m: importlib.util.find_spec(m) is not None
                            for m in ("keras", "tensorflow", "torch", "jax")},
        "keras_backend": os.environ.get("KERAS_BACKEND", "tensorflow (Keras' default)"),
    }


def _gpm() -> Facts:
    """Whether `run` can sample the tensor pipes with NVML GPM here (launch/gpm.py), and on which GPUs, or why not."""
    from nvprof_wrap.launch import gpm

    devices, why = gpm.available()
    return {"gpm_devices": devices, "why": why}


def _libcupti() -> Facts:
    """The libcupti the tracer's ctypes binding would drive (loaded here, never subscribed), or why none."""
    from nvprof_wrap.tracer import ccupti

    try:
        b = ccupti.load()
        return {"path": b.path, "api_version": b.get_version()}
    except (ccupti.Unavailable, ccupti.CuptiError) as e:
        return {"path": None, "why": str(e)}


def probe(folder: str | None) -> Facts:
    """The probe's run: in -o DIR, kept; else in a temporary folder, removed after (doctor leaves nothing in the
    current folder)."""
    if folder:
        return _probe(folder)
    with tempdirs.folder("doctor") as tmp:
        got = _probe(str(Path(tmp) / "probe"))
    if got["ran"]:
        got["folder"] = "a temporary run folder, removed; -o DIR keeps it"
    return got


def _probe(folder: str) -> Facts:
    try:
        out, manifest = execute(RunSpec([sys.executable, str(PROBE)], "auto", folder, name="doctor-probe",
                                        silent=True))  # the probe's and the profiler's output: in its folder's logs
    except ToolMissing as e:
        return {"ran": False, "why": str(e)}
    store = Store(Run(out).store_file, mirror=out)
    try:
        rep = analyze(out, store=store)
    finally:
        store.close()
    return {"ran": True, "backend": manifest.backend, "folder": str(out), "verdict": rep.verdict.message,
            "tensor_cores_visible": rep.verdict.tensor_cores == "yes"}
