"""Which hardware source a SQLite capture's kernels are matched to: its own GPU metrics (nsys
``--gpu-metrics-devices``), else the NVML GPM samples its run's launcher took (RUN/gpm.jsonl), else none."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from nvprof_wrap.model import HwDevice, HwKernel, HwPoint
from nvprof_wrap.timeline import gpm, gpu_metrics, hardware

Hardware = tuple[tuple[HwDevice, ...], tuple[HwKernel, ...], tuple[HwPoint, ...], tuple[str, ...]]
NONE: Hardware = ((), (), (), ())


def of(conn: sqlite3.Connection, have: set[str], path: Path, kernel_table: str, device_col: str, name_col: str,
       offset_ns: int | None, span: tuple[int, int] | None,
       names: Callable[[set[object]], dict[object, str]]) -> Hardware:
    """(devices, per-name evidence by kernel name, timeline, notes). ``offset_ns``: GPM's Unix time minus the
    capture's clock (None: the capture cannot be placed in Unix time, so GPM samples are not matched);
    ``names``: the kernels' names of a set of name keys, as the capture's kernels carry them."""
    if kernel_table == "CUPTI_ACTIVITY_KIND_KERNEL":
        found = gpu_metrics.read(conn, have, kernel_table, name_col, span)
        if found[0] or found[3]:
            return found
    samples = gpm.beside(Path(path))
    if samples is None:
        return NONE
    if offset_ns is None:
        return (), (), (), ((f"{samples.name}: the capture records no start time to place the GPM samples on: not "
                             "matched"),)
    launches = lambda dev: hardware.stream(conn.execute(
        f"SELECT start, end, {name_col} FROM {kernel_table} WHERE {device_col} = ? ORDER BY start", (dev,)))
    devices, kernels, series, notes = gpm.read(samples, launches, offset_ns, span)
    return devices, tuple(hardware.resolve(list(kernels), names({k.name for k in kernels}))), series, notes
