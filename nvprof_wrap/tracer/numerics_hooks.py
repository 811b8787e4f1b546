"""Starts the numerics recorder in a process of the job (tracer/numerics.py): the recorder, then an import hook that
patches keras / torch once the job imports them (now, if it already has). Called by the injected sitecustomize when
$NVPROF_WRAP_NUMERICS is set."""
from __future__ import annotations

import os

from nvprof_wrap.tracer import numerics, numerics_keras, numerics_torch
from nvprof_wrap.tracer.imports import when_imported


def install(folder: str | None = None) -> None:
    folder = folder or os.environ.get(numerics.ENV, "")
    if not folder:
        return
    numerics.begin(folder)
    when_imported("keras", numerics_keras.patch)
    when_imported("torch", numerics_torch.patch)
