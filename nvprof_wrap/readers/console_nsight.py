"""What Nsight Systems and Nsight Compute print to the console:

- ``nsys profile --stats=true`` / ``nsys stats`` tables (``cuda_gpu_kern_sum``, ``cuda_gpu_mem_time_sum``; older:
  "CUDA Kernel Statistics", "CUDA Memory Operation Statistics (by time)"): a header, a row of dashes that gives
  each column's span, rows until a blank line. Times in ns, numbers with thousands separators. nsys cuts names
  wider than its column with "…"; such names are kept as they are and classify.py does not trust what the cut
  may hide (classify/engine.py).
- ``ncu``'s default per-kernel output: ``[pid] process@host``, then per launch a line naming the kernel (and,
  in newer versions, its grid, context, stream, device and compute capability) and ``Section:`` blocks of
  ``metric  unit  value`` rows. The Duration row gives the kernel's time; tensor-pipe metrics (``--metrics``)
  become counter verdicts as in the CSV export.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from nvprof_wrap.classify.counters import DURATION
from nvprof_wrap.model import KernelAgg, MemAgg, merge_kernels, merge_memops
from nvprof_wrap.readers._csv import TIME_UNITS_NS, number
from nvprof_wrap.readers.ncu_csv import _Launch
from nvprof_wrap.readers.nsys_stats_csv import _direction
from nvprof_wrap.text.demangle import demangle

KERNEL_TABLES = re.compile(r"cuda_gpu_kern_sum|gpukernsum|CUDA Kernel Statistics|cuda_gpu_kern_gb_sum")
MEMORY_TABLES = re.compile(r"cuda_gpu_mem_time_sum|gpumemtimesum"
                           r"|CUDA Memory Operation Statistics \((?:by time|nanosec)")
_TITLE = re.compile(r"Executing '(\w+)'|\*\* .*\((\w+)\):|^(CUDA [A-Za-z ]+Statistics[^:]*):?")
_DASHES = re.compile(r"^\s*-{3,}(?:\s+-{3,})+\s*$")


def _spans(dashes: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """Cells by the dashes' spans; the last (the name) runs to the end of the line."""
    out = [line[a:b].strip() for a, b in spans[:-1]]
    return [*out, line[spans[-1][0]:].strip()]


def nsys_tables(lines: Iterable[str]) -> tuple[list[KernelAgg], list[MemAgg]]:
    kernels, mem = [], []
    title, header, spans = "", None, None
    for line in lines:
        if m := _TITLE.search(line):
            title, header, spans = next(g for g in m.groups() if g), None, None
            continue
        if spans is None:
            if "Total Time" in line and ("Name" in line or "Operation" in line):
                header = line
            elif header is not None and _DASHES.match(line):
                spans = _spans(line)
                idx = {c: i for i, c in enumerate(_cells(header, spans))}
            continue
        if not line.strip():
            title, header, spans = "", None, None
            continue
        cells = _cells(line.rstrip("\n"), spans)
        total = number(cells[_col(idx, "Total Time")])
        count = number(cells[_col(idx, "Instances", "Count", "Num Calls", "Calls", "Operations")])
        if total is None or count is None:
            continue
        if MEMORY_TABLES.search(title):
            kind, d = _direction(cells[-1])
            mem.append(MemAgg(None, None, kind, d, int(count), int(total)))
        elif KERNEL_TABLES.search(title):
            lo, hi = _col(idx, "Min", "Minimum"), _col(idx, "Max", "Maximum")
            kernels.append(KernelAgg(None, None, _mark_cut(demangle(cells[-1])), int(count), int(total),
                                     _int(cells[lo]) if lo is not None else None,
                                     _int(cells[hi]) if hi is not None else None))
    return list(merge_kernels(kernels)), list(merge_memops(mem))


def _mark_cut(name: str) -> str:
    """Older nsys cuts long names at a fixed width without saying so: a name whose brackets do not close was cut,
    and gets the '…' that newer versions print, so the classifier treats it as cut."""
    if name.endswith(("…", "...")):
        return name
    depth = {"(": 0, "<": 0}
    for ch in name:
        if ch in "(<":
            depth[ch] += 1
        elif ch == ")":
            depth["("] -= 1
        elif ch == ">":
            depth["<"] -= 1
    return name + "…" if depth["("] > 0 or depth["<"] > 0 else name


def _col(idx: dict[str, int], *prefixes: str) -> int | None:
    return next((i for p in prefixes for c, i in idx.items() if c.startswith(p)), None)


def _int(text: str) -> int | None:
    v = number(text)
    return None if v is None else int(v)


_PROC = re.compile(r"^\s*\[(\d+)\] \S+@\S+")
_LAUNCH = re.compile(r"^  (\S.*?)(?: \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\))?,(?: [^,]+,)? Context \d+, Stream \d+"
                     r"(?:, Device (\d+), CC (\d+)\.(\d+))?\s*$")
_ROW = re.compile(r"^\s{4,}(\S.*?)\s{2,}(?:(\S+)\s+)?(-?[\d,]*\.?\d+(?:e[+-]?\d+)?)\s*$")


def ncu_sections(lines: Iterable[str]) -> dict[tuple, _Launch]:
    """One _Launch per kernel launch (the ncu CSV reader's type, so both share aggregation and verdicts)."""
    launches: dict[tuple, _Launch] = {}
    pid, current = "", None
    for line in lines:
        if line.startswith("=="):
            continue
        if m := _PROC.match(line):
            pid, current = m.group(1), None
        elif m := _LAUNCH.match(line.rstrip("\n")):
            current = launches[(pid, len(launches))] = _Launch(
                m.group(1), pid, m.group(2) or "", f"{m.group(3)}.{m.group(4)}" if m.group(3) else "")
        elif current is not None and (m := _ROW.match(line)):
            name, unit, value = m.group(1).strip(), m.group(2) or "", number(m.group(3))
            if name == "Duration" or name == DURATION:
                current.metrics[DURATION] = None if value is None else value * TIME_UNITS_NS.get(unit, 1)
            elif "__" in name or name.endswith("_utilization"):
                current.metrics[name] = value
    return launches
