"""What a capture window (`run --capture-steps A:B`) costs the job it profiles, on a GPU: per launch inside the
window, the edges that open and close it, and nanoGPT's loop (1,000 steps, window 100:120) against the unprofiled
job, for the cupti and nsys windows. It runs on the GPU machine only, part by part:

    bash benchmarks/gpu/capture_window.sh PART       # parts G to R; raw logs in benchmarks/results/capture_window/

Here the suite keeps its recorded result (benchmarks/results/capture_window_cost.json, the figures read from those
logs; the whole account in docs/backends.md, "Capture windows") and says why it cannot run.
"""
from __future__ import annotations

import shutil

from benchmarks.suite.types import Result, RunArgs, Unavailable

NAME = "capture_window_cost"
MEASURES = ("what a capture window costs the profiled job on a GPU: per launch inside it, its edges, and nanoGPT's "
            "training loop with a 20-step window, for the cupti and nsys windows")
FLOOR = "the unprofiled job (and CUPTI's own floor for the same record kinds, per launch)"
ANCHOR = "raw nsys: its capture range started and stopped by the job's own thread, no nvprof-wrap in the job"


def run(args: RunArgs) -> Result:
    why = "no GPU here (nvidia-smi not found)" if shutil.which("nvidia-smi") is None else "the GPU jobs run by script"
    raise Unavailable(f"{why}: run `bash benchmarks/gpu/capture_window.sh PART` (parts G to R) on the GPU machine; "
                      "the recorded result stays in benchmarks/results/capture_window_cost.json")
