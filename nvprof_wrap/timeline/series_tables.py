"""What a reader tells the per-step series (timeline/series.py, timeline/series_np.py) about its tables, the types
both measure with, and the time buckets both cut a capture without step marks into (here, where both import them:
series.py imports series_np.py)."""
from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from nvprof_wrap.system.limits import MAX_DURATION_NS

# the kernels' name keys (a capture's SQL values) → their names
Named = dict[Any, str]
Names = Callable[[Iterable[Any]], Named]
# {(process, step): (lo, hi, values)}: the values by the name of their field of model.StepAgg
Steps = dict[tuple[Any, int], tuple[int, int, dict[str, Any]]]


# The parts of a step's time budget (model.StepAgg.parts_ns), in the order that claims time where they overlap: a
# nanosecond in which the GPU ran a kernel and a copy is the kernel's; the host's CUDA calls claim only what the GPU
# left idle. What no part claims is the time outside CUDA calls (or, where not every call was recorded, unknown).
PARTS = ("kernels", "communication", "copy_htod", "copy_dtoh", "copy_dtod", "copy_other", "memset",
         "api_launch", "api_sync", "api_alloc", "api_other")
GPU_PARTS = PARTS[:7]
# a copy's direction (timeline/sql.py MEMCPY_DIRECTION's words) → its part
_COPY_PART = {"HtoD": "copy_htod", "DtoH": "copy_dtoh", "DtoD": "copy_dtod", "PtoP": "copy_dtod"}


def copy_part_sql(direction: str, words: dict[Any, str]) -> str:
    """SQL giving a copy row's part (its index in PARTS: an integer keeps the numpy read on its fast path) from its
    direction column: words maps the column's values to directions (CUPTI's copyKind numbers, or the words
    themselves); any other value is copy_other."""
    cases = " ".join(f"WHEN {v!r} THEN {PARTS.index(_COPY_PART.get(d, 'copy_other'))}" for v, d in words.items())
    return f"(CASE {direction} {cases} ELSE {PARTS.index('copy_other')} END)"


MEMSET_PART = str(PARTS.index("memset"))


@dataclass(frozen=True)
class GpuTable:
    """A table of GPU work: kernels (name: the SQL of the name's key) or copies / sets (name None; part: the SQL of
    the row's budget part, its index in PARTS — copy_part_sql for copies, MEMSET_PART for sets)."""

    table: str
    pid: str  # SQL of the process id
    name: str | None = None
    part: str = str(PARTS.index("copy_other"))


@dataclass(frozen=True)
class ApiTable:
    """A table of CUDA API calls: key is the SQL of what names the call (nameId, cbid); kinds maps those keys to
    text/cuda_calls kinds, given a connection to the capture (the reading process's, or a forked worker's own:
    timeline/series_np._host_aside)."""

    table: str
    pid: str
    key: str
    kinds: Callable[[sqlite3.Connection, list[Any]], dict[Any, str]]


# a kernel table's rows another pass kept for the series, in pieces: (rowid range "lo hi" or None for the whole
# table, its (pid, start, end, key) columns as views of int64 — a forked pass's mapped from the shared memory it sent
# them back through —, or None: read by the series itself)
Given = list[tuple[str | None, list[memoryview] | None]]

BUCKETS = 60  # time buckets of a capture without steps
_NICE = (1, 2, 5)


def buckets(extents: list[tuple[Any, Any]]) -> list[tuple[int, int, int]]:
    """The time buckets [(n, lo, hi)] of a capture without step marks, from each GPU table's (first start, last
    end) (None, None: no rows); [] without any row. Damaged ends are cut at MAX_DURATION_NS past the first start."""
    starts = [a for a, _ in extents if a is not None]
    if not starts:
        return []
    # whole nanoseconds: a time stored as a float (a hand-edited export: start + 0.5) had ended the report with
    # "'float' object cannot be interpreted as an integer"
    t0 = math.floor(min(starts))
    t1 = min(max([math.ceil(b) for _, b in extents if b is not None] + [t0 + 1]), t0 + MAX_DURATION_NS)
    width = _nice(-(-(t1 - t0) // BUCKETS))
    return [(i, t0 + i * width, t0 + (i + 1) * width) for i in range(-(-(t1 - t0) // width))]


def _nice(ns: int) -> int:
    """The smallest 1, 2 or 5 × 10^k ns at least ns long."""
    scale = 1
    while True:
        for m in _NICE:
            if m * scale >= ns:
                return m * scale
        scale *= 10
