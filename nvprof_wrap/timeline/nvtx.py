"""Kernels attributed to the framework ops and layers that launched them, through the ranges (NVTX, or a
torch.profiler trace's CPU ops) open on the launching thread; and range names reduced to the op they name."""
from __future__ import annotations

import contextlib
import heapq
import operator
import os
import pickle
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from nvprof_wrap.model import NO_RANGE
from nvprof_wrap.run.steps import LAYER_PREFIXES, no_scope
from nvprof_wrap.system import tempdirs
from nvprof_wrap.system.fork import Forked, can_fork, cores, in_waves
from nvprof_wrap.system.limits import MAX_DURATION_NS
from nvprof_wrap.timeline import native as native_passes

# torch.autograd.profiler.emit_nvtx appends ", seq = N", ", op_id = N", ", sizes = [...]" to each op.
_DECOR = re.compile(r",\s*(?:seq|op_id|sizes|input_op_ids)\s*=.*$")


def op_name(text: str | None) -> str:
    """'aten::addmm, seq = 12, op_id = 40' → 'aten::addmm'; no range → '(no NVTX range)'."""
    if not text:
        return NO_RANGE
    return _DECOR.sub("", text).strip() or NO_RANGE


# (tid, time, label id or None): where the label of a thread changes
Boundary = tuple[Any, int, int | None]
Row = tuple[Any, ...]  # a row of SQL values
MIN_SLICED_LAUNCHES = 100_000  # below this, attribution runs in one process
# At most this many launches a slice: a slice holds its launch calls (~20 B each in the compiled pass), so a
# day-long job's 20M launches in one slice per core (2 cores: 10M each) took the largest process to 361 MB. Bigger
# captures get more slices than cores, run in waves of one per core.
MAX_SLICE_LAUNCHES = 4_000_000


def attribute(conn: sqlite3.Connection, ranges_sql: str, launches_sql: str, *,
              reopen: Callable[[], sqlite3.Connection] | None = None, kernel_table: str | None = None,
              correlation: str = "correlationId", names: Callable[[Any], str] | None = None,
              process_of_tid: str = "0", borrowed: dict[Any, Any] | None = None,
              native: tuple[str, str, str] | None = None, kept: tuple[dict[str, Any], str] | None = None,
              look_for: str | None = None, lanes: tuple[dict[str, Any], str] | None = None) -> list[Row]:
    """Kernels attributed to the NVTX ranges open on the thread that launched them.

    A launch made on a thread with no range open (PyTorch runs the backward pass on its autograd thread, while the
    training loop's thread sits in loss.backward() inside its 'step N' range) is attributed to the ranges open at
    that moment on its process's main thread: the thread whose ranges last longest. process_of_tid: an SQL expression
    over a thread id column `tid` giving its process (Nsight Systems' globalTid holds the pid); "0": one process.
    borrowed, when given, gets {"launches": n, "ns": total} of the launches attributed so (a reader's note), and from
    the compiled pass "no_duration": how many of the launches had a NULL duration, and, with look_for, "found":
    whether the name of any range it swept holds that text — it sweeps each range of ranges_sql whose end, thread and
    start are known with the end at or after the start (_CLOSED), and looks at each distinct name once (a name that
    is not valid UTF-8 with U+FFFD in place of its bad bytes): a reader looking for it in those ranges' names need
    not scan them again (the names are not kept: an emit_nvtx capture's are distinct per call).

    ranges_sql yields (tid, start, end, name) of push/pop or start/end ranges; launches_sql yields
    (pid, dev, tid, t, key, dur) per kernel launch: process, device, the launching thread and the CPU time of
    the launch call (NULL when unknown: the launch counts as outside any range), a kernel name or name id.
    names: the range name of a ranges_sql name column that holds ids.
    Returns (pid, dev, scope, op, key, launches, total_ns): op is the innermost range open at t, scope the
    innermost layer range that --annotate adds ("keras:…", "torch:…"), else the outermost range that is not a
    step mark of those no op's scope is (_open). Every launch is counted once, so summing over scope and op gives
    the kernel aggregates too. [] when there is no range.

    How: one sweep over the ranges (in thread and start order, holding only the ranges open at a time) cuts
    each thread's time line into segments with one (scope, op) label each, written to a small SQLite file
    clustered on (thread, start). Each launch then costs one index seek for the last segment starting at or
    before it, and SQL does the grouping: nothing is held per launch in Python.

    Big captures are split: with reopen (opens another read-only connection to the capture) and kernel_table
    (aliased k in launches_sql; r is the launch calls' table), launches_sql's "{slice}" (after a WHERE
    condition) becomes "AND" a range of kernel rowids per core and "{rslice}" the range of correlation ids of
    those kernels (so that each slice
    indexes only its own share of the launch calls); the slices run side by side in forked processes on their
    own connections (system/fork.py says why). With reopen, the sweep itself is split too when the ranges are
    many and on several threads: threads in groups of about equal size, one sweep per group side by side.

    native: (capture URI, launch calls SQL, kernels SQL) for the compiled pass (timeline/native.py, _compiled), used
    where it is built: the calls SQL yields (correlation id, join key, tid, t, process) per launch call, "{rslice}"
    after a WHERE condition; the kernels SQL (correlation id, join key, pid, dev, key, dur) per kernel, "{slice}"
    after one. They must say what launches_sql says; a kernel matches the calls of its correlation id and join key.
    kept, with native: (a dict, the kernels SQL again with start and end in place of the duration, which the
    compiled pass then works out as readers/_durations.SOUND does): the slices keep their kernels' (pid, start,
    end, key) as they read them, for the per-step series, which then reads only what no slice kept — the dict's
    "kernels" gets one (rowid range, kept columns) per slice in rowid order: the range "lo hi" (None: the whole
    table), the columns [pid, start, end, key] as memoryviews of int64 (a forked slice's over the shared memory it
    sent them back through: 0.12 s less than reading its half of 1M kernels again), None where that slice's are not
    there (a slice that gave them up at a NULL, or whose times are not integers, which is then read as without
    kept). Nothing there where the compiled pass did not run.
    lanes, with native: (a dict, the kernels SQL with start, end and the busy time's group in place of the duration):
    every slice also takes the islands of its kernels' busy time as it reads them (timeline/busy.py: the busy time
    then reads no kernel itself) — the dict's "kernels" gets every slice's (group, dev, bytes) islands, or None where
    a slice's are not there (its times past +-2^62, or not integers). Nothing there where the compiled pass did not
    run.
    """
    if native is not None and native_passes.available() and reopen is not None and kernel_table:
        done = _compiled(conn, ranges_sql, native, reopen=reopen, kernel_table=kernel_table, correlation=correlation,
                         names=names or str, process_of_tid=process_of_tid, borrowed=borrowed, kept=kept,
                         look_for=look_for, lanes=lanes)
        if done is not None:
            return done
    tmp = tempdirs.make("nvtx")
    try:
        seg = os.path.join(tmp, "segments.sqlite")
        labels = _all_segments(conn, ranges_sql, seg, names or str, reopen)
        if not labels:
            return []
        _main_threads(conn, ranges_sql, seg, process_of_tid)
        slices = _slices(conn, kernel_table, correlation) if reopen is not None and kernel_table else [{}]
        slices = [sl | {"{process}": process_of_tid.replace("tid", "o.tid")} for sl in slices]
        parts = in_waves(lambda sl: _attribute_slice(conn, seg, launches_sql, sl),
                         lambda sl: Forked(_on_new_connection, reopen, seg, launches_sql, sl), slices, _width())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _grouped(parts, labels, borrowed)


def _grouped(parts: list[list[Row]], labels: dict[tuple[str, str], int], borrowed: dict[Any, Any] | None) -> list[Row]:
    """attribute's rows from the slices' (pid, dev, label, key, via, launches, total) rows."""
    names = {lab: pair for pair, lab in labels.items()}
    none = (NO_RANGE, NO_RANGE)
    out: dict[Row, list[int]] = {}
    lent = [0, 0]
    for part in parts:
        for pid, dev, lab, key, via, n, tot in part:
            agg = out.setdefault((None if pid == -1 else pid, None if dev == -1 else dev, *names.get(lab, none),
                                  None if key == "" else key), [0, 0])
            agg[0] += n
            agg[1] += tot
            if via and lab != -1:
                lent[0] += n
                lent[1] += tot
    if borrowed is not None:
        borrowed.update(launches=lent[0], ns=lent[1])
    return [(*k, *v) for k, v in out.items()]


def _compiled(conn: sqlite3.Connection, ranges_sql: str, native: tuple[str, str, str], *,
              reopen: Callable[[], sqlite3.Connection], kernel_table: str, correlation: str,
              names: Callable[[Any], str], process_of_tid: str, borrowed: dict[Any, Any] | None,
              kept: tuple[dict[str, Any], str] | None = None, look_for: str | None = None,
              lanes: tuple[dict[str, Any], str] | None = None) -> list[Row] | None:
    """attribute() by the compiled helper: the same sweep and the same rows, None where it declines the capture (a
    value that is not an integer, a name that is not text): then the SQL decides.

    The sweep runs in one process (segments held in memory, never written: inserting them into the segments file
    cost as long as the Python sweep itself), then one slice per core, as the SQL's, side by side: each reads its
    launch calls once, labels each (its thread's segment, else its process's main thread's), and its kernels once.
    Measured at 2M launches on 2 cores: the sweep 1.0 s → 0.3 s, a slice of 1M launches 2.4 s → 0.9 s."""
    uri, calls, kernels = native
    ops: dict[str, int] = {}
    found = False

    def op_of(name: object) -> tuple[int, bool, bool]:
        nonlocal found
        if look_for is not None and not found and isinstance(name, str) and look_for in name:
            found = True
        op = op_name(names(name))
        return ops.setdefault(op, len(ops)), op.startswith(LAYER_PREFIXES), no_scope(op)

    swept = native_passes.sweep(
        uri, f"SELECT tid, s, e, name, {process_of_tid} AS p FROM ({ranges_sql}) WHERE {_CLOSED} "
             "ORDER BY tid, s, e DESC", op_of)
    if swept is None:
        return None
    held, pairs, main = swept  # main: _main_threads' answer, from the same rows
    if not pairs:
        return []
    by_id, labels = list(ops), _Labels()
    ids = [labels.add((by_id[scope], by_id[op])) for scope, op in pairs]  # the Python sweep's ids, in its order
    # every slice keeps its columns, where asked
    how = (uri, calls, kernels, held, main, ids, None if kept is None else kept[1], None if lanes is None else lanes[1])
    slices = _slices(conn, kernel_table, correlation)
    parts = in_waves(lambda sl: _compiled_slice(conn, how, sl), lambda sl: Forked(_compiled_alone, reopen, how, sl),
                     slices, _width())
    if any(part is None for part in parts):
        return None
    if borrowed is not None:
        borrowed["no_duration"] = sum(n for _rows, n, _cols, _isl in parts)
        if look_for is not None:
            borrowed["found"] = found
    if kept is not None:
        kept[0]["kernels"] = [(sl.get("rowids"), None if cols is None else [memoryview(c) for c in cols])
                              for sl, (_rows, _n, cols, _isl) in zip(slices, parts)]
    if lanes is not None:
        lanes[0]["kernels"] = None if any(isl is None for *_, isl in parts) else \
            [run for *_, isl in parts for run in isl]
    return _grouped([rows for rows, _n, _cols, _isl in parts], labels, borrowed)


def _compiled_alone(reopen: Callable[[], sqlite3.Connection], how: Row, where: dict[str, str]) -> Row | None:
    """_compiled_slice on a connection of its own (a forked child): the columns it kept go back beside its answer's
    pickle, in shared memory (system/fork.Answer), not through the pipe."""
    conn = reopen()
    try:
        got = _compiled_slice(conn, how, where)
    finally:
        conn.close()
    if got is None:
        return got
    rows, n, cols, islands = got
    return rows, n, None if cols is None else [pickle.PickleBuffer(c) for c in cols], islands


def _compiled_slice(conn: sqlite3.Connection, how: Row,
                    where: dict[str, str]) -> tuple[list[Row], int, list[bytes] | None, list[Row] | None] | None:
    """(_attribute_slice's rows, with its label ids and in its order; how many kernels had no duration; the kernels'
    columns it kept, where asked: attribute's kept; its kernels' busy-time islands, where asked: attribute's lanes)
    by the compiled pass; None where it declines. The compiled labels are numbered 0, 1, … in the order the sweep met
    them; ids gives each its Python id."""
    uri, calls, kernels, held, main, ids, keeping, lanes = how
    bounds = _estimated(conn, where)
    filled = _fill_slice(conn, where) if bounds is None else \
        where | {"{rslice}": f"AND r.{where['correlation']} BETWEEN ?1 AND ?2"}
    try:
        got = None
        if lanes is not None:  # the islands, and the columns where asked (the SQL then yields keeping's and more)
            got = native_passes.attribute(uri, _fill(calls, filled), _fill(lanes, filled), held, main, bounds,
                                          MAX_DURATION_NS, lanes=True, cols=keeping is not None)
        elif keeping is not None:
            got = native_passes.attribute(
                uri, _fill(calls, filled), _fill(keeping, filled), held, main, bounds, MAX_DURATION_NS)
        if got is None:  # not asked to keep, or a time that is not an integer (the duration's SQL decides it)
            got = native_passes.attribute(uri, _fill(calls, filled), _fill(kernels, filled), held, main, bounds)
    except (RuntimeError, MemoryError):  # SQLite refused it there, or memory ran out: the SQL decides
        return None
    if got is None:
        return None
    rows, no_duration, cols, islands = got
    # a key comes once per join key of its launch calls (processes): summed
    summed: dict[Row, list[int]] = {}
    for pid, dev, lab, key, via, n, tot in rows:
        agg = summed.setdefault((pid, dev, -1 if lab == -1 else ids[lab], key, via), [0, 0])
        agg[0] += n
        agg[1] += tot
    out = [(*k, n, tot) for k, (n, tot) in summed.items()]
    # no text key (NULLs come as ''): the SQL's order is the rows' own first five values, sorted without a Python
    # call a row (160k rows of a capture with 200 step marks)
    plain = not any(isinstance(k[3], str) for k in summed)
    return sorted(out, key=operator.itemgetter(0, 1, 2, 3, 4) if plain else _sql_order), no_duration, cols, islands


def _sql_order(row: Row) -> Row:
    """The order of the SQL's rows (its table's key: pid, dev, lab, key, via; integers before text, as SQLite sorts),
    so that everything made from them comes out as the SQL path makes it."""
    pid, dev, lab, key, via = row[:5]
    return pid, dev, lab, (1, "") if isinstance(key, str) else (0, key), via


MIN_SPLIT_RANGES = 50_000  # below this, the segment sweep runs in one process


def _all_segments(conn: sqlite3.Connection, ranges_sql: str, seg: str, names: Callable[[Any], str],
                  reopen: Callable[[], sqlite3.Connection] | None) -> dict[tuple[str, str], int]:
    """The segments of every thread in the file seg; returns the labels ((scope, op) → id).

    Many ranges are swept in pieces of time side by side, one per core (a training loop puts nearly all of them on
    one thread, so pieces of threads would not split the work): the label at any moment depends only on the ranges
    open then, so a piece [t0, t1) sweeps the ranges that overlap it and keeps the boundaries that fall in it, the
    first one moved to t0 (the label open at t0)."""
    cuts = _time_cuts(conn, ranges_sql) if reopen is not None else []
    if not cuts:
        return _write_segments(conn, ranges_sql, seg, names)
    pieces = list(zip([None, *cuts], [*cuts, None]))
    others = [Forked(_segments_alone, reopen, ranges_sql, f"{seg}.{i}", names, piece)
              for i, piece in enumerate(pieces[1:], 1)]
    try:
        labels = _write_segments(conn, ranges_sql, seg, names, pieces[0])
    finally:
        results = []
        for other in others:  # always reaped, even when this piece failed
            try:
                results.append(other.result())
            except Exception as e:  # noqa: BLE001 - raised below, once every worker is reaped
                results.append(e)
    for i, result in enumerate(results, 1):
        if isinstance(result, BaseException):
            raise result
        for pair, lab in result.items():
            if labels.setdefault(pair, lab) != lab or labels.owner(lab, pair) != pair:
                return _write_segments(conn, ranges_sql, seg, names)  # two labels, one id (a hash): one sweep
        with contextlib.closing(sqlite3.connect(seg)) as w:
            w.execute("ATTACH DATABASE ? AS part", (f"{seg}.{i}",))
            w.execute("INSERT INTO seg SELECT * FROM part.seg")
            w.commit()
            w.execute("DETACH DATABASE part")
        os.remove(f"{seg}.{i}")
    return labels


_CLOSED = "e IS NOT NULL AND tid IS NOT NULL AND e >= s"


def _time_cuts(conn: sqlite3.Connection, ranges_sql: str) -> list[int]:
    """Start times that cut the ranges into pieces of about equal numbers, one per core but the one that the
    busy-time union takes (measured on 2 cores: two pieces beside it were no faster than one sweep); [] for one."""
    n = min(cores() - 1, 8)
    if n < 2 or not can_fork():
        return []
    total = conn.execute(f"SELECT COUNT(*) FROM ({ranges_sql}) WHERE {_CLOSED}").fetchone()[0]
    if total < MIN_SPLIT_RANGES:
        return []
    step = total // n + 1
    cuts = [s for (s,) in conn.execute(f"SELECT s FROM (SELECT s, ROW_NUMBER() OVER (ORDER BY s) AS i FROM "
                                       f"({ranges_sql}) WHERE {_CLOSED}) WHERE i % {step} = 0")]
    return sorted(set(cuts))


def _segments_alone(reopen: Callable[[], sqlite3.Connection], ranges_sql: str, seg: str,
                    names: Callable[[Any], str], piece: Row) -> dict[Any, Any]:
    conn = reopen()
    try:
        return dict(_write_segments(conn, ranges_sql, seg, names, piece))
    finally:
        conn.close()


def _write_segments(conn: sqlite3.Connection, ranges_sql: str, seg: str, names: Callable[[Any], str],
                    piece: Row = (None, None)) -> _Labels:
    labels = _Labels()
    t0, t1 = piece
    only = (f" AND s < {int(t1)}" if t1 is not None else "") + (f" AND e >= {int(t0) - 1}" if t0 is not None else "")
    with contextlib.closing(sqlite3.connect(seg)) as w:
        w.execute("PRAGMA journal_mode=OFF")
        w.execute("DROP TABLE IF EXISTS seg")
        w.execute("CREATE TABLE seg(tid INTEGER, s INTEGER, lab INTEGER, PRIMARY KEY (tid, s)) WITHOUT ROWID")
        ranges = conn.execute(f"SELECT tid, s, e, name FROM ({ranges_sql}) "
                              f"WHERE {_CLOSED}{only} ORDER BY tid, s, e DESC")
        bounds = _segments(ranges, labels, names)
        w.executemany("INSERT INTO seg VALUES (?,?,?)", bounds if piece == (None, None) else _within(bounds, t0, t1))
        w.commit()
    return labels


def _within(bounds: Iterable[Boundary], t0: int | None, t1: int | None) -> Iterator[Boundary]:
    """The boundaries (tid, t, label) of one piece of time [t0, t1): those at or before t0 become one at t0 (the
    label from t0 on: no range at all when none started before it), those from t1 on belong to the next piece.
    The piece's ranges are those whose last boundary (end + 1) is at t0 or later."""
    tid_now: object = _UNSET
    held: Boundary | None = None
    for tid, t, lab in bounds:
        if tid != tid_now:
            if held is not None:
                yield held
            tid_now, held = tid, (None if t0 is None else (tid, t0, None))
        if t0 is not None and t <= t0:
            held = (tid, t0, lab)
            continue
        if held is not None:
            yield held
            held = None
        if t1 is None or t < t1:
            yield tid, t, lab
    if held is not None:
        yield held


class _Labels(dict[Any, Any]):
    """(scope, op) → label id: the pair's hash, the same in forked workers (they share the parent's hash seed), so
    the segments of several workers go together as they are; a second pair with a taken id gets the next free one
    (and the workers' segments are then swept again in one process)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[int, tuple[str, str]] = {}

    def add(self, pair: tuple[str, str]) -> int:
        lab = hash(pair)
        while lab in self.ids:
            lab += 1
        self.ids[lab] = pair
        self[pair] = lab
        return lab

    def owner(self, lab: int, pair: tuple[str, str]) -> tuple[str, str]:
        return self.ids.setdefault(lab, pair)


def _slices(conn: sqlite3.Connection, table: str, correlation: str) -> list[dict[str, str]]:
    """Placeholder values of the slices of a capture's kernels, by rowid: one slice per core (at most 8) for
    captures of 100k launches or more, and more than that, a whole number of waves of _width() slices, where a
    slice would otherwise hold more than MAX_SLICE_LAUNCHES (also where nothing can fork: then one by one);
    else one slice (all). Each slice finds the range of correlation ids of its kernels itself (_fill_slice,
    _estimated, in its own process): measured on 16 cores at 5M launches, without that range every slice built an
    index of all the launch calls."""
    # Two subqueries: MIN and MAX together in one SELECT scan the whole table (0.35 s at 2M launches), each alone
    # is one step down the b-tree.
    lo, hi = conn.execute(f"SELECT (SELECT MIN(rowid) FROM {table}), (SELECT MAX(rowid) FROM {table})").fetchone()
    if lo is None:
        return [{}]
    n = _width() if hi - lo >= MIN_SLICED_LAUNCHES else 1
    if (hi - lo + 1) > n * MAX_SLICE_LAUNCHES:
        width = _width()
        n = -(-(hi - lo + 1) // (MAX_SLICE_LAUNCHES * width)) * width
    if n == 1:
        return [{}]
    step = (hi - lo) // n + 1
    return [{"{slice}": f"AND k.rowid BETWEEN {a} AND {a + step - 1}", "table": table, "correlation": correlation,
             "rowids": f"{a} {a + step - 1}"} for a in range(lo, hi + 1, step)]


def _width() -> int:
    """How many slices run side by side: one per core, at most 8; one where nothing can fork."""
    return min(cores(), 8) if can_fork() else 1


def _fill_slice(conn: sqlite3.Connection, where: dict[str, str]) -> dict[str, str]:
    """where with "{rslice}": the range of correlation ids of the slice's kernels (one scan of its rowid range)."""
    if "table" not in where:
        return where
    cmin, cmax = conn.execute(f"SELECT MIN({where['correlation']}), MAX({where['correlation']}) "
                              f"FROM {where['table']} k WHERE true {where['{slice}']}").fetchone()
    rslice = f"AND r.{where['correlation']} BETWEEN {cmin} AND {cmax}" if cmin is not None else ""
    return where | {"{rslice}": rslice}


PROBE_ROWS = 1024  # kernels read at each end of a slice to estimate its correlation ids


def _estimated(conn: sqlite3.Connection, where: dict[str, str]) -> tuple[int, int] | None:
    """(lowest, highest) correlation id of the first and last PROBE_ROWS kernels of a slice: where correlation ids
    count up with the kernels' rowids (nsys writes both in time order), the slice's range, read in two short steps
    down the b-tree instead of _fill_slice's scan of the slice (0.12-0.14 s of 1M kernels, as long as the compiled
    pass's read of the launch calls). The compiled pass matches the kernels outside it after reading their calls
    too. None for one slice (no bounds: every call is read) or without correlation ids at its ends."""
    if "rowids" not in where:
        return None
    a, b = (int(x) for x in where["rowids"].split())
    corr, table = where["correlation"], where["table"]
    lo, hi = conn.execute(f"SELECT MIN(c), MAX(c) FROM (SELECT {corr} AS c FROM {table} WHERE rowid BETWEEN ? AND ? "
                          f"UNION ALL SELECT {corr} FROM {table} WHERE rowid BETWEEN ? AND ?)",
                          (a, min(b, a + PROBE_ROWS - 1), max(a, b - PROBE_ROWS + 1), b)).fetchone()
    if not isinstance(lo, int) or not isinstance(hi, int):
        return None
    return lo, hi


def _on_new_connection(reopen: Callable[[], sqlite3.Connection], seg: str, launches_sql: str,
                       where: dict[str, str]) -> list[Any]:
    conn = reopen()
    try:
        return _attribute_slice(conn, seg, launches_sql, where)
    finally:
        conn.close()


def _attribute_slice(conn: sqlite3.Connection, seg: str, launches_sql: str, where: dict[str, str]) -> list[Row]:
    """(pid, dev, label, key, launches, total) of the launches in one slice, NULLs as -1 / ''."""
    conn.execute("ATTACH DATABASE ? AS nvw", (seg,))
    try:
        # Grouping by upsert into a small keyed table: 0.4 s less than GROUP BY's sort of every launch at 1M.
        # NULLs become -1 / '' (key columns of a WITHOUT ROWID table cannot be NULL), and back in attribute().
        conn.execute("DROP TABLE IF EXISTS temp.nvw_agg")
        # The launch's own thread first; with no range open there, its process's main thread (nvw.main): the
        # subquery in FROM (LIMIT keeps it a co-routine, not flattened) computes the own label once per launch.
        conn.execute("""CREATE TEMP TABLE nvw_agg(pid, dev, lab, key, via, n INTEGER, tot INTEGER,
                        PRIMARY KEY (pid, dev, lab, key, via)) WITHOUT ROWID""")
        conn.execute(f"""
        INSERT INTO temp.nvw_agg
        WITH nvw_l AS ({_fill(launches_sql, _fill_slice(conn, where))})
        SELECT IFNULL(o.pid, -1), IFNULL(o.dev, -1),
               IFNULL(o.own, IFNULL((SELECT g.lab FROM nvw.main m JOIN nvw.seg g ON g.tid = m.tid
                                     WHERE m.p = {where.get("{process}", "0")} AND m.tid != o.tid AND g.s <= o.t
                                     ORDER BY g.s DESC LIMIT 1), -1)),
               IFNULL(o.key, ''), o.own IS NULL, 1, IFNULL(o.dur, 0)
        FROM (SELECT l.*, (SELECT lab FROM nvw.seg g WHERE g.tid = l.tid AND g.s <= l.t ORDER BY g.s DESC LIMIT 1)
                          AS own FROM nvw_l l LIMIT -1) o WHERE true
        ON CONFLICT (pid, dev, lab, key, via) DO UPDATE SET n = n + 1, tot = tot + excluded.tot""")
        rows = conn.execute("SELECT * FROM temp.nvw_agg").fetchall()
        conn.execute("DROP TABLE temp.nvw_agg")
        return rows
    finally:
        conn.commit()  # the INSERT opened a transaction (sqlite3's implicit BEGIN); DETACH needs none open
        conn.execute("DETACH DATABASE nvw")


def borrowed_note(lent: dict[Any, Any], kernel_ns: int, with_warmup: bool = False) -> tuple[str, ...]:
    """The reader's note on launches attributed to their process's main thread (attribute's borrowed). kernel_ns:
    the time of the kernels the attribution read; with_warmup: some of those were then set apart as warm-up (XLA's
    compiling and autotuning after the first step: readers/_xla_warmup.split), which the share then includes — of
    the kernels left it had read 1379% on a Keras-on-JAX capture, the autotuner's launches being the lent ones."""
    if not lent.get("launches"):
        return ()
    of = "kernel time (the warm-up set apart included)" if with_warmup else "kernel time"
    share = f", {100 * lent['ns'] / kernel_ns:.1f}% of {of}" if kernel_ns else ""
    # no framework named: the same note serves PyTorch (its autograd thread runs the backward pass) and JAX (XLA
    # compiles and autotunes on its own threads)
    text = (f"{lent['launches']:,} kernel launches{share} came from threads with no range open (a framework's own "
            "worker threads) and count in the ranges open then on their process's main thread")
    if with_warmup:  # most of them may be XLA's autotuning, no longer in any range's count
        text = (f"{lent['launches']:,} kernel launches{share} came from threads with no range open (a framework's "
                "own worker threads; XLA autotunes on its own); those not set apart as warm-up count in the ranges "
                "open then on their process's main thread")
    return (text,)


def _main_threads(conn: sqlite3.Connection, ranges_sql: str, seg: str, process_of_tid: str) -> None:
    """nvw.main(p, tid): each process's main thread, the one whose ranges last longest in all (the smallest id of
    those with as long), in the segment file. Longest, not most: a training loop's few 'step N' ranges span the
    steps, while libraries mark many short ones (CUB's CCCL ranges on PyTorch's autograd thread). The compiled
    sweep finds the same (timeline/_cattr.c main_threads)."""
    counts = conn.execute(f"SELECT {process_of_tid} AS p, tid, SUM(e - s) FROM ({ranges_sql}) "
                          f"WHERE {_CLOSED} GROUP BY tid").fetchall()
    main: dict[object, Row] = {}
    for p, tid, n in counts:
        if p not in main or (-n, tid) < (-main[p][1], main[p][0]):
            main[p] = (tid, n)
    with contextlib.closing(sqlite3.connect(seg)) as w:
        w.execute("CREATE TABLE main(p INTEGER PRIMARY KEY, tid INTEGER)")
        w.executemany("INSERT INTO main VALUES (?, ?)", [(p, tid) for p, (tid, _n) in main.items()])
        w.commit()


def _fill(sql: str, values: dict[str, str]) -> str:
    for key in ("{slice}", "{rslice}"):
        sql = sql.replace(key, values.get(key, ""))
    return sql


def _segments(ranges: Iterable[tuple[Any, int, int, Any]], labels: _Labels, names: Callable[[Any], str]
              ) -> Iterator[Boundary]:
    """(tid, start, label id or None) at each point where the (scope, op) label of a thread changes.
    ranges: (tid, s, e, name) sorted by tid, s, e DESC. Ranges are closed intervals: a range ending at e
    still holds at e; the next segment starts at e + 1 (timestamps are integer ns). One flat loop, no function
    call per range: this runs once per range (625k ranges at 5M launches in the benchmark; 8 per kernel in a
    torch.profiler trace). Each open range keeps the label it gives when innermost (_open), computed once from the
    range below it: no walk down the stack per boundary. Boundaries come in time order per thread; of several at
    one time the last holds, and one is emitted only when its label differs from the last emitted."""
    active: list[list[Any]] = []  # open ranges as _open lists, in start order
    ends: list[tuple[int, int]] = []  # heap of (e, -seq) of the open ranges
    ops: dict[object, str] = {}  # range name → op name (a regular expression per distinct name, not per range)
    tid_now: object = _UNSET
    pend_t, pend_lab, last = None, None, _UNSET  # the boundary held back (another may fall on its time)
    for seq, (tid, s, e, name) in enumerate(ranges):
        if tid != tid_now:
            if tid_now is not _UNSET:
                yield from _close_all(tid_now, active, ends, labels, pend_t, pend_lab, last)
            tid_now, pend_t, pend_lab, last = tid, None, None, _UNSET
        while ends and ends[0][0] < s:
            t, lab = _close(active, ends, labels)
            if t != pend_t:
                if pend_t is not None and pend_lab != last:
                    yield tid, pend_t, pend_lab
                    last = pend_lab
                pend_t = t
            pend_lab = lab
        op = ops.get(name)
        if op is None:
            op = ops[name] = op_name(names(name))
        top = _open(seq, op, active[-1] if active else None, labels)
        active.append(top)
        heapq.heappush(ends, (e, -seq))  # of ranges ending together, the innermost first: a plain pop
        if s != pend_t:
            if pend_t is not None and pend_lab != last:
                yield tid, pend_t, pend_lab
                last = pend_lab
            pend_t = s
        pend_lab = top[_LAB]
    if tid_now is not _UNSET:
        yield from _close_all(tid_now, active, ends, labels, pend_t, pend_lab, last)


def _close(active: list[list[Any]], ends: list[tuple[int, int]], labels: _Labels) -> tuple[int, int | None]:
    """Close the open range that ends first: (the time its end takes effect, the label from then on)."""
    e, seq = heapq.heappop(ends)
    seq = -seq
    if active[-1][_SEQ] == seq:  # nested ranges (push/pop): always the innermost
        active.pop()
    else:
        i = next(i for i in range(len(active) - 1, -1, -1) if active[i][_SEQ] == seq)
        del active[i]
        for j in range(i, len(active)):  # start/end ranges need not nest: relabel those above
            active[j] = _open(active[j][_SEQ], active[j][_OP], active[j - 1] if j else None, labels)
    return e + 1, active[-1][_LAB] if active else None


def _close_all(tid: object, active: list[list[Any]], ends: list[tuple[int, int]], labels: _Labels, pend_t: int | None,
               pend_lab: int | None, last: object) -> Iterator[Boundary]:
    """The rest of a thread's boundaries: every range still open closes."""
    while ends:
        t, lab = _close(active, ends, labels)
        if t != pend_t:
            if pend_t is not None and pend_lab != last:
                yield tid, pend_t, pend_lab
                last = pend_lab
            pend_t = t
        pend_lab = lab
    if pend_t is not None and pend_lab != last:
        yield tid, pend_t, pend_lab


_UNSET = object()
_SEQ, _OP, _LAYER, _OUTER, _BOTTOM, _LAB = range(6)


def _open(seq: int, op: str, below: list[Any] | None, labels: _Labels) -> list[Any]:
    """An open range: [seq, op, innermost layer range so far, outermost range so far that may be a scope, the
    bottom range, label id]. Its label (scope, op): op its own; scope the innermost layer range that --annotate
    adds, else the outermost range that is not a step mark of those no op's scope is (run/steps.no_scope:
    'ProfilerStep#N', 'train batch N' — each encloses every op of its step: as a scope, one row per step; a JAX
    job's XLA execution range under Keras's batch is the scope instead), else the bottom one."""
    layer = op if op.startswith(LAYER_PREFIXES) else (below[_LAYER] if below else None)
    outer = below[_OUTER] if below and below[_OUTER] is not None else \
        (None if no_scope(op) else op)
    bottom = below[_BOTTOM] if below else op
    key = (layer or outer or bottom, op)
    lab = labels.get(key)
    if lab is None:
        lab = labels.add(key)
    return [seq, op, layer, outer, bottom, lab]
