"""cupti: nvprof-wrap's own tracer (nvprof_wrap/tracer), injected into every Python process of the job through
sitecustomize; each process writes its own capture (docs/cupti-tracer.md)."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from nvprof_wrap.errors import ToolMissing
from nvprof_wrap.launch.base import Plan, RunSpec, injection_env
from nvprof_wrap.launch.gpus import Gpu


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


class Cupti:
    name = "cupti"
    silence = "no traced process used CUDA (the cupti backend traces the job's Python processes)"

    def find(self, explicit: str | None = None) -> str | None:
        """Where this interpreter imports cupti-python from (None when it cannot)."""
        spec = importlib.util.find_spec("cupti")
        if spec is None:
            return None
        return spec.origin or next(iter(spec.submodule_search_locations or ()), None) or "cupti"

    def version(self, exe: str | None = None) -> str:
        try:
            from importlib.metadata import version

            return f"cupti-python {version('cupti-python')}"
        except Exception:  # noqa: BLE001 - not installed: the tracer will say so in the job
            return "cupti-python not installed"

    def usable(self, gpus: list[Gpu], spec: RunSpec) -> bool:
        return self.find() is not None and bool(gpus)

    def looked_for(self, gpus: list[Gpu]) -> str:
        return f"the cupti-python package with a GPU (pip install cupti-python; GPUs seen: {len(gpus)})"

    def plan(self, spec: RunSpec, folder: Path, gpus: list[Gpu]) -> Plan:
        """Refuses before the job starts when cupti-python is missing, as a missing nsys is refused: a traced run
        that cannot trace would only produce a run folder without captures."""
        job_python = _job_python(spec.command)
        if not (self.find() is not None if job_python is None else _cupti_in(job_python)):
            where = job_python or sys.executable
            raise ToolMissing(f"--backend cupti needs the cupti-python package, which {where} cannot import: "
                              "pip install cupti-python (CUDA 12 or newer), or use --backend nsys")
        env = {**injection_env(), "NVPROF_WRAP_CUPTI_DIR": str(folder.resolve())}
        return Plan(self.name, list(spec.command), env, tool=sys.executable, version=self.version())

    def collect(self, folder: Path, spec: RunSpec) -> list[str]:
        """Nothing to do: each traced process finishes its own capture (cupti-HOST-PID.sqlite). A process killed
        before it could leaves cupti-HOST-PID.sqlite.partial, which is read as it is and reported as a partial
        capture (its notes say so); the tracer's own complaints are in the job's stderr.log."""
        return []


BACKEND = Cupti()
