"""Profiler backends. Each: find() the tool, version(), plan(cmd, outdir) → (argv, extra env).

nvprof: the seed's invocation, one .nvvp per process (--profile-child-processes, %p); refuses GPUs
of compute capability 8.0+, which nvprof cannot profile (and CUDA 12+ no longer ships it).
nsys: Nsight Systems, children followed, CUDA/NVTX/cuBLAS/cuDNN traced, no CPU sampling.
cupti: our own tracer (nvprof_wrap/tracer) injected into every Python process through sitecustomize.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nvprof_wrap.errors import ToolMissing
from nvprof_wrap.launch.gpus import Gpu

NSYS_GLOBS = ("/opt/nvidia/nsight-systems/*/bin/nsys", "/opt/nvidia/nsight-systems-cli/*/bin/nsys",
              "/usr/local/cuda*/bin/nsys", "/usr/local/cuda*/nsight-systems*/bin/nsys",
              "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys")
NVPROF_GLOBS = ("/usr/local/cuda*/bin/nvprof",)
NCU_GLOBS = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda*/bin/ncu")


@dataclass(frozen=True)
class Plan:
    backend: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    tool: str | None = None
    version: str | None = None


def _find(env_var: str, exe: str, globs: tuple[str, ...], explicit: str | None = None) -> str | None:
    for cand in (explicit, os.environ.get(env_var), shutil.which(exe)):
        if cand and os.access(cand, os.X_OK):
            return cand
    for pattern in globs:
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]  # newest version folder sorts last
    return None


def find_nsys(explicit: str | None = None) -> str | None:
    return _find("NVPROF_WRAP_NSYS", "nsys", NSYS_GLOBS, explicit)


def find_nvprof(explicit: str | None = None) -> str | None:
    return _find("NVPROF_WRAP_NVPROF", "nvprof", NVPROF_GLOBS, explicit)


def find_ncu(explicit: str | None = None) -> str | None:
    return _find("NVPROF_WRAP_NCU", "ncu", NCU_GLOBS, explicit)


def cupti_available() -> bool:
    return importlib.util.find_spec("cupti") is not None


def tool_version(exe: str) -> str:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[-1].strip() if lines else "unknown"


def plan_nvprof(cmd: list[str], outdir: Path, tag: str, gpus: list[Gpu], exe: str | None = None) -> Plan:
    nvprof = find_nvprof(exe)
    if nvprof is None:
        raise ToolMissing("nvprof not found (looked on PATH, $NVPROF_WRAP_NVPROF and /usr/local/cuda*/bin); it ships "
                          "with CUDA 11 and older")
    new = [g for g in gpus if g.cc >= 8.0]
    if new:
        names = ", ".join(f"GPU {g.index} {g.name} (compute capability {g.compute_capability})" for g in new)
        raise ToolMissing(f"nvprof cannot profile {names}: it supports compute capability below 8.0 only. "
                          "Use --backend nsys or --backend cupti")
    argv = [nvprof, "-o", str(outdir / f"{tag}profile%p.nvvp"), "--profile-child-processes", *cmd]
    return Plan("nvprof", argv, tool=nvprof, version=tool_version(nvprof))


def plan_nsys(cmd: list[str], outdir: Path, tag: str, exe: str | None = None) -> Plan:
    nsys = find_nsys(exe)
    if nsys is None:
        raise ToolMissing("nsys not found (looked at --nsys, $NVPROF_WRAP_NSYS, PATH, /opt/nvidia/nsight-systems*, "
                          "/usr/local/cuda*/bin and the copy inside Nsight Compute)")
    argv = [nsys, "profile", "--trace=cuda,nvtx,cublas,cudnn", "--sample=none", "--cpuctxsw=none",
            "--force-overwrite=true", "--output", str(outdir / f"{tag}nsys"), *cmd]
    return Plan("nsys", argv, tool=nsys, version=tool_version(nsys))


def injection_env() -> dict[str, str]:
    """PYTHONPATH that makes every Python process of the job import our sitecustomize (and find the package)."""
    inject = Path(__file__).resolve().parents[1] / "tracer" / "inject"
    package_parent = Path(__file__).resolve().parents[2]
    path = [str(inject), str(package_parent)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    return {"PYTHONPATH": os.pathsep.join(path)}


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


def plan_cupti(cmd: list[str], outdir: Path) -> Plan:
    """Refuses before the job starts when cupti-python is missing, as a missing nsys is refused: a traced run that
    cannot trace would only produce a run folder without captures."""
    job_python = _job_python(cmd)
    if not (cupti_available() if job_python is None else _cupti_in(job_python)):
        where = job_python or sys.executable
        raise ToolMissing(f"--backend cupti needs the cupti-python package, which {where} cannot import: "
                          "pip install cupti-python (CUDA 12 or newer), or use --backend nsys")
    env = {**injection_env(), "NVPROF_WRAP_CUPTI_DIR": str(outdir.resolve())}
    return Plan("cupti", list(cmd), env, tool=sys.executable, version=_cupti_version())


def _cupti_version() -> str:
    try:
        from importlib.metadata import version

        return f"cupti-python {version('cupti-python')}"
    except Exception:  # noqa: BLE001 - not installed: the tracer will say so in the job
        return "cupti-python not installed"


def choose(requested: str, gpus: list[Gpu], nsys: str | None = None) -> str:
    """auto: nsys if found; else cupti if it can load and a GPU is present; else nvprof if every GPU is < 8.0."""
    if requested != "auto":
        return requested
    if find_nsys(nsys):
        return "nsys"
    if cupti_available() and gpus:
        return "cupti"
    if find_nvprof() and gpus and all(g.cc < 8.0 for g in gpus):
        return "nvprof"
    raise ToolMissing("no profiler backend is usable here. Looked for: nsys (Nsight Systems: install it, or point "
                      "--nsys / $NVPROF_WRAP_NSYS at it), the cupti-python package with a GPU (pip install "
                      f"cupti-python; GPUs seen: {len(gpus)}), nvprof for GPUs below compute capability 8.0 (CUDA 11 "
                      "and older)")
