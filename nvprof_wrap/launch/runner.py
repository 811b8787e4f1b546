"""`run`: pick a backend, make the run folder, run the job under it, export and ingest captures,
write the manifest. Pure orchestration: the CLI prints."""
from __future__ import annotations

import errno
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
from nvprof_wrap.errors import BadInput
from nvprof_wrap.launch import backends
from nvprof_wrap.launch.folder import claim
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
    force: bool = False  # replace a run folder that already holds a run


def rank() -> int | None:
    for var in RANK_VARS:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return None


def expand_output(pattern: str) -> str:
    """%p → wrapper pid, %h → host name, %q{VAR} → $VAR, %% → %: the conventions of nvprof and nsys.
    What a variable or the host name brings is one folder name, never a path: '-o %q{HOME}' must not write into
    the home folder, nor '%q{X}' with X='../..' climb out of where the user pointed."""
    def sub(m: re.Match) -> str:
        tok = m.group(0)
        if tok == "%%":
            return "%"
        if tok == "%p":
            return str(os.getpid())
        value = socket.gethostname() if tok == "%h" else os.environ.get(m.group(1))
        if value is None:
            raise BadInput(pattern, f"-o: {tok} names an environment variable that is not set")
        if value in ("", ".", "..") or "/" in value or "\0" in value:
            raise BadInput(pattern, f"-o: {tok} is {value!r}; only a single folder name may come from it")
        return value
    return re.sub(r"%%|%p|%h|%q\{([^}]*)\}", sub, pattern)


def run_folder(spec: RunSpec) -> tuple[Path, int]:
    """The run folder, claimed for this run (launch/folder.py), and the descriptor that holds the claim."""
    name = spec.name or Path(spec.command[0]).name
    if spec.output:
        folder = Path(expand_output(spec.output))
    else:
        folder = Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    r = rank()
    if r is not None and spec.output:
        folder = folder / f"rank{r}"  # srun / torchrun / mpirun: one sub-folder per rank, same -o on every node
    return claim(folder, force=spec.force, numbered=not spec.output)


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
    skip = {"manifest.json", "run.sqlite", "stdout.log", "stderr.log", "metrics.jsonl", ".nvprof-wrap.lock"}
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


def write_manifest(folder: Path, spec: RunSpec, plan: backends.Plan, gpus: list[Gpu], job: JobResult | None,
                   problems: list[str]) -> dict:
    """Written before the job starts (status "running": a wrapper killed later leaves at least this) and again
    when it ended. Raises OSError (disk full, say) from the writing."""
    manifest = {
        "nvprof_wrap": __version__, "status": "running" if job is None else "ended", "command": spec.command,
        "profiler_argv": plan.argv, "backend": plan.backend, "backend_tool": plan.tool,
        "backend_version": plan.version, "gpus": [asdict(g) for g in gpus],
        "host": {"name": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
                 "cpus": psutil.cpu_count(), "memory_bytes": psutil.virtual_memory().total},
        "rank": rank(), "wrapper_pid": os.getpid(), "started": job.started if job else time.time(),
        "ended": job.ended if job else None, "wall_s": round(job.ended - job.started, 3) if job else None,
        "exit_code": job.exit_code if job else None, "signal": job.signal_received if job else None,
        "processes": job.processes if job else [], "captures": captures(folder) if job else [], "problems": problems,
    }
    tmp = folder / "manifest.json.tmp"
    with open(tmp, "w") as f:  # written and synced before it replaces the last one: a full disk loses neither
        f.write(json.dumps(manifest, indent=2))
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(folder / "manifest.json")
    return manifest


def execute(spec: RunSpec) -> tuple[Path, dict]:
    """Run the job; the manifest that comes back has "recorded": False when the run's end could not be written
    (the "problems" say why; the job's exit code is still there)."""
    gpus = list_gpus()
    folder, lock = run_folder(spec)
    try:
        plan = make_plan(spec, folder, gpus)
        try:
            write_manifest(folder, spec, plan, gpus, None, [])
        except OSError as e:
            raise BadInput(folder / "manifest.json", f"cannot write the run's manifest ({e.strerror}); the job "
                                                     "was not started") from None
        annotate = {**backends.injection_env(), "NVPROF_WRAP_ANNOTATE": spec.annotate} if spec.annotate else {}
        env = {**annotate, **plan.env, **(spec.env or {}), "NVPROF_WRAP_RUN_DIR": str(folder.resolve()),
               "NVPROF_WRAP_METRICS": str((folder / "metrics.jsonl").resolve())}
        job = run_job(plan.argv, env, folder, spec.quiet_stdout, spec.silent, keep_fds=(lock,))
        problems = export_nsys_reports(folder, spec.nsys) if plan.backend == "nsys" else []
        try:
            return folder, write_manifest(folder, spec, plan, gpus, job, problems)
        except OSError as e:
            why = "disk full" if e.errno == errno.ENOSPC else e.strerror
            return folder, {"backend": plan.backend, "exit_code": job.exit_code, "signal": job.signal_received,
                            "wall_s": round(job.ended - job.started, 3), "recorded": False,
                            "problems": [*problems, (f"{why}: the run's manifest could not be written ({e}); "
                                                     "the one written at the start says \"running\"")]}
    finally:
        os.close(lock)
