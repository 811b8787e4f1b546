"""The benchmarks of the suite: one module each, under benchmarks/, named for what it measures."""
from __future__ import annotations

import importlib
from typing import cast

from benchmarks.suite.types import Benchmark, Unavailable

__all__ = ["NAMES", "Unavailable", "every", "load"]

NAMES: tuple[str, ...] = (
    "report_nsys_sqlite",
    "report_kineto_json",
    "report_torch_json",
    "step_series",
    "report_sections",
    "report_long_job",
    "report_stages",
    "backend_overhead",
    "capture_window_cost",
    "report_steps",
    "report_ranks",
    "report_pathological_inputs",
    "report_hostile_captures",
    "tracer_record_cost",
    "read_xplane",
)


def load(name: str) -> Benchmark:
    if name not in NAMES:
        raise KeyError(f"no benchmark {name!r}; the suite has: {', '.join(NAMES)}")
    return cast(Benchmark, importlib.import_module(f"benchmarks.{name}"))


def every() -> list[Benchmark]:
    return [load(n) for n in NAMES]
