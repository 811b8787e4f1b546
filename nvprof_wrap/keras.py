"""A Keras callback that profiles a window of training steps::

    from nvprof_wrap.keras import ProfileSteps
    cb = ProfileSteps(start=10, stop=20)           # batches 10..19, counted over the whole fit (across epochs)
    model.fit(x, y, callbacks=[cb])
    print(cb.report)

The built-in CUPTI tracer runs in this process for those batches only (skipping compilation and warm-up), each batch
is an NVTX range 'step N' (through torch or the nvtx package, when either is importable), and ``cb.report`` is the
same Report ``nvprof-wrap report`` prints. Needs Keras 3 (any backend that runs on an NVIDIA GPU: torch, jax,
tensorflow) and a libcupti: the CUDA toolkit's or the nvidia-cuda-cupti wheel PyTorch installs (cupti-python is the
fallback). Where tracing cannot start, one line says why and ``fit`` runs unprofiled.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import keras

from nvprof_wrap.api import Profile
from nvprof_wrap.errors import NvprofWrapError

if TYPE_CHECKING:
    from nvprof_wrap.report import Report


class ProfileSteps(keras.callbacks.Callback):  # type: ignore[misc]  # keras ships no types: Callback is Any
    """Profile training batches ``start`` to ``stop - 1`` (counted over the whole fit, across epochs)."""

    def __init__(self, start: int = 10, stop: int = 20, folder: str | Path | None = None) -> None:
        super().__init__()
        if not 0 <= start < stop:
            raise ValueError(f"ProfileSteps needs 0 <= start < stop, got start={start}, stop={stop}")
        self.start, self.stop = start, stop
        self.profile = Profile(folder, steps=(start, stop))
        self.seen = 0
        self._started = False
        self.failed: NvprofWrapError | None = None

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if not self._started:
            self._started = True
            self._guarded(self.profile.start)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.seen += 1
        self._guarded(self.profile.step)

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._started:
            self._guarded(self.profile.stop)

    def _guarded(self, call: Callable[[], object]) -> None:
        """Profiling never aborts ``fit``: where tracing cannot start, one line says why, training goes on
        unprofiled, and ``report`` raises with that reason."""
        if self.failed is not None:
            return
        try:
            call()
        except NvprofWrapError as e:
            self.failed = e
            print(f"nvprof-wrap: ProfileSteps: not profiling this fit: {e}", file=sys.stderr)

    @property
    def report(self) -> Report:
        if self.failed is not None:
            raise self.failed
        return self.profile.report

    @property
    def capture(self) -> Path | None:
        return self.profile.capture
