"""`run`: make the run folder, pick a backend (nvprof_wrap.launch.BACKENDS), run the job under it, let the
backend collect its captures, write the manifest. Pure orchestration: the CLI prints and reads the captures."""
from __future__ import annotations

import json
import os
import platform
import re
import socket
import time
from dataclasses import replace
from pathlib import Path

import psutil

from nvprof_wrap._version import __version__
from nvprof_wrap.errors import BadInput, CannotWrite
from nvprof_wrap.launch import BY_NAME, choose, gpm
from nvprof_wrap.launch import xla as xla_dump
from nvprof_wrap.launch.base import Plan, RunSpec, injection_env, rank
from nvprof_wrap.launch.gpus import list_gpus
from nvprof_wrap.launch.job import JobResult, run_job
from nvprof_wrap.model import Gpu
from nvprof_wrap.run import Run, claim
from nvprof_wrap.run.manifest import FORMAT, FORMAT_VERSION, Host, Manifest
from nvprof_wrap.system import files, storage


def expand_output(pattern: str) -> str:
    """%p → wrapper pid, %h → host name, %q{VAR} → $VAR, %% → %: the conventions of nvprof and nsys.
    What a variable or the host name brings is one folder name, never a path: '-o %q{HOME}' must not write into
    the home folder, nor '%q{X}' with X='../..' climb out of where the user pointed."""
    def sub(m: re.Match[str]) -> str:
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


def check_name(name: str | None) -> None:
    """--name is one folder name (runs/NAME-TIMESTAMP): never a path that leads out of runs/."""
    if name is None:
        return
    if name in ("", ".", "..") or "/" in name or "\0" in name or (os.altsep and os.altsep in name):
        raise BadInput(None, f"--name {name!r}: a run's name is one folder name (no '/', not '.' or '..', not "
                             "empty); -o DIR names the run folder itself")


def run_folder(spec: RunSpec) -> tuple[Path, int, bool]:
    """The run folder, claimed for this run (run/lock.py), the descriptor that holds the claim, and whether
    this run created the folder. A path through a symlink is resolved once, here: the logs, the captures and the
    manifest all go to the folder it named at the start, whatever the link names later."""
    check_name(spec.name)
    name = spec.name or Path(spec.command[0]).name
    if spec.output:
        folder = Path(expand_output(spec.output))
    else:
        folder = Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    r = rank()
    if r is not None and spec.output:
        folder = Run(folder).rank(r).folder  # srun / torchrun / mpirun: one sub-folder per rank, same -o on every node
    real = Path(os.path.realpath(folder))
    if real != Path(os.path.abspath(folder)):
        folder = real  # a symlink on the way: from here on, the folder it points to now
    existed = bool(spec.output) and folder.exists()
    return (*claim(folder, force=spec.force, numbered=not spec.output), not existed)


def _unclaim(folder: Path, lock: int, created: bool) -> None:
    """A run refused before its job started leaves nothing behind: its lock goes, and the folder if the run made
    it and nothing else is in it."""
    try:
        Run(folder).lock_file.unlink()  # still holding the lock: no other run can have claimed the folder meanwhile
        if created:
            folder.rmdir()  # OSError if anything else is in it: then it stays
    except OSError:
        pass
    finally:
        os.close(lock)


NUMERICS_ENV = "NVPROF_WRAP_NUMERICS"  # the numerics recorder's folder (tracer/numerics.py ENV: a test checks both)


def captures(folder: Path) -> list[str]:
    return Run(folder).captures()


def no_capture_reason(folder: Path, manifest: Manifest) -> str:
    """Why a run folder holds no capture, in one line: the export's problem, else what the profiler (or our tracer)
    said last on the job's stderr."""
    if manifest.problems:
        return "; ".join(manifest.problems)
    log = Run(folder).stderr_log
    tail = ""
    if log.is_file():
        with open(log, "rb") as f:
            f.seek(max(0, log.stat().st_size - 16384))
            tail = f.read().decode("utf-8", errors="replace")
    said = [ln.strip() for ln in tail.splitlines()
            if re.search(r"nvprof-wrap:|==PROF==|==\d+==|nsys|error|Error|Warning", ln)]
    if said:
        return said[-1]
    backend = BY_NAME.get(manifest.backend)
    return (backend and backend.silence) or f"{manifest.backend} said nothing about it (see {log})"


def manifest_of(folder: Path, spec: RunSpec, plan: Plan, gpus: list[Gpu], job: JobResult | None,
                problems: list[str]) -> Manifest:
    """The run's manifest before the job started (job None: status "running") or once it ended."""
    host = Host(socket.gethostname(), platform.platform(), platform.python_version(), psutil.cpu_count(),
                psutil.virtual_memory().total)
    return Manifest(
        format=FORMAT, version=FORMAT_VERSION, nvprof_wrap=__version__, status="running" if job is None else "ended",
        command=tuple(spec.command),
        profiler_argv=tuple(plan.argv), backend=plan.backend, backend_tool=plan.tool, backend_version=plan.version,
        gpus=tuple(gpus), host=host, rank=rank(), wrapper_pid=os.getpid(),
        started=job.started if job else time.time(), ended=job.ended if job else None,
        wall_s=round(job.ended - job.started, 3) if job else None, exit_code=job.exit_code if job else None,
        signal=job.signal_received if job else None, processes=tuple(job.processes) if job else (),
        captures=tuple(captures(folder)) if job else (), problems=tuple(problems), capture=spec.capture)


def write_manifest(folder: Path, manifest: Manifest) -> Manifest:
    """Written before the job starts (status "running": a wrapper killed later leaves at least this) and again
    when it ended. Raises OSError (disk full, say) from the writing."""
    tmp = Run(folder).manifest_tmp
    # A link, FIFO or device at either name is refused (CannotWrite), never written through nor removed.
    fd = files.open_fd(tmp, what="manifest's temporary")
    try:
        with os.fdopen(fd, "w") as f:  # written and synced before it replaces the last one: a full disk loses neither
            f.write(json.dumps(manifest.to_json(), indent=2))
            f.flush()
            os.fsync(f.fileno())
        files.replace(tmp, Run(folder).manifest_file, "manifest")
    except (OSError, CannotWrite):
        try:
            tmp.unlink(missing_ok=True)  # a full disk leaves the last manifest, not a half-written copy beside it
        except OSError:
            pass
        raise
    return manifest


def _sampler(spec: RunSpec, folder: Path, plan: Plan) -> tuple[gpm.Sampler | None, str | None]:
    """The GPM sampler for this run (started), or None and why there is none, in words."""
    if not spec.hardware:
        return None, "not sampled (--no-hardware)"
    devices, why = gpm.available()
    if not devices:
        return None, f"no GPM sampler: {why}" + _and_nsys(plan)
    return gpm.Sampler(Run(folder).gpm_file, devices, spec.hardware_interval_s).start(), None


def _and_nsys(plan: Plan) -> str:
    on = any(a.startswith("--gpu-metrics-devices=") for a in plan.argv)
    return "; nsys GPU metrics in the capture" if on else ""


def execute(spec: RunSpec) -> tuple[Path, Manifest]:
    """Run the job; the manifest that comes back has ``recorded`` False when the run's end could not be written
    (its problems say why; the job's exit code is still there)."""
    gpus = list_gpus()
    backend = choose(spec, gpus)
    folder, lock, created = run_folder(spec)
    try:
        plan = backend.plan(spec, folder, gpus)
    except BaseException:
        _unclaim(folder, lock, created)
        raise
    try:
        try:
            write_manifest(folder, manifest_of(folder, spec, plan, gpus, None, []))
        except OSError as e:
            raise BadInput(Run(folder).manifest_file, f"cannot write the run's manifest ({e.strerror}); the job "
                                                     "was not started") from None
        steps = spec.step_marks or (spec.capture is not None and spec.capture.kind == "steps")
        kinds = [*(["steps"] if steps else []), *(spec.annotate.split(",") if spec.annotate else [])]
        annotate = {**injection_env(), "NVPROF_WRAP_ANNOTATE": ",".join(kinds)} if kinds else {}
        window = {**injection_env(), "NVPROF_WRAP_CAPTURE_T0": repr(time.time())} if spec.capture else {}
        numerics = {**injection_env(), NUMERICS_ENV: str(folder.resolve())} if spec.numerics else {}
        xla, user_dump = xla_dump.dump_env(spec.xla_dump, plan.backend, folder, spec.env)
        env = {**annotate, **window, **numerics, **plan.env, **(spec.env or {}), **xla,
               "NVPROF_WRAP_RUN_DIR": str(folder.resolve()),
               "NVPROF_WRAP_METRICS": str(Run(folder).metrics_file.resolve())}
        sampler, hardware = _sampler(spec, folder, plan)
        try:
            job = run_job(plan.argv, env, folder, spec.quiet_stdout, spec.silent, keep_fds=(lock,),
                          chatter=spec.verbose)
        finally:
            if sampler is not None:
                sampler.stop()
                hardware = (f"nvml gpm: {sampler.samples:,} samples every {sampler.interval_s:g} s of GPU "
                            f"{', '.join(map(str, sampler.devices))}" + (f" ({sampler.problem})" if sampler.problem
                                                                         else "")) + _and_nsys(plan)
        problems = backend.collect(folder, spec)
        ended = replace(manifest_of(folder, spec, plan, gpus, job, problems), hardware=hardware, xla_dump=user_dump)
        try:
            return folder, write_manifest(folder, ended)
        except (OSError, CannotWrite) as e:
            why = storage.why(e) if isinstance(e, OSError) else "refused"
            failed = isinstance(e, OSError) and storage.machine_failed(e)
            return folder, replace(ended, recorded=False, storage_failed=failed, problems=(
                *problems, (f"{why}: the run's manifest could not be written ({e}); the one written at the "
                            "start says \"running\"")))
    finally:
        os.close(lock)
