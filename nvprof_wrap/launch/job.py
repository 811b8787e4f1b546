"""Run the job: never through a shell, output streamed live and saved, signals forwarded to the
whole process group, the process tree recorded with psutil, the job's exit code returned."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import psutil

from nvprof_wrap.errors import BadInput


@dataclass
class JobResult:
    exit_code: int
    started: float
    ended: float
    processes: list[dict] = field(default_factory=list)
    signal_received: str | None = None


def _tee(src: IO[bytes], sinks: list[IO[bytes]]) -> None:
    for chunk in iter(lambda: src.read1(65536) if hasattr(src, "read1") else src.read(65536), b""):
        for s in sinks:
            try:
                s.write(chunk)
                s.flush()
            except (OSError, ValueError):  # a closed terminal must not stop the saving to file
                pass


def _rank_of(p: psutil.Process) -> int | None:
    """The distributed rank a launcher (torchrun, srun, mpirun) gave the process, from its environment."""
    try:
        env = p.environ()
    except psutil.Error:
        return None
    for var in ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        if env.get(var, "").isdigit():
            return int(env[var])
    return None


def _watch(pid: int, seen: dict[int, dict], stop: threading.Event) -> None:
    """Record every process of the job's tree (pid, parent, command line) while it runs."""
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    polls = 0
    while not stop.is_set():
        try:
            for p in [root, *root.children(recursive=True)]:
                if p.pid not in seen:
                    try:
                        seen[p.pid] = {"pid": p.pid, "ppid": p.ppid(), "cmdline": p.cmdline()[:20],
                                       "started": p.create_time(), "rank": _rank_of(p)}
                    except psutil.Error:
                        pass
        except psutil.Error:
            pass
        polls += 1
        stop.wait(0.02 if polls < 250 else 0.25)  # fine-grained at start-up, when workers are spawned


def exit_code_of(returncode: int) -> int:
    """A job killed by signal N exits 128+N, as a shell would report it."""
    return 128 - returncode if returncode < 0 else returncode


def run_job(argv: list[str], env: dict[str, str], outdir: Path, quiet_stdout: bool = False,
            silent: bool = False) -> JobResult:
    """quiet_stdout: the job's stdout streams to our stderr, so that ours carries only a JSON/CSV report.
    silent: the job's output goes only to stdout.log / stderr.log (doctor's probe)."""
    full_env = {**os.environ, **env}
    stdout_log = open(outdir / "stdout.log", "wb")
    stderr_log = open(outdir / "stderr.log", "wb")
    started = time.time()
    try:
        # A new session: the job and all its children form one process group we can signal together.
        proc = subprocess.Popen(argv, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=sys.stdin if sys.stdin and sys.stdin.isatty() else subprocess.DEVNULL,
                                start_new_session=True)
    except FileNotFoundError:
        raise BadInput(argv[0], "command not found") from None
    except PermissionError:
        raise BadInput(argv[0], "permission denied") from None
    result = JobResult(0, started, 0.0)
    seen: dict[int, dict] = {}
    stop = threading.Event()
    live_out = [] if silent else [sys.stderr.buffer if quiet_stdout else sys.stdout.buffer]
    live_err = [] if silent else [sys.stderr.buffer]
    threads = [threading.Thread(target=_tee, args=(proc.stdout, [*live_out, stdout_log]), daemon=True),
               threading.Thread(target=_tee, args=(proc.stderr, [*live_err, stderr_log]), daemon=True),
               threading.Thread(target=_watch, args=(proc.pid, seen, stop), daemon=True)]
    for t in threads:
        t.start()

    def forward(signum: int, _frame) -> None:
        result.signal_received = signal.Signals(signum).name
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                returncode = proc.wait()
                break
            except KeyboardInterrupt:  # a second Ctrl-C while waiting: keep waiting for the captures
                continue
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        stop.set()
        for t in threads:
            t.join(timeout=10)
        stdout_log.close()
        stderr_log.close()
    result.exit_code = exit_code_of(returncode)
    result.ended = time.time()
    result.processes = sorted(seen.values(), key=lambda p: p["started"])
    return result
