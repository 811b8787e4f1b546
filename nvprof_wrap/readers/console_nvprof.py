"""What nvprof prints to the console, as people paste and commit it (``nvprof python train.py > log 2>&1``):

- the summary (``==PID== Profiling result:``, ``GPU activities:`` rows, times with us/ms/s suffixes, or a units
  row under the header when run with ``-u``), one per profiled process, among the program's own output;
- the summary's rows pasted without their header (into an issue: from ``GPU activities:`` on, or a few bare rows
  from its middle): read when the times carry their units (``45.50%  1.2345ms  100  12.345us …``; without units
  a number says nothing), the API-call rows after ``API calls:`` skipped as in a whole summary. A name that a
  console wrapped onto the next line (its brackets still open) is joined back;
- ``--print-gpu-trace``: one row per kernel or copy in fixed-width columns under a header ending in ``Name``;
- ``--metrics``: per device, per kernel, one row per metric with Min / Max / Avg. The tensor-core utilisation
  levels (``tensor_precision_fu_utilization``, ``tensor_int_fu_utilization``: ``Idle (0)`` … ``Max (10)``) are
  counter evidence: Max 0 → the kernel never used the tensor units; above 0 → it did.
"""
from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import CounterVerdict, Gpu, KernelAgg, MemAgg, merge_kernels
from nvprof_wrap.readers._csv import TIME_UNITS_NS
from nvprof_wrap.readers._durations import Durations, fold
from nvprof_wrap.readers.nvprof_csv import SIZE_UNITS, _mem_key, damaged_copy, keep_verdict
from nvprof_wrap.text.demangle import demangle

_PID = re.compile(r"^==(\d+)== ")
_SUMMARY_HEAD = re.compile(r"Time\(%\)\s+Time\s+Calls\s+Avg\s+Min\s+Max\s+Name")
# (the section's title in any case, and a Calls count grouped by commas — an edit's or a spreadsheet's: either had
# dropped the row unsaid, the table's largest kernel with it)
_SUMMARY_ROW = re.compile(r"^\s*(?:GPU activities:)?\s*([\d.]+)%?\s+(\S+)\s+(\d{1,3}(?:,\d{3})+|\d+)"
                          r"\s+(\S+)\s+(\S+)\s+(\S+)\s{2}(\S.*)$", re.IGNORECASE)
# A summary row whose times carry their units: what a row pasted without its header must look like to be read
_T = r"[\d.]+(?:ns|us|ms|s)"
ROW_TAIL = rf"[\d.]+%[ \t]+{_T}[ \t]+(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:[ \t]+{_T}){{3}}[ \t]{{2}}\S"
BARE_ROW = re.compile(rf"^[ \t]*(?:GPU activities:[ \t]+)?{ROW_TAIL}", re.IGNORECASE)
_GPU_ACTIVITIES = re.compile(r"GPU activities:", re.IGNORECASE)
_API_NAME = re.compile(r"^cu(?:da)?[A-Z]\w*$")  # cudaLaunchKernel, cuMemAlloc: API rows, never kernels
_VALUE = re.compile(r"^(-?[\d.]+(?:e[+-]?\d+)?)([a-zA-Z]*)$")
_DEVICE = re.compile(r'^Device "(.*) \((\d+)\)"')
_KERNEL = re.compile(r"^\s+Kernel: (.+)$")
_METRIC = re.compile(r"^\s+(\d+)\s+(\S+)\s+.*?\s{2,}(\S+(?: \(\d+\))?)\s+(\S+(?: \(\d+\))?)\s+(\S+(?: \(\d+\))?)\s*$")


def _ns(text: str, unit: str = "") -> int | None:
    """'341.20us' → 341200; '0.341204' with the units row's 'ms' → 341204; '-' → None."""
    m = _VALUE.match(text.strip())
    if not m:
        return None
    return round(float(m.group(1)) * TIME_UNITS_NS.get(m.group(2) or unit, 1))


def _unitless(text: str) -> bool:
    """Whether a value is a number with no unit of its own ('0.341204', not '341.20us' or '-')."""
    m = _VALUE.match(text.strip())
    return m is not None and not m.group(2)


def _wrapped(name: str, width: int, widest: int, line: str) -> bool:
    """Whether ``line`` (no summary row) is the rest of ``name``, broken by a console: the name's brackets are still
    open, or its row filled a terminal's width — as wide as the widest line so far, as a console breaks every line
    at its width: a row narrower than an earlier line was not broken (a log written to a file; what follows at the
    first column is the program's own output, which had been taken into the name) — and the line starts at the
    first column (rows are indented)."""
    if line.lstrip().startswith(("`", "=", "#")) or "API calls:" in line:
        return False
    opened = name.count("(") > name.count(")") or name.count("<") > name.count(">")
    return opened or (width >= 80 and width >= widest and not line[:1].isspace())


def summary(lines: Iterable[str], path: Path | None = None
            ) -> tuple[list[KernelAgg], list[MemAgg], int, list[str], int]:
    """GPU activity rows of every ``Profiling result:`` block, and of rows pasted without it; API calls and other
    sections end a block. The count: rows read outside a ``Profiling result:`` block (a fragment's). A Time with no
    unit of its own and no units line above it (``nvprof -u ms`` writes one under the header) is refused, naming
    path: read as ns, every time of the table was 0. The lines: those inside a block's table that are no row nor
    a wrapped name's rest — not counted, and said (they had been dropped unsaid). Last, how many tables repeat an
    earlier one row for row (the same summary pasted twice: nvprof prints one a process), counted once."""
    rows: list[tuple[int | None, str, int, int | None, int | None, int | None]] = []  # pid, name, n, ns, min, max
    pid: int | None = None
    state = "out"
    units: list[str] = []
    bare = width = widest = 0  # width: of the last row's line, a console's when it broke the row; widest: any line's
    odd: list[str] = []
    starts = [0]  # where each table's rows begin in rows
    for line in lines:
        before, widest = widest, max(widest, len(line.rstrip("\r\n")))  # before: the lines' above this one
        if m := _PID.match(line):
            pid = int(m.group(1))
            if "Profiling result" not in line:
                state = "out"
            continue
        if _SUMMARY_HEAD.search(line):
            state, units = "units?", []
            starts.append(len(rows))
            continue
        if state == "units?":
            state = "rows"
            if not any(c.isdigit() for c in line) and "%" in line:
                units = line.split()[1:]  # '%' then the unit of Time, Avg, Min, Max
                continue
        if state in ("out", "api") and BARE_ROW.match(line):
            if state == "api" and not _GPU_ACTIVITIES.search(line):
                continue  # the API-call rows that follow 'API calls:'
            state, units, bare = "bare", [], bare + 1
            starts.append(len(rows))
        elif state == "bare" and BARE_ROW.match(line):
            bare += 1
        if "API calls:" in line:
            state = "api"
            continue
        if state not in ("rows", "bare"):
            if not line.strip():
                state = "out"
            continue
        if not line.strip():
            state = "out"
            continue
        m = _SUMMARY_ROW.match(line) if state == "rows" or BARE_ROW.match(line) else None  # a fragment's: units
        if not m:
            if rows and _wrapped(rows[-1][1], width, before, line):  # a wrapped name's rest. The console broke the line
                p, name, n, t, lo, hi = rows[-1]  # anywhere: a single space at either side of the break is the
                rest = line.rstrip("\r\n")  # name's; more is a paste's indent
                rows[-1] = (p, name + (rest.lstrip() if rest.startswith("  ") else rest), n, t, lo, hi)
                width = len(rest)
            elif state == "bare":
                state = "out"  # a fragment's rows end where text that is no row begins
            else:
                odd.append(line.strip())
            continue
        unit = (units + [""])[0] if units else ""
        if not unit and _unitless(m.group(2)):
            raise BadInput(path, f"nvprof summary: the Time {m.group(2).strip()!r} has no unit, and no units line "
                                 "under the header gives one (a line lost?)")
        width = len(line.rstrip("\r\n"))
        rows.append((pid, m.group(7).rstrip("\r\n"), int(m.group(3).replace(",", "")), _ns(m.group(2), unit),
                     _ns(m.group(5), units[2] if len(units) > 2 else unit),
                     _ns(m.group(6), units[3] if len(units) > 3 else unit)))
    tables = [tuple(rows[a:b]) for a, b in itertools.pairwise([*starts, len(rows)]) if b > a]
    kept = list(dict.fromkeys(tables))
    kernels: list[KernelAgg] = []
    mem: dict[tuple[int | None, str, str], MemAgg] = {}  # (pid, kind, direction)
    for p, raw, n, t, lo, hi in (row for table in kept for row in table):
        name = raw.strip()
        key = _mem_key(name)
        if key:
            old = mem.get((p, *key))
            mem[(p, *key)] = MemAgg(p, None, key[0], key[1], n + (old.count if old else 0),
                                    (t or 0) + (old.total_ns if old else 0))
        elif not name.startswith("[Unified Memory") and not _API_NAME.match(name):
            kernels.append(KernelAgg(p, None, demangle(name), n, t, lo, hi))
    return list(merge_kernels(kernels)), list(mem.values()), bare, odd, len(tables) - len(kept)


def _columns(header: str) -> list[tuple[str, int, int]]:
    """(label, start, end) of each right-aligned column of a --print-gpu-trace header; Name runs to the end."""
    cols, prev = [], 0
    for m in re.finditer(r"\S+(?: \S+)*", header):
        label = m.group(0)
        if label == "Name":
            cols.append((label, m.start(), 10**9))
            break
        cols.append((label, prev, m.end()))
        prev = m.end()
    return cols


def gpu_trace(lines: Iterable[str], path: Path | None = None
              ) -> tuple[list[KernelAgg], list[MemAgg], list[Gpu], tuple[str, ...]]:
    """Kernels, copies and sets of the per-launch listing (--print-gpu-trace), the devices, and notes (path: the
    file, named where a line is damaged)."""
    kernel_time, mem_time = Durations("kernel"), Durations("memcpy/memset")
    kern: dict[tuple[int | None, int | None, str], list[Any]] = {}  # (pid, device, name) → _durations.fold's stats
    # (pid, device, kind, direction) → [count, ns, bytes]
    mem: dict[tuple[int | None, int | None, str, str], list[int]] = {}
    devices: dict[int, str] = {}
    cols: list[tuple[str, int, int]] | None = None
    pid: int | None = None
    for line in lines:
        if m := _PID.match(line):
            pid = int(m.group(1))
            continue
        if re.match(r"^\s+Start\s+Duration\s", line):
            cols = _columns(line.rstrip("\n"))
            continue
        if cols is None or not line.strip() or line.startswith(("Regs:", "SSMem:", "DSMem:", "SrcMemType:")):
            continue
        row = {label: line[a:b].strip() for label, a, b in cols}
        # nvprof appends the launch's correlation id to kernel names: 'Kernel(Node*, int) [137]'
        name, dur = re.sub(r" \[\d+\]$", "", row.get("Name", "")), _ns(row.get("Duration", ""))
        if not name or dur is None or name.startswith("[Unified Memory"):
            continue
        dev = None
        if d := re.match(r"^(.*) \((\d+)\)$", row.get("Device", "")):
            dev = int(d.group(2))
            devices[dev] = d.group(1)
        key = _mem_key(name)
        dur = (mem_time if key else kernel_time).ns(dur)  # negative or absurd: counted without its time
        if key:
            s = mem.setdefault((pid, dev, *key), [0, 0, 0])
            s[0] += 1
            s[1] += dur or 0
            size = re.match(r"^([\d.]+)([KMG]?B)$", row.get("Size", ""))
            s[2] += round(float(size.group(1)) * SIZE_UNITS[size.group(2)]) if size else 0
        else:
            kern[(pid, dev, name)] = fold(kern.get((pid, dev, name)), dur)
    for _p, _d, n in kern:  # once per distinct name, not per line
        damaged_copy(path, n)
    kernels = list(merge_kernels(KernelAgg(p, d, demangle(n), *s) for (p, d, n), s in kern.items()))
    memops = [MemAgg(p, d, k, di, *s) for (p, d, k, di), s in mem.items()]
    return kernels, memops, [Gpu(i, n) for i, n in devices.items()], kernel_time.notes() + mem_time.notes()


def metrics(lines: Iterable[str]) -> tuple[list[KernelAgg], list[CounterVerdict], list[Gpu]]:
    """--metrics: launches per kernel (its invocations) without durations, and tensor-unit counter verdicts."""
    launches: dict[tuple[int | None, int | None, str], int] = {}  # (pid, device, kernel) → invocations
    verdicts: dict[str, CounterVerdict] = {}
    devices: dict[int, str] = {}
    pid, dev, kernel = None, None, None
    for line in lines:
        if m := _PID.match(line):
            pid = int(m.group(1))
        elif m := _DEVICE.match(line.strip()):
            dev = int(m.group(2))
            devices[dev] = m.group(1)
        elif m := _KERNEL.match(line):
            kernel = demangle(m.group(1).strip())
        elif kernel and (m := _METRIC.match(line)):
            invocations = int(m.group(1))
            launches[(pid, dev, kernel)] = max(launches.get((pid, dev, kernel), 0), invocations)
            keep_verdict(verdicts, kernel, m.group(2), invocations, m.group(4))
    kernels = [KernelAgg(p, d, n, c, None) for (p, d, n), c in launches.items()]
    return kernels, list(verdicts.values()), [Gpu(i, n) for i, n in devices.items()]
