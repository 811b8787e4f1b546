"""``nsys stats --format csv`` reports: ``cuda_gpu_kern_sum`` (older: ``gpukernsum``) and
``cuda_gpu_mem_time_sum`` (older: ``gpumemtimesum``). Times are in ns, as the headers say."""
from __future__ import annotations

from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Capture, KernelAgg, MemAgg, merge_kernels
from nvprof_wrap.readers._csv import number, open_text, split_preamble
from nvprof_wrap.readers._head import Head
from nvprof_wrap.text.demangle import demangle

_TOTAL = ("Total Time (ns)", "Total Time")
_COUNT = ("Instances", "Count", "Calls", "Num Calls")
_MIN = ("Min (ns)", "Minimum")
_MAX = ("Max (ns)", "Maximum")


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
    with open_text(path) as f:
        header, rows = split_preamble(f, path)
        idx = {h: i for i, h in enumerate(header)}
        total, count = _col(idx, _TOTAL), _col(idx, _COUNT)
        if total is None or count is None:
            raise BadInput(path, "nsys stats CSV without 'Total Time' and 'Instances' columns")
        lo, hi = _col(idx, _MIN), _col(idx, _MAX)
        kernels, mem = [], []
        op = idx.get("Operation")
        name = idx.get("Name")
        for row in rows:
            if len(row) < len(header):
                continue
            n, t = int(number(row[count]) or 0), int(number(row[total]) or 0)
            if op is not None:
                kind, d = _direction(row[op])
                mem.append(MemAgg(None, None, kind, d, n, t))
            elif name is not None:
                kernels.append(KernelAgg(None, None, demangle(row[name]), n, t,
                                         int(number(row[lo]) or 0) if lo is not None else None,
                                         int(number(row[hi]) or 0) if hi is not None else None))
    fmt = "nsys-stats-memops" if op is not None else "nsys-stats-kernels"
    return Capture(str(path), fmt, merge_kernels(kernels), tuple(mem),
                   notes=("summary CSV: no timeline, no idle time",))
