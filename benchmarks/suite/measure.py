"""How the suite times things: each measurement a fresh process (wall time, and the peak memory of its whole
process tree), and the captures it runs on generated once per size (benchmarks.generate) and reused."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from benchmarks.suite.machine import ROOT

SAMPLE_S = 0.25


@dataclass(frozen=True)
class Measured:
    wall_s: float
    peak_mb: float
    stdout: str = ""  # what the process printed, when measure() was asked to keep it


def measure(cmd: list[str], env: dict[str, str] | None = None, keep_stdout: bool = False) -> Measured:
    """Wall seconds and peak memory (MB) of one fresh process and its children: `report` forks workers for big
    captures (system/fork.py), so the memory of the whole process tree is summed, as PSS (each shared page split
    between the processes sharing it; RSS would count the pages a forked child shares with its parent once per
    process), or RSS where the system has no PSS. Sampled every SAMPLE_S: reading PSS (/proc/PID/smaps) is not
    free — every 20 ms on 2 cores it slowed a 6 s report to 11 s. keep_stdout: the output goes to a temporary file
    (a pipe would fill and block the process) and comes back in Measured.stdout."""
    full = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                NO_COLOR="1", **(env or {}))
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        p = psutil.Popen(cmd, stdout=out if keep_stdout else subprocess.DEVNULL, stderr=err, env=full, cwd=ROOT)
        peak = 0
        while True:
            try:
                peak = max(peak, sum(_memory(q) for q in (p, *p.children(recursive=True))))
            except psutil.Error:
                pass
            try:  # waits at most SAMPLE_S, but returns at the exit: a sleep here made every wall a multiple of it
                code = p.wait(timeout=SAMPLE_S)
                break
            except psutil.TimeoutExpired:
                continue
        wall = time.perf_counter() - t0
        if code != 0:
            err.seek(0)
            raise RuntimeError(f"{cmd[:4]} failed: {err.read().decode(errors='replace')[-500:]}")
        out.seek(0)
        printed = out.read().decode(errors="replace") if keep_stdout else ""
    return Measured(wall, peak / 2**20, printed)


def _memory(proc: psutil.Process) -> int:
    try:
        return int(proc.memory_full_info().pss)
    except (AttributeError, OSError):
        return int(proc.memory_info().rss)


def python(*args: str) -> list[str]:
    return [sys.executable, *args]


def report_cmd(capture: Path | str) -> list[str]:
    return python("-m", "nvprof_wrap", "report", str(capture), "--format", "json")


def generated(kind: str, n: int, path: Path, *extra: str) -> Path:
    """A capture of benchmarks.generate, made once: later runs of the same size reuse it."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(python("-m", "benchmarks.generate", kind, str(n), str(path), *extra), cwd=ROOT, check=True)
    return path


def without_nvtx(capture: Path) -> Path:
    """The same capture with its NVTX ranges removed: a script run without `--annotate` or markers."""
    plain = capture.with_name(capture.stem + "_nonvtx.sqlite")
    if not plain.exists():
        shutil.copy(capture, plain)
        with sqlite3.connect(plain) as conn:
            conn.execute("DELETE FROM NVTX_EVENTS")
        conn.close()
    return plain


def values(ms: list[Measured]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(wall seconds, peak MB) of each repeat, rounded as the results keep them."""
    return tuple(round(m.wall_s, 3) for m in ms), tuple(round(m.peak_mb, 1) for m in ms)
