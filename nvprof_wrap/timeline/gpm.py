"""NVML GPM samples a run's launcher took beside the job (launch/gpm.py writes RUN/gpm.jsonl) matched to the
kernels of a capture of that run (timeline/hardware.py). GPM's clock is Unix time; ``offset_ns`` maps it to the
capture's (nsys: the session's start; our CUPTI tracer: its start stamp in both clocks). The device of a sample is
its place among the GPUs the job could see (the header's list, CUDA_VISIBLE_DEVICES' order), which is the CUDA
device id the capture records."""
from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from nvprof_wrap.model import HwDevice, HwKernel, HwPoint
from nvprof_wrap.run.names import GPM as FILE
from nvprof_wrap.run.names import MANIFEST
from nvprof_wrap.system import bounded
from nvprof_wrap.system.limits import MAX_LINE_BYTES
from nvprof_wrap.timeline import hardware

SOURCE = "nvml gpm"


def beside(capture: Path) -> Path | None:
    """The GPM samples of the run folder a capture lies in, if that run took them."""
    f = capture.parent / FILE
    return f if f.is_file() and (capture.parent / MANIFEST).is_file() else None


def keep_beside(capture: Path, copy: Path) -> None:
    """A capture read through a copy (a gzipped one, unpacked elsewhere): its run's GPM samples and manifest
    copied beside the copy, so that beside() finds them there (both are small: 10 samples a second)."""
    found = beside(capture)
    if found is not None:
        for name in (FILE, MANIFEST):
            shutil.copyfile(capture.parent / name, copy.parent / name)


def records(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, "rb") as f:
        for raw in f:
            if len(raw) > MAX_LINE_BYTES:
                continue
            try:
                row = bounded.loads(raw)
            except ValueError:  # a line cut by a killed launcher: the rest still counts
                continue
            if isinstance(row, dict):
                yield row


def read(path: Path, launches: Callable[[int], Iterable[tuple[int, int, object]]], offset_ns: int,
         span: tuple[int, int] | None = None) -> tuple[tuple[HwDevice, ...], tuple[HwKernel, ...],
                                                      tuple[HwPoint, ...], tuple[str, ...]]:
    """(devices, per-name evidence keyed as ``launches`` keys its names, timeline, notes). ``launches(device)``:
    (start, end, name key) of that CUDA device's kernels, sorted by start, on the capture's clock."""
    header = next(records(path), None)
    if not header or header.get("gpm") != 1:
        return (), (), (), (f"{path.name}: not a GPM sample file of nvprof-wrap: not read",)
    order = [d.get("device") for d in header.get("devices", []) if isinstance(d, dict)]
    interval = int(float(header.get("interval_s") or 0.1) * 1e9)
    devs, kernels, series = [], [], []
    for cuda_id, nvml_id in enumerate(order):
        samples = ((int(r["t0_ns"]) - offset_ns, int(r["t_ns"]) - offset_ns, r.get("sm"), r.get("tensor"),
                    r.get("hmma"), r.get("imma"), r.get("dfma"))
                   for r in records(path) if r.get("device") == nvml_id and "t0_ns" in r and "t_ns" in r)
        d, k, s = hardware.sweep(cuda_id, launches(cuda_id), samples, SOURCE, interval, span)
        if d is not None:
            devs.append(d)
            kernels += k
            series += s
    return tuple(devs), tuple(kernels), tuple(series), ()
