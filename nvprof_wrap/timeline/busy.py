"""The busy time of a capture's GPUs: the length of the union of their kernel and copy intervals, per group (a
process, a stream …) and device, in SQL or compiled (timeline/native.py), in one pass or in windows of time measured
side by side in forked children and added up exactly — or fused (BusyTime's fused): from the islands of the kernels
that the compiled attribution takes as it reads them and those of the copies, merged exactly."""
from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from nvprof_wrap.system.fork import BIG, Forked, can_fork, cores
from nvprof_wrap.system.limits import USABLE
from nvprof_wrap.timeline import native
from nvprof_wrap.timeline.sql import EVERYTHING, opened, uri_of

# (table, group column or expression, device column, kernel flag: an expression, 1 for a kernel's row)
Source = tuple[str, str, str, str]
# busy_part's 7 values of one group and device: (busy, first, last, kernel_first, below, kernel_last, above)
Part = tuple[int, int, int, int | None, int, int | None, int]
# (group, dev, part): group and device are the capture's SQL values (a process id, a name, NULL …)
Lane = tuple[Any, Any, Part]
# (group, dev, first, last, busy): busy_time's result row
Busy = tuple[Any, Any, int, int, int]
Row = tuple[Any, ...]  # (group, dev, bytes) or (group, dev, kernel flag, bytes) islands (timeline/native.py)


def busy_time(conn: sqlite3.Connection, sources: list[Source],
              window: tuple[int, int] = EVERYTHING, uri: str | None = None) -> list[Busy]:
    """(group, dev, first, last, busy) per group and device, from GPU intervals in `sources`:
    (table, group column or expression, device column, kernel flag: an expression, 1 for a kernel's row) — start
    and "end" are read from each table.

    The span [first, last] runs from the first kernel's start to the last kernel's end (start-up copies before the
    first kernel are not idle GPU time); busy is the length of the union of the kernel and copy intervals inside
    it (busy_part says how). A group with copies but no kernel spans its copies. `window` [lo, hi) cuts every
    interval first (timeline/window.py). uri: the capture's, for the compiled union (timeline/native.py)."""
    return busy_combine([(window, busy_part(conn, sources, window, uri))])


def _cut_sqls(sources: list[Source], window: tuple[int, int]) -> list[str]:
    """(group, dev, start, end, kernel flag) of each source's intervals cut to [lo, hi); intervals without a usable
    duration (readers/_durations.py) are left out of the union too."""
    whole = window == EVERYTHING
    s, e, cut = ('start', '"end"', "") if whole else \
        (f"MAX(start, {window[0]})", f'MIN("end", {window[1]})', f'AND start < {window[1]} AND "end" >= {window[0]}')
    return [f'SELECT {group}, {dev}, {s}, {e}, {kernel} FROM {table} WHERE {USABLE} {cut}'
            for table, group, dev, kernel in sources]


def busy_plan(conn: sqlite3.Connection, sources: list[Source], parts: int,
              window: tuple[int, int] = EVERYTHING) -> list[tuple[int, int]]:
    """The work cut into `parts` windows [lo, hi) of time, measured independently (busy_part, every group and
    device at once) and added up (busy_combine). The cuts spread the time between the first and the last rows of
    the tables (within `window`) evenly: cheap to find, and where rows are not in time order the windows are only
    less even, never wrong."""
    lo: int | None = None
    hi = 0
    for table, _group, _dev, _kernel in sources:
        order = "start" if table.startswith("(") else "rowid"  # a subquery (readers/_nsys_graphs.py) has no rowid
        for (t,) in (conn.execute(f"SELECT start FROM {table} ORDER BY {order} LIMIT 1").fetchall() +
                     conn.execute(f'SELECT "end" FROM {table} ORDER BY {order} DESC LIMIT 1').fetchall()):
            if isinstance(t, int):
                t = min(max(t, window[0]), window[1])
                lo, hi = (t, t) if lo is None else (min(lo, t), max(hi, t))
    cuts = [lo + (hi - lo) * i // parts for i in range(1, parts)] if lo is not None and parts > 1 else []
    bounds = [window[0], *sorted({c for c in cuts if window[0] < c < window[1]}), window[1]]
    return list(itertools.pairwise(bounds))


def busy_part(conn: sqlite3.Connection, sources: list[Source], piece: tuple[int, int],
              uri: str | None = None) -> list[Lane]:
    """(group, dev, (busy, first, last, kernel_first, below, kernel_last, above)) of every group's intervals cut
    to the window [lo, hi) of `piece`. busy, first and last are over every interval; kernel_first / kernel_last
    the first kernel start and last kernel end (None without kernels); below and above the parts of the union
    before kernel_first and after kernel_last.

    One query for every group at once, in (group, dev, start) order (one SQL sort, nothing held but the group
    being merged): a query per group and device scanned every table once per device (20,000 device ids: 24 s).
    With uri (the capture's, timeline/native.py) the sort and the merge run compiled: at 2M launches 3.6 s of
    Python loop over 2.1M rows became about 1 s."""
    sqls = _cut_sqls(sources, piece)
    if uri is not None and native.available():
        try:
            lanes = native.busy_all(uri, sqls)
        except (RuntimeError, MemoryError):  # SQLite refused it there: the loop below decides
            lanes = None
        if lanes is not None:
            return lanes
    rows = conn.execute(" UNION ALL ".join(sqls) + " ORDER BY 1, 2, 3")
    return [(g, d, _merge(lane)) for (g, d), lane in itertools.groupby(rows, key=lambda r: (r[0], r[1]))]


def _merge(rows: Iterator[tuple[Any, Any, int, int, Any]]) -> Part:
    """busy_part's 7 values of one group's (group, dev, start, end, kernel flag) rows in start order, merged in
    one pass: an interval adds only the part past the furthest end seen so far. Their union is the whole union's
    part in [lo, hi), so windows add up exactly. Since later rows start no earlier, the union before the first
    kernel's start is final when that kernel is met, and the union up to a kernel's end is final once that kernel
    is merged (the kernel itself covers up to there): so the span's edges cost no second pass."""
    _g, _d, first, reach, k = next(rows)
    busy = reach - first
    kfirst, below, klast, upto = (first, 0, reach, busy) if k else (None, 0, None, 0)
    for _g, _d, start, end, k in rows:
        if k and kfirst is None:
            kfirst, below = start, busy - max(0, reach - start)
        if start >= reach:
            busy += end - start
            reach = end
        elif end > reach:
            busy += end - reach
            reach = end
        if k and (klast is None or end > klast):
            klast, upto = end, busy - (reach - end)
    return busy, first, reach, kfirst, below, klast, busy - upto  # reach: the furthest end, i.e. the last


def busy_combine(measured: Iterable[tuple[tuple[int, int], list[Lane]]]) -> list[Busy]:
    """(group, dev, first, last, busy) from (window, busy_part result) pairs: the union between the first kernel's
    start and the last kernel's end (over every interval where the group has no kernel), in group order."""
    by_group: dict[tuple[Any, Any], list[tuple[int, Part]]] = {}
    for (lo, _hi), lanes in measured:
        for g, d, part in lanes:
            by_group.setdefault((g, d), []).append((lo, part))
    out: list[Busy] = []
    for (g, d), parts in sorted(by_group.items(), key=lambda kv: tuple((v is None, v or 0) for v in kv[0])):
        parts.sort(key=lambda p: p[0])
        kernels = [p for _, p in parts if p[3] is not None]
        if not kernels:
            out.append((g, d, min(p[1] for _, p in parts), max(p[2] for _, p in parts), sum(p[0] for _, p in parts)))
            continue
        i_first = next(i for i, (_, p) in enumerate(parts) if p[3] is not None)
        i_last = max(i for i, (_, p) in enumerate(parts) if p[3] is not None)
        busy = sum(p[0] for _, p in parts[i_first:i_last + 1]) - parts[i_first][1][4] - parts[i_last][1][6]
        first = parts[i_first][1][3]
        assert first is not None  # a part with kernels has their first start and their last end (_merge)
        out.append((g, d, first, max(p[5] for p in kernels if p[5] is not None), busy))
    return out


class BusyTime:
    """The busy-time union of a capture, started now and measured side by side with the caller's other work:
    for a big capture in forked children, each GPU's time cut into windows, one per two cores (the caller and
    the attribution slices use the others; on 2 cores one window measured best: 1.23 s at 1M launches, against
    1.45 s with two). In one window, the child plans it too: the plan's scans of every table (0.4 s at 2M
    launches) then no longer hold up the caller. result() gives busy_time's rows; abandon() reaps the children
    after an error.

    fused: the table of a source whose intervals another pass reads anyway (the compiled attribution reads every
    kernel: timeline/nvtx.attribute's lanes) and hands over as islands (given()). The child then reads only the other
    sources, as islands, and result() merges them all (native.busy_runs): one read of the kernels where there were
    two. Where the other pass did not take them (given(None)), a child reads them now; where a time is past +-2^62,
    busy_time decides here."""

    def __init__(self, conn: sqlite3.Connection, path: Path, sources: list[Source],
                 window: tuple[int, int] = EVERYTHING, *, fused: str | None = None) -> None:
        big = Path(path).stat().st_size >= BIG
        self.path, self.sources, self.window, self.big, self.fused = path, sources, window, big, fused
        self.handed: Forked | list[Row] | None = None  # the fused source's islands, or the child reading them
        if fused is not None:
            rest = [src for src in sources if src[0] != fused]
            self.whole = Forked(_islands_alone, path, rest, window, inline=not big) if rest else None
            self.windows: dict[tuple[int, int], Forked] = {}
            return
        parts = max(1, cores() // 2) if big and can_fork() else 1
        self.whole = Forked(_busy_time_alone, path, sources, window, inline=not big) if parts == 1 else None
        self.windows = {} if parts == 1 else \
            {piece: Forked(_busy_part_alone, path, sources, piece) for piece in busy_plan(conn, sources, parts, window)}

    def given(self, islands: list[Row] | None) -> None:
        """The fused source's (group, dev, bytes) islands (attribute's lanes), or None: a child reads them now."""
        if self.fused is None:
            return
        if islands is not None:
            self.handed = [(g, d, 1, b) for g, d, b in islands]
        else:
            own = [src for src in self.sources if src[0] == self.fused]
            self.handed = Forked(_islands_alone, self.path, own, self.window, inline=not self.big)

    def result(self) -> list[Busy]:
        try:
            if self.fused is not None:
                return self._merged()
            if self.whole is not None:
                whole: list[Busy] = self.whole.result()
                return whole
            return busy_combine([(piece, window.result()) for piece, window in self.windows.items()])
        except BaseException:  # Ctrl-C or SIGTERM while waiting, a child's error: the rest are ended
            self.abandon()
            raise

    def _merged(self) -> list[Busy]:
        if self.handed is None:  # given() was never called: the caller's pass stopped before it
            self.given(None)
        handed = self.handed.result() if isinstance(self.handed, Forked) else self.handed
        rest = [] if self.whole is None else self.whole.result()
        runs = None if handed is None or rest is None else native.busy_runs([*handed, *rest])
        if runs is None:  # a time past +-2^62 or a value that is not an integer: the SQL and Python decide
            with opened(self.path) as conn:
                return busy_time(conn, self.sources, self.window, uri_of(self.path))
        return busy_combine([(EVERYTHING, runs)])

    def abandon(self) -> None:
        for window in [self.whole, *self.windows.values(), self.handed]:
            if isinstance(window, Forked):  # ended, not waited for: the caller's error is the one to report
                window.cancel()


def _busy_time_alone(path: Path, sources: list[Source], window: tuple[int, int]) -> list[Busy]:
    with opened(path) as conn:
        return busy_time(conn, sources, window, uri_of(path))


def _islands_alone(path: Path, sources: list[Source], window: tuple[int, int]) -> list[Row] | None:
    """The (group, dev, kernel flag, bytes) islands of the sources' intervals cut to the window (native.busy_islands);
    None where a value is not an integer, or the compiled helper is not here (the caller then runs busy_time)."""
    if not native.available():
        return None
    return native.busy_islands(uri_of(path), _cut_sqls(sources, window))


def _busy_part_alone(path: Path, sources: list[Source], piece: tuple[int, int]) -> list[Lane]:
    with opened(path) as conn:
        return busy_part(conn, sources, piece, uri_of(path))


