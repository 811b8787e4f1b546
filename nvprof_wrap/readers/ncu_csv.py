"""``ncu --csv`` exports: the long format (one row per kernel × metric, the default) and the raw
page (``--page raw``: one row per kernel, a units row under the header). Numbers may carry
thousands separators. Each kernel launch gets a counter verdict (see ``nvprof_wrap.classify.counters``).

As people capture it (``ncu --csv python train.py > out.csv``): the program's own output and ``==PROF==``
lines before and among the rows (ncu quotes every CSV field, so only lines starting with a quote are rows),
the header repeated per process; section exports (``--section``) name the duration ``Duration`` with its
unit in ``Metric Unit`` (nsecond … second); older versions have NVTX columns, a ``Kernel Time`` column (the
launch's wall-clock time, not a duration) and no Device / CC columns. Without a duration the kernels carry no
time (KernelAgg.total_ns None) and the report says so."""
from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

from nvprof_wrap.classify.counter_flops import COUNTERS_OP, launch_flops
from nvprof_wrap.classify.counters import DURATION, Evidence, combine, impossible, launch_verdict
from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Capture, CounterVerdict, Gpu, KernelAgg, OpFlops, Process, merge_kernels
from nvprof_wrap.readers._csv import TIME_UNITS_NS, cut_lines, number, open_text, rows
from nvprof_wrap.readers._durations import note
from nvprof_wrap.readers._head import Head
from nvprof_wrap.system.limits import MAX_DURATION_NS
from nvprof_wrap.text.demangle import demangle

_KEYS = ("ID", "Kernel Name", "Process ID", "Device", "CC")
_REQUIRED = {"ID", "Kernel Name"}
DURATION_NAMES = {DURATION, "Duration"}  # the raw metric, and its name in section exports


class _Launch:
    __slots__ = ("cc", "device", "metrics", "name", "pid")

    def __init__(self, name: str, pid: str = "", device: str = "", cc: str = "") -> None:
        self.name, self.pid, self.device, self.cc = name, pid, device, cc
        self.metrics: dict[str, float | None] = {}


def _key(row: list[str], idx: dict[str, int]) -> tuple[str, str]:
    """A launch: its ID within its process (IDs start at 0 again in every profiled process)."""
    return row[idx["Process ID"]] if "Process ID" in idx else "", row[idx["ID"]]


def _new(row: list[str], idx: dict[str, int]) -> _Launch:
    return _Launch(*(row[idx[k]] if k in idx else "" for k in _KEYS[1:]))


def _sound(path: Path, row: list[str], key: tuple[str, str], width: int,
           names: tuple[str, str] | None = None) -> None:
    """Refuse a metric row that cannot be as ncu writes it: wider than the header (a field split or inserted: the
    columns after it shifted — a kernel named after the host), a launch's ID or process ID not an integer (a lost
    quote's `3550"`: a process of its own, the launch counted twice), or a launch whose rows name two kernels (its ID
    edited or two exports joined: their metrics mixed)."""
    pid, launch = key
    if len(row) > width:
        raise BadInput(path, f"ncu CSV: a row of {len(row)} fields where the header has {width} (a damaged line?), "
                             f"launch {launch[:20]!r}")
    if not launch.strip().isdigit() or (pid and not pid.strip().isdigit()):
        raise BadInput(path, f"ncu CSV: a launch whose ID or process ID is not an integer ({launch[:20]!r}, "
                             f"{pid[:20]!r}): a damaged line?")
    if names is not None:
        raise BadInput(path, f"ncu CSV: the rows of launch {launch} (process {pid or '?'}) name two kernels "
                             f"({names[0][:60]!r} and {names[1][:60]!r}): IDs edited or exports joined?")


def _possible(path: Path, key: tuple[str, str], metric: str, value: float | None, text: str) -> None:
    """Refuse a value no counter has (classify/counters.impossible: NaN, infinite, a negative count): a count of -1
    or NaN made every kernel of an export a tensor-core one. (A duration that is no time is counted without it,
    as in every reader: _aggregate.)"""
    if value is not None and metric not in DURATION_NAMES and impossible(metric, value):
        raise BadInput(path, f"ncu CSV: launch {key[1]}'s {metric[:80]} is {text.strip()[:20]!r}, which no counter "
                             "holds (a damaged or edited export?)")


def _launches(path: Path, header: list[str], rows: Iterator[list[str]]) -> dict[tuple[str, str], _Launch]:
    idx = {h: i for i, h in enumerate(header)}
    launches: dict[tuple[str, str], _Launch] = {}
    if "Metric Name" in idx:  # long format
        mn, mu, mv = idx["Metric Name"], idx.get("Metric Unit"), idx["Metric Value"]
        # Metric rows end after the value: the rule columns after it ("Rule Name" … "Estimated Speedup") are only
        # filled on a rule's own rows, and ncu leaves them off the others (their Duration among them).
        need = max(i for h, i in idx.items() if h in (*_KEYS, "Metric Name", "Metric Unit", "Metric Value"))
        name = idx["Kernel Name"]
        for row in rows:
            if len(row) <= need:
                if idx["ID"] < len(row) and row[idx["ID"]].strip().isdigit():  # a metric row, its value cut off
                    raise BadInput(path, f"ncu CSV: launch {row[idx['ID']].strip()}'s row ends after {len(row)} of "
                                         f"{len(header)} fields, before its value (the file cut short?)")
                continue
            key = _key(row, idx)
            la = launches.get(key)
            if la is None:
                _sound(path, row, key, len(header))
                la = launches[key] = _new(row, idx)
            elif row[name] != la.name or len(row) > len(header):
                _sound(path, row, key, len(header), (la.name, row[name]) if row[name] != la.name else None)
            value, metric = number(row[mv]), row[mn]
            _possible(path, key, metric, value, row[mv])
            if metric in DURATION_NAMES:
                if value is not None and mu is not None:
                    value *= TIME_UNITS_NS.get(row[mu].strip(), 1)
                metric = DURATION
            la.metrics[metric] = value
        return launches
    metric_cols = [(i, h) for i, h in enumerate(header) if "__" in h or h.endswith("_utilization")]
    units: list[str] = next(rows, [])
    for row in rows:
        if len(row) < len(header):
            continue
        la = launches[_key(row, idx)] = _new(row, idx)
        for i, h in metric_cols:
            v = number(row[i])
            _possible(path, _key(row, idx), h, v, row[i])
            if h == DURATION and v is not None and i < len(units):
                v *= TIME_UNITS_NS.get(units[i].strip(), 1)
            la.metrics[h] = v
    return launches


def _aggregate(path: Path, launches: Iterable[_Launch]) -> Capture:
    # (pid, device, name) → its launches
    groups: dict[tuple[int, int | None, str], list[_Launch]] = defaultdict(list)
    devices: dict[int, Gpu] = {}
    for la in launches:
        d = number(la.device)
        dev = None if d is None else int(d)  # older exports have no Device column
        cc = la.cc.split(".") if la.cc else []
        if dev is not None and len(cc) == 2 and cc[0].isdigit():
            devices[dev] = Gpu(dev, None, int(cc[0]), int(cc[1]))
        groups[(int(number(la.pid) or 0), dev, demangle(la.name))].append(la)
    kernels: list[KernelAgg] = []
    counters: dict[str, list[Evidence]] = {}
    flops: list[OpFlops] = []
    untimed = 0
    # a capture whose launches have durations (gpu__time_duration.sum, or a section's Duration): one without its
    # duration row is counted without its time, and said — its kernel's whole time was dropped, silently
    timed = any(la.metrics.get(DURATION) is not None for ls in groups.values() for la in ls)
    for (pid, dev, name), ls in groups.items():
        durs = [la.metrics.get(DURATION) for la in ls]
        usable = [d for d in durs if d is not None and 0 <= d <= MAX_DURATION_NS]  # also False for nan
        untimed += (len(durs) if timed else sum(d is not None for d in durs)) - len(usable)  # counted, no time
        total = int(sum(usable)) if timed else None
        kernels.append(KernelAgg(pid, dev, name, len(ls), total))
        counters.setdefault(name, []).extend(launch_verdict(la.metrics, la.cc) for la in ls)
        flops.extend(_flops(pid, name, ls, total))
    verdicts = tuple(_verdict(name, v) for name, v in counters.items())
    pids = sorted({pid for pid, _, _ in groups})  # a kernel per group: the kernels' pids
    # Without a duration (no gpu__time_duration.sum, no SpeedOfLight Duration) total_ns stays None: the report's
    # headline then says kernel time was not captured, unless a timeline capture beside it has the times.
    return Capture(str(path), "ncu-csv", merge_kernels(kernels), devices=tuple(devices.values()),
                   processes=tuple(Process(p) for p in pids), counters=verdicts, op_flops=tuple(flops),
                   notes=(note(untimed, "kernel"),) if untimed else ())


def _flops(pid: int, name: str, launches: list[_Launch], total_ns: int | None) -> list[OpFlops]:
    """The counters' FLOPs of one kernel name's launches (classify/counter_flops.py) with their time under ncu, in
    the precision that holds most of them: none where a launch has no FLOP counter or no duration (a rate needs
    both)."""
    each = [launch_flops(la.metrics) for la in launches]
    if total_ns is None or total_ns <= 0 or any(f is None for f in each):
        return []
    by: dict[str, float] = {}
    for f in each:
        if f is not None and f[0] > 0:
            by[f[1]] = by.get(f[1], 0.0) + f[0]
    if not by:
        return []
    return [OpFlops(pid, COUNTERS_OP, name, max(sorted(by), key=lambda p: by[p]), sum(by.values()), len(launches),
                    total_ns)]


def _verdict(name: str, per_launch: list[Evidence]) -> CounterVerdict:
    e = combine(per_launch)
    return CounterVerdict(name, e.tensor_core, len(per_launch), e.metric, e.value, e.detail)


def _quoted(f: io.TextIOBase, path: Path) -> Iterator[list[str]]:
    """The CSV rows among the program's output: ncu quotes every field, the program's lines rarely start with one.
    Rows are told apart by their first line (a kernel name can hold a line break: _csv.rows); a row without a rule
    leaves the rule's columns out (ragged)."""
    return rows(cut_lines(f), lambda first: first.startswith('"'), path, ragged=True)


FORMAT = "ncu-csv"


def _ncu_header(line: str) -> bool:
    return line.startswith('"ID",') and '"Kernel Name"' in line


def sniff(head: Head) -> bool:
    """The header, in the first 64 KiB, possibly after the program's own output."""
    first = head.first_line
    if first.startswith('"Device","Kernel","Invocations"'):  # nvprof --metrics --csv (readers/nvprof_csv.py)
        return False
    return ('"Metric Name"' in first or ('"Kernel Name"' in first and '"CC"' in first)
            or any(map(_ncu_header, head.text.splitlines())))


def sniff_late(head: Head) -> bool:
    """ncu's CSV header after more than 64 KiB of the program's own output (ncu prints the rows at the end)."""
    if "==PROF==" not in head.text:
        return False
    with open_text(head.path) as f:  # gzipped too; a program's endless line is not held
        return any(map(_ncu_header, cut_lines(f)))


def read(path: Path) -> Capture:
    with open_text(path) as f:
        reader = _quoted(f, path)
        header = [h.strip() for h in next(reader, [])]
        if not _REQUIRED <= set(header):
            raise BadInput(path, "ncu CSV without a header row with ID and Kernel Name columns")
        launches = _launches(path, header, (row for row in reader if row != header))  # the header repeats per process
    if not launches:
        raise BadInput(path, "ncu CSV with a header but no kernel rows")
    return _aggregate(path, launches.values())
