"""Where the external programs nvprof-wrap drives are (nsys, nvprof, ncu), what version they say they are, and the
one thing a reader needs one of them for: exporting an .nsys-rep to SQLite.

At the bottom of the package (it imports nothing from it but ``errors``), so that readers and the launcher both
use it and neither imports the other. Each program is looked for in this order: the path given on the command line
(``--nsys``, ``--ncu``), its ``$NVPROF_WRAP_*`` variable, PATH, then the folders NVIDIA's installers use (the
newest version folder wins).
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

from nvprof_wrap.errors import BadInput

NSYS_GLOBS = ("/opt/nvidia/nsight-systems/*/bin/nsys", "/opt/nvidia/nsight-systems-cli/*/bin/nsys",
              "/usr/local/cuda*/bin/nsys", "/usr/local/cuda*/nsight-systems*/bin/nsys",
              "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys")
NVPROF_GLOBS = ("/usr/local/cuda*/bin/nvprof",)
NCU_GLOBS = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda*/bin/ncu")

NSYS_VAR, NVPROF_VAR, NCU_VAR = "NVPROF_WRAP_NSYS", "NVPROF_WRAP_NVPROF", "NVPROF_WRAP_NCU"


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
    return _find(NSYS_VAR, "nsys", NSYS_GLOBS, explicit)


def find_nvprof(explicit: str | None = None) -> str | None:
    return _find(NVPROF_VAR, "nvprof", NVPROF_GLOBS, explicit)


def find_ncu(explicit: str | None = None) -> str | None:
    return _find(NCU_VAR, "ncu", NCU_GLOBS, explicit)


def tool_version(exe: str) -> str:
    """The last line a program prints for --version ("unknown" when it prints nothing or cannot run)."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[-1].strip() if lines else "unknown"


def nsys_export(path: Path, nsys: str, out: Path | None = None) -> Path:
    """``nsys export --type sqlite`` of an .nsys-rep into ``out`` (default: next to it), unless an export newer
    than the report is already there."""
    out = out or path.with_suffix(".sqlite")
    if out.exists() and out.stat().st_mtime >= path.stat().st_mtime:
        return out
    cmd = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(out), str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not out.exists():
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise BadInput(path, f"nsys export failed (exit {proc.returncode}): {last[0]}")
    return out
