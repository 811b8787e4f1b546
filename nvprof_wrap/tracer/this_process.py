"""Tracing a window of this very process (``nvprof_wrap.profile``, the notebook magic, the Keras callback).

``begin(folder)`` starts the CUPTI tracer of ``cupti_trace`` in this process, writing into ``folder``; ``end()``
finishes its capture file and returns its path. Unlike ``cupti_trace.start()``, which runs inside a job wrapped by
``nvprof-wrap run`` and must only ever print one line, these are called by the user's own code, so they raise
``TracingUnavailable`` with the reason when tracing cannot start. One window at a time; windows may follow each other
in one process (each gets its own capture file).
"""
from __future__ import annotations

import os
from pathlib import Path

from nvprof_wrap.tracer import cupti_trace as ct
from nvprof_wrap.tracer import hooks
from nvprof_wrap.tracer.setup import ENV_RUNTIME


class TracingUnavailable(RuntimeError):
    """This process cannot be traced now; the message says why."""


def active() -> bool:
    return ct._STATE is not None


def begin(folder: Path) -> None:
    if ct._STATE is not None:
        if os.environ.get(ct.ENV_DIR):
            raise TracingUnavailable("this process is already traced as a whole (nvprof-wrap run --backend cupti): "
                                     "its run report covers this code")
        raise TracingUnavailable("a profiling window is already open in this process")
    other = os.environ.get("CUDA_INJECTION64_PATH")
    if other:
        raise TracingUnavailable(f"another profiler is attached to this process (CUDA_INJECTION64_PATH={other})")
    folder.mkdir(parents=True, exist_ok=True)
    # Measured on an H200 (CUPTI 13.0.85): enabling only the launch calls' API records (per callback id) once the
    # process already has a CUDA context yields no record at all, so kernels could not be attributed to NVTX
    # ranges; a window takes the RUNTIME and DRIVER kinds instead (every API call: more records, same answer).
    previous = os.environ.get(ENV_RUNTIME)
    if previous is None:
        os.environ[ENV_RUNTIME] = "kinds"
    # The same start as a traced job's (ctypes binding first, cupti-python as its fallback). Inside a job the
    # tracer may only print a line; here the user's own code asked, so the lines it would print become the error.
    said: list[str] = []
    printing, ct._warn = ct._warn, said.append
    try:
        ct._start(str(folder.resolve()))
    finally:
        ct._warn = printing
        if previous is None:
            os.environ.pop(ENV_RUNTIME, None)
    if ct._STATE is None:
        raise TracingUnavailable(" ".join(" ".join(said).split()) or "CUPTI could not be started")
    for line in said:  # started, with something worth saying (a fallback taken, say)
        printing(line)
    hooks.install()  # a window still open when the process exits, or is interrupted, is finished all the same


def end() -> Path | None:
    """Finish the open window's capture; its path (None when no window was open or nothing could be written)."""
    tracer = ct._STATE
    if tracer is None:
        return None
    try:
        tracer.finalize("profile window end")
    finally:
        ct._STATE = None
    path = Path(tracer.writer.final_path) if tracer.writer.final_path else None
    return path if path is not None and path.is_file() else None
