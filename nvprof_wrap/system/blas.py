"""numpy, imported for nvprof-wrap's own passes with its BLAS thread pool at one thread. Nothing here multiplies
matrices, but a pip-installed numpy's OpenBLAS starts a thread per core when it loads, and each one spins a while
before it sleeps. Measured on an H100 host's 16 cores: `import numpy` then a 1 s sleep cost 2.2 s of CPU (0.23-0.31 s
with OPENBLAS_NUM_THREADS=1), and `report --format json` of a generated 100k-launch export with its sections 2.9-3.0 s
of user time against 1.0-1.1 s so (0.98-1.13 s wall against 0.93-1.03 s) — cores taken from the training job the
same host runs.

The variable is set only while numpy loads (OpenBLAS reads it then) and removed after: a job that `run` starts never
inherits it. Where the user set it, or numpy is loaded already (a notebook, the caller's own code), nothing changes.
Every module of the report's process that uses numpy imports this module first (importing it loads numpy so);
the tracer, which runs inside the user's job, imports numpy as the job does."""
from __future__ import annotations

import os
import sys

VARIABLE = "OPENBLAS_NUM_THREADS"


def import_numpy() -> None:
    """Load numpy with one BLAS thread, unless it is loaded already or the user chose the threads."""
    if "numpy" in sys.modules:
        return
    set_here = VARIABLE not in os.environ
    if set_here:
        os.environ[VARIABLE] = "1"
    try:
        import numpy  # noqa: F401 - loaded now, while the variable holds
    finally:
        if set_here:
            os.environ.pop(VARIABLE, None)


import_numpy()
