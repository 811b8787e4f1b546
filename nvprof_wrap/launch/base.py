"""What every backend shares: the run's specification (RunSpec), what a backend plans (Plan), the shape of a
backend object (Backend), the job's distributed rank, and the environment that injects our sitecustomize."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from nvprof_wrap.model import Gpu
from nvprof_wrap.run.manifest import CaptureWindow

RANK_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


@dataclass(frozen=True)
class RunSpec:
    command: list[str]
    backend: str = "auto"
    output: str | None = None
    name: str | None = None
    nsys: str | None = None
    env: dict[str, str] | None = None
    quiet_stdout: bool = False
    silent: bool = False  # the job's output only in the run folder's logs
    annotate: str | None = None  # "keras", "torch" or "keras,torch": NVTX ranges per layer / module / op
    step_marks: bool = True  # an NVTX range per torch optimizer step in every Python process (annotate.py)
    force: bool = False  # replace a run folder that already holds a run
    verbose: bool = False  # show the profiler's own chatter live too (it is always in the run folder's logs)
    hardware: bool = True  # sample the tensor pipes: NVML GPM beside the job, nsys GPU metrics in its capture
    hardware_interval_s: float = 0.1  # GPM's sampling interval
    gpu_metrics_hz: int = 10_000  # nsys --gpu-metrics-frequency
    capture: CaptureWindow | None = None  # record only this window of the job (None: all of it)
    numerics: bool = False  # record the job's numbers per step and layer (tracer/numerics.py): numerics-PID.jsonl
    xla_dump: bool = True  # have XLA dump what it compiled into the run folder (--xla_dump_to; launch/runner.py)


@dataclass(frozen=True)
class Plan:
    backend: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    tool: str | None = None
    version: str | None = None


def window_env(spec: RunSpec, by: str) -> dict[str, str]:
    """The job's environment for its capture window (tracer/window.py): what it is, and who records inside it —
    "cupti" (our tracer), "profiler" (cuProfilerStart/Stop: nvprof), "profiler-aside" (the same, the stop on a helper
    thread: nsys), "self" (the profiler keeps the time)."""
    if spec.capture is None:
        return {}
    return {"NVPROF_WRAP_CAPTURE": spec.capture.env, "NVPROF_WRAP_CAPTURE_BY": by}


class Backend(Protocol):
    """One profiler nvprof-wrap can run a job under. A backend is one module holding one such object, listed once
    in ``nvprof_wrap.launch.BACKENDS`` (the order there is the order ``auto`` tries them in)."""

    name: str
    silence: str | None  # why a job may end without a capture and without the profiler saying why (None: unknown)

    def find(self, explicit: str | None = None) -> str | None:
        """Where the profiler is (a program's path, a package's folder); None when it is not here."""

    def version(self, exe: str | None = None) -> str:
        """What the profiler says its version is ("unknown" when it does not say)."""

    def usable(self, gpus: list[Gpu], spec: RunSpec) -> bool:
        """Whether ``auto`` may pick this backend for these GPUs."""

    def looked_for(self, gpus: list[Gpu]) -> str:
        """What ``auto`` looked for, for the one line that says no backend is usable."""

    def plan(self, spec: RunSpec, folder: Path, gpus: list[Gpu]) -> Plan:
        """The profiler's command line and environment for the job; raises ToolMissing before anything runs
        when the backend cannot profile here."""

    def collect(self, folder: Path, spec: RunSpec) -> list[str]:
        """What the backend does once the job ended (an export, say); returns problems, raises nothing: the run's
        other captures still count."""


def rank() -> int | None:
    """The distributed rank srun / torchrun / mpirun gave this process, from its environment."""
    for var in RANK_VARS:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return None


def injection_env() -> dict[str, str]:
    """PYTHONPATH that makes every Python process of the job import our sitecustomize (and find the package)."""
    inject = Path(__file__).resolve().parents[1] / "tracer" / "inject"
    package_parent = Path(__file__).resolve().parents[2]
    path = [str(inject), str(package_parent)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    return {"PYTHONPATH": os.pathsep.join(path)}
