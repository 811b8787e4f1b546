"""Helper processes (forked readers, the parallel-read pool, the demangler) end with the process that made them,
whatever ends it: SIGKILL, the OOM killer and a closed terminal included. Linux delivers a signal to a child
when its parent dies (prctl PR_SET_PDEATHSIG); elsewhere the helpers end when their pipes close. And they are
forked only where forking is safe (``fork_is_safe``)."""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

# What signal.signal takes and gives back: a function, SIG_DFL / SIG_IGN, or None (set outside Python).
Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

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


def fork_is_safe() -> bool:
    return hasattr(os, "fork") and sys.platform != "darwin" and _no_other_threads()


def _no_other_threads() -> bool:
    """A thread inside SQLite when we fork may hold one of SQLite's global mutexes (its allocator's, on every
    malloc), and the child would wait for it forever. The command line's only other thread is rich's spinner
    (rich.live's _RefreshThread), which never touches SQLite; a program with threads of its own reads in one
    process."""
    me = threading.current_thread()
    return all(t is me or type(t).__name__ == "_RefreshThread" for t in threading.enumerate())


def end_on(signals: Iterable[int], handler: Callable[[int, FrameType | None], Any]) -> dict[int, Handler]:
    """Handle these signals with ``handler`` (errors.terminate: raise Terminated) in this process — unless the
    process was told to ignore them (nohup); returns the handlers they replaced, for ``restore``. Outside the main
    thread (a library caller's thread) signals cannot be set: nothing changes."""
    previous: dict[int, Handler] = {}
    for s in signals:
        try:
            if signal.getsignal(s) is not signal.SIG_IGN:
                previous[s] = signal.signal(s, handler)
        except (ValueError, OSError):
            break
    return previous


def restore(previous: dict[int, Handler]) -> None:
    for s, h in previous.items():
        try:
            signal.signal(s, h)
        except (ValueError, OSError, TypeError):
            pass


def terminal_fds() -> tuple[int, ...]:
    """Which of our stdout and stderr are a terminal (asked before it can hang up)."""
    out = []
    for fd in (1, 2):
        try:
            if os.isatty(fd):
                out.append(fd)
        except OSError:
            pass
    return tuple(out)


def leave_terminal(fds: tuple[int, ...]) -> None:
    """The terminal hung up: what we would still print to it goes to /dev/null instead (writing to a hung-up
    terminal fails with EIO); files and pipes we print to are left as they are."""
    if not fds:
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    for fd in fds:
        try:
            os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)
