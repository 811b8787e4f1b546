"""The machine a result was measured on: what makes two results comparable, or not."""
from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Machine:
    cores: int
    cpu: str
    python: str
    version: str  # nvprof-wrap's
    commit: str
    note: str = ""  # what a reader must know of its load: shared, noisy, other work beside it


def describe(note: str = "") -> Machine:
    """This machine, now. The load average goes into the note: a loaded machine's figures are not a bar."""
    from nvprof_wrap import __version__

    load = os.getloadavg()[0]
    loaded = f"load average {load:.1f} on {_cores()} cores at the start"
    return Machine(cores=_cores(), cpu=_cpu(), python=platform.python_version(), version=__version__,
                   commit=_commit(), note="; ".join(filter(None, [note, loaded])))


def _cores() -> int:
    return len(os.sched_getaffinity(0))


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str:
    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return out.stdout.strip() if out.returncode == 0 else ""

    head = git("rev-parse", "--short=12", "HEAD")
    if not head:
        return "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "nvprof_wrap")
    return f"{head}+changes" if dirty else head
