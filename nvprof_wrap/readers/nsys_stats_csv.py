"""``nsys stats --format csv`` reports: ``cuda_gpu_kern_sum`` (older: ``gpukernsum``) and
``cuda_gpu_mem_time_sum`` (older: ``gpumemtimesum``). Times are in ns, as the headers say. With ``:nvtx-name`` a
kernel's name starts with its innermost NVTX range (``attention_softmax/elementwise_kernel``): the kernel's own name
is what gets classified, the range goes to the per-range table (ops)."""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Capture, KernelAgg, MemAgg, OpAgg, merge_kernels
from nvprof_wrap.readers._csv import number, open_text, split_preamble
from nvprof_wrap.readers._head import Head
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline.nvtx import op_name

_TOTAL = ("Total Time (ns)", "Total Time")
_COUNT = ("Instances", "Count", "Calls", "Num Calls")
_MIN = ("Min (ns)", "Minimum")
_MAX = ("Max (ns)", "Maximum")


# A '/' ahead of a name's first '<' or '(' belongs to no C++ name: it ends the NVTX range nsys put before it.
_NVTX_SPLIT = re.compile(r"^([^<>()/]*[^<>()/\s])/(?=[A-Za-z_~])")
NVTX_NOTE = ("kernel names prefixed with their NVTX range (nsys stats ':nvtx-name'): the kernel's own name is "
             "classified, the range goes to the per-range table ({} rows)")


def nvtx_split(name: str) -> tuple[str | None, str]:
    """(the NVTX range nsys put before a kernel's name, or None; the kernel's own name)."""
    m = _NVTX_SPLIT.match(name)
    if m is None or m.group(1).endswith("operator"):
        return None, name
    return m.group(1), name[m.end():]


def merge_ops(ops: list[OpAgg]) -> list[OpAgg]:
    """One row per (range, kernel): the same kernel cut to the same visible name, or in two tables, summed."""
    merged: dict[tuple[str, str, str], tuple[int, int]] = {}
    for o in ops:
        n, t = merged.get((o.scope, o.op, o.name), (0, 0))
        merged[(o.scope, o.op, o.name)] = (n + o.launches, t + o.total_ns)
    return [OpAgg(None, scope, op, name, n, t) for (scope, op, name), (n, t) in merged.items()]


def _col(idx: dict[str, int], names: tuple[str, ...]) -> int | None:
    return next((idx[n] for n in names if n in idx), None)


def _direction(op: str) -> tuple[str, str]:
    if "memset" in op.lower():
        return "memset", ""
    for words, d in (("Host-to-Device", "HtoD"), ("Device-to-Host", "DtoH"), ("Device-to-Device", "DtoD"),
                     ("Host-to-Host", "HtoH"), ("Peer-to-Peer", "PtoP")):
        if words in op or d in op:
            return "memcpy", d
    return "memcpy", "other"


FORMAT = "nsys-stats-csv"


def sniff(head: Head) -> bool:
    first = head.first_line
    return "Total Time" in first and ("Instances" in first or "Count" in first or "Calls" in first)


def read(path: Path) -> Capture:
    cut_short = not _ends_a_line(path)
    cut_notes: list[str] = []
    with open_text(path) as f:
        header, rows = split_preamble(f, path)
        idx = {h: i for i, h in enumerate(header)}
        total, count = _col(idx, _TOTAL), _col(idx, _COUNT)
        if total is None or count is None:
            raise BadInput(path, "nsys stats CSV without 'Total Time' and 'Instances' columns")
        lo, hi = _col(idx, _MIN), _col(idx, _MAX)
        kernels, mem, ops = [], [], []
        op = idx.get("Operation")
        name = idx.get("Name")
        for i, (row, last) in enumerate(_with_last(rows), 1):
            if len(row) < len(header):
                if not any(c.strip() for c in row):
                    continue
                if last and cut_short:  # the file ends inside this row, before its name
                    cut_notes.append(f"its last row ends before its name ('{','.join(row)[:48]}'): the file was cut "
                                     "short there — that row is not in this report")
                    continue
                raise BadInput(path, f"data row {i:,} holds {len(row)} of the header's {len(header)} columns: the "
                                     "file is damaged there")
            n, t = number(row[count]), number(row[total])
            if n is None or t is None:
                raise BadInput(path, f"data row {i:,}: its '{header[count]}' or '{header[total]}' is no number "
                                     f"('{row[count][:20]}', '{row[total][:20]}')")
            n, t = int(n), int(t)
            if op is not None:
                kind, d = _direction(row[op])
                mem.append(MemAgg(None, None, kind, d, n, t))
            elif name is not None:
                where, own = nvtx_split(row[name])
                if last and cut_short and name == len(header) - 1:  # the file ends inside the row's name
                    own += "…"
                    cut_notes.append(f"its last row's name ends where the file does (no line end): read as cut "
                                     f"('{own[-40:]}')")
                kernels.append(KernelAgg(None, None, demangle(own), n, t,
                                         int(number(row[lo]) or 0) if lo is not None else None,
                                         int(number(row[hi]) or 0) if hi is not None else None))
                ops.append(OpAgg(None, op_name(where), op_name(where), kernels[-1].name, n, t))
    fmt = "nsys-stats-memops" if op is not None else "nsys-stats-kernels"
    ranged = merge_ops(ops) if any(o.op != op_name(None) for o in ops) else []
    notes = ("summary CSV: no timeline, no idle time", *([NVTX_NOTE.format(len(ranged))] if ranged else []),
             *cut_notes)
    return Capture(str(path), fmt, merge_kernels(kernels), tuple(mem), ops=tuple(ranged), notes=notes)


def _with_last(rows: Iterator[list[str]]) -> Iterator[tuple[list[str], bool]]:
    """(row, whether it is the last one)."""
    held = next(rows, None)
    for row in rows:
        yield held or [], False
        held = row
    if held is not None:
        yield held, True


def _ends_a_line(path: Path) -> bool:
    """Whether the file's last byte ends a line, as nsys ends every row; a gzipped file's end is checked by gzip
    (a stream cut short is refused as such)."""
    try:
        with open(path, "rb") as f:
            if f.read(2) == b"\x1f\x8b":
                return True
            f.seek(0, 2)
            if f.tell() == 0:
                return True
            f.seek(-1, 2)
            return f.read(1) in (b"\n", b"\r")
    except OSError:
        return True  # open_text says why
