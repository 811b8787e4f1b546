"""A spinner on stderr while captures are read (only on a terminal, only when reading takes a while)."""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.status import Status


class reading:
    """A rich spinner on stderr naming the file being read, shown only when reading takes over ``after_s`` seconds
    and stderr is a terminal (never in a pipe, a file or CI logs). Use: ``with reading() as update: update(path)``."""

    def __init__(self, after_s: float = 2.0) -> None:
        self.after_s, self.text = after_s, "reading the captures"
        self.status: Status | None = None
        self.timer: threading.Timer | None = None
        self.lock = threading.Lock()

    def __enter__(self) -> Callable[[Path | str], None]:
        if sys.stderr.isatty():
            self.timer = timer = threading.Timer(self.after_s, self._show)
            timer.daemon = True
            timer.start()
        return self.update

    def _show(self) -> None:
        from rich.console import Console

        with self.lock:
            if self.timer is not None:
                self.status = Console(stderr=True).status(self.text)
                self.status.start()

    def update(self, path: Path | str) -> None:
        with self.lock:
            self.text = f"reading {getattr(path, 'name', path)}"
            if self.status is not None:
                self.status.update(self.text)

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            if self.status is not None:
                self.status.stop()
