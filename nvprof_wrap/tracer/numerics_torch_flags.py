"""The per-step values of the PyTorch numerics recorder (tracer/numerics_torch.py) kept on the device: the loss, the
largest |weight|, the loss scale and the GradScaler's found-inf count of every step, read without stopping the job.

Reading a device value on the host (``.item()``) waits for the GPU to finish all the work queued before it: on a
job whose host runs a step or two ahead of the GPU, a read each step makes every step wait (issue 48: nanoGPT's
11 ms iterations 1.4-1.8× slower). So a step's values are gathered into one small tensor on their device (one
``cat``), copied into pinned host memory without blocking, and read once a CUDA event recorded after the copy says
it has landed (``query()``: no wait) — a few steps later, in step order. A sampled step reads everything at once
(its statistics wait anyway); on the CPU the values are ready at once (nothing to wait for); a device without CUDA
events (MPS, XPU) is read at the next sampled step, or after CAP steps.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

CAP = 256  # the most steps kept unread: past it the oldest are read now (a wait, once per CAP steps at most)


@dataclass(frozen=True)
class StepValues:
    """One step's values once read on the host (the loss record's fields, and what makes the step bad)."""

    step: int
    loss: float | None  # None: no loss seen this step
    weights_finite: bool
    scale: float | None
    skipped: bool | None  # None: no GradScaler stepped

    @property
    def bad(self) -> bool:
        return self.loss is None or not math.isfinite(self.loss) or bool(self.skipped) or not self.weights_finite


@dataclass
class _Unread:
    step: int
    names: tuple[str, ...]  # what each element of ``values`` is: "loss", "wmax", "scale", "found"
    values: Any  # the device tensor (or, on the CPU, the host one)
    host: Any  # the pinned host tensor the values are copied into, or None
    event: Any  # the CUDA event recorded after the copy, or None
    scale: float | None  # a scale known on the host (a GradScaler before its first update)
    scaler: bool


class DeviceValues:
    """The steps not yet read, oldest first."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.unread: deque[_Unread] = deque()

    def add(self, step: int, loss: Any, wmax: Any, scale: Any, found: Any, scaler: bool) -> None:
        """Queues step ``step``'s values (device tensors or None; ``scale`` may be a float). Launches one ``cat`` and
        one copy; never waits."""
        torch = self.torch
        names, parts = [], []
        host_scale = None
        for name, v in (("loss", loss), ("wmax", wmax), ("scale", scale), ("found", found)):
            if isinstance(v, torch.Tensor):
                names.append(name)
                parts.append(v.detach().reshape(1))
            elif name == "scale" and v is not None:
                host_scale = float(v)
        if not parts:
            self.unread.append(_Unread(step, (), None, None, None, host_scale, scaler))
            return
        device = parts[0].device
        dtype = torch.float32 if device.type == "mps" else torch.float64  # MPS has no float64
        with torch.no_grad():
            if any(p.device != device for p in parts):  # a model over several devices: the values to the first
                parts = [p.to(device, non_blocking=True) for p in parts]
            values = torch.cat(parts).to(dtype)  # cat promotes the dtypes; two small kernels in all
        host = event = None
        if device.type == "cuda":
            host = torch.empty(values.shape, dtype=dtype, pin_memory=True)
            host.copy_(values, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
        self.unread.append(_Unread(step, tuple(names), values, host, event, host_scale, scaler))

    def ready(self, wait: bool = False) -> list[StepValues]:
        """The steps whose values have landed, oldest first, stopping at the first that has not (step order is kept);
        ``wait``: all of them, waiting for the device where needed."""
        out = []
        while self.unread:
            u = self.unread[0]
            if not (wait or len(self.unread) > CAP or self._landed(u)):
                break
            self.unread.popleft()
            out.append(self._read(u))
        return out

    def _landed(self, u: _Unread) -> bool:
        if u.event is not None:
            return bool(u.event.query())
        return u.values is None or u.values.device.type == "cpu"

    def _read(self, u: _Unread) -> StepValues:
        got: dict[str, float] = {}
        if u.values is not None:
            src = u.host if u.host is not None else u.values
            if u.event is not None:
                u.event.synchronize()  # landed already unless this is a read that waits
            elif src.device.type != "cpu":
                src = src.cpu()  # a device without events: this read waits (sampled steps, CAP)
            got = dict(zip(u.names, src.numpy().tolist(), strict=True))
        wmax = got.get("wmax")
        found = got.get("found")
        return StepValues(u.step, got.get("loss"), wmax is None or math.isfinite(wmax),
                          got.get("scale", u.scale), (found is not None and found > 0) if u.scaler else None)
