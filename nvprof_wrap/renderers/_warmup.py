"""The warm-up line (analyses/warmup.py), written once from the JSON form for every format (renderers/_outline.py)."""
from __future__ import annotations

from typing import Any

from nvprof_wrap.renderers._shapes import Lines, Shown
from nvprof_wrap.text.names import shorten
from nvprof_wrap.text.units import duration, pct

TITLE = "Warm-up left out"


def lines(w: dict[str, Any] | None) -> tuple[str, ...]:
    if not w:
        return ()
    names = ", ".join(shorten(n, 50) for n in w["top"])
    return ((f"{duration(w['kernel_ns'])} of kernels ({w['launches']:,} launches, {pct(w['share'])} of kernel time) "
             f"ran while XLA compiled and autotuned — before the first execution of {w['program']}, or inside its "
             f"compile ranges ({names}): left out of the shares, the verdict and the tables above; --with-warmup "
             "counts them"),)


def content(s: Shown) -> Lines | None:
    found = lines(s.data.get("warmup"))
    return Lines(TITLE, found) if found else None
