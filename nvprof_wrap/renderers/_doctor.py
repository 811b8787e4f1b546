"""What `doctor` found, as lines of text: shared by the renderers (each one's render_doctor)."""
from __future__ import annotations

from typing import Any


def lines(f: dict[str, Any]) -> list[str]:
    out = ["GPUs: " + ("none found (nvidia-smi)" if not f["gpus"] else "; ".join(
        f"{g['index']}: {g['name']}, compute capability {g['compute_capability']}, driver {g['driver']}"
        for g in f["gpus"]))]
    for k, v in f["profilers"].items():
        out.append(f"{k}: " + (f"{v['path']} ({v['version']})" if v else "not found"))
    out.append(f"cupti-python: {'importable' if f['cupti_python'] else 'not installed (pip install cupti-python)'}")
    lib = f.get("libcupti")
    if lib is not None:
        out.append("libcupti (the cupti backend's tracer): " + (f"{lib['path']} (CUPTI API {lib['api_version']})"
                                                                if lib.get("path") else lib.get("why", "not found")))
    hw = f.get("hardware_sampling")
    if hw is not None:
        out.append("tensor-pipe sampling (run): " + (f"NVML GPM on GPU {', '.join(map(str, hw['gpm_devices']))}"
                                                     if hw.get("gpm_devices") else f"no GPM sampler: {hw.get('why')}"))
    packages = f["python_packages"].items()
    out.append("Python packages: " + ", ".join(f"{m} {'yes' if ok else 'no'}" for m, ok in packages))
    out.append(f"KERAS_BACKEND: {f['keras_backend']}")
    if "probe" in f:
        p = f["probe"]
        out.append(f"matmul probe: {p['verdict']} (backend {p['backend']}, {p['folder']})" if p["ran"]
                   else f"matmul probe not run: {p['why']}")
    return out
