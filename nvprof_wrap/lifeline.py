"""Helper processes (forked readers, the parallel-read pool, the demangler) end with the process that made them,
whatever ends it: SIGKILL, the OOM killer and a closed terminal included. Linux delivers a signal to a child
when its parent dies (prctl PR_SET_PDEATHSIG); elsewhere the helpers end when their pipes close."""
from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1
try:  # looked up here, in the parent: a forked child should not need the dynamic loader's lock
    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):  # pragma: no cover
    _prctl = None


def die_with_parent(parent: int | None = None) -> None:
    """Call first thing in a helper process. parent: the pid that must stay alive (default: the current parent);
    if it is already gone (it died before this ran), exit now."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os._exit(1)
