"""GPUs that a console log names outside the profiler's own tables, for captures whose tables name none.

A log of ``nvprof python train.py`` (or ``nsys profile --stats=true``) holds the program's output too, and the
framework often says which GPU it got:

- TensorFlow 1.x/2.x: ``Found device 0 with properties:`` then ``name: Tesla K80 major: 3 minor: 7`` (1.x) or
  ``pciBusID: … name: Tesla T4 computeCapability: 7.5`` (2.x), and ``Created TensorFlow device (… -> physical GPU
  (device: 0, name: Tesla K80, pci bus id: …, compute capability: 3.7)`` / ``Created device … -> device: 0,
  name: Tesla T4, pci bus id: …, compute capability: 7.5``;
- XLA (TensorFlow, JAX): ``StreamExecutor device (0): Tesla T4, Compute Capability 7.5``;
- nvprof itself, in the Unified Memory section of its summary and per device of ``--metrics`` or
  ``--print-summary-per-gpu``: ``Device "Tesla V100-SXM2-16GB (0)"`` (a name, no compute capability).

Only these exact forms are read, in the first and last 64 KiB that detection already looks at (frameworks name
their GPUs at start-up; nvprof's summary comes at the end). The device number is the one the line gives: the
CUDA device of the process, as the profiler numbers it.
"""
from __future__ import annotations

import re

from nvprof_wrap.model import Gpu

_FOUND = re.compile(r"Found device (\d+) with properties:[ \t]*\r?\n(?:[^\n]*[ \t])?name: (.+?) "
                    r"(?:major: (\d+) minor: (\d+)|computeCapability: (\d+)\.(\d+))")
_CREATED = re.compile(r"device: (\d+), name: ([^,\n]+), pci bus id: [^,\n]*, compute capability: (\d+)\.(\d+)")
_XLA = re.compile(r"StreamExecutor device \((\d+)\): ([^,\n]+), Compute Capability (\d+)\.(\d+)")
_NVPROF = re.compile(r'^Device "(.+) \((\d+)\)"[ \t]*\r?$', re.MULTILINE)


def named_gpus(text: str) -> dict[int, tuple[Gpu, str]]:
    """device id → (Device: name, and compute capability where the line gives it; which lines named it) of every
    GPU the text names."""
    out: dict[int, tuple[Gpu, str]] = {}

    def add(source: str, dev: str, name: str, major: str | None = None, minor: str | None = None) -> None:
        d = int(dev)
        old = out[d][0] if d in out else None
        cc = (int(major), int(minor)) if major is not None and minor is not None else \
            ((old.cc_major, old.cc_minor) if old else (None, None))
        out[d] = (Gpu(d, name.strip() or (old.name if old else None), *cc), source)

    for m in _NVPROF.finditer(text):
        add("nvprof's Device line", m.group(2), m.group(1))
    for m in _FOUND.finditer(text):
        add("TensorFlow's start-up lines", m.group(1), m.group(2), m.group(3) or m.group(5), m.group(4) or m.group(6))
    for m in _CREATED.finditer(text):
        add("TensorFlow's start-up lines", *m.groups())
    for m in _XLA.finditer(text):
        add("XLA's start-up lines", *m.groups())
    return out


def fill_in(devices: dict[int, Gpu], text: str) -> tuple[dict[int, Gpu], tuple[str, ...]]:
    """The capture's own device records, with the GPUs the log names for the devices they lack (or lack the name
    or compute capability of) — the profiler's own record wins where both say something — and the note saying
    which came from the log (none when none did)."""
    out, sources = dict(devices), set()
    for d, (named, source) in named_gpus(text).items():
        own = out.get(d)
        if own is None:
            out[d] = named
        elif own.name is None or own.cc_major is None:
            keep = own.cc_major is not None
            out[d] = Gpu(d, own.name or named.name, own.cc_major if keep else named.cc_major,
                            own.cc_minor if keep else named.cc_minor, own.sm_count)
        if out[d] != own:
            sources.add(source)
    added = [g for i, g in sorted(out.items()) if devices.get(i) != g]
    if not added:
        return out, ()
    names = ", ".join(sorted({g.name or "GPU" for g in added}))
    ids = ", ".join(str(g.device_id) for g in added)
    return out, (f"GPU from {' and '.join(sorted(sources))}: {names} (device{'s' if len(added) > 1 else ''} {ids})",)
