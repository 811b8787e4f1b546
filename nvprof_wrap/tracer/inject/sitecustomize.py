"""nvprof-wrap's CUPTI injector, imported by Python at start-up in every process of a traced job.

The launcher puts this folder first on PYTHONPATH; it must hold nothing but this file so that no other
module is shadowed. Two jobs, in this order:

1. chain to the sitecustomize that we shadow (the next one along sys.path), as Python would have run it;
2. when NVPROF_WRAP_CUPTI_DIR is set, start the CUPTI tracer;
3. when NVPROF_WRAP_CAPTURE is set, the capture window (tracer/window.py); then the annotations;
4. when NVPROF_WRAP_NUMERICS is set, the numerics recorder (tracer/numerics.py).

Nothing here may break the user's program: every failure becomes one ``nvprof-wrap:`` line on stderr.
"""
# Broad excepts are the point here: this code runs inside the user's job and must never break it.
# ruff: noqa: BLE001, S110
from __future__ import annotations

import os
import sys

# Type checkers read the import below; at run time this start-up hook imports nothing it does not need.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec


def _warn(message: str) -> None:
    try:
        sys.stderr.write("nvprof-wrap: " + " ".join(str(message).split()) + "\n")
        sys.stderr.flush()
    except Exception:
        pass


def _same_dir(entry: str, here: str) -> bool:
    try:
        return os.path.realpath(entry or os.getcwd()) == here
    except Exception:
        return False


def _find_previous(here: str) -> ModuleSpec | None:
    """The spec of the next sitecustomize along sys.path that is not this very file (or None)."""
    from importlib.machinery import PathFinder

    mine = os.path.realpath(__file__)
    path = [p for p in sys.path if isinstance(p, str) and not _same_dir(p, here)]
    while True:
        spec = PathFinder.find_spec("sitecustomize", path)
        if spec is None or not spec.origin:
            return spec
        if os.path.realpath(spec.origin) != mine:  # a second copy of us (symlinks): skip its folder too
            return spec
        gone = os.path.dirname(os.path.realpath(spec.origin))
        path = [p for p in path if not _same_dir(p, gone)]


def _chain_previous_sitecustomize() -> None:
    """Run the sitecustomize that this file shadows, like site.py would have (errors → one line, go on)."""
    import importlib.util

    here = os.path.dirname(os.path.realpath(__file__))
    ours = sys.modules.get("sitecustomize")
    spec = None
    try:
        spec = _find_previous(here)
        if spec is None:
            return
        module = importlib.util.module_from_spec(spec)  # gives a namespace folder its (no-op) loader
        sys.modules["sitecustomize"] = module  # as a plain import would: the chained one is "the" sitecustomize
        if spec.loader is not None:
            spec.loader.exec_module(module)
    except Exception as e:  # site.py also reports and carries on; SystemExit/KeyboardInterrupt propagate
        if ours is not None:
            sys.modules["sitecustomize"] = ours
        where = getattr(spec, "origin", None) or "?"
        _warn(f"the pre-existing sitecustomize ({where}) failed: {type(e).__name__}: {e}")


def _start_tracer() -> None:
    if not os.environ.get("NVPROF_WRAP_CUPTI_DIR"):
        return  # not a traced job: import nothing, do nothing
    try:
        from nvprof_wrap.tracer import cupti_trace, hooks

        cupti_trace.start()
        if cupti_trace._STATE is not None:
            hooks.install()  # atexit, SIGINT/SIGTERM and fork: the capture is finished on every exit
    except Exception as e:
        _warn(f"CUPTI tracer not started ({type(e).__name__}: {e}); this process is not traced")


def _start_window() -> None:
    if not os.environ.get("NVPROF_WRAP_CAPTURE"):
        return
    try:
        from nvprof_wrap.tracer import window

        window.install()
    except Exception as e:
        _warn(f"capture window not installed ({type(e).__name__}: {e}); the rest of the job is recorded")
        try:
            from nvprof_wrap.tracer import window

            window.CuptiRecorder().enable()  # a tracer waiting for a window that will never come: record now
        except Exception:
            pass


def _start_annotations() -> None:
    if not os.environ.get("NVPROF_WRAP_ANNOTATE"):
        return
    try:
        from nvprof_wrap.tracer import annotate

        annotate.install()
    except Exception as e:
        _warn(f"NVTX annotations not installed ({type(e).__name__}: {e})")


def _start_numerics() -> None:
    if not os.environ.get("NVPROF_WRAP_NUMERICS"):
        return
    try:
        from nvprof_wrap.tracer import numerics_hooks

        numerics_hooks.install()
    except Exception as e:
        _warn(f"numerics recorder not installed ({type(e).__name__}: {e})")


# Chain first: a pre-existing sitecustomize may set the environment (devices, libraries) the job runs
# with, and signal handlers it installs are then wrapped by ours instead of replacing them.
_chain_previous_sitecustomize()
_start_tracer()
_start_window()
_start_annotations()
_start_numerics()
