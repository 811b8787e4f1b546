"""What a reader tells the per-step series (timeline/series.py, timeline/series_np.py) about its tables."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    """A table of GPU work: kernels (name: the SQL of the name's key) or copies / sets (name None)."""

    table: str
    pid: str  # SQL of the process id
    name: str | None = None


@dataclass(frozen=True)
class Api:
    """A table of CUDA API calls: key is the SQL of what names the call (nameId, cbid); kinds maps those keys to
    text/cuda_calls kinds."""

    table: str
    pid: str
    key: str
    kinds: Callable[[list], dict]
