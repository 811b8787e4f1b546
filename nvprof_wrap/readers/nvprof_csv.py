"""``nvprof --csv`` output: ``--print-gpu-summary``, ``--print-gpu-trace`` and ``--metrics``.

Both start with a ``==PID==`` preamble, then a header and a units row (``,%,ms,,us,us,ms,``) that
gives each time column's unit. The summary may be followed by a Unified Memory section, which ends
the GPU-activity rows; the device it names ("TITAN Xp (0)") is the only GPU record a summary has.
``--metrics`` writes no units row: one row per device × kernel × metric (``"Device","Kernel","Invocations",
"Metric Name","Metric Description","Min","Max","Avg"``), kernels by their demangled names, no durations. The
tensor-unit utilisation levels (``tensor_precision_fu_utilization``, ``tensor_int_fu_utilization``) decide a
kernel as in the console's --metrics (readers/console_nvprof.py); other metrics leave it to its name.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from nvprof_wrap.classify.counters import DECISIVE
from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Capture, CounterVerdict, Gpu, KernelAgg, MemAgg, Process, merge_kernels
from nvprof_wrap.readers._csv import TIME_UNITS_NS, number, open_text, pid_from_preamble, split_preamble
from nvprof_wrap.readers._durations import Durations, fold
from nvprof_wrap.readers._head import Head
from nvprof_wrap.system.limits import MAX_DURATION_NS
from nvprof_wrap.text.demangle import demangle

_DEVICE = re.compile(r"^(.*) \((\d+)\)$")
SIZE_UNITS = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}
_LEVEL = re.compile(r"\((\d+)\)$")
_PLAIN = re.compile(r"^-?[\d.]+(?:e[+-]?\d+)?")
METRICS_HEADER = '"Device","Kernel","Invocations","Metric Name"'
_MEM = re.compile(r"^\[CUDA (memcpy|memset)\s*([A-Za-z]+)?\]$")


_COPY_LIKE = re.compile(r"\bCUDA mem(?:cpy|set)\b|\bmem(?:cpy|set) [A-Za-z]+\]|\b(?:HtoD|DtoH|DtoD|HtoH|PtoP)\]$")


def damaged_copy(path: Path | None, name: str) -> None:
    """Refuse a name that reads like nvprof's copy or set ('[CUDA memcpy DtoH]') but is not one — a quote appended,
    a column's cell lost (the name cut to 'UDA memcpy DtoH]'), a byte changed: it was read as a kernel (a copy
    lost, a kernel of unknown kind more), exit 0."""
    if _COPY_LIKE.search(name) and _mem_key(name) is None:
        raise BadInput(path, f"nvprof: a copy's or set's name reads {name[:60]!r}, not as nvprof writes it (a "
                             "damaged line?)")


def _mem_key(name: str) -> tuple[str, str] | None:
    m = _MEM.match(name.strip())
    if not m:
        return None
    kind, direction = m.group(1), m.group(2) or ""
    return kind, (direction if direction in ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP")
                  else ("" if kind == "memset" else "other"))


def level(text: str) -> float | None:
    """A metric's value: 'Idle (0)' → 0, 'Low (2)' → 2 (nvprof's utilisation levels); a plain number → itself."""
    m = _LEVEL.search(text.strip())
    if m:
        return float(m.group(1))
    v = _PLAIN.match(text.replace(",", "").strip())
    return float(v.group(0)) if v else None


def keep_verdict(verdicts: dict[str, CounterVerdict], kernel: str, metric: str, invocations: int,
                 peak: str) -> None:
    """Record what a tensor-unit metric's Max says of ``kernel`` (above 0: used; 0: not), a yes winning over a no."""
    value = level(peak)
    if metric not in DECISIVE or value is None:
        return
    verdict = "yes" if value > 0 else "no"
    old = verdicts.get(kernel)
    if old is None or (old.tensor_core == "no" and verdict == "yes"):
        verdicts[kernel] = CounterVerdict(kernel, verdict, invocations, metric, value,
                                          f"{metric} max {peak.strip()} over {invocations} invocations")


def _scale(units: list[str], col: int) -> int:
    return TIME_UNITS_NS.get(units[col].strip(), 1) if col < len(units) else 1


def _units(path: Path, rows: Iterator[list[str]], col: str, at: int) -> list[str]:
    """The units row after the header, whose cell under the time column ``col`` (index ``at``) names a time unit.
    Without it the first data row was taken for it (a kernel lost) and every time read unscaled (ms as ns)."""
    units = next(rows, None)
    if units is None:
        raise BadInput(path, "nvprof CSV with a header but no rows")
    cell = units[at].strip() if at < len(units) else ""
    if cell not in TIME_UNITS_NS:
        raise BadInput(path, f"nvprof CSV: the row after the header is not its units row (its {col} reads "
                             f"{cell!r}, not a unit such as ms, us or ns)")
    return units


def _width(path: Path, row: list[str], header: list[str]) -> None:
    """Refuse a row of the table whose fields are not the header's: a row cut short (the file cut inside it), a
    line joined or split by a stray separator — read, its columns shifted (a copy read as a kernel named after a
    number) or the row dropped."""
    if len(row) != len(header):
        shown = ",".join(row)
        raise BadInput(path, f"nvprof CSV: a row of {len(row)} fields where the header has {len(header)} (a cut or "
                             f"damaged line?): {shown[:120]!r}")


# The tables after the GPU activities and API calls start with a header of this many columns at least (Unified
# Memory's "Device","Count","Avg Size",… has 8); a shorter line there was taken for one, and every row after it left
# unread: a kernel name wrapped onto a line of its own lost the tensor-core kernel after it ("not seen")
_HEADER_FIELDS = 3


MAX_LAUNCHES_A_ROW = 1e15  # calls in one row: more than a capture of a year at a million launches a second
MAX_TOTAL_NS = float(1 << 62)  # a row's total time: its sum with the others stays an int64


def _bound(path: Path, row: list[str], i: int | None, units: list[str]) -> int | None:
    """A summary row's Min or Max in ns (0 where it is empty); refused where it is no duration."""
    if i is None:
        return None
    v = (number(row[i]) or 0) * _scale(units, i)
    if not 0 <= v <= MAX_DURATION_NS:
        raise BadInput(path, f"nvprof summary CSV: a Min or Max of {row[i][:40]!r}, not a duration")
    return int(v)


def _summary(path: Path, header: list[str], rows: Iterator[list[str]], pid: int | None) -> Capture:
    idx = {h: i for i, h in enumerate(header)}
    t, calls, name, lo, hi = idx["Time"], idx["Calls"], idx["Name"], idx.get("Min"), idx.get("Max")
    units = _units(path, rows, "Time", t)
    kernels: list[KernelAgg] = []
    mem: dict[tuple[str, str], MemAgg] = {}
    section = ""  # the table after the GPU activities and API calls: "Device" is the Unified Memory section
    devices: dict[int, str] = {}
    for row in rows:
        if section:
            if section == "Device" and row and (m := _DEVICE.match(row[0].strip())):
                devices[int(m.group(2))] = m.group(1)
            continue
        if row and row[0] not in ("GPU activities", "API calls"):
            if any(number(c) is not None for c in row):  # a table's header names its columns: no numbers
                raise BadInput(path, f"nvprof summary CSV: a row of the GPU activities and API calls table whose "
                                     f"type reads {row[0][:60]!r} (a damaged line?)")
            # no table's header, nor nvprof's own '==PID== Unified Memory profiling result:' before one: the end of a
            # name wrapped onto a line of its own
            if len(row) < _HEADER_FIELDS and not row[0].lstrip().startswith("=="):
                raise BadInput(path, f"nvprof summary CSV: a line of {len(row)} field(s), {','.join(row)[:60]!r}, "
                                     "among the GPU activities and API calls (a kernel name wrapped onto the next "
                                     "line?)")
            section = row[0].strip() or "?"  # the Unified Memory section or another table starts
            continue
        _width(path, row, header)
        if row[0] != "GPU activities":
            continue
        time = number(row[t])
        # a negative total, one past 2^62 ns or not a number is no time: refused, as an unreadable line, where it had
        # come out as the tool's own error (NaN, infinity, 1e300) or as 0 ns (negative)
        if time is None or not 0 <= time * _scale(units, t) <= MAX_TOTAL_NS:
            raise BadInput(path, f"nvprof summary CSV: {row[name][:80]!r} has a Time of {row[t][:40]!r}, not a "
                                 "duration")
        total = int(time * _scale(units, t))
        calls_n = number(row[calls])
        if calls_n is not None and not 0 <= calls_n <= MAX_LAUNCHES_A_ROW:
            raise BadInput(path, f"nvprof summary CSV: {row[name][:80]!r} has {row[calls][:40]!r} calls, not a count")
        n = int(calls_n or 0)
        key = _mem_key(row[name])
        if key:
            mem[key] = MemAgg(pid, None, key[0], key[1], n, total)
            continue
        damaged_copy(path, row[name])
        mn, mx = (_bound(path, row, i, units) for i in (lo, hi))
        kernels.append(KernelAgg(pid, None, demangle(row[name]), n, total, mn, mx))
    notes = ["summary CSV: no timeline, no idle time"]
    gpus: tuple[Gpu, ...] = ()
    if len(devices) == 1:
        # The summary names no device; its Unified Memory section does ('"TITAN Xp (0)",158,…'). With one GPU named
        # in the whole capture, the kernels are taken to have run on it, so the GPU can decide what names cannot.
        (d, gpu), = devices.items()
        kernels = [replace(k, device_id=d) for k in kernels]
        mem = {key: replace(m, device_id=d) for key, m in mem.items()}
        gpus = (Gpu(d, gpu),)
        notes.append(f"GPU from the Unified Memory section: {gpu} ({d}), the only device the capture names")
    elif devices:
        notes.append(f"{len(devices)} GPUs named in the Unified Memory section: kernels not attributed to one")
    return Capture(str(path), "nvprof-csv-summary", merge_kernels(kernels), tuple(mem.values()), devices=gpus,
                   processes=(Process(pid),) if pid else (), notes=tuple(notes))


# nvprof --print-gpu-trace appends each launch's correlation id to the name ('init_kernel<double>(…) [128]'):
# without this, every launch would be a kernel of its own.
_CORRELATION = re.compile(r"\s\[\d+\]$")


def _trace(path: Path, header: list[str], rows: Iterator[list[str]], pid: int | None) -> Capture:
    idx = {h: i for i, h in enumerate(header)}
    dur, name, dev, size = idx["Duration"], idx["Name"], idx.get("Device"), idx.get("Size")
    units = _units(path, rows, "Duration", dur)
    kern: dict[tuple[int | None, str], list[Any]] = {}  # (device, name) → _durations.fold's stats
    mem: dict[tuple[int | None, str, str], list[int]] = {}  # (device, kind, direction) → [count, ns, bytes]
    devices: dict[int, str] = {}
    kernel_time, mem_time = Durations("kernel"), Durations("memcpy/memset")
    for row in rows:
        _width(path, row, header)
        d = None
        if dev is not None and (m := _DEVICE.match(row[dev].strip())):
            d = int(m.group(2))
            devices[d] = m.group(1)
        raw = number(row[dur])
        key = _mem_key(row[name])
        # a blank, negative or absurd duration: counted, without its time (readers/_durations.py)
        ns = (mem_time if key else kernel_time).ns(None if raw is None else raw * _scale(units, dur))
        if key:
            s = mem.setdefault((d, *key), [0, 0, 0])
            s[0] += 1; s[1] += ns or 0
            if size is not None and size < len(row):  # the units row gives B, KB, MB or GB
                unit = units[size].strip() if size < len(units) else "B"
                s[2] += int((number(row[size]) or 0) * SIZE_UNITS.get(unit, 1))
        else:
            k = (d, _CORRELATION.sub("", row[name]))
            kern[k] = fold(kern.get(k), ns)
    for _d, n in kern:  # once per distinct name, not per row
        damaged_copy(path, n)
    kernels = merge_kernels(KernelAgg(pid, d, demangle(n), *s) for (d, n), s in kern.items())
    memops = tuple(MemAgg(pid, d, k, di, *s) for (d, k, di), s in mem.items())
    return Capture(str(path), "nvprof-csv-trace", kernels, memops,
                   devices=tuple(Gpu(i, n) for i, n in devices.items()),
                   processes=(Process(pid),) if pid else (), notes=kernel_time.notes() + mem_time.notes())


def _metrics(path: Path, header: list[str], rows: Iterator[list[str]], pid: int | None) -> Capture:
    idx = {h: i for i, h in enumerate(header)}
    dev_col, kernel, calls, metric, peak = (idx[k] for k in ("Device", "Kernel", "Invocations", "Metric Name", "Max"))
    need = max(dev_col, kernel, calls, metric, peak)
    launches: dict[tuple[int | None, str], int] = {}  # (device, kernel) → invocations
    verdicts: dict[str, CounterVerdict] = {}
    devices: dict[int, str] = {}
    for row in rows:
        if len(row) <= need:
            continue
        d = None
        if m := _DEVICE.match(row[dev_col].strip()):
            d = int(m.group(2))
            devices[d] = m.group(1)
        name, n = demangle(row[kernel]), int(number(row[calls]) or 0)
        launches[(d, name)] = max(launches.get((d, name), 0), n)
        keep_verdict(verdicts, name, row[metric].strip(), n, row[peak])
    if not launches:
        raise BadInput(path, "nvprof --metrics CSV with a header but no kernel rows")
    # Replayed for counters: launches without durations; the store counts them only when nothing timed the kernels.
    return Capture(str(path), "nvprof-metrics", merge_kernels(KernelAgg(pid, d, n, c, None)
                                                              for (d, n), c in launches.items()),
                   devices=tuple(Gpu(i, n) for i, n in devices.items()), processes=(Process(pid),) if pid else (),
                   counters=tuple(verdicts.values()),
                   notes=("nvprof --metrics: launches replayed for counters, kernel time not captured",))


FORMAT = "nvprof-csv"


def sniff(head: Head) -> bool:
    return head.first_line.startswith(('"Type","Time(%)"', '"Start","Duration"', METRICS_HEADER))


def read(path: Path) -> Capture:
    pid = pid_from_preamble(path)
    with open_text(path) as f:
        header, rows = split_preamble(f, path)
        if {"Type", "Time", "Calls", "Name"} <= set(header):
            return _summary(path, header, rows, pid)
        if {"Start", "Duration", "Name"} <= set(header):
            return _trace(path, header, rows, pid)
        if {"Device", "Kernel", "Invocations", "Metric Name", "Max"} <= set(header):
            return _metrics(path, header, rows, pid)
    raise BadInput(path, "nvprof CSV with neither a GPU summary, a GPU trace nor a metrics header")
