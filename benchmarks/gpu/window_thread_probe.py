"""Issue 27: does the tracer record a job's kernels when its window is opened from another thread (the timer of a
`--capture-after` window)? One fresh process per variant (GPU machine):

    python3 benchmarks/gpu/window_thread_probe.py plain|push|main

plain: the window opened and closed from a second thread, as is; push: the same through tracer/window.py's
CuptiRecorder (the job's primary context made current on that thread first); main: from the thread that launches.
Prints the kernel records the capture holds (the loop launches ~1 small kernel per 20 µs for 3 s; the window is the
second second).
"""
from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    variant = sys.argv[1]
    os.environ.update(NVPROF_WRAP_CUPTI_DIR=tempfile.mkdtemp(), NVPROF_WRAP_CAPTURE="seconds:1:2",
                      NVPROF_WRAP_CAPTURE_BY="cupti")
    from nvprof_wrap.tracer import cupti_trace as ct
    from nvprof_wrap.tracer import window

    ct.start()
    tracer = ct._STATE
    import torch

    x = torch.ones(1024, device="cuda")
    torch.cuda.synchronize()
    recorder = window.CuptiRecorder()
    said = []

    def other_thread() -> None:
        time.sleep(1)
        said.append(recorder.enable() if variant == "push" else tracer.resume())
        time.sleep(1)
        said.append(recorder.disable() if variant == "push" else tracer.pause())

    if variant != "main":
        threading.Thread(target=other_thread, daemon=True).start()
    t0 = time.time()
    state = "before"
    while time.time() - t0 < 3:
        x.add_(1)
        if variant == "main":
            if state == "before" and time.time() - t0 > 1:
                said.append(tracer.resume())
                state = "open"
            elif state == "open" and time.time() - t0 > 2:
                said.append(tracer.pause())
                state = "after"
    torch.cuda.synchronize()
    tracer.finalize("probe")
    path = tracer.writer.final_path
    with sqlite3.connect(path) as conn:
        kernels = conn.execute("SELECT COUNT(*) FROM kernel").fetchone()[0]
        runtime = conn.execute("SELECT COUNT(*) FROM runtime").fetchone()[0]
    print(f"probe {variant}: {kernels} kernel records, {runtime} runtime records; said {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
