"""Launch a job under a profiler: the backends (one object per module), the job runner, the manifest.

BACKENDS is the one list of backends: it gives `--backend` its choices (run, experiment), ``auto`` its order (the
first usable one wins: nsys if found; else cupti if cupti-python imports and a GPU is present; else nvprof if found
and every GPU is below compute capability 8.0) and `doctor` the profilers it lists. Adding a backend is one module
and one entry here (docs/backends.md, "How the backends are built, and adding one"). ``none`` (no profiler: the job
with its log, health and numerics only) is a choice of --backend, never a profiler that auto or doctor looks for.
"""
from __future__ import annotations

from nvprof_wrap.errors import BadInput, ToolMissing
from nvprof_wrap.launch import cupti, none, nsys, nvprof
from nvprof_wrap.launch.base import Backend, RunSpec
from nvprof_wrap.model import Gpu

BACKENDS: tuple[Backend, ...] = (nsys.BACKEND, cupti.BACKEND, nvprof.BACKEND)
BY_NAME: dict[str, Backend] = {b.name: b for b in (*BACKENDS, none.BACKEND)}
CHOICES = ("auto", *BY_NAME)  # --backend


def choose(spec: RunSpec, gpus: list[Gpu]) -> Backend:
    """The backend --backend names, or for auto the first one usable here."""
    if spec.backend in BY_NAME:
        return BY_NAME[spec.backend]
    if spec.backend != "auto":
        raise BadInput(None, f"unknown backend {spec.backend!r} (choose from {', '.join(CHOICES)})")
    for backend in BACKENDS:
        if backend.usable(gpus, spec):
            return backend
    raise ToolMissing("no profiler backend is usable here. Looked for: "
                      + ", ".join(b.looked_for(gpus) for b in BACKENDS))
