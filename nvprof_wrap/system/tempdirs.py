"""nvprof-wrap's temporary folders (unpacked gzip captures, NVTX segments, Kineto parts, SQLite captures recovered
with the journal or WAL beside them: timeline/recover.py), named with the host and process that made them, so that
a later command can remove what a killed one left.

A command removes its folders in ``finally`` blocks, also on SIGTERM/SIGHUP/Ctrl-C (cli/__init__.py). SIGKILL and
the kernel's OOM killer leave no chance: an unpacked gzipped capture (up to 64 GiB) would stay in /tmp for good.
``sweep()``, run at the start of every command, removes the folders of this host whose process is gone and that
have not changed for SWEEP_AFTER_S (a folder of another host on a shared TMPDIR, or of a live process, stays).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

PREFIX = "nvprof-wrap-"
SWEEP_AFTER_S = 300


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def make(kind: str) -> str:
    """A new temporary folder: nvprof-wrap-KIND-HOST-PID-XXXXXXXX."""
    return tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{_host()}-{os.getpid()}-")


# the signals a command ends on by its `finally` blocks (cli/__init__.py): held while a folder is made
_ENDING = {signal.SIGINT, signal.SIGTERM} | ({signal.SIGHUP} if hasattr(signal, "SIGHUP") else set())


@contextmanager
def folder(kind: str) -> Iterator[str]:
    """A temporary folder removed when the block ends, however it ends (as tempfile.TemporaryDirectory). The signals
    a command ends on wait while the folder is made: one that came between the folder's creation and the `try` that
    removes it — the moment a signal sent on seeing the folder lands, on a loaded machine — left it behind (a
    gzipped capture's unpacked copy, up to 64 GiB). Held, it is delivered inside the `try`."""
    held = hasattr(signal, "pthread_sigmask")
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _ENDING) if held else None
    try:
        path = make(kind)
    except BaseException:
        if before is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
        raise
    try:
        if before is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)  # a signal held since is delivered now, in here
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def sweep(root: str | None = None, *, now: float | None = None) -> list[str]:
    """Remove the temporary folders a killed nvprof-wrap left on this host; the paths removed. Never raises."""
    mine = re.compile(rf"^{re.escape(PREFIX)}[a-z]+-{re.escape(_host())}-(\d+)-")
    removed: list[str] = []
    now = time.time() if now is None else now
    try:
        entries = list(os.scandir(root or tempfile.gettempdir()))
    except OSError:
        return removed
    for entry in entries:
        m = mine.match(entry.name)
        if m is None:
            continue
        try:
            if (not entry.is_dir(follow_symlinks=False)
                    or now - entry.stat(follow_symlinks=False).st_mtime < SWEEP_AFTER_S):
                continue
            pid = int(m.group(1))
            import psutil  # here, not on import: every command sweeps, and most find nothing to look at

            if pid == os.getpid() or psutil.pid_exists(pid):
                continue  # alive (or the pid reused): leave it
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.exists(entry.path):
            removed.append(entry.path)
    return removed
