"""Run the job: never through a shell, output saved and shown live, signals forwarded to the whole process
group, the process tree recorded with psutil, the job's exit code returned.

The job never depends on the wrapper staying alive: it runs in its own session, its stdout and stderr are the
run folder's log files themselves (file descriptors handed to it, not pipes only the wrapper reads), and the
wrapper shows them live by following those files. A wrapper killed by SIGKILL or the OOM killer leaves the job,
its profiler, its logs and its capture running to the end. A closed terminal (an SSH session gone) sends the
wrapper SIGHUP: that one is not forwarded (it was, and the job died with the terminal) — the wrapper stops
printing to the terminal, waits for the job and records its end as usual. Ctrl-C and SIGTERM are forwarded."""
from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO

import psutil

from nvprof_wrap.errors import BadInput, CannotWrite
from nvprof_wrap.launch.base import RANK_VARS
from nvprof_wrap.run import Run
from nvprof_wrap.run.manifest import Process
from nvprof_wrap.system import files
from nvprof_wrap.system.lifeline import leave_terminal, terminal_fds


@dataclass
class JobResult:
    exit_code: int
    started: float
    ended: float
    processes: list[Process] = field(default_factory=list)
    signal_received: str | None = None
    hung_up: bool = False  # the terminal closed while the job ran (SIGHUP, not forwarded)


POLL_S = 0.05


# What the profilers themselves print around the job (nsys' progress bars and "Generated:" lines, ncu's ==PROF==,
# nvprof's ==PID== lines). Shown live only with --verbose; the run folder's logs always keep every byte.
CHATTER = re.compile(
    rb"^(?:Collecting data\.\.\.|Generating '.*\.qdstrm'|Generated:|Processing events\.\.\.|Saving temporary "
    rb"|Creating final output files|Processing \[|Exporting \d|\[\d+/\d+\] \[[= \d%]*\]|==PROF== |==\d+== "
    rb"|\s+\S+\.(?:nsys-rep|qdrep|sqlite|ncu-rep|nvvp)\s*$"
    rb"|WARNING: (?:CPU IP/backtrace sampling|Backtraces will not|CPU context switch tracing))")
# a partial line that may still become chatter is held back until its end arrives
_MAYBE = (b"Collecting", b"Generat", b"Processing", b"Saving", b"Creating", b"Exporting", b"[", b"==", b" ", b"\t",
          b"WARNING")


def _filter(buf: bytes, final: bool) -> tuple[bytes, bytes]:
    """(what to show, what to hold back) of ``buf``: whole lines (ended by \\n or \\r) that are not chatter; a last
    partial line is held while it may still be chatter, unless ``final``."""
    out, start = [], 0
    for m in re.finditer(rb"[^\r\n]*(?:\r\n|\r|\n)", buf):
        line = m.group()
        if not final and m.end() == len(buf) and line.endswith(b"\r"):
            break  # a "\r" at the end of a read may be the first half of "\r\n"
        if not CHATTER.match(line):
            out.append(line)
        start = m.end()
    rest = buf[start:]
    if rest and (final or not any(rest.startswith(p) or p.startswith(rest) for p in _MAYBE)):
        if not CHATTER.match(rest):
            out.append(rest)
        rest = b""
    return b"".join(out), rest


def _follow(path: Path, sink: IO[bytes] | None, done: threading.Event, chatter: bool = True) -> None:
    """Copy what the job appends to ``path`` to ``sink`` as it comes, until ``done`` and the end of the file; without
    ``chatter`` the profiler's own lines are left out (they stay in the file).
    A sink that fails (a closed pipe: `| head`, a closed terminal) is dropped; the file has everything."""
    held = b""
    with open(path, "rb") as f:
        while True:
            chunk = f.read(65536)
            end = not chunk and done.is_set()
            if chunk or (held and end):
                shown, held = (held + chunk, b"") if chatter else _filter(held + chunk, final=end)
                if sink is not None and shown:
                    try:
                        sink.write(shown)
                        sink.flush()
                    except (OSError, ValueError):
                        sink = None
            if end:
                return
            if not chunk:
                done.wait(POLL_S)


def _rank_of(p: psutil.Process) -> int | None:
    """The distributed rank a launcher (torchrun, srun, mpirun) gave the process, from its environment."""
    try:
        env = p.environ()
    except psutil.Error:
        return None
    for var in RANK_VARS:
        if env.get(var, "").isdigit():
            return int(env[var])
    return None


def _watch(pid: int, seen: dict[int, Process], stop: threading.Event) -> None:
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
                        seen[p.pid] = Process(p.pid, p.ppid(), tuple(p.cmdline()[:20]), p.create_time(),
                                              _rank_of(p))
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
            silent: bool = False, keep_fds: tuple[int, ...] = (), chatter: bool = True) -> JobResult:
    """quiet_stdout: the job's stdout is shown on our stderr, so that ours carries only a JSON/CSV report.
    silent: the job's output goes only to stdout.log / stderr.log (doctor's probe). keep_fds: descriptors the job
    inherits (the run folder's lock: a job outliving its wrapper keeps its folder claimed)."""
    full_env = {**os.environ, **env}
    logs = Run(outdir).logs
    try:
        with files.open_file(logs[0], "wb", "log") as out, files.open_file(logs[1], "wb", "log") as err:
            # A new session: the job and all its children form one process group we can signal together.
            proc = subprocess.Popen(argv, env=full_env, stdout=out, stderr=err, pass_fds=keep_fds,
                                    stdin=sys.stdin if sys.stdin and sys.stdin.isatty() else subprocess.DEVNULL,
                                    start_new_session=True)
    except FileNotFoundError as e:
        if e.filename in (str(logs[0]), str(logs[1])):
            raise CannotWrite(e.filename, "cannot create the log file") from None
        raise BadInput(argv[0], "command not found") from None
    except PermissionError as e:
        if e.filename in (str(logs[0]), str(logs[1])):
            raise CannotWrite(e.filename, "cannot create the log file (permission denied)") from None
        raise BadInput(argv[0], "permission denied") from None
    except OSError as e:
        raise CannotWrite(e.filename or outdir, f"cannot start the job ({e.strerror})") from None
    started = time.time()
    result = JobResult(0, started, 0.0)
    seen: dict[int, Process] = {}
    done, stop = threading.Event(), threading.Event()
    sinks = (None, None) if silent else (sys.stderr.buffer if quiet_stdout else sys.stdout.buffer, sys.stderr.buffer)
    threads = [threading.Thread(target=_follow, args=(log, sink, done, chatter), daemon=True)
               for log, sink in zip(logs, sinks)]
    threads.append(threading.Thread(target=_watch, args=(proc.pid, seen, stop), daemon=True))
    for t in threads:
        t.start()

    def forward(signum: int, _frame: FrameType | None) -> None:
        result.signal_received = signal.Signals(signum).name
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    terminals = terminal_fds()

    def hangup(signum: int, _frame: FrameType | None) -> None:
        result.hung_up = True
        leave_terminal(terminals)

    # Not a signal the wrapper was told to ignore (nohup): the job inherits that, and must keep it. SIGHUP (the
    # terminal closed) is not the job's business: it runs in its own session, without the terminal.
    previous = {s: signal.signal(s, hangup if s == signal.SIGHUP else forward)
                for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        while True:
            try:
                returncode = proc.wait()
                break
            except KeyboardInterrupt:  # a second Ctrl-C while waiting: keep waiting for the captures
                continue
    finally:
        for s, h in previous.items():  # after a hangup, the rest of the run (recording, the report) ignores more
            signal.signal(s, signal.SIG_IGN if s == signal.SIGHUP and result.hung_up else h)
        stop.set()
        done.set()
        for t in threads:
            t.join(timeout=10)
    result.exit_code = exit_code_of(returncode)
    result.ended = time.time()
    result.processes = sorted(seen.values(), key=lambda p: p.started if p.started is not None else math.inf)
    return result
