"""The hardware's own tensor-pipe activity beside the kernel timeline: samples (nsys GPU metrics, NVML GPM) matched
to the launches that ran while each was taken, in one streaming sweep per device.

A sample covers an interval of the GPU's time ([t, t + interval) for nsys GPU metrics — measured on the H200: the
other reading gives cuBLAS bf16 GEMM 81% where this gives 95% over the same samples — and the interval GPM itself
names). Per device the sweep yields:
- the device's summary: samples, how many fell while kernels ran (busy: launches cover at least half the interval),
  and the mean SM activity and tensor activity over the busy ones;
- per kernel name, the samples it filled alone (its launches cover at least FILL of the interval: one long
  launch, or many back-to-back) and their mean tensor activity — the evidence classify/hardware.py decides on;
- a timeline of at most SERIES_POINTS buckets (mean SM and tensor activity), for reports to draw.

Memory is bounded by the launches running at one instant (the sweep holds only those), never by the run's length.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any, cast

from nvprof_wrap.model import HwDevice, HwKernel, HwPoint

FILL = 0.9  # a sample is one kernel's when its launches cover this much of the sample's interval
BUSY = 0.5  # ... and the GPU's busy time when launches (of any kernel) cover this much
SERIES_POINTS = 400
METRICS = ("tensor", "hmma", "imma", "dfma")

# (start_ns, end_ns, name key) of a launch; (t0_ns, t1_ns, sm, tensor, hmma, imma, dfma) of a sample, in % (None:
# a metric the source lacks)
Launch = tuple[int, int, object]
Sample = tuple[int, int, float | None, float | None, float | None, float | None, float | None]


def sweep(device_id: int, launches: Iterable[Launch], samples: Iterable[Sample],
          source: str, interval_ns: int, span: tuple[int, int] | None = None
          ) -> tuple[HwDevice | None, list[HwKernel], list[HwPoint]]:
    """``launches``: (start_ns, end_ns, name key) sorted by start; ``samples``: (t0_ns, t1_ns, sm, tensor, hmma,
    imma, dfma) sorted by t0 (None for a metric the source lacks), on the launches' clock. Returns the device's
    summary (None without samples in ``span``), per name key the samples it filled (the caller resolves each
    distinct key to its name once: resolve()), and the timeline."""
    started = iter(launches)
    pending: Launch | None = next(started, None)
    active: list[Launch] = []
    per_name: dict[object, list[float]] = {}  # key → [samples, tensor sum, hmma sum, imma sum, dfma sum, n_hmma...]
    n = busy = 0
    sums = [0.0, 0.0]  # busy: sm, tensor
    tensor_seen = False
    points: list[tuple[int, int, float, float, int]] = []  # (t0, t1, sm sum, tensor sum, count) per raw sample
    for t0, t1, sm, tensor, *pipes in samples:
        if span is not None and (t1 <= span[0] or t0 >= span[1]):
            continue
        width = t1 - t0
        if width <= 0:
            continue
        while pending is not None and pending[0] < t1:
            active.append(pending)
            pending = next(started, None)
        active = [k for k in active if k[1] > t0]
        n += 1
        covered = 0
        by_name: dict[object, int] = {}
        edges: list[tuple[int, int]] = []
        for s, e, key in active:
            part = min(e, t1) - max(s, t0)
            if part > 0:
                by_name[key] = by_name.get(key, 0) + part
                edges.append((max(s, t0), min(e, t1)))
        if edges:
            covered = _union(edges)
        if tensor is not None:
            tensor_seen = True
        points.append((t0, t1, sm or 0.0, tensor or 0.0, 1))
        if covered >= BUSY * width:
            busy += 1
            sums[0] += sm or 0.0
            sums[1] += tensor or 0.0
        if by_name and tensor is not None:
            key, part = max(by_name.items(), key=lambda kv: kv[1])
            if part >= FILL * width:
                acc = per_name.setdefault(key, [0, 0.0, 0.0, 0.0, 0.0, 0])
                acc[0] += 1
                acc[1] += tensor
                if pipes and pipes[0] is not None:
                    acc[2] += pipes[0] or 0.0
                    acc[3] += (pipes[1] or 0.0) if len(pipes) > 1 else 0.0
                    acc[4] += (pipes[2] or 0.0) if len(pipes) > 2 else 0.0
                    acc[5] += 1
    if not n or not tensor_seen:
        return None, [], []
    device = HwDevice(device_id, source, interval_ns, n, busy,
                      round(sums[0] / busy, 2) if busy else None, round(sums[1] / busy, 2) if busy else None)
    # named by their key until resolve() gives each its kernel's name
    kernels = [HwKernel(device_id, cast(str, key), source, interval_ns, int(a[0]), round(a[1] / a[0], 2),
                        *(tuple(round(a[k] / a[5], 2) for k in (2, 3, 4)) if a[5] else (None, None, None)))
               for key, a in per_name.items()]
    return device, kernels, _series(device_id, points)


def _union(edges: list[tuple[int, int]]) -> int:
    """Total length of the union of intervals."""
    edges.sort()
    total, cur_s, cur_e = 0, *edges[0]
    for s, e in edges[1:]:
        if s > cur_e:
            total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    return total + cur_e - cur_s


def _series(device_id: int, points: list[tuple[int, int, float, float, int]]) -> list[HwPoint]:
    """The raw samples in at most SERIES_POINTS buckets of equal length, each the mean of its samples."""
    if not points:
        return []
    start, end = points[0][0], points[-1][1]
    step = max(1, -(-(end - start) // SERIES_POINTS))
    buckets: dict[int, list[float]] = {}
    for t0, _, sm, tensor, _ in points:
        b = buckets.setdefault((t0 - start) // step, [0.0, 0.0, 0])
        b[0] += sm
        b[1] += tensor
        b[2] += 1
    return [HwPoint(device_id, start + i * step, step, round(b[0] / b[2], 2), round(b[1] / b[2], 2))
            for i, b in sorted(buckets.items())]


def resolve(kernels: list[HwKernel], names: dict[object, str]) -> list[HwKernel]:
    """The per-name evidence with each name key replaced by the kernel's name (as the capture's kernels carry it);
    keys that resolve to the same name are merged, weighted by their samples."""
    merged: dict[tuple[int, str], HwKernel] = {}
    for k in kernels:
        name = names.get(k.name, k.name)
        old = merged.get((k.device_id, name))
        if old is None:
            merged[(k.device_id, name)] = HwKernel(k.device_id, name, k.source, k.interval_ns, k.samples, k.tensor,
                                                   k.hmma, k.imma, k.dfma)
            continue
        merged[(k.device_id, name)] = HwKernel(
            k.device_id, name, k.source, k.interval_ns, old.samples + k.samples,
            _weighted(old.tensor, old.samples, k.tensor, k.samples),
            *(_mix(a, old.samples, b, k.samples) for a, b in ((old.hmma, k.hmma), (old.imma, k.imma),
                                                                (old.dfma, k.dfma))))
    return list(merged.values())


def _mix(a: float | None, na: int, b: float | None, nb: int) -> float | None:
    return None if a is None or b is None else _weighted(a, na, b, nb)


def _weighted(a: float, na: int, b: float, nb: int) -> float:
    return round((a * na + b * nb) / (na + nb), 2)


def stream(cursor: sqlite3.Cursor) -> Iterator[Any]:
    """Rows of a cursor, fetched in batches (never all at once)."""
    while rows := cursor.fetchmany(4096):
        yield from rows
