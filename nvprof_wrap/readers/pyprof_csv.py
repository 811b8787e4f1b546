"""apex.pyprof ``prof --csv`` output: one row per kernel launch with the op that launched it and
pyprof's own tensor-core flag (column ``TC``: ``1`` or ``-``), which is kept as a note."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Capture, KernelAgg, merge_kernels
from nvprof_wrap.readers._csv import number, open_text, split_preamble
from nvprof_wrap.readers._durations import Durations, fold
from nvprof_wrap.readers._head import Head
from nvprof_wrap.text.demangle import demangle

FORMAT = "pyprof-csv"


def sniff(head: Head) -> bool:
    first = head.first_line
    return '"Kernel","Module","Op"' in first or first.startswith("Kernel,Module,Op")


def read(path: Path) -> Capture:
    agg: dict[tuple[int | None, str], list[Any]] = {}  # (device, name) → _durations.fold's stats
    tc_flags = 0
    kernel_time = Durations("kernel")
    with open_text(path) as f:
        header, rows = split_preamble(f, path)
        idx = {h: i for i, h in enumerate(header)}
        if not {"Kernel", "Sil(ns)", "Device"} <= idx.keys():
            raise BadInput(path, "pyprof CSV without Kernel, Sil(ns) and Device columns")
        k, t, d, tc = idx["Kernel"], idx["Sil(ns)"], idx["Device"], idx.get("TC")
        for row in rows:
            if len(row) < len(header):
                continue
            ns = kernel_time.ns(number(row[t]))  # blank, negative or absurd: counted without its time
            device = number(row[d])
            dev = int(device) if device is not None else None
            agg[(dev, row[k])] = fold(agg.get((dev, row[k])), ns)
            tc_flags += tc is not None and row[tc].strip() == "1"
    # pyprof shortens the names it could demangle; one it could not (CUDA 11+ anonymous namespaces) stays mangled
    kernels = merge_kernels(KernelAgg(None, dev, demangle(name), *s) for (dev, name), s in agg.items())
    note = f"pyprof marked {tc_flags} launches as tensor-core (its own TC column)"
    return Capture(str(path), "pyprof-csv", kernels, notes=(note, *kernel_time.notes()))
