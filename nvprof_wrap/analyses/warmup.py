"""A JAX job's warm-up, kept apart: what its GPU ran while XLA compiled and autotuned (readers/_xla_warmup.py found
it in the capture: before the first execution of the program the job runs most, inside XLA's compile ranges, the
autotuner's own kernels). It is left out of the shares, the verdict and the kernel table, and said on its own line,
so that the answer is about the program's work: in jax's MNIST example on the H200 the autotuner's candidates and
checks were 228 ms of 490 ms of kernels, and its buffer checks alone 38% of GPU time (benchmarks/gpu/jax_captures.sh).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TOP = 3  # kernel names the line names


@dataclass(frozen=True)
class Warmup:
    """The warm-up left out of a report: its kernels' time and launches, its share of all kernel time (warm-up
    included), the program whose first execution ended it, and the kernels with the most of its time."""

    program: str
    kernel_ns: int
    launches: int
    share: float
    top: tuple[str, ...]


def of(rows: Iterable[Mapping[str, Any]], steady_ns: int) -> Warmup | None:
    """The Warmup of the store's warmup rows (program, name, launches, total_ns; most time first), beside
    ``steady_ns`` of kernel time kept; None when nothing was left out."""
    rows = list(rows)
    if not rows:
        return None
    ns = sum(int(r["total_ns"] or 0) for r in rows)
    by_program: dict[str, int] = {}
    for r in rows:
        by_program[r["program"]] = by_program.get(r["program"], 0) + int(r["total_ns"] or 0)
    names: dict[str, int] = {}
    for r in rows:
        names[r["name"]] = names.get(r["name"], 0) + int(r["total_ns"] or 0)
    top = tuple(sorted(names, key=lambda n: (-names[n], n))[:TOP])
    return Warmup(max(by_program, key=lambda p: (by_program[p], p)), ns, sum(int(r["launches"]) for r in rows),
                  ns / (ns + steady_ns) if ns + steady_ns else 0.0, top)
