"""Nsight Systems GPU metrics (``nsys profile --gpu-metrics-devices=…``; tables GPU_METRICS and
TARGET_INFO_GPU_METRICS, Turing and newer) as the hardware's tensor-pipe activity beside the kernels of the same
export (timeline/hardware.py). The metric names differ by GPU generation and nsys version: "SMs Active" / "SM
Active" for the SMs, "Tensor Active" (Ampere and newer; Hopper's "Tensor Active [Throughput %]") for the tensor
pipes. Turing's "Tensor Active / FP16 Active" counts FP16 arithmetic too: it is read, said so, and never decides a
kernel (classify/hardware.py). Samples are streamed, never all held: a 50 kHz capture of a training run holds
tens of millions of rows."""
from __future__ import annotations

import itertools
import re
import sqlite3
import statistics
from collections.abc import Iterable
from typing import cast

from nvprof_wrap.model import LOST_NAME_KERNEL, HwDevice, HwKernel, HwPoint
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline import hardware
from nvprof_wrap.timeline.sql import cut

SOURCE = "nsys gpu metrics"
SOURCE_MIXED = "nsys gpu metrics (tensor or fp16)"
_SM = re.compile(r"^SMs? Active\b", re.IGNORECASE)
_TENSOR = re.compile(r"^Tensor (?:Pipe )?Active\b", re.IGNORECASE)
_MIXED = re.compile(r"FP16", re.IGNORECASE)


def read(conn: sqlite3.Connection, have: set[str], kernel_table: str, name_col: str,
         span: tuple[int, int] | None = None) -> tuple[tuple[HwDevice, ...], tuple[HwKernel, ...],
                                                          tuple[HwPoint, ...], tuple[str, ...]]:
    """(devices, per-name evidence, timeline, notes) from an export's GPU metrics; all empty without them."""
    if not {"GPU_METRICS", "TARGET_INFO_GPU_METRICS"} <= have:
        return (), (), (), ()
    by_type: dict[int, dict[str, tuple[int, str]]] = {}
    for type_id, metric_id, name in conn.execute(
            "SELECT DISTINCT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS"):
        slot = "sm" if _SM.search(name or "") else "tensor" if _TENSOR.search(name or "") else None
        if slot and slot not in by_type.setdefault(type_id, {}):
            by_type[type_id][slot] = (metric_id, name)
    types = sorted(t for t, m in by_type.items() if "tensor" in m)
    if not types:
        return (), (), (), (("GPU metrics without a tensor-pipe metric (its metric set has none): no hardware "
                             "tensor activity"),)
    devices = device_ids(conn, have, types)
    notes: list[str] = []
    out_dev: list[HwDevice] = []
    out_k: list[HwKernel] = []
    out_s: list[HwPoint] = []
    keys: set[object] = set()
    for type_id in types:
        m = by_type[type_id]
        tensor_id, tensor_name = m["tensor"]
        sm_id = m["sm"][0] if "sm" in m else None
        mixed = bool(_MIXED.search(tensor_name))
        interval = _interval(conn, type_id, tensor_id)
        if interval is None:
            continue
        ids = (tensor_id,) if sm_id is None else (tensor_id, sm_id)
        samples = conn.execute(
            f"SELECT timestamp, MAX(CASE WHEN metricId = ? THEN value END), MAX(CASE WHEN metricId = ? THEN value END) "
            f"FROM GPU_METRICS WHERE typeId = ? AND metricId IN ({','.join('?' * len(ids))}) "
            "GROUP BY timestamp ORDER BY timestamp", (sm_id, tensor_id, type_id, *ids))
        device_id = devices.get(type_id)
        launches = _launches(conn, kernel_table, name_col, device_id, type_id, ids, interval)
        dev, kernels, series = hardware.sweep(  # device_id None: the export names no GPU for them, kept as read
            cast(int, device_id), hardware.stream(launches),
            ((t, t + interval, sm, tensor, None, None, None) for t, sm, tensor in hardware.stream(samples)),
            SOURCE_MIXED if mixed else SOURCE, interval, span)
        if dev is None:
            continue
        out_dev.append(dev)
        out_k += kernels
        out_s += series
        keys |= {k.name for k in kernels}
        if mixed:
            notes.append(f"device {device_id}: its GPU metrics count tensor and FP16 activity together "
                         f"({tensor_name}): shown, never used to decide a kernel")
    names = kernel_names(conn, keys)
    return tuple(out_dev), tuple(hardware.resolve(out_k, names)), tuple(out_s), tuple(notes)


def _launches(conn: sqlite3.Connection, kernel_table: str, name_col: str, device_id: int | None, type_id: int,
              ids: tuple[int, ...], interval: int) -> sqlite3.Cursor:
    """(start, end, name key) of the device's launches that overlap a sample [t, t + interval), in start order:
    the sweep uses no other. Only those are sorted — a capture's samples may cover a small part of its kernels
    (an export of a long run with the metrics of its first seconds, a real capture replicated for a benchmark):
    sorting every launch by start cost 1.2 s at 2M launches where the samples cover 8,683 of them."""
    lo, hi = conn.execute(f"SELECT MIN(timestamp), MAX(timestamp) FROM GPU_METRICS WHERE typeId = ? "
                          f"AND metricId IN ({','.join('?' * len(ids))})", (type_id, *ids)).fetchone()
    if lo is None:
        lo, hi = 0, -interval  # no sample: no launch
    return conn.execute(f'SELECT start, end, {name_col} FROM {kernel_table} WHERE deviceId = ? AND start < ? '
                        f'AND "end" > ? ORDER BY start', (device_id, hi + interval, lo))


def _interval(conn: sqlite3.Connection, type_id: int, metric_id: int) -> int | None:
    """One sample's length: the median step between the first timestamps of one metric."""
    ts = [r[0] for r in conn.execute("SELECT timestamp FROM GPU_METRICS WHERE typeId = ? AND metricId = ? "
                                     "ORDER BY timestamp LIMIT 1001", (type_id, metric_id))]
    steps = [b - a for a, b in itertools.pairwise(ts) if b > a]
    if not steps:
        return None
    step = int(statistics.median(steps))  # 99,999 or 100,001 ns at 10 kHz: the timestamps' jitter, rounded off
    return round(step, -2) if step >= 10_000 else step


def device_ids(conn: sqlite3.Connection, have: set[str], types: list[int]) -> dict[int, int | None]:
    """The CUDA device of each metrics source: the export's one GPU, else the GPUs in order (nsys numbers both
    the same way; an export that says otherwise is not known to exist)."""
    gpus: list[int] = []
    if "TARGET_INFO_GPU" in have:
        try:
            cols = {r[1] for r in conn.execute("PRAGMA table_info(TARGET_INFO_GPU)")}
            col = "cuDevice" if "cuDevice" in cols else "id"
            gpus = sorted(r[0] for r in conn.execute(f"SELECT DISTINCT {col} FROM TARGET_INFO_GPU")
                          if r[0] is not None)
        except sqlite3.Error:
            gpus = []
    if len(gpus) == len(types):
        return dict(zip(types, gpus))
    if len(types) == 1:
        kernel_devices = [r[0] for r in conn.execute("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL")]
        return {types[0]: kernel_devices[0] if len(kernel_devices) == 1 else (gpus[0] if gpus else 0)}
    return {t: i for i, t in enumerate(types)}


def kernel_names(conn: sqlite3.Connection, keys: Iterable[object]) -> dict[object, str]:
    """Each name key (a StringIds id) as the reader's kernels name it (demangled)."""
    ids = [k for k in keys if isinstance(k, int)]
    out: dict[object, str] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        out.update((k, demangle(v) if v is not None else "<unnamed kernel>") for k, v in conn.execute(
            f"SELECT id, {cut('value')} FROM StringIds WHERE id IN ({','.join('?' * len(chunk))})", chunk))
    if 0 in out:  # nsys' own first string, never a kernel's name (model.LOST_NAME_KERNEL)
        out[0] = LOST_NAME_KERNEL
    return out
