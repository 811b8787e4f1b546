"""The per-step series (timeline/series.py) measured in numpy: the same values as its SQL, at a fraction of the cost.

SQLite reads each table once, in its own order, the columns the series needs (process, start, end, the name's or
the call's key) and nothing else; numpy does the rest. A row's step: np.searchsorted over the steps' starts (the step
with the latest start at or before the row's, as the SQL's `ORDER BY lo DESC LIMIT 1`), kept where it starts before
that step's end. The unions per (process, step[, kind]): one stable sort by group and start, then gaps and islands —
an interval opens an island where it starts after every earlier interval of its group ended (a running maximum of
the ends, restarted per group by offsetting each group's times past the previous group's); an island's length is
its largest end minus its first start. Keys (names, call ids) and processes become small integer codes per chunk of
rows, so nothing per launch stays a Python object: per row only int64 columns, read in chunks of CHUNK rows. Where
the compiled helper is built, one loop of it (native.step_rows) gives each row its step and sums each (process, step)
and (process, step, kernel): the same values as the numpy beside it, which measures where the helper is not built.

Where a value is not an integer, or a sum could overflow int64, measure() returns None and the caller measures in
SQL (the reference, which tests/timeline/test_series_np.py checks this against on real and generated captures).
"""
from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nvprof_wrap.system import blas  # noqa: F401 - first: numpy with one BLAS thread

# isort: split
import numpy as np

from nvprof_wrap.classify import COMMUNICATION_FAMILIES, classify
from nvprof_wrap.classify.engine import may_communicate
from nvprof_wrap.model import StepKernel, StepKernels
from nvprof_wrap.system.fork import BIG, Forked, Handed, can_fork
from nvprof_wrap.system.limits import MAX_DURATION_NS
from nvprof_wrap.timeline import native
from nvprof_wrap.timeline.series_tables import GPU_PARTS, PARTS, ApiTable, Given, GpuTable, Named, Names, Steps, buckets
from nvprof_wrap.timeline.sql import EVERYTHING, reopened

# {(process code, step index): values}, as Steps' values before the codes are decoded
ByCode = dict[tuple[int, int], dict[str, Any]]
# the budget's rows (process code, step index, start, whole end, part's index in PARTS)
Pieces = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# the budget's islands cut into steps (process code, step index, start, end, part's index in PARTS): _cut
Cut = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

CHUNK = 65_536  # rows per fetchmany: the Python tuples of one chunk at a time
AT_ONCE = 1_000_000  # up to this many rows of integers, a column is read as one text (~20 MB at most), not in rows
_FAR = 1 << 62  # offsets and sums stay below this (int64's limit is 2^63)
_EXACT = float(1 << 53)  # float64 holds every integer below this exactly
DENSE_CELLS = 1 << 21  # (process, step, kernel) tables up to this many cells are counted in place (16 MB a column)


Span = tuple[int, int, int]  # (step, lo, hi)


class _Odd(Exception):
    """A value the int64 columns cannot hold as SQLite compares it: the SQL measures this capture."""


class _Codes:
    """Small integer codes of a column's distinct values (processes, keys), in first-seen order."""

    def __init__(self) -> None:
        self.of: dict[Any, int] = {}

    def code(self, values: tuple[Any, ...]) -> np.ndarray:
        of = self.of
        return np.array([of.setdefault(v, len(of)) for v in values], dtype=np.int64)

    def code_ints(self, values: np.ndarray) -> np.ndarray:
        """code() of integers: by their distinct values, in numpy — where they lie close together (string ids,
        process ids of one machine), found by counting and coded through a table, without a sort."""
        of = self.of
        if len(values):
            lo, hi = int(values.min()), int(values.max())
            if hi - lo < max(len(values), 1 << 16):  # a table no longer than the column
                distinct = np.flatnonzero(np.bincount(values - lo))
                table = np.zeros(hi - lo + 1, dtype=np.int64)
                table[distinct] = [of.setdefault(v, len(of)) for v in (distinct + lo).tolist()]
                coded: np.ndarray = table[values - lo]
                return coded
        distinct, where = np.unique(values, return_inverse=True)
        return np.array([of.setdefault(v, len(of)) for v in distinct.tolist()], dtype=np.int64)[where]

    def constant(self, value: object, rows: int) -> np.ndarray:
        return np.full(rows, self.of.setdefault(value, len(self.of)), dtype=np.int64)

    def values(self) -> list[Any]:
        return list(self.of)


class _Steps:
    """The steps sorted by (start, number): a row's step is the last one starting at or before it."""

    def __init__(self, spans: list[tuple[int, int, int]]) -> None:
        order = sorted(range(len(spans)), key=lambda i: (spans[i][1], spans[i][0]))
        self.n = [spans[i][0] for i in order]
        self.lo = np.array([spans[i][1] for i in order], dtype=np.int64)
        self.hi = np.array([spans[i][2] for i in order], dtype=np.int64)
        self.bounds = {n: (a, b) for n, a, b in spans}
        self.spans = spans
        # the SQL keeps rows that start from the list's first start to its last end: where that cuts more than
        # the steps do (spans out of order, an end before its start), assign cuts there too
        self.ends = (spans[0][1], spans[-1][2]) if spans and (
            spans[0][1] > self.lo.min() or spans[-1][2] < self.hi.max()) else None

    def assign(self, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(which rows have a step, their step's index, their ends cut at its end)."""
        i = np.searchsorted(self.lo, s, side="right") - 1
        inside = i >= 0
        if self.ends is not None:
            inside &= (s >= self.ends[0]) & (s < self.ends[1])
        if inside.all():
            inside = s < self.hi[i]
        else:
            inside[inside] = s[inside] < self.hi[i[inside]]
        i, e = _where(inside, i, e)
        return inside, i, np.minimum(e, self.hi[i])


def measure(conn: sqlite3.Connection, gpu: list[GpuTable], api: list[ApiTable], spans: list[Span] | None,
            host: str, names: Names, span: tuple[int, int] = EVERYTHING,
            given: dict[str, Given] | None = None, meanwhile: Callable[[], object] | None = None
            ) -> tuple[Steps, StepKernels, list[Span], list[Any]] | None:
    """(the steps' values, the kernels per step, the steps — as timeline/series._in_sql gives them —, every name
    key of the kernel tables' rows read: for timeline/collectives.starts); None: measure in
    SQL. spans None: time buckets (series_tables.buckets) of the GPU activity that starts in span, from the
    extent of the rows read ([] and nothing measured without any). given: timeline/series.measure's, used for
    the whole capture only (another pass's rows are those of its window: a step may run on past it). meanwhile:
    run before the calls' worker's answer is taken, where there is one (this process would otherwise idle while it
    ends: at 1M launches on 2 cores, ~0.1 s)."""
    pids, keys = _Codes(), _Codes()
    whole = host != "launch"
    given = given if span == EVERYTHING else None
    steps = _Steps(spans) if spans is not None else None
    on_host = bool(api) and host != "none"
    handed = Handed() if steps is None and on_host else None
    theirs = steps if steps is not None else handed  # the worker's steps, now or once the GPU's rows give them
    try:
        aside = _host_aside(conn, api, theirs, whole) if on_host and theirs is not None else None
    finally:
        if handed is not None:
            handed.forked()
    if aside is None and handed is not None:  # no worker to hand the steps to
        handed.close()
        handed = None
    try:
        steps, (values, kernels, pieces) = _gpu_side(conn, gpu, steps, span, pids, keys, names, handed, given or {})
        if not steps.spans:
            return {}, StepKernels(), [], []
        cuts = [_cut(steps, pieces.pop())] if pieces else []
        compute = _compute_busy(steps, cuts[0]) if cuts else None
        if on_host:
            if aside is not None and meanwhile is not None:
                meanwhile()
            host_side = _host_side(conn, api, steps, pids, whole=whole) if aside is None else \
                _recoded(aside.result(), pids)
            cuts.append(_host_into(values, host_side, whole=whole))
        if values:
            _parts(steps, cuts, values, compute)
    except _Odd:
        return None
    finally:
        if handed is not None:
            handed.close()
        if aside is not None:
            aside.cancel()  # ended without its answer where the GPU's side failed (nothing once it answered)
    decoded = pids.values()
    out = {(decoded[p], steps.n[i]): (*steps.bounds[steps.n[i]], vals) for (p, i), vals in values.items()}
    return out, kernels, steps.spans, keys.values()


def _read(conn: sqlite3.Connection, table: str, pid: str, columns: tuple[str, ...], rest: str, pids: _Codes,
          coded: tuple[_Codes | None, ...]) -> list[np.ndarray]:
    """The int64 columns of `SELECT pid, columns FROM rest`: the process's code, then each column's — its values'
    codes where it has codes, else its values (every one an integer, else _Odd). A process id that is a constant
    (one process per capture: our tracer, Kineto) is not read per row. Where every value is an integer (asked
    first: one scan, no rows kept), each chunk of rows becomes one array at once; else column by column. Where the
    compiled helper reads table (a table of the capture's file), it stores the columns straight into arrays; else,
    up to AT_ONCE rows of integers, each column comes as one text numpy parses (3x less time than a tuple a row)."""
    const = pid == "NULL" or pid.isdigit()
    cols, codes_of = (columns, coded) if const else ((pid, *columns), (pids, *coded))
    parts: list[list[np.ndarray]] = [[] for _ in cols]
    rows = 0
    got = native.table_columns(conn, table, f"SELECT {', '.join(cols)} FROM {rest}", len(cols))
    wholes = [np.frombuffer(raw, dtype=np.int64) for raw in got] if got is not None else _as_text(conn, cols, rest)
    if wholes is not None:
        rows = len(wholes[0]) if wholes else 0
        for whole, codes, out in zip(wholes, codes_of, parts):
            # the codes' numbering is no result's: values are decoded, and ordered by value (_sqlite_ranks)
            out += [whole if codes is None else codes.code_ints(whole)]
    else:
        _fetched(conn, cols, codes_of, rest, parts)
        rows = sum(len(a) for a in parts[0])
    read = [_joined(p) if p else np.zeros(0, dtype=np.int64) for p in parts]  # one part (the usual): no copy
    return [pids.constant(None if pid == "NULL" else int(pid), rows), *read] if const else read


def _as_text(conn: sqlite3.Connection, cols: tuple[str, ...], rest: str) -> list[np.ndarray] | None:
    """Each column as one text numpy parses, where every value is an integer and there are at most AT_ONCE rows;
    else None."""
    other = " OR ".join(f"typeof({c}) != 'integer'" for c in cols)
    rows, odd = conn.execute(f"SELECT COUNT(*), COALESCE(MAX({other}), 0) FROM {rest}").fetchone()
    if odd or rows > AT_ONCE:
        return None
    texts = conn.execute(f"SELECT {', '.join(f'group_concat({c})' for c in cols)} FROM {rest}").fetchone()
    return [np.fromstring(t or "", dtype=np.int64, sep=",") for t in texts]


def _fetched(conn: sqlite3.Connection, cols: tuple[str, ...], codes_of: tuple[_Codes | None, ...], rest: str,
             parts: list[list[np.ndarray]]) -> None:
    """_read's columns through fetchmany, chunk by chunk into parts."""
    other = " OR ".join(f"typeof({c}) != 'integer'" for c in cols)
    ints = conn.execute(f"SELECT 1 FROM {rest} AND ({other}) LIMIT 1").fetchone() is None
    cur = conn.execute(f"SELECT {', '.join(cols)} FROM {rest}")
    while chunk := cur.fetchmany(CHUNK):
        if ints:
            block = np.array(chunk, dtype=np.int64)
            for j, (codes, out) in enumerate(zip(codes_of, parts)):
                out.append(block[:, j] if codes is None else codes.code_ints(block[:, j]))
        else:
            for col, codes, out in zip(zip(*chunk), codes_of, parts):
                out.append(_ints(col) if codes is None else codes.code(col))


def _ints(col: tuple[Any, ...]) -> np.ndarray:
    a = np.array(col)  # floats, text, NULLs or integers past int64: another dtype
    if a.dtype != np.int64:
        raise _Odd
    return a


def _near(a: np.ndarray) -> np.ndarray:
    """a, whose times are near enough to 0 for the unions' offsets not to overflow (else _Odd)."""
    if len(a) and (a.min() < -_FAR or a.max() > _FAR):
        raise _Odd
    return a


def _rows_of(table: str) -> str:
    """FROM what: every row of the table (the steps, a window's extent and sound times are kept in numpy, _Steps.assign,
    _gpu_rows and _sound — in SQL they cost 0.07 s a 1M-row table; a step that starts inside a window keeps what
    starts in it after the window, as the SQL's does)."""
    return f"{table} WHERE true"


def _given(conn: sqlite3.Connection, g: GpuTable, pieces: Given, pids: _Codes,
           keys: _Codes) -> list[list[np.ndarray]]:
    """_read's (process code, start, end, key code) of each piece, in order, of a kernel table whose rows another
    pass kept in part (timeline/series.measure's given): from its kept (pid, start, end, key) columns, else read
    here — its rowid range "lo hi", or the whole table (None). Not joined here: _gpu_rows joins every table's rows
    once (joining the pieces first copied each column once more: 0.05 s at 1M launches). Empties pieces."""
    got: list[list[np.ndarray]] = []
    for j, (rowids, cols) in enumerate(pieces):
        if cols is None:
            rest = _rows_of(g.table) + ("" if rowids is None else " AND rowid BETWEEN {} AND {}".format(
                *map(int, rowids.split())))
            got.append(_read(conn, g.table, g.pid, ("start", '"end"', str(g.name)), rest, pids, (None, None, keys)))
        else:
            p, s, e, key = (np.frombuffer(c, dtype=np.int64) for c in cols)
            got.append([pids.code_ints(p), s, e, keys.code_ints(key)])
        pieces[j] = (rowids, None)
    return got


def _extent(s: np.ndarray, e: np.ndarray, span: tuple[int, int]) -> tuple[int | None, int | None]:
    """(MIN(start), MAX(end)) of the rows whose times are usable (_sound) that start in span, as
    timeline/series._extents' SQL gives them."""
    s, e = _sound(s, e)
    if span != EVERYTHING:
        inside = (s >= span[0]) & (s < span[1])
        s, e = _where(inside, s, e)
    return (int(s.min()), int(e.max())) if len(s) else (None, None)


def _sound(s: np.ndarray, e: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """(s, e, *arrays) of the rows whose times are sound (timeline/series._SOUND: a start after the clock's zero, an
    end at or after it, at most MAX_DURATION_NS later; a damaged row's times left out before they reach any sum).
    e - s wraps past int64 where the true difference does not fit it; as uint64 it is exact (e >= s)."""
    keep = (e >= s) & (s > 0)
    keep &= (e - s).view(np.uint64) <= MAX_DURATION_NS
    return _where(keep, s, e, *arrays)


def _gpu_rows(conn: sqlite3.Connection, gpu: list[GpuTable], steps: _Steps | None, span: tuple[int, int],
              pids: _Codes, keys: _Codes, handed: Handed | None,
              given: dict[str, Given]) -> tuple[_Steps, list[tuple[GpuTable, list[np.ndarray]]]]:
    """(the steps, [(the table, its (process code, start, end, key code or budget part) columns)] of every GPU table:
    a copy's or set's part read from the table, GpuTable.part).
    steps None: the time buckets of the rows' extent (series_tables.buckets, from the rows that start in span and
    whose times are usable, as its SQL's MIN and MAX take them), handed to the calls' worker as soon as they are
    known.
    given: a kernel table's columns another pass read (timeline/series.measure), not read again."""
    read: list[tuple[GpuTable, list[np.ndarray]]] = []
    for g in gpu:
        col, codes = (g.name, keys) if g.name is not None else (g.part, None)
        if g.name is not None and g.table in given:  # each piece as a table of its own: joined once, later
            read += [(g, piece) for piece in _given(conn, g, given.pop(g.table), pids, keys)]
            continue
        read.append((g, _read(conn, g.table, g.pid, ("start", '"end"', col), _rows_of(g.table), pids,
                              (None, None, codes))))
    if steps is None:  # a damaged row's times left out of the extent (and of every sum: step_rows, _assigned)
        steps = _Steps(buckets([_extent(s, e, span) for _g, (_p, s, e, _x) in read]))
    if handed is not None:
        handed.give(steps.spans)
    return steps, read


def _assigned(read: list[tuple[GpuTable, list[np.ndarray]]], steps: _Steps,
              keys: _Codes) -> tuple[np.ndarray, ...]:
    """(process code, step index, start, end, kernel?, key code, budget part) of every GPU row whose times are sound
    (_sound) that starts in a step, table by table: the numpy of the compiled step_rows' rows. Empties read."""
    cols: list[list[np.ndarray]] = [[] for _ in range(7)]
    while read:
        g, (p, s, e, x) = read.pop(0)
        s, e, p, x = _sound(s, e, p, x)
        if g.name is not None:
            key, part = x, np.full(len(s), PARTS.index("kernels"), dtype=np.int64)
        else:
            key, part = keys.constant(None, len(s)), x
        del x
        inside, i, _ends = steps.assign(s, e)  # the budget cuts each island into steps itself (_cut)
        p, s, e, key, part = _where(inside, p, s, e, key, part)
        s, e = _near(s), _near(e)  # the times kept: near enough to 0 for the unions' offsets
        for out, a in zip(cols, (p, i, s, e, np.full(len(s), g.name is not None), key, part)):
            out.append(a)
        del p, s, e, key, part, inside, i, _ends
    return tuple(_joined(c) for c in cols)


DENSE_GROUPS = 1 << 20  # (process, step) groups up to this many are summed by the compiled pass (8 MB a sum)

# the compiled pass's rows, as _assigned's (process code, step index, start, end, kernel?, key code, part), its
# sums per group (rows, launches, kernel ns, copy ns) and per (group, key) cell (launches, ns), or None (not dense)
Compiled = tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], tuple[np.ndarray, np.ndarray] | None]


def _compiled_rows(read: list[tuple[GpuTable, list[np.ndarray]]], steps: _Steps, pids: _Codes, keys: _Codes,
                   key_parts: np.ndarray) -> Compiled | None:
    """_assigned's rows and _gpu_side's sums in one compiled pass (_step_rows), the kernel and key columns only where
    the cells are too many to count in place (numpy then counts them from the rows); None where the pass declines.
    Empties read where it does not."""
    none_key = keys.of.setdefault(None, len(keys.of)) if any(g.name is None for g, _ in read) else 0
    n_keys = len(keys.of) or 1
    dense = len(pids.of) * len(steps.n) * n_keys <= DENSE_CELLS
    got = _step_rows([(*cols, g.name is not None) for g, cols in read], steps, len(pids.of), n_keys, none_key,
                     np.pad(key_parts, (0, n_keys - len(key_parts)), constant_values=PARTS.index("kernels")),
                     ROW_COLUMNS[:4] + ((4,) if dense else (6, 5, 4)), cells=dense)
    if got is not None:
        read.clear()
    return got


ROW_COLUMNS = (0, 1, 2, 3, 6, 5, 4)  # step_rows' columns in _assigned's order (process, step, start, end, kernel?,
# key, part); the calls' side asks for the first four and the part (their kind) only
HOST_COLUMNS = (0, 1, 2, 3, 4)


def _step_rows(tables: list[tuple[Any, ...]], steps: _Steps, n_pids: int, n_keys: int, none_key: int,
               key_parts: np.ndarray, columns: tuple[int, ...], *, cells: bool) -> Compiled | None:
    """The compiled pass over tables' (process code, start, end, key code or part, kernel?) rows (native.step_rows:
    _sound, _Steps.assign, _near and the sums of _gpu_side at once, ~10x numpy's time at 1M launches, no temporary
    per column; key_parts: a kernel's budget part by its key code): its columns (step_rows' indexes, in the order
    asked), sums per group, and (with cells) sums per (group, key) cell. None where it is not built or the groups
    are too many for its dense sums (numpy then measures); _Odd where numpy would decline."""
    n_steps = len(steps.n)
    if not native.available() or not n_steps or not n_pids or n_pids * n_steps > DENSE_GROUPS:
        return None
    as64 = functools.partial(np.ascontiguousarray, dtype=np.int64)
    held = [(as64(t[0]), as64(t[1]), as64(t[2]), as64(t[3]), bool(t[4])) for t in tables]
    rows = sum(len(t[1]) for t in held)
    out = tuple(np.empty(rows if c in columns else 0, dtype=np.int64) for c in range(7))
    sums = tuple(np.zeros(n_pids * n_steps, dtype=np.int64) for _ in range(4))
    by_cell = tuple(np.zeros(n_pids * n_steps * n_keys if cells else 0, dtype=np.int64) for _ in range(2))
    kept = native.step_rows(held, steps.lo, steps.hi, steps.ends, none_key, as64(key_parts), _FAR, MAX_DURATION_NS,
                            n_pids, n_keys, out, sums, (by_cell[0], by_cell[1]))
    del held
    if kept is None:
        raise _Odd
    return tuple(out[c][:kept] for c in columns), sums, (by_cell[0], by_cell[1]) if cells else None


def _gpu_side(conn: sqlite3.Connection, gpu: list[GpuTable], steps: _Steps | None, span: tuple[int, int],
              pids: _Codes, keys: _Codes, names: Names, handed: Handed | None = None,
              given: dict[str, Given] | None = None
              ) -> tuple[_Steps, tuple[ByCode, StepKernels, list[Pieces]]]:
    """(the steps — steps None: _gpu_rows' time buckets —, ({(process code, step index): values}, the kernels per
    step, the rows of the budget) of the GPU's work)."""
    steps, read = _gpu_rows(conn, gpu, steps, span, pids, keys, handed, given or {})
    # every name key the kernel tables hold (a copy's None is coded after them), named once, each one's budget part
    read_keys = keys.values()
    named = names(read_keys)
    key_parts = np.array([PARTS.index("communication") if v in named and may_communicate(named[v]) and
                          classify(named[v]).family in COMMUNICATION_FAMILIES else PARTS.index("kernels")
                          for v in read_keys] or [PARTS.index("kernels")], dtype=np.int64)
    got = _compiled_rows(read, steps, pids, keys, key_parts)
    k = key = None
    if got is None:
        p, i, s, e, k, key, part = _assigned(read, steps, keys)
        if len(s):
            part = np.where(k, key_parts[np.minimum(key, len(key_parts) - 1)], part)
        sums, cells = _sums(p * len(steps.n) + i, e - s, k), None
    else:
        (p, i, s, e, *kk, part), sums, cells = got
        if kk:
            k, key = kk[0].astype(bool), kk[1]
    if not len(s):
        return steps, ({}, StepKernels(), [])
    decoded = keys.values()
    n_steps, n_keys = len(steps.n), len(decoded)
    present = np.flatnonzero(sums[0])
    launches, kernel_ns, copy_ns = (a[present].astype(np.int64) for a in sums[1:])
    values = {divmod(g, n_steps): {"launches": a, "kernel_ns": b, "copy_ns": c, "busy_ns": 0, "compute_busy_ns": 0}
              for g, a, b, c in zip(present.tolist(), launches.tolist(), kernel_ns.tolist(), copy_ns.tolist())}
    del sums, present, launches, kernel_ns, copy_ns
    # the kernels' (group, key) cells: counted in place where there are few enough, else by one sort (_cells)
    if cells is None:
        assert k is not None and key is not None  # asked for where the cells are not counted in place
        cell, counts, totals = _cells((p * n_steps + i)[k], key[k], (e - s)[k], n_keys)
    else:
        cell = np.flatnonzero(cells[0])
        counts, totals = cells[0][cell], cells[1][cell]
    del cells, k, key
    cell_group, cell_key = np.divmod(cell, n_keys)
    pieces = [(p, i, s, e, part)]  # the budget's rows, with their whole ends
    return steps, (values, _kernels(pids, steps, keys, cell_group, cell_key, counts, totals, named), pieces)


def _sums(group: np.ndarray, d: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, ...]:
    """(rows, launches, kernel ns, copy ns) of each (process, step) group, counted in place — no sort (the rows' order
    matters to nothing here: the busy time is the budget's, _parts); float64 sums are exact below 2^53 ns (104 days
    of kernels: past it the SQL measures, whose SUM raises where numpy's would wrap)."""
    if float(d.sum(dtype=np.float64)) >= _EXACT:
        raise _Odd
    rows_of = np.bincount(group)
    return (rows_of, np.bincount(group, weights=k, minlength=len(rows_of)),
            np.bincount(group, weights=np.where(k, d, 0), minlength=len(rows_of)),
            np.bincount(group, weights=np.where(k, 0, d), minlength=len(rows_of)))


def _cells(group: np.ndarray, key: np.ndarray, d: np.ndarray, n_keys: int) -> tuple[np.ndarray, ...]:
    """(each (group, key) cell of the kernel rows: group * n_keys + key, in order; its launches; its ns): counted in
    place where the cells are few enough (DENSE_CELLS) and the sums exact in float64, else by one sort."""
    if not len(key):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    n_cells = (int(group.max()) + 1) * n_keys
    if float(n_cells) >= _FAR:
        raise _Odd
    cell = group * n_keys + key
    if n_cells <= DENSE_CELLS and float(d.sum(dtype=np.float64)) < _EXACT:
        # the sums are float64, exact where every partial sum is an integer below 2^53 (they are: the total is)
        counts = np.bincount(cell, minlength=n_cells)
        held = np.flatnonzero(counts)
        return held, counts[held], np.bincount(cell, weights=d, minlength=n_cells)[held].astype(np.int64)
    o = np.argsort(cell)
    ordered = cell[o]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    return ordered[starts], np.diff(np.r_[starts, len(o)]), np.add.reduceat(d[o], starts)


def _in_group_order(group: np.ndarray, s: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """(group, s, *arrays) with their rows in the order of (group, start), ties as they came: the arrays
    themselves where they are in that order already (one process's kernels in start order: no sort, no copies)."""
    if len(s) < 2 or (bool((group[1:] >= group[:-1]).all()) and
                      bool(((group[1:] != group[:-1]) | (s[1:] >= s[:-1])).all())):
        return (group, s, *arrays)
    o = _by_group(group, s)
    return tuple(a[o] for a in (group, s, *arrays))


def _by_group(group: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The order of the rows by (group, start): two stable sorts (rows come nearly in start order: quick), the
    groups' as int16 where they fit (numpy's stable sort of 16-bit integers is a radix sort: 0.016 s, not 0.038 s,
    for 1M rows)."""
    o = np.argsort(s, kind="stable")
    g = group[o]
    if len(g) and 0 <= g.min() and g.max() < 1 << 15:
        g = g.astype(np.int16)
    return o[np.argsort(g, kind="stable")]


def _unions(group: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each group, the length of the union of its [s, e)) of rows sorted by (group, s), each with e > s."""
    if not len(s):
        return group, s
    g, starts, ends, _opens = _islands(group, s, e)
    firsts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    return g[firsts], np.add.reduceat(ends - starts, firsts)


def _islands(group: np.ndarray, s: np.ndarray,
             e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(each island's group, start, end, first row) of rows sorted by (group, s), each with e > s. A row opens an
    island where it starts after every earlier row of its group ended; each group's times are offset past the
    previous group's, so one running maximum of the ends serves every group. Where the compiled helper is built,
    its one loop over the rows gives the same (0.02 s, not 0.25 s, for the unions of 1M launches)."""
    if len(s) and native.available():
        group, s, e = (np.ascontiguousarray(a, dtype=np.int64) for a in (group, s, e))
        got = native.islands(group, s, e)
        if got is None:
            raise _Odd
        opens, ends = (np.frombuffer(b, dtype=np.int64) for b in got)
        return group[opens], s[opens], ends, opens
    first = np.r_[True, group[1:] != group[:-1]]
    firsts = np.flatnonzero(first)
    gi = np.cumsum(first) - 1
    base = s[firsts][gi]  # each group's first start: times relative to it are >= 0
    width = np.maximum.reduceat(e - base, firsts) + 1
    if float(width.astype(np.float64).sum()) >= _FAR:
        raise _Odd
    offset = (np.cumsum(width) - width)[gi] - base
    reach = np.maximum.accumulate(e + offset)
    fresh = first.copy()
    fresh[1:] |= s[1:] + offset[1:] > reach[:-1]
    opens = np.flatnonzero(fresh)
    return group[opens], s[opens], np.maximum.reduceat(e, opens), opens


def _kernels(pids: _Codes, steps: _Steps, keys: _Codes, group: np.ndarray, key: np.ndarray, launches: np.ndarray,
             totals: np.ndarray, named: Named) -> StepKernels:
    """The kernels per (process, step, name) from their (group, key) cells (_cells'), in the order of the SQL's
    GROUP BY process, step, key (SQLite's order of values: NULL, numbers, text, blobs) merged by name."""
    if not len(key):
        return StepKernels()
    pid_rank, key_rank = _sqlite_ranks(pids.values()), _sqlite_ranks(keys.values())
    n_rank = np.argsort(np.argsort(np.array(steps.n, dtype=np.int64), kind="stable"))
    n_steps, n_keys = len(steps.n), len(key_rank)
    if float(len(pid_rank)) * n_steps * n_keys >= _FAR:
        raise _Odd
    # each cell's place in the SQL's order (one per cell: the ranks are each a permutation)
    o = np.argsort((pid_rank[:, None] * n_steps + n_rank[None, :]).ravel()[group] * n_keys + key_rank[key])
    group, launches, totals, row_key = group[o], launches[o], totals[o], key[o]
    pid_values, key_values = pids.values(), keys.values()
    name_of = [named.get(v) or "<unnamed kernel>" for v in key_values]
    # Python ints: no numpy scalar per (process, step, name)
    p, i = np.divmod(group, n_steps)
    pid, step = tuple(map(pid_values.__getitem__, p.tolist())), tuple(map(steps.n.__getitem__, i.tolist()))
    if len(set(name_of)) == len(name_of):  # one key per name (the usual case): nothing to merge
        # the names in the order the rows first name them (StepKernels.of's), each row's index among them: in numpy
        seen, at = np.unique(row_key, return_index=True)
        in_order = seen[np.argsort(at, kind="stable")]
        index = np.zeros(len(key_values), dtype=np.int64)
        index[in_order] = np.arange(len(in_order))
        return StepKernels(tuple(map(name_of.__getitem__, in_order.tolist())), pid, step,
                           tuple(index[row_key].tolist()), tuple(launches.tolist()), tuple(totals.tolist()))
    merged: dict[tuple[Any, int, str], list[int]] = {}
    for pid_, n, name, a, b in zip(pid, step, map(name_of.__getitem__, row_key.tolist()), launches.tolist(),
                                   totals.tolist()):
        m = merged.setdefault((pid_, n, name), [0, 0])
        m[0] += a
        m[1] += b
    return StepKernels.of(StepKernel(pid_, n, name, a, b) for (pid_, n, name), (a, b) in merged.items())


def _sqlite_ranks(values: list[Any]) -> np.ndarray:
    """Each value's rank (by code) in SQLite's order: NULL, then numbers, then text (by its bytes), then blobs."""
    def order(v: Any) -> tuple[int, Any]:
        if v is None:
            return (0, 0)
        if isinstance(v, (int, float)):
            return (1, v)
        return (2, v) if isinstance(v, str) else (3, bytes(v))
    ranks = np.zeros(len(values), dtype=np.int64)
    ranks[sorted(range(len(values)), key=lambda c: order(values[c]))] = np.arange(len(values))
    return ranks


# the host's side: (the budget's islands of the calls cut into steps, {(process code, step index): {kind: ns}},
# {(process code, step index): ns of the union of every call} (empty unless whole))
HostSide = tuple[Cut, dict[tuple[int, int], dict[str, int]], dict[tuple[int, int], int]]
ASIDE_FROM = BIG  # captures from this size on measure the host's side in a forked worker beside the GPU's side


def _host_aside(conn: sqlite3.Connection, api: list[ApiTable], steps: _Steps | Handed,
                whole: bool) -> Forked | None:
    """_host_side in a forked worker, started now so that it runs while this process measures the GPU's side (the
    two read different tables and meet only in _parts): where forking is possible, the capture is big enough
    (ASIDE_FROM) and every call table is a table of its file (a worker's own connection reads it as this one does;
    a reader's temporary table or view is not), else None. Measured on 2 cores, 1M generated launches, this
    module's measure() 5 times in one process, two rounds interleaved: 1.24-1.52 s all in one process, 0.77-1.07 s
    with the calls' side beside (with each side's islands cut apart, _cut, and no copies of rows already in order
    or all kept: _in_group_order, _where). steps: handed over once the GPU's side has them (time buckets:
    from its rows' extent), the worker reading its rows meanwhile."""
    if not can_fork() or not native.available():
        return None
    files = {native.file_of(conn, a.table) for a in api}
    path = files.pop() if len(files) == 1 else None  # every call table in one file, none a temporary one
    if path is None or os.path.getsize(path) < ASIDE_FROM:
        return None
    return Forked(_host_alone, Path(path), api, steps, whole)


def _host_alone(path: Path, api: list[ApiTable], steps: _Steps | Handed,
                whole: bool) -> tuple[list[Any], HostSide]:
    """_host_side on a connection of its own, with process codes of its own (their values, for _recoded)."""
    conn = reopened(path)
    try:
        pids = _Codes()
        (p, i, s, e, part), by_kind, union = _host_side(conn, api, steps, pids, whole=whole)
        # sent through a pipe: process codes, step indexes (< MAX_STEPS) and parts in fewer bytes (25 a row, not 40)
        return pids.values(), ((p.astype(np.int32), i.astype(np.int32), s, e, part.astype(np.int8)), by_kind, union)
    finally:
        conn.close()


def _recoded(answer: tuple[list[Any], HostSide], pids: _Codes) -> HostSide:
    """A worker's host side in this process's process codes."""
    theirs, ((p, i, s, e, part), by_kind, union) = answer
    ours = pids.code(tuple(theirs)) if theirs else np.zeros(0, dtype=np.int64)
    mine = ours.tolist()
    return ((ours[p] if len(p) else p, i, s, e, part), {(mine[c], n): v for (c, n), v in by_kind.items()},
            {(mine[c], n): v for (c, n), v in union.items()})


def _host_into(values: ByCode, host_side: HostSide, *, whole: bool) -> Cut:
    """Add the host's CUDA-call time to values, as timeline/series._host_side does; the budget's cut rows of the
    calls."""
    budget, by_kind, union = host_side
    for at in set(by_kind) | set(union):
        values.setdefault(at, {"launches": 0, "kernel_ns": 0, "copy_ns": 0, "busy_ns": 0, "compute_busy_ns": 0})
    for at, vals in values.items():
        vals["api_ns"] = tuple(sorted(by_kind.get(at, {}).items()))
        if whole:
            vals["api_union_ns"] = union.get(at, 0)
    return budget


def _host_side(conn: sqlite3.Connection, api: list[ApiTable], steps: _Steps | Handed, pids: _Codes, *,
               whole: bool) -> HostSide:
    """The host's CUDA-call time per process and step, as timeline/series._host_side measures it, and the budget's
    rows of the calls cut into steps (_cut). steps Handed: its spans, asked for once every call is read."""
    kinds: list[str] = []
    read: list[tuple[np.ndarray, ...]] = []
    for a in api:
        codes = _Codes()
        p, s, e, key = _read(conn, a.table, a.pid, ("start", '"end"', a.key), _rows_of(a.table), pids,
                             (None, None, codes))
        # the kinds of the keys read (not of a DISTINCT over the whole table: another scan of it, 0.1 s at 1M calls)
        kind_of = {k: kind or "other" for k, kind in a.kinds(conn, codes.values()).items()}
        names = [kind_of.get(v, "other") for v in codes.values()]
        kinds += sorted(set(names) - set(kinds))
        kind = np.array([kinds.index(x) for x in names], dtype=np.int64)[key] if len(key) else key
        read.append((p, s, e, kind))
        del p, s, e, key, kind
    if isinstance(steps, Handed):
        steps = _Steps(steps.get())
    got = _step_rows([(*t, False) for t in read], steps, len(pids.of), 1, 0, np.zeros(1, dtype=np.int64),
                     HOST_COLUMNS, cells=False)
    if got is not None:
        read.clear()
        p, i, s, whole_e, kind = got[0]
        e = np.minimum(whole_e, steps.hi[i])  # each call cut at its step's end
    else:
        p, i, s, e, kind, whole_e = _host_assigned(read, steps)
    other = PARTS.index("api_other")
    pri = np.array([PARTS.index(f"api_{k}") if f"api_{k}" in PARTS else other for k in kinds] or [other],
                   dtype=np.int64)[kind]
    budget = _cut(steps, (p, i, s, whole_e, pri))
    del whole_e, pri
    busy = e > s
    n_steps, n_kinds = len(steps.n), max(1, len(kinds))
    p, i, s, e, kind = _where(busy, p, i, s, e, kind)
    step = p * n_steps + i
    del p, i
    del busy
    group = step * n_kinds + kind
    del kind
    by_kind: dict[tuple[int, int], dict[str, int]] = {}
    for g, ns in zip(*_unions(*_in_group_order(group, s, e))):
        ps, c = divmod(int(g), n_kinds)
        by_kind.setdefault(divmod(ps, n_steps), {})[kinds[c]] = int(ns)
    del group
    union: dict[tuple[int, int], int] = {}
    if whole:
        union = {divmod(int(g), n_steps): int(ns) for g, ns in zip(*_unions(*_in_group_order(step, s, e)))}
    del step, s, e
    return budget, by_kind, union


def _host_assigned(read: list[tuple[np.ndarray, ...]], steps: _Steps) -> tuple[np.ndarray, ...]:
    """(process code, step index, start, end cut at the step's end, kind, end) of every (sound) call that starts in a
    step: the numpy of the compiled step_rows' rows. Empties read."""
    cols: list[list[np.ndarray]] = [[] for _ in range(6)]
    while read:
        p, s, e, kind = read.pop(0)
        s, e, p, kind = _sound(s, e, p, kind)
        inside, i, cut = steps.assign(s, e)
        p, s, kind, e = _where(inside, p, s, kind, e)
        s, e = _near(s), _near(e)
        for out, x in zip(cols, (p, i, s, cut, kind, e)):
            out.append(x)
        del p, s, e, kind, inside, i, cut
    return tuple(_joined(c) for c in cols)


def _where(keep: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each array's rows where keep: the arrays themselves where it keeps every row (the usual case: no copies; no
    array here is written to in place)."""
    return arrays if keep.all() else tuple(a[keep] for a in arrays)


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    """np.concatenate(arrays), without a copy of a lone array (one table: the usual case)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _cut(steps: _Steps, piece: Pieces) -> Cut:
    """The islands per (process, part) of one side's rows (the GPU's, or the host's: no part is both's, so each
    side's islands are its own), cut into the steps each one spans from the step its first row started in; pieces
    of 0 ns left out. timeline/series._parts' first half."""
    p, i, s, e, pri = piece
    keep = e > s
    p, i, s, e, pri = _where(keep, p, i, s, e, pri)
    del keep, piece
    if not len(s):
        return p, i, s, e, pri
    n_steps, n_parts = len(steps.n), len(PARTS)
    group = p * n_parts + pri
    group, s, i, e = _in_group_order(group, s, i, e)
    del p, pri
    if native.available():  # the islands and their pieces in one loop: island by island, not step by step
        as64 = functools.partial(np.ascontiguousarray, dtype=np.int64)
        got = native.cut_islands(as64(group), as64(s), as64(e), as64(i), steps.lo, steps.hi)
        if got is None:
            raise _Odd
        g, ix, s, e = (np.frombuffer(b, dtype=np.int64) for b in got)
        p, pri = np.divmod(g, n_parts)
        return p, ix, s, e, pri
    g, s, e, opens = _islands(group, s, e)
    ix = np.minimum.reduceat(i, opens)
    del group, i, opens
    p, pri = np.divmod(g, n_parts)
    cuts: list[tuple[np.ndarray, ...]] = []
    at = np.ones(len(s), dtype=bool)
    while len(ix):  # the island's piece in its step, then in each later step that starts before it ends
        cuts.append((p, ix, np.maximum(s, steps.lo[ix]), np.minimum(e, steps.hi[ix]), pri))
        ix = ix + 1
        at = ix < n_steps
        at[at] = steps.lo[ix[at]] < e[at]
        p, ix, s, e, pri = p[at], ix[at], s[at], e[at], pri[at]
    del at, g
    # the later pieces first: a (process, step, part)'s piece carried from an earlier step (at most one: the islands
    # are disjoint) starts at the step's start, before the pieces that start in it — so a stable sort by (process,
    # step, part) leaves each one's pieces in time order (_claimed's compiled sweep asks for that order)
    p, ix, s, e, pri = (_joined(list(c)) for c in zip(*reversed(cuts)))
    del cuts
    keep = e > s
    p, ix, s, e, pri = _where(keep, p, ix, s, e, pri)
    return p, ix, s, e, pri


def _compute_busy(steps: _Steps, gpu: Cut) -> dict[int, int] | None:
    """{process code * steps + step index: ns} of the union of the GPU's pieces (_cut's, of its islands) but for its
    communication kernels', per process and step; None where no piece is communication (that union is the busy
    time itself: _parts)."""
    p, ix, s, e, pri = gpu
    other = pri != PARTS.index("communication")
    if other.all():
        return None
    group = p * len(steps.n) + ix
    group, s, e = _where(other, group, s, e)
    return dict(zip(*(a.tolist() for a in _unions(*_in_group_order(group, s, e)))))


def _parts(steps: _Steps, cuts: list[Cut], values: ByCode, compute: dict[int, int] | None = None) -> None:
    """Each step's time budget, as timeline/series._parts measures it (its docstring says how): each side's islands
    cut into steps (_cut), then the unions of the parts in PARTS' order; its busy time, its GPU parts' (compute:
    _compute_busy's, where communication is apart). Empties cuts: its rows are freed as soon as they are
    copied."""
    p, ix, s, e, pri = (_joined(list(c)) for c in zip(*cuts))
    cuts.clear()
    if not len(s):
        for vals in values.values():
            vals["parts_ns"] = ()
        return
    n_steps, n_parts = len(steps.n), len(PARTS)
    step = p * n_steps + ix
    del p, ix
    parts: dict[int, list[tuple[str, int]]] = {}
    for g_, j, ns in zip(*_claimed(step, s, e, pri, n_parts)):
        parts.setdefault(g_, []).append((PARTS[j], ns))
    for g_ in parts.keys() - {p_ * n_steps + i_ for p_, i_ in values}:  # busy only with an earlier step's work
        values[divmod(g_, n_steps)] = {"launches": 0, "kernel_ns": 0, "copy_ns": 0, "busy_ns": 0,
                                       "compute_busy_ns": 0}
    for (p_, i_), vals in values.items():
        vals["parts_ns"] = tuple(parts.get(p_ * n_steps + i_, ()))
        vals["busy_ns"] = sum(ns for part, ns in vals["parts_ns"] if part in GPU_PARTS)
        vals["compute_busy_ns"] = vals["busy_ns"] if compute is None else compute.get(p_ * n_steps + i_, 0)


def _by_time(g: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The order of the events by (g, t): one sort of g * width + t where that fits in int64 (3x quicker than
    np.lexsort's two passes at 1M launches); the order of events at one (g, t) does not matter to _claimed (the
    segments between them last 0 ns)."""
    if not len(t):
        return np.zeros(0, dtype=np.intp)
    lo = int(t.min())
    width = int(t.max()) - lo + 1
    if float(g.max() + 1) * width >= _FAR:
        return np.lexsort((t, g))
    key = g.astype(np.int64) * width
    key += t
    key -= lo
    return np.argsort(key, kind="stable")  # a few runs each in time order: merged, 3x quicker than a quicksort


def _claimed_compiled(group: np.ndarray, s: np.ndarray, e: np.ndarray, pri: np.ndarray,
                      n_parts: int) -> tuple[list[int], list[int], list[int]] | None:
    """_claimed by the compiled sweep: the pieces in (group, part) order by a stable sort (they come in runs of that
    order, each (group, part)'s in time order: _cut); None where they are not in time order within a (group, part)
    after it (the numpy then sorts them itself)."""
    key = group.astype(np.int64) * n_parts
    key += pri
    if len(key) > 1 and not bool((key[1:] >= key[:-1]).all()):
        o = np.argsort(key, kind="stable")
        key, s, e = key[o], s[o], e[o]
        del o
    key, s, e = (np.ascontiguousarray(a, dtype=np.int64) for a in (key, s, e))
    return native.claimed(key, s, e, n_parts)


@functools.lru_cache(maxsize=4)
def _lowest_bit(bits: int) -> np.ndarray:
    """The index of each mask's lowest set bit, for every mask of `bits` bits (0's: never read): a table lookup, one
    byte a segment, where log2 of the lowest bit took three arrays of 8 bytes a segment (0.05 GB at 1M launches)."""
    masks = np.arange(1 << bits, dtype=np.int64)
    low = masks & -masks
    index: np.ndarray = np.log2(np.maximum(low, 1).astype(np.float64)).astype(np.int8)
    index.flags.writeable = False  # shared by every call (lru_cache)
    return index


def _claimed(group: np.ndarray, s: np.ndarray, e: np.ndarray, pri: np.ndarray,
             n_parts: int) -> tuple[list[int], list[int], list[int]]:
    """(group, part, ns) of each part's own time per group, by group then part, none of 0 ns: the time the part
    covers where no earlier part (in PARTS' order) does — what the union of it and the parts before it adds, as
    the SQL measures it, in one pass for every part. Each (group, part)'s pieces are disjoint (cut from its
    islands), so the parts covering an instant are one bit each of a mask: +2^part where a piece starts, -2^part
    where it ends, summed in time order per group; between two events the mask's lowest bit claims the time. Where
    the compiled helper is built, its sweep gives the same from the pieces sorted by (group, part), one cursor per
    part (0.01-0.02 s, not 0.09-0.19 s, for the budget of 1M launches and their calls)."""
    if len(s) and native.available():
        got = _claimed_compiled(group, s, e, pri, n_parts)
        if got is not None:
            return got
    t = np.concatenate([s, e])
    bit = np.left_shift(np.int16(1), pri.astype(np.int16))  # len(PARTS) bits: a mask fits in int16
    delta = np.concatenate([bit, -bit])
    del bit
    g = np.concatenate([group, group])
    if len(g) and g.max() < 1 << 31:
        g = g.astype(np.int32)
    o = _by_time(g, t)
    # one at a time: each unsorted copy is freed before the next one is sorted
    t = t[o]
    delta = delta[o]
    g = g[o]
    del o
    mask = np.cumsum(delta, dtype=np.int16)[:-1]
    length = t[1:] - t[:-1]
    del t
    # a segment inside one group, of some length (several events at one time pass through masks that last 0 ns)
    held = (g[1:] == g[:-1]) & (length > 0) & (mask != 0)
    mask = mask[held]
    length = length[held]
    g = g[:-1][held]
    del held
    key = g.astype(np.int64) * n_parts
    del g
    key += _lowest_bit(n_parts)[mask]  # the part that claims the segment
    o = np.argsort(key, kind="stable")
    key = key[o]
    firsts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, dtype=np.int64)
    total = np.add.reduceat(length[o], firsts) if len(key) else np.zeros(0, dtype=np.int64)
    g_, j_ = np.divmod(key[firsts], n_parts)
    return g_.tolist(), j_.tolist(), total.tolist()
