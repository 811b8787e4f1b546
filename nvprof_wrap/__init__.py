"""nvprof-wrap: run a job under a GPU profiler and answer "were tensor cores used, in which precision, for which ops?".

Python API (docs/api.md)::

    import nvprof_wrap
    report = nvprof_wrap.analyze("runs/train-fp16")      # any capture, run folder or folder of captures
    print(report); report.to_dict(); report.to_pandas()

    with nvprof_wrap.profile() as p:                       # this process, with the built-in CUPTI tracer
        train()
    p.report

In IPython / Jupyter: ``%load_ext nvprof_wrap``, then a ``%%nvprof_wrap`` cell. Keras:
``nvprof_wrap.keras.ProfileSteps``. Names are imported on first use: the CUPTI tracer imports this package inside
traced jobs and must stay light.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from nvprof_wrap._version import __version__

if TYPE_CHECKING:  # the checker sees the names; at run time they are imported on first use (__getattr__)
    from IPython.core.interactiveshell import InteractiveShell

    from nvprof_wrap.api import Profile, profile
    from nvprof_wrap.pipeline import analyze

__all__ = ["Profile", "__version__", "analyze", "load_ipython_extension", "profile"]


def __getattr__(name: str) -> object:
    if name == "analyze":
        from nvprof_wrap.pipeline import analyze

        return analyze
    if name in ("profile", "Profile"):
        from nvprof_wrap import api

        return getattr(api, name)
    raise AttributeError(f"module 'nvprof_wrap' has no attribute {name!r}")


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """``%load_ext nvprof_wrap``: registers the ``%%nvprof_wrap`` cell magic (nvprof_wrap/magic.py)."""
    from nvprof_wrap.magic import load_ipython_extension as load

    load(ipython)
