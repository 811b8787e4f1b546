"""Hardware counters as counter tracks ("ph":"C"): an Nsight Systems export's GPU metrics (every metric of its
metric set, one track each) and the NVML GPM samples a run's launcher took (RUN/gpm.jsonl: SM, tensor-pipe and
per-pipe activity). Each GPU's counters are a process of their own ("GPU 0 · hardware counters"), since they are the
device's, not one process's. Streamed row by row; samples before the trace's first event are left out."""
from __future__ import annotations

import math
import sqlite3
from pathlib import Path

from nvprof_wrap.export._events import Trace, dumps, us
from nvprof_wrap.export._timeline import FIRST_NS, Clock
from nvprof_wrap.timeline.gpm import SOURCE as GPM_SOURCE
from nvprof_wrap.timeline.gpm import records
from nvprof_wrap.timeline.gpu_metrics import SOURCE as GPU_METRICS_SOURCE
from nvprof_wrap.timeline.gpu_metrics import device_ids
from nvprof_wrap.timeline.sql import EVERYTHING

_NOT_METRICS = {"device", "t0_ns", "t_ns"}


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _device_pid(trace: Trace, device: object, source: str) -> int:
    return trace.process(("hardware", device, source), None, f"GPU {device} · hardware counters ({source})")


def gpu_metrics(trace: Trace, conn: sqlite3.Connection, have: set[str], index: int, clock: Clock,
                span: tuple[int, int]) -> None:
    """GPU_METRICS rows as counters: one track per metric and GPU (timeline/gpu_metrics.py finds the devices)."""
    if not {"GPU_METRICS", "TARGET_INFO_GPU_METRICS"} <= have:
        return
    metrics = {(t, m): name for t, m, name in conn.execute(
        "SELECT DISTINCT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS")}
    devices = device_ids(conn, have, sorted({t for t, _ in metrics}))
    prefix: dict[tuple[object, ...], str] = {}
    for (t, m), name in metrics.items():
        pid = _device_pid(trace, devices.get(t), GPU_METRICS_SOURCE)
        prefix[(t, m)] = f'{{"ph":"C","name":{dumps(name)},"pid":{pid},"tid":{pid},"args":{{"value":'
    where = "true" if span == EVERYTHING else f"timestamp >= {span[0]} AND timestamp < {span[1]}"
    write, n, shift = trace.write, 0, clock.shift
    for ts, t, m, value in conn.execute(f"SELECT timestamp, typeId, metricId, value FROM GPU_METRICS WHERE {where}"):
        head = prefix.get((t, m))
        if head is None or ts + shift < FIRST_NS or not _number(value):
            continue
        write(f'{head}{value}}},"ts":{us(ts + shift)}}},\n')
        n += 1
    trace.count("counter samples", n)


def gpm(trace: Trace, path: Path, unix_offset: int, clock: Clock, span: tuple[int, int]) -> None:
    """A run's GPM samples (Unix time; ``unix_offset``: Unix minus the capture's clock) as counters, one track per
    metric and GPU; the GPU of a sample is its place in the header's list, the CUDA device id."""
    lines = records(path)
    header = next(lines, None)
    if not header or header.get("gpm") != 1:
        trace.count("gpm files not read")
        return
    order = {d.get("device"): i for i, d in enumerate(header.get("devices", [])) if isinstance(d, dict)}
    lo, hi = span
    write, n = trace.write, 0
    heads: dict[tuple[object, ...], str] = {}
    for row in lines:
        cuda = order.get(row.get("device"))
        t0 = row.get("t0_ns")
        if cuda is None or not isinstance(t0, int):
            continue
        at = t0 - unix_offset
        if not lo <= at < hi or at + clock.shift < FIRST_NS:
            continue
        for key, value in row.items():
            if key in _NOT_METRICS or not _number(value):
                continue
            head = heads.get((cuda, key))
            if head is None:
                pid = _device_pid(trace, cuda, GPM_SOURCE)
                head = heads[(cuda, key)] = (f'{{"ph":"C","name":{dumps(f"GPM {key} %")},"pid":{pid},"tid":{pid},'
                                             '"args":{"value":')
            write(f'{head}{value}}},"ts":{us(at + clock.shift)}}},\n')
            n += 1
    trace.count("counter samples", n)
