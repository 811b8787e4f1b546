"""What profiling costs a job on the GPU: the seed's workload (reuters_mlp.py --precision fp16 --epochs 5) and the
GEMM probe, unprofiled and under each backend that runs on an H200, interleaved, three rounds, median wall time.
It runs on the GPU machine only:

    bash benchmarks/gpu/backend_overhead.sh        # then benchmarks/gpu/tracer_summary.py summary RUN_FOLDER

Here the suite keeps its recorded result (benchmarks/results/backend_overhead.json) and says why it cannot run.
"""
from __future__ import annotations

import shutil

from benchmarks.suite.types import Result, RunArgs, Unavailable

NAME = "backend_overhead"
MEASURES = "job wall time under each backend over the unprofiled job's, on a GPU"
FLOOR = "the unprofiled job"
ANCHOR = "nsys: the same job under Nsight Systems"


def run(args: RunArgs) -> Result:
    why = "no GPU here (nvidia-smi not found)" if shutil.which("nvidia-smi") is None else "the GPU jobs run by script"
    raise Unavailable(f"{why}: run `bash benchmarks/gpu/backend_overhead.sh` on the GPU machine; "
                      "the recorded result stays in benchmarks/results/backend_overhead.json")
