"""The pipeline: paths → read (ingest.py) → run store → evidence ranked (evidence.py) → report → hints → training
health, composed in one place (compose.py). ``from nvprof_wrap.pipeline import analyze`` is what every command and
the Python API call.

``analyze`` is imported on first use: ingest's pool workers (started by spawn where fork is unsafe) import
``nvprof_wrap.pipeline.ingest``, which loads this package first, and must not load the report and the renderers.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the checker sees its signature; at run time it is imported on first use (below)
    from nvprof_wrap.pipeline.compose import analyze

__all__ = ["analyze"]


def __getattr__(name: str) -> object:
    if name == "analyze":
        from nvprof_wrap.pipeline.compose import analyze

        return analyze
    raise AttributeError(f"module 'nvprof_wrap.pipeline' has no attribute {name!r}")
