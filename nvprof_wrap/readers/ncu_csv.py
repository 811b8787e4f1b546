"""``ncu --csv`` exports: the long format (one row per kernel × metric, the default) and the raw
page (``--page raw``: one row per kernel, a units row under the header). Numbers may carry
thousands separators; ``==PROF==`` lines may be mixed in. Each kernel launch gets a counter
verdict (see ``nvprof_wrap.counters``)."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from nvprof_wrap.counters import DURATION, Evidence, combine, launch_verdict
from nvprof_wrap.demangle import demangle
from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Capture, CounterVerdict, Device, KernelAgg, Process, merge_kernels
from nvprof_wrap.readers._csv import TIME_UNITS_NS, number, open_text, split_preamble

_KEYS = ("ID", "Kernel Name", "Process ID", "Device", "CC")


class _Launch:
    __slots__ = ("cc", "device", "metrics", "name", "pid")

    def __init__(self, name: str, pid: str, device: str, cc: str) -> None:
        self.name, self.pid, self.device, self.cc = name, pid, device, cc
        self.metrics: dict[str, float | None] = {}


def _launches(header: list[str], rows) -> dict[str, _Launch]:
    idx = {h: i for i, h in enumerate(header)}
    launches: dict[str, _Launch] = {}
    if "Metric Name" in idx:  # long format
        mn, mu, mv = idx["Metric Name"], idx.get("Metric Unit"), idx["Metric Value"]
        for row in rows:
            if len(row) < len(header):
                continue
            la = launches.get(row[idx["ID"]])
            if la is None:
                la = launches[row[idx["ID"]]] = _Launch(*(row[idx[k]] for k in _KEYS[1:]))
            value = number(row[mv])
            if row[mn] == DURATION and value is not None and mu is not None:
                value *= TIME_UNITS_NS.get(row[mu].strip(), 1)
            la.metrics[row[mn]] = value
        return launches
    metric_cols = [(i, h) for i, h in enumerate(header) if "__" in h or h.endswith("_utilization")]
    units = next(rows, [])
    for row in rows:
        if len(row) < len(header):
            continue
        la = launches[row[idx["ID"]]] = _Launch(*(row[idx[k]] for k in _KEYS[1:]))
        for i, h in metric_cols:
            v = number(row[i])
            if h == DURATION and v is not None and i < len(units):
                v *= TIME_UNITS_NS.get(units[i].strip(), 1)
            la.metrics[h] = v
    return launches


def _aggregate(path: Path, launches: dict[str, _Launch]) -> Capture:
    groups: dict[tuple, list[_Launch]] = defaultdict(list)
    devices: dict[int, Device] = {}
    for la in launches.values():
        dev = int(number(la.device) or 0)
        cc = la.cc.split(".") if la.cc else []
        if len(cc) == 2 and cc[0].isdigit():
            devices[dev] = Device(dev, None, int(cc[0]), int(cc[1]))
        groups[(int(number(la.pid) or 0), dev, demangle(la.name))].append(la)
    kernels, counters = [], {}
    for (pid, dev, name), ls in groups.items():
        durs = [la.metrics.get(DURATION) for la in ls]
        total = int(sum(d for d in durs if d)) if all(d is not None for d in durs) else None
        kernels.append(KernelAgg(pid, dev, name, len(ls), total))
        counters.setdefault(name, []).extend(launch_verdict(la.metrics, la.cc) for la in ls)
    verdicts = tuple(_verdict(name, v) for name, v in counters.items())
    pids = sorted({k.pid for k in kernels})
    return Capture(str(path), "ncu-csv", merge_kernels(kernels), devices=tuple(devices.values()),
                   processes=tuple(Process(p) for p in pids), counters=verdicts)


def _verdict(name: str, per_launch: list[Evidence]) -> CounterVerdict:
    e = combine(per_launch)
    return CounterVerdict(name, e.tensor_core, len(per_launch), e.metric, e.value, e.detail)


def read(path: Path) -> Capture:
    with open_text(path) as f:
        header, rows = split_preamble(f, path)
        if not set(_KEYS) <= set(header):
            raise BadInput(path, "ncu CSV without the ID / Process ID / Kernel Name / Device / CC columns")
        launches = _launches(header, rows)
    return _aggregate(path, launches)
