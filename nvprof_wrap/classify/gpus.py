"""What a GPU's name tells about its tensor cores, for captures that name the GPU without its compute capability."""
from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def _table() -> tuple[tuple[re.Pattern[str], float, bool], ...]:
    data = tomllib.loads(resources.files("nvprof_wrap.classify").joinpath("gpus.toml").read_text())
    return tuple((re.compile(g["pattern"], re.IGNORECASE), float(g["cc"]), bool(g.get("tensor_cores", True)))
                 for g in data["gpu"])


@lru_cache(maxsize=256)
def lookup(name: str | None) -> tuple[float, bool] | None:
    """(compute capability, has tensor cores) for a device name, or None when the name is not known."""
    if not name:
        return None
    return next(((cc, tc) for pattern, cc, tc in _table() if pattern.search(name)), None)
