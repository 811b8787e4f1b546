# Fake nsys' per-process hook: record that this process ran under the profiler. Real nsys injects itself without
# Python, so it hides no sitecustomize of the job's: this one runs the next one along sys.path (nvprof-wrap's own
# injector, for `run --annotate` and the step marks) as if it were not here.
import os
import sys

_AGAIN = hasattr(sys, "_fake_nsys_injected")  # the job's sitecustomize chains back to us: once is enough
sys._fake_nsys_injected = True
if os.environ.get("FAKE_NSYS_PIDS") and not _AGAIN:
    with open(os.environ["FAKE_NSYS_PIDS"], "a") as f:
        f.write(f"{os.getpid()}\n")


def _chain() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.realpath(__file__))
    path = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


if not _AGAIN:
    _chain()
