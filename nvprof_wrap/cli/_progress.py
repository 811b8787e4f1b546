"""A spinner on stderr while captures are read (only on a terminal, only when reading takes a while)."""
from __future__ import annotations

import sys
import threading


class reading:
    """A rich spinner on stderr naming the file being read, shown only when reading takes over ``after_s`` seconds
    and stderr is a terminal (never in a pipe, a file or CI logs). Use: ``with reading() as update: update(path)``."""

    def __init__(self, after_s: float = 2.0) -> None:
        self.after_s, self.text, self.status, self.timer = after_s, "reading the captures", None, None
        self.lock = threading.Lock()

    def __enter__(self):
        if sys.stderr.isatty():
            self.timer = threading.Timer(self.after_s, self._show)
            self.timer.daemon = True
            self.timer.start()
        return self.update

    def _show(self) -> None:
        from rich.console import Console

        with self.lock:
            if self.timer is not None:
                self.status = Console(stderr=True).status(self.text)
                self.status.start()

    def update(self, path) -> None:
        with self.lock:
            self.text = f"reading {getattr(path, 'name', path)}"
            if self.status is not None:
                self.status.update(self.text)

    def __exit__(self, *exc) -> None:
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            if self.status is not None:
                self.status.stop()
