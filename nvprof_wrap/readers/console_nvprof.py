"""What nvprof prints to the console, as people paste and commit it (``nvprof python train.py > log 2>&1``):

- the summary (``==PID== Profiling result:``, ``GPU activities:`` rows, times with us/ms/s suffixes, or a units
  row under the header when run with ``-u``), one per profiled process, among the program's own output;
- ``--print-gpu-trace``: one row per kernel or copy in fixed-width columns under a header ending in ``Name``;
- ``--metrics``: per device, per kernel, one row per metric with Min / Max / Avg. The tensor-core utilisation
  levels (``tensor_precision_fu_utilization``, ``tensor_int_fu_utilization``: ``Idle (0)`` … ``Max (10)``) are
  counter evidence: Max 0 → the kernel never used the tensor units; above 0 → it did.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from nvprof_wrap.classify.counters import DECISIVE
from nvprof_wrap.model import CounterVerdict, Gpu, KernelAgg, MemAgg, merge_kernels
from nvprof_wrap.readers._csv import TIME_UNITS_NS
from nvprof_wrap.readers._durations import Durations, fold
from nvprof_wrap.readers.nvprof_csv import SIZE_UNITS, _mem_key
from nvprof_wrap.text.demangle import demangle

_PID = re.compile(r"^==(\d+)== ")
_SUMMARY_HEAD = re.compile(r"Time\(%\)\s+Time\s+Calls\s+Avg\s+Min\s+Max\s+Name")
_SUMMARY_ROW = re.compile(r"^\s*(?:GPU activities:)?\s*([\d.]+)%?\s+(\S+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s{2}(\S.*)$")
_VALUE = re.compile(r"^(-?[\d.]+(?:e[+-]?\d+)?)([a-zA-Z]*)$")
_DEVICE = re.compile(r'^Device "(.*) \((\d+)\)"')
_KERNEL = re.compile(r"^\s+Kernel: (.+)$")
_METRIC = re.compile(r"^\s+(\d+)\s+(\S+)\s+.*?\s{2,}(\S+(?: \(\d+\))?)\s+(\S+(?: \(\d+\))?)\s+(\S+(?: \(\d+\))?)\s*$")
_LEVEL = re.compile(r"\((\d+)\)$")


def _ns(text: str, unit: str = "") -> int | None:
    """'341.20us' → 341200; '0.341204' with the units row's 'ms' → 341204; '-' → None."""
    m = _VALUE.match(text.strip())
    if not m:
        return None
    return round(float(m.group(1)) * TIME_UNITS_NS.get(m.group(2) or unit, 1))


def summary(lines: Iterable[str]) -> tuple[list[KernelAgg], list[MemAgg]]:
    """GPU activity rows of every ``Profiling result:`` block; API calls and other sections end a block."""
    kernels: list[KernelAgg] = []
    mem: dict[tuple[int | None, str, str], MemAgg] = {}  # (pid, kind, direction)
    pid: int | None = None
    state = "out"
    units: list[str] = []
    for line in lines:
        if m := _PID.match(line):
            pid = int(m.group(1))
            if "Profiling result" not in line:
                state = "out"
            continue
        if _SUMMARY_HEAD.search(line):
            state, units = "units?", []
            continue
        if state == "units?":
            state = "rows"
            if not any(c.isdigit() for c in line) and "%" in line:
                units = line.split()[1:]  # '%' then the unit of Time, Avg, Min, Max
                continue
        if state != "rows":
            continue
        if "API calls:" in line or not line.strip():
            state = "out"
            continue
        m = _SUMMARY_ROW.match(line)
        if not m:
            continue
        unit = (units + [""])[0] if units else ""
        t, n, name = _ns(m.group(2), unit), int(m.group(3)), m.group(7).strip()
        lo = _ns(m.group(5), units[2] if len(units) > 2 else unit)
        hi = _ns(m.group(6), units[3] if len(units) > 3 else unit)
        key = _mem_key(name)
        if key:
            old = mem.get((pid, *key))
            mem[(pid, *key)] = MemAgg(pid, None, key[0], key[1], n + (old.count if old else 0),
                                      (t or 0) + (old.total_ns if old else 0))
        elif not name.startswith("[Unified Memory"):
            kernels.append(KernelAgg(pid, None, demangle(name), n, t, lo, hi))
    return list(merge_kernels(kernels)), list(mem.values())


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


def gpu_trace(lines: Iterable[str]) -> tuple[list[KernelAgg], list[MemAgg], list[Gpu], tuple[str, ...]]:
    """Kernels, copies and sets of the per-launch listing (--print-gpu-trace), the devices, and notes."""
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
    kernels = list(merge_kernels(KernelAgg(p, d, demangle(n), *s) for (p, d, n), s in kern.items()))
    memops = [MemAgg(p, d, k, di, *s) for (p, d, k, di), s in mem.items()]
    return kernels, memops, [Gpu(i, n) for i, n in devices.items()], kernel_time.notes() + mem_time.notes()


def _level(text: str) -> float | None:
    """'Idle (0)' → 0, 'Low (2)' → 2; a plain number → itself."""
    m = _LEVEL.search(text)
    if m:
        return float(m.group(1))
    v = _VALUE.match(text.replace(",", ""))
    return float(v.group(1)) if v else None


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
            invocations, metric, peak = int(m.group(1)), m.group(2), _level(m.group(4))
            launches[(pid, dev, kernel)] = max(launches.get((pid, dev, kernel), 0), invocations)
            if metric in DECISIVE and peak is not None:
                verdict = "yes" if peak > 0 else "no"
                old = verdicts.get(kernel)
                if old is None or (old.tensor_core == "no" and verdict == "yes"):
                    verdicts[kernel] = CounterVerdict(kernel, verdict, invocations, metric, peak,
                                                      f"{metric} max {m.group(4)} over {invocations} invocations")
    kernels = [KernelAgg(p, d, n, c, None) for (p, d, n), c in launches.items()]
    return kernels, list(verdicts.values()), [Gpu(i, n) for i, n in devices.items()]
