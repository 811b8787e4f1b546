"""What a reader tells the per-step series (timeline/series.py, timeline/series_np.py) about its tables, and the
types both measure with."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

# the kernels' name keys (a capture's SQL values) → their names
Named = dict[Any, str]
Names = Callable[[Iterable[Any]], Named]
# {(process, step): (lo, hi, values)}: the values by the name of their field of model.StepAgg
Steps = dict[tuple[Any, int], tuple[int, int, dict[str, Any]]]


@dataclass(frozen=True)
class GpuTable:
    """A table of GPU work: kernels (name: the SQL of the name's key) or copies / sets (name None)."""

    table: str
    pid: str  # SQL of the process id
    name: str | None = None


@dataclass(frozen=True)
class ApiTable:
    """A table of CUDA API calls: key is the SQL of what names the call (nameId, cbid); kinds maps those keys to
    text/cuda_calls kinds."""

    table: str
    pid: str
    key: str
    kinds: Callable[[list[Any]], dict[Any, str]]
