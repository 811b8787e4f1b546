"""The process hooks of the CUPTI tracer: atexit, SIGINT/SIGTERM and fork, installed once per process.
They act on the tracer of the process, ``cupti_trace._STATE`` (a fork child gets its own). docs/cupti-tracer.md
("Which exits flush", "Limits") says what each does. Runs inside the user's process: never raises into it."""
# ruff: noqa: BLE001, S110
from __future__ import annotations

import atexit
import os
import signal
import threading
from typing import Any

from nvprof_wrap.tracer import cupti_trace as ct

FORK_LOCK_TIMEOUT_S = 30.0
_PREV_HANDLERS: dict[int, Any] = {}
_HOOKS_INSTALLED = False


def _at_exit() -> None:
    tracer = ct._STATE
    if tracer is None:
        return
    tracer.finalize("exit")
    for signum in tracer.deferred_signals:  # a fatal signal that came while we were finishing
        if not callable(_PREV_HANDLERS.get(signum, signal.SIG_DFL)):
            _die_by(signum)


def _on_signal(signum: int, frame: Any) -> None:
    """Flush (or finish the file, when the signal is about to end the process), then chain."""
    previous = _PREV_HANDLERS.get(signum, signal.SIG_DFL)
    tracer = ct._STATE
    if tracer is not None:
        if tracer.finalizing:
            tracer.deferred_signals.append(signum)
            return
        if callable(previous):
            tracer.flush(forced=False)  # the process may well go on (KeyboardInterrupt can be caught)
        else:
            tracer.finalize(signal.Signals(signum).name)
    if callable(previous):
        previous(signum, frame)  # default_int_handler raises KeyboardInterrupt here
        return
    _die_by(signum)


def _die_by(signum: int) -> None:
    """End the process by this signal's default action, so the exit status still says 'killed by SIGxxx'."""
    try:
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_kill(threading.get_ident(), signum)
    except Exception:
        pass
    os._exit(128 + signum)


def _install_signal_handlers() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous = signal.getsignal(signum)
            if previous is signal.SIG_IGN or previous is None:
                continue  # ignored on purpose, or set outside Python: leave it alone
            signal.signal(signum, _on_signal)
            _PREV_HANDLERS[signum] = previous
        except (ValueError, OSError):  # not the main thread
            pass


def _before_fork() -> None:
    tracer = ct._STATE
    if tracer is not None and not tracer.finalized:
        # No thread of ours may be inside SQLite when the process is copied: its mutexes would stay
        # locked in the child.
        tracer.fork_lock_held = tracer.writer.lock.acquire(timeout=FORK_LOCK_TIMEOUT_S)


def _after_fork_parent() -> None:
    tracer = ct._STATE
    if tracer is not None and tracer.fork_lock_held:
        tracer.fork_lock_held = False
        tracer.writer.lock.release()


def _after_fork_child() -> None:
    parent = ct._STATE
    if parent is None:
        return
    parent.writer.leak()
    ct._STATE = None if parent.finalized else parent.forked_child()


def install() -> None:
    """atexit, SIGINT/SIGTERM and fork hooks, once per process (a fork child inherits them)."""
    global _HOOKS_INSTALLED
    if _HOOKS_INSTALLED:
        return
    _HOOKS_INSTALLED = True
    atexit.register(_at_exit)  # registered first, so it runs last: after the job's own atexit work
    _install_signal_handlers()
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent,
                        after_in_child=_after_fork_child)
