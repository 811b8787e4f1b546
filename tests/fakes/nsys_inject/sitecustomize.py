# Fake nsys' per-process hook: record that this process ran under the profiler.
import os

if os.environ.get("FAKE_NSYS_PIDS"):
    with open(os.environ["FAKE_NSYS_PIDS"], "a") as f:
        f.write(f"{os.getpid()}\n")
