"""nvprof: the seed's invocation, one .nvvp per process (--profile-child-processes, %p). It cannot profile GPUs
of compute capability 8.0 and newer (and CUDA 12+ no longer ships it): refused before the job starts."""
from __future__ import annotations

from pathlib import Path

from nvprof_wrap.errors import BadInput, ToolMissing
from nvprof_wrap.launch.base import Plan, RunSpec, rank, window_env
from nvprof_wrap.model import Gpu
from nvprof_wrap.run import Run
from nvprof_wrap.system import tools

NEWEST_CC = 8.0  # nvprof supports compute capability below this only


class Nvprof:
    name = "nvprof"
    silence: str | None = None

    def find(self, explicit: str | None = None) -> str | None:
        return tools.find_nvprof(explicit)

    def version(self, exe: str | None = None) -> str:
        exe = exe or self.find()
        return tools.tool_version(exe) if exe else "unknown"

    def usable(self, gpus: list[Gpu], spec: RunSpec) -> bool:
        return bool(self.find() and gpus and all((g.cc or 0.0) < NEWEST_CC for g in gpus))

    def looked_for(self, gpus: list[Gpu]) -> str:
        return "nvprof for GPUs below compute capability 8.0 (CUDA 11 and older)"

    def plan(self, spec: RunSpec, folder: Path, gpus: list[Gpu]) -> Plan:
        nvprof = self.find()
        if nvprof is None:
            raise ToolMissing(f"nvprof not found (looked on PATH, ${tools.NVPROF_VAR} and /usr/local/cuda*/bin); it "
                              "ships with CUDA 11 and older")
        new = [g for g in gpus if (g.cc or 0.0) >= NEWEST_CC]
        if new:
            names = ", ".join(f"GPU {g.device_id} {g.name} (compute capability {g.compute_capability})" for g in new)
            raise ToolMissing(f"nvprof cannot profile {names}: it supports compute capability below 8.0 only. "
                              "Use --backend nsys or --backend cupti")
        window: list[str] = []
        if spec.capture is not None:
            if spec.capture.kind != "steps":
                raise BadInput(None, f"{spec.capture.option}: nvprof cannot start recording after a delay; give "
                                     "--capture-steps A:B, or use --backend nsys or cupti")
            window = ["--profile-from-start", "off"]  # the job calls cuProfilerStart/Stop (tracer/window.py)
        argv = [nvprof, *window, "-o", str(Run(folder).nvprof_output(rank())), "--profile-child-processes",
                *spec.command]
        return Plan(self.name, argv, window_env(spec, "profiler"), tool=nvprof, version=self.version(nvprof))

    def collect(self, folder: Path, spec: RunSpec) -> list[str]:
        return []  # nvprof writes its .nvvp files (SQLite) itself, one per process


BACKEND = Nvprof()
