"""Profiling from Python: ``with nvprof_wrap.profile() as p: train()``, then ``p.report``.

The built-in CUPTI tracer runs in this process for the duration of the block (or, with ``steps``, for a window of
the training steps marked by ``p.step()``), writes one capture into ``folder`` (a temporary folder unless given),
and ``p.report`` is ``nvprof_wrap.analyze`` of it: the same Report as ``nvprof-wrap report`` prints.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Self

from nvprof_wrap.errors import NvprofWrapError, ToolMissing
from nvprof_wrap.run.steps import step_name
from nvprof_wrap.system import tempdirs

if TYPE_CHECKING:
    from nvprof_wrap.report import Report


class Profile:
    """One profiling window of this process. Use as a context manager, or call ``start()``/``stop()``."""

    def __init__(self, folder: str | Path | None = None, *, steps: tuple[int, int] | None = None,
                 nvtx_steps: bool = True) -> None:
        if steps is not None:  # checked as analyze() checks it: (10, 20), [10, 20] or '10:20'
            from nvprof_wrap.pipeline.arguments import span

            steps = span(steps, "steps", True)
        if folder is not None and not isinstance(folder, (str, Path)):
            raise NvprofWrapError(f"folder must be a path (str or Path), got {type(folder).__name__}")
        if folder is not None and not str(folder).strip():
            raise NvprofWrapError("profile(): folder is an empty path (give '.' for the current folder, or nothing "
                                  "for a temporary one)")
        self.folder = Path(folder) if folder is not None else None
        if self.folder is not None:
            _check_folder(self.folder)
        self.steps = steps
        self.nvtx_steps = nvtx_steps
        self.step_count = 0
        self.capture: Path | None = None
        self._report: Report | None = None
        self._tracing = False
        self._range_open = False

    # -- the window ------------------------------------------------------------------------------------
    def start(self) -> Self:
        if self.folder is None:
            self.folder = Path(tempdirs.make("profile"))
        if self.steps is None or self.steps[0] == 0:
            self._begin()
        self._push_step()
        return self

    def stop(self) -> Profile:
        self._pop_step()
        self._end()
        return self

    def step(self) -> None:
        """Mark the end of a training step: the window opens at step ``steps[0]`` and closes at ``steps[1]``;
        each step is an NVTX range 'step N', the convention ``--steps`` reads."""
        self._pop_step()
        self.step_count += 1
        if self.steps is not None:
            if self.step_count == self.steps[0] and not self._tracing and self.capture is None:
                self._begin()
            elif self.step_count >= self.steps[1] and self._tracing:
                self._end()
        self._push_step()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- results ---------------------------------------------------------------------------------------
    @property
    def report(self) -> Report:
        """The report of the window (read once, then kept)."""
        if self._report is None:
            if self._tracing:
                raise NvprofWrapError("the profiling window is still open: read p.report after the with block")
            if self.capture is None:
                raise NvprofWrapError("nothing was captured (the window never opened, or CUPTI wrote no file)")
            from nvprof_wrap.pipeline import analyze

            self._report = analyze(self.capture)
        return self._report

    def _repr_html_(self) -> str:
        html: str = self.report._repr_html_()  # set on Report by the renderers
        return html

    # -- internals ---------------------------------------------------------------------------------------
    def _begin(self) -> None:
        from nvprof_wrap.tracer import this_process

        folder = self.folder
        assert folder is not None  # start() made one
        _check_folder(folder)
        try:
            this_process.begin(folder)
        except this_process.TracingUnavailable as e:
            raise ToolMissing(f"cannot profile this process: {e}") from None
        except OSError as e:  # the folder cannot be made or written: one line, not a traceback
            raise NvprofWrapError(f"{self.folder}: cannot write the capture there ({e.strerror or e})") from None
        self._tracing = True

    def _end(self) -> None:
        if not self._tracing:
            return
        from nvprof_wrap.tracer import this_process

        self._tracing = False
        self.capture = this_process.end()

    def _push_step(self) -> None:
        if self.nvtx_steps and self._tracing:
            self._range_open = _nvtx("push", step_name(self.step_count))

    def _pop_step(self) -> None:
        if self._range_open:
            _nvtx("pop")
            self._range_open = False


def _check_folder(folder: Path) -> None:
    """profile() writes into a folder: the path must be one, or lie in one (the first part of it that exists)."""
    for p in (folder, *folder.parents):
        try:
            if not p.exists():
                continue
        except OSError as e:
            raise NvprofWrapError(f"{folder}: cannot use it as the capture folder ({e.strerror or e})") from None
        if not p.is_dir():
            where = "" if p == folder else f" ({p} is a file)"
            raise NvprofWrapError(f"{folder}: not a folder{where}: profile() writes its capture into a folder")
        return


def _nvtx(what: str, name: str = "") -> bool:
    """An NVTX range through torch or the nvtx package when either is there; False when neither is."""
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.nvtx.range_push(name) if what == "push" else torch.cuda.nvtx.range_pop()
            return True
    except Exception:  # noqa: BLE001, S110 - no torch, or no CUDA build: try the next
        pass
    try:
        import nvtx

        nvtx.push_range(name) if what == "push" else nvtx.pop_range()
        return True
    except Exception:  # noqa: BLE001
        return False


def profile(folder: str | Path | None = None, *, steps: tuple[int, int] | None = None) -> Profile:
    """Profile a block of this process with the built-in CUPTI tracer (an NVIDIA GPU and a libcupti: the CUDA
    toolkit's, or the nvidia-cuda-cupti wheel PyTorch installs; cupti-python is the fallback)::

        with nvprof_wrap.profile() as p:
            train()
        print(p.report)            # the terminal report; p.report.to_dict() is `--format json`

    ``steps=(10, 20)`` traces only steps 10..19 of a loop that calls ``p.step()`` after each step.
    """
    return Profile(folder, steps=steps)
