"""Issue 27: nsys' capture range with no nvprof-wrap in the job. Runs SCRIPT as __main__ and calls cudaProfilerStart
after the job's optimizer step A-1 and cudaProfilerStop after step B-1, on the job's own thread — what a user's
script does with torch.cuda.profiler.start() / stop() under `nsys profile --capture-range=cudaProfilerApi`. The
step count is torch's global optimizer-step hook (every optimizer.step(), as `run --capture-steps` counts them).

    python benchmarks/gpu/profiler_range.py A:B SCRIPT [ARGS...]

Prints one line to stderr at each edge: {"edge": "start"|"stop", "step": N, "held_ms": ...} (the call's own time).
"""
from __future__ import annotations

import json
import runpy
import sys
import time


def main() -> None:
    lo, hi = (int(x) for x in sys.argv[1].split(":"))
    script, sys.argv = sys.argv[2], sys.argv[2:]
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    steps = 0

    def edge(name: str, call) -> None:
        t = time.perf_counter()
        call()
        print(json.dumps({"edge": name, "step": steps, "held_ms": round((time.perf_counter() - t) * 1e3, 3)}),
              file=sys.stderr, flush=True)

    def after_step(optimizer, args, kwargs) -> None:
        nonlocal steps
        steps += 1
        if steps == lo:
            edge("start", torch.cuda.profiler.start)
        elif steps == hi:
            edge("stop", torch.cuda.profiler.stop)

    register_optimizer_step_post_hook(after_step)
    sys.path.insert(0, ".")
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
