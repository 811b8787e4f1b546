"""What GPUs this machine has, from nvidia-smi (no CUDA library needed in the wrapper's process)."""
from __future__ import annotations

import shutil
import subprocess

from nvprof_wrap.model import Gpu


def list_gpus() -> list[Gpu]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    cmd = [smi, "--query-gpu=index,name,compute_cap,driver_version", "--format=csv,noheader"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    gpus = []
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[0].isdigit():
            gpus.append(Gpu.listed(int(parts[0]), parts[1], parts[2], parts[3]))
    return gpus
