"""cupti: nvprof-wrap's own tracer (nvprof_wrap/tracer), injected into every Python process of the job through
sitecustomize; each process writes its own capture (docs/cupti-tracer.md)."""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from nvprof_wrap.errors import ToolMissing
from nvprof_wrap.launch.base import Plan, RunSpec, injection_env, window_env
from nvprof_wrap.model import Gpu


def _job_python(cmd: list[str]) -> str | None:
    """The job's interpreter when the command starts with another Python than ours (a venv's python)."""
    exe = shutil.which(cmd[0]) if cmd else None
    if exe is None or not Path(exe).name.startswith("python"):
        return None
    return None if Path(exe).resolve() == Path(sys.executable).resolve() else exe


def _cupti_in(python: str) -> bool:
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('cupti') is None)"
    try:
        return subprocess.run([python, "-c", probe], capture_output=True, timeout=60, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _libcupti_in(python: str) -> tuple[bool, str]:
    """Whether the tracer's own ctypes binding finds a libcupti for that interpreter (the CUDA toolkit's, or the
    nvidia-cuda-cupti wheel PyTorch installs), asked of it as the job would: `python -m nvprof_wrap.tracer.ccupti`
    with the job's PYTHONPATH (a subprocess, as nsys is run: the launcher never imports the tracer). (found, what
    it said: the library, or why none). Asked once per interpreter and search setting in a command."""
    return _ask_libcupti(python, *(os.environ.get(v) for v in _SEARCH_VARS))


_SEARCH_VARS = ("NVPROF_WRAP_LIBCUPTI", "PYTHONPATH", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH")  # what it looks at


@functools.cache
def _ask_libcupti(python: str, *_search: str | None) -> tuple[bool, str]:
    env = {**os.environ, **injection_env()}
    env.pop("NVPROF_WRAP_CUPTI_DIR", None)  # the probe itself is never traced (our sitecustomize is on its path)
    try:
        r = subprocess.run([python, "-m", "nvprof_wrap.tracer.ccupti"], capture_output=True, text=True, timeout=60,
                           check=False, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    said = (r.stdout.strip() or r.stderr.strip()).splitlines()
    return r.returncode == 0, said[-1] if said else f"exit {r.returncode}"


class Cupti:
    name = "cupti"
    silence: str | None = "no traced process used CUDA (the cupti backend traces the job's Python processes)"

    def find(self, explicit: str | None = None) -> str | None:
        """Where this interpreter imports cupti-python from (None when it cannot)."""
        spec = importlib.util.find_spec("cupti")
        if spec is None:
            return None
        return spec.origin or next(iter(spec.submodule_search_locations or ()), None) or "cupti"

    def version(self, exe: str | None = None) -> str:
        """What the tracer drives CUPTI with by default: its ctypes binding on the libcupti it finds (said by that
        library's file), with cupti-python's version beside it when installed (the fallback)."""
        found, said = _libcupti_in(exe or sys.executable)
        try:
            from importlib.metadata import version

            python = f"cupti-python {version('cupti-python')}"
        except Exception:  # noqa: BLE001 - not installed: only the fallback is missing
            python = "cupti-python not installed"
        return f"tracer on libcupti ({said}); {python}" if found else python

    def usable(self, gpus: list[Gpu], spec: RunSpec) -> bool:
        return bool(gpus) and (self.find() is not None or _libcupti_in(sys.executable)[0])

    def looked_for(self, gpus: list[Gpu]) -> str:
        return (f"libcupti (CUDA toolkit, or the nvidia-cuda-cupti wheel) or the cupti-python package, with a GPU "
                f"(GPUs seen: {len(gpus)})")

    def plan(self, spec: RunSpec, folder: Path, gpus: list[Gpu]) -> Plan:
        """Refuses before the job starts when the job's Python can trace with neither the tracer's ctypes binding
        (no libcupti found) nor cupti-python, as a missing nsys is refused: a traced run that cannot trace would
        only produce a run folder without captures."""
        job_python = _job_python(spec.command)
        python = job_python or sys.executable
        if not (self.find() is not None if job_python is None else _cupti_in(job_python)):
            found, said = _libcupti_in(python)
            if not found:
                raise ToolMissing(f"--backend cupti needs libcupti or the cupti-python package, and {python} has "
                                  f"neither ({said}): install the CUDA toolkit's CUPTI or pip install cupti-python "
                                  "(CUDA 12 or newer), or use --backend nsys")
        env = {**injection_env(), "NVPROF_WRAP_CUPTI_DIR": str(folder.resolve()), **window_env(spec, "cupti")}
        return Plan(self.name, list(spec.command), env, tool=sys.executable, version=self.version(python))

    def collect(self, folder: Path, spec: RunSpec) -> list[str]:
        """Nothing to do: each traced process finishes its own capture (cupti-HOST-PID.sqlite). A process killed
        before it could leaves cupti-HOST-PID.sqlite.partial, which is read as it is and reported as a partial
        capture (its notes say so); the tracer's own complaints are in the job's stderr.log."""
        return []


BACKEND = Cupti()
