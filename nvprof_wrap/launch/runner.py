"""`run`: pick a backend, make the run folder, run the job under it, export and ingest captures,
write the manifest. Pure orchestration: the CLI prints."""
from __future__ import annotations

import json
import os
import platform
import re
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from nvprof_wrap import __version__
from nvprof_wrap.launch import backends
from nvprof_wrap.launch.gpus import Gpu, list_gpus
from nvprof_wrap.launch.job import JobResult, run_job

RANK_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


@dataclass(frozen=True)
class RunSpec:
    command: list[str]
    backend: str = "auto"
    output: str | None = None
    name: str | None = None
    nsys: str | None = None
    env: dict | None = None
    quiet_stdout: bool = False
    silent: bool = False  # the job's output only in the run folder's logs
    annotate: str | None = None  # "keras", "torch" or "keras,torch": NVTX ranges per layer / module / op


def rank() -> int | None:
    for var in RANK_VARS:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return None


def expand_output(pattern: str) -> str:
    """%p → wrapper pid, %h → host name, %q{VAR} → $VAR, %% → %: the conventions of nvprof and nsys."""
    def sub(m: re.Match) -> str:
        tok = m.group(0)
        if tok == "%%":
            return "%"
        if tok == "%p":
            return str(os.getpid())
        if tok == "%h":
            return socket.gethostname()
        return os.environ.get(m.group(1), "")
    return re.sub(r"%%|%p|%h|%q\{([^}]*)\}", sub, pattern)


def run_folder(spec: RunSpec) -> Path:
    name = spec.name or Path(spec.command[0]).name
    if spec.output:
        folder = Path(expand_output(spec.output))
    else:
        folder = Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    r = rank()
    if r is not None and spec.output:
        folder = folder / f"rank{r}"  # srun / torchrun / mpirun: one sub-folder per rank, same -o on every node
    folder.mkdir(parents=True, exist_ok=True)  # honours the user's umask
    return folder


def make_plan(spec: RunSpec, folder: Path, gpus: list[Gpu]) -> backends.Plan:
    backend = backends.choose(spec.backend, gpus, spec.nsys)
    tag = f"rank{rank()}-" if rank() is not None else ""
    if backend == "nvprof":
        return backends.plan_nvprof(spec.command, folder, tag, gpus)
    if backend == "nsys":
        return backends.plan_nsys(spec.command, folder, tag, spec.nsys)
    return backends.plan_cupti(spec.command, folder)


def export_nsys_reports(folder: Path, nsys: str | None) -> list[str]:
    """Nsight Systems writes .nsys-rep; export each to SQLite next to it (errors are returned, not raised)."""
    from nvprof_wrap.readers.nsys_rep import export_sqlite

    problems = []
    for rep in sorted(folder.glob("*.nsys-rep")):
        try:
            export_sqlite(rep, nsys or backends.find_nsys() or "nsys", rep.with_suffix(".sqlite"))
        except Exception as e:  # noqa: BLE001 - reported in the manifest, the run's other captures still count
            problems.append(f"{rep.name}: {e}")
    return problems


def captures(folder: Path) -> list[str]:
    skip = {"manifest.json", "run.sqlite", "stdout.log", "stderr.log", "metrics.jsonl"}
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.name not in skip
                  and not p.name.endswith(("-wal", "-shm", "-journal")))


def no_capture_reason(folder: Path, manifest: dict) -> str:
    """Why a run folder holds no capture, in one line: the export's problem, else what the profiler (or our tracer)
    said last on the job's stderr."""
    if manifest.get("problems"):
        return "; ".join(manifest["problems"])
    log = folder / "stderr.log"
    tail = ""
    if log.is_file():
        with open(log, "rb") as f:
            f.seek(max(0, log.stat().st_size - 16384))
            tail = f.read().decode("utf-8", errors="replace")
    said = [ln.strip() for ln in tail.splitlines()
            if re.search(r"nvprof-wrap:|==PROF==|==\d+==|nsys|error|Error|Warning", ln)]
    if said:
        return said[-1]
    if manifest.get("backend") == "cupti":
        return "no traced process used CUDA (the cupti backend traces the job's Python processes)"
    return f"{manifest.get('backend')} said nothing about it (see {log})"


def write_manifest(folder: Path, spec: RunSpec, plan: backends.Plan, gpus: list[Gpu], job: JobResult,
                   problems: list[str]) -> dict:
    manifest = {
        "nvprof_wrap": __version__, "command": spec.command, "profiler_argv": plan.argv, "backend": plan.backend,
        "backend_tool": plan.tool, "backend_version": plan.version,
        "gpus": [asdict(g) for g in gpus],
        "host": {"name": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
                 "cpus": psutil.cpu_count(), "memory_bytes": psutil.virtual_memory().total},
        "rank": rank(), "started": job.started, "ended": job.ended, "wall_s": round(job.ended - job.started, 3),
        "exit_code": job.exit_code, "signal": job.signal_received, "processes": job.processes,
        "captures": captures(folder), "problems": problems,
    }
    tmp = folder / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2))
    tmp.replace(folder / "manifest.json")
    return manifest


def execute(spec: RunSpec) -> tuple[Path, dict]:
    gpus = list_gpus()
    folder = run_folder(spec)
    plan = make_plan(spec, folder, gpus)
    annotate = {**backends.injection_env(), "NVPROF_WRAP_ANNOTATE": spec.annotate} if spec.annotate else {}
    env = {**annotate, **plan.env, **(spec.env or {}), "NVPROF_WRAP_RUN_DIR": str(folder.resolve()),
           "NVPROF_WRAP_METRICS": str((folder / "metrics.jsonl").resolve())}
    job = run_job(plan.argv, env, folder, spec.quiet_stdout, spec.silent)
    problems = export_nsys_reports(folder, spec.nsys) if plan.backend == "nsys" else []
    return folder, write_manifest(folder, spec, plan, gpus, job, problems)
