"""The compiled passes of the Nsight Systems reader (timeline/_cattr.c), when they were built: the NVTX segment sweep,
the per-op attribution of a slice of kernels (which can take the kernels' busy-time islands as it reads them), the
busy-time union (or its islands, and their merge: busy_islands, busy_runs), the int64 columns the per-step series
reads, its rows' steps and sums (step_rows), the islands (gaps and islands) of its unions and the sweep of its time
budget's parts (claimed).

Each gives exactly what the Python and SQL it stands in for give (tests/timeline/test_native.py compares them on
real and generated captures and on random ranges); measured on this project's 2-core machine, reading a generated
2M-launch capture took 8.1-9.6 s by those and 3.1-3.4 s compiled. They are optional: `pip install` builds them
where a C compiler and Python's headers are present (setup.py; no libsqlite3-dev needed), and without them — or
with NVPROF_WRAP_NATIVE=off, or on a capture holding values of another type than they expect — the Python and SQL
run instead.
"""
from __future__ import annotations

import contextlib
import os
import sqlite3  # loads the libsqlite3 that the helper binds to (and types table_columns)
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from nvprof_wrap.system import environ, limits
from nvprof_wrap.timeline import guard

try:
    from nvprof_wrap.timeline import _cattr
except ImportError:  # not built here (no compiler at install time), or no libsqlite3 to bind to
    _cattr = None  # type: ignore[assignment]  # available() says so before any pass is asked

# a row of a pass's result: the capture's SQL values
Row = tuple[Any, ...]
# attribute(): kernels outside its bounds held for one more read of their launch calls (56 bytes each); more, and
# the slice is read again with the exact bounds
MAX_LATE = 1 << 18


def available() -> bool:
    return _cattr is not None and not environ.native_off()


def sweep(uri: str, ranges_sql: str, op_of: Callable[[str], tuple[int, bool, bool]]
          ) -> tuple[object, list[tuple[int, int]], list[Row]] | None:
    """timeline/nvtx._segments compiled: (the segments, held here for attribute(); the (scope, op) pairs of op ids,
    by label id; (process, tid) of each process's main thread, as _nvtx._main_threads finds them) of the (tid,
    start, end, name, process) ranges that ranges_sql yields in the sweep's order. op_of(name) -> (op id, a layer
    range?, a step range?), asked once per distinct name. None when a value is not an integer or a name not text
    (the caller runs the Python sweep)."""
    with _budget(uri) as b:
        return _cattr.sweep(uri, ranges_sql, op_of, b, limits.SQL_STEP_GRAIN)


def attribute(uri: str, calls_sql: str, kernels_sql: str, held: object, main: list[Row],
              bounds: tuple[int, int] | None = None, keep: int | None = None, lanes: bool = False,
              cols: bool = True) -> tuple[list[Row], int, list[bytes] | None, list[Row] | None] | None:
    """((pid, dev, label, key, via, launches, total) rows as _attribute_slice returns them, NULLs as -1 / '', in no
    order and a key once per join key of its launch calls (the caller sums them); how many kernels had a NULL
    duration; with keep, the kernels' (pid, start, end, key) columns as bytes of int64, or None where a NULL
    process, key or time gave them up), or None when a value is not an integer or NULL (the caller runs the SQL).
    held: sweep()'s segments; main: (process, tid) of each process's main thread. bounds: an estimate of the
    kernels' correlation ids, bound to calls_sql's ?1 and ?2 (the kernels outside it are matched too: _cattr.c
    attribute_all). keep: the longest duration kept (limits.MAX_DURATION_NS): kernels_sql then yields start and
    end in place of the duration, which the pass works out as readers/_durations.SOUND does. lanes (with keep):
    kernels_sql yields the busy time's group (timeline/busy.py) as an 8th column, and the fourth part is the
    (group, dev, bytes of int64 (start, end) pairs) islands of each lane's kernels with a usable duration (busy_runs
    merges them), None where a time past +-2^62 gave them up; cols False: those alone, no columns kept."""
    if lanes and keep is None:
        raise ValueError("lanes need keep: the longest duration kept")
    with _budget(uri) as b:
        got = _cattr.attribute(uri, calls_sql, kernels_sql, held, main, b, limits.SQL_STEP_GRAIN, bounds, MAX_LATE,
                               -1 if keep is None else keep, lanes, cols)
    if got is None:
        return None
    if len(got) == 2:
        return got[0], got[1], None, None
    if len(got) == 3:
        return got[0], got[1], got[2], None
    return got  # lanes: the four-part answer


def busy(uri: str, sql: str, params: Row) -> Row | None:
    """(busy_part's result,) — (None,) without intervals — of the (start, end, kernel flag) rows that sql yields in
    start order, merged compiled; None when a value is not an integer (the caller runs its loop)."""
    with _budget(uri) as b:
        return _cattr.busy(uri, sql, params, b, limits.SQL_STEP_GRAIN)


# Intervals held per group and device by busy_all (16 bytes each: 2 MB). Nsight Systems lists them nearly in start
# order, so a window this wide is never overrun on the real exports here; where one is, the pass reads the tables
# again holding them all (exact either way). Holding all of them cost 320 MB at 20M launches.
BUSY_HOLD = 1 << 17


def busy_all(uri: str, sqls: list[str]) -> list[Row] | None:
    """(group, dev, busy_part's result) of each group of the (group, dev, start, end, kernel flag) rows of every SQL,
    in no order; None when a value is not an integer (the caller runs the SQL)."""
    got = busy_held(uri, sqls, BUSY_HOLD)
    return None if got is None else got[0]


def busy_held(uri: str, sqls: list[str], hold: int) -> tuple[list[Row], bool] | None:
    """busy_all's rows, at most `hold` intervals held per group and device (0: every one), and whether a row came
    too late for that window (then every interval was held: the tables were read a second time)."""
    with _budget(uri) as b:
        got = _cattr.busy_all(uri, sqls, b, limits.SQL_STEP_GRAIN, hold)
    return None if got is None else cast(tuple[list[Row], bool], got)


def busy_islands(uri: str, sqls: list[str]) -> list[Row] | None:
    """(group, dev, kernel flag, bytes of int64 (start, end) pairs) islands of the (group, dev, start, end, kernel flag)
    rows of every SQL, each lane's kernels and the rest apart, in start order (every interval held: the copies and
    graph launches of a capture whose kernels the attribution reads); None when a value is not an integer."""
    with _budget(uri) as b:
        got = _cattr.busy_all(uri, sqls, b, limits.SQL_STEP_GRAIN, 0, True)
    return None if got is None else cast(list[Row], got)


def busy_runs(runs: list[Row]) -> list[Row] | None:
    """busy_all's (group, dev, busy_part's result) rows from (group, dev, kernel flag, bytes) runs of islands, each in
    start order (busy_islands', attribute's lanes'); None for a time past +-2^62 or a run out of order."""
    got: list[Row] | None = _cattr.busy_runs(runs)
    return got


def columns(uri: str, sql: str, n: int) -> list[bytes] | None:
    """The n int64 columns of the rows sql yields, each as the bytes of one array (numpy.frombuffer reads them), for
    timeline/series_np.py; None when a value is not an integer, NULL included (the caller reads them in Python)."""
    with _budget(uri) as b:
        return _cattr.columns(uri, sql, n, b, limits.SQL_STEP_GRAIN)


def islands(group: Any, s: Any, e: Any) -> tuple[bytes, bytes] | None:
    """series_np._islands' loop compiled, on C-contiguous int64 arrays sorted by (group, s), each with e > s: (the
    bytes of each island's first row, of its end), or None where the groups' widths add up past 2^62 (series_np
    declines those captures). Call only where available()."""
    got: tuple[bytes, bytes] | None = _cattr.islands(group, s, e)
    return got


def step_rows(tables: list[tuple[Any, Any, Any, Any, bool]], lo: Any, hi: Any, ends: tuple[int, int] | None,
              none_key: int, key_parts: Any, far: int, max_duration: int, n_pids: int, n_keys: int,
              out: tuple[Any, ...], sums: tuple[Any, ...], cells: tuple[Any, Any]) -> int | None:
    """series_np._assigned's (and _host_assigned's) rows given their steps and _gpu_side's sums compiled, on
    C-contiguous int64 arrays (_cattr.c's step_rows says what goes where): the rows kept, or None where a kept time
    lies past +-far or the kept durations add up to 2^53 (series_np declines those captures). Call only where
    available()."""
    got: int | None = _cattr.step_rows(tables, lo, hi, *(ends or (0, 0)), ends is not None, none_key, key_parts,
                                       far, max_duration, n_pids, len(lo), n_keys, out, sums, cells)
    return got


def cut_islands(group: Any, s: Any, e: Any, step: Any, lo: Any, hi: Any) -> tuple[bytes, ...] | None:
    """series_np._cut's islands and their cutting into steps compiled, on C-contiguous int64 arrays sorted by (group,
    s), each with e > s: the bytes of the pieces' (group, step index, start, end), island by island, or None where
    the groups' widths add up past 2^62 (series_np declines those captures). Call only where available()."""
    got: tuple[bytes, ...] | None = _cattr.cut_islands(group, s, e, step, lo, hi)
    return got


def claimed(key: Any, s: Any, e: Any, n_parts: int) -> tuple[list[int], list[int], list[int]] | None:
    """series_np._claimed's sweep compiled, on C-contiguous int64 arrays sorted by (key = group * n_parts + part, s),
    a part's pieces of one group disjoint and none of 0 ns: ([group], [part], [ns]) by group then part, or None where
    the pieces are not so (series_np's numpy then measures them). Call only where available()."""
    got: tuple[list[int], list[int], list[int]] | None = _cattr.claimed(key, s, e, n_parts)
    return got


def table_columns(conn: sqlite3.Connection, table: str, sql: str, n: int) -> list[bytes] | None:
    """columns() of sql (~10x fetchmany's speed, timeline/series_np._read) where the helper is built and table is a
    table of the file the connection reads, with no side file beside it (the helper's connection opens it
    immutable) and no temporary table of that name hiding it; None: the caller reads them in Python."""
    path = file_of(conn, table) if available() else None
    return None if path is None else columns("file:" + urllib.parse.quote(path) + "?mode=ro&immutable=1", sql, n)


def file_of(conn: sqlite3.Connection, table: str) -> str | None:
    """The file the connection reads, where table is a table of it with no side file beside it and no temporary
    table of that name hiding it (what another connection, opened on the file immutable, reads as this one does);
    else None."""
    found = [f for _n, name, f in conn.execute("PRAGMA database_list") if name == "main"]
    path = found[0] if found else ""
    if not path or any(os.path.exists(path + side) for side in ("-wal", "-journal")):
        return None
    if conn.execute("SELECT 1 FROM temp.sqlite_master WHERE name = ?", (table,)).fetchone() or \
            not conn.execute("SELECT 1 FROM main.sqlite_master WHERE name = ? AND type = 'table'",
                             (table,)).fetchone():
        return None
    return str(path)


@contextlib.contextmanager
def _budget(uri: str) -> Iterator[guard.Budget]:
    """The budget of the connection a compiled pass opens (timeline/guard.py: as each Python connection has its
    own): it calls it every SQL_STEP_GRAIN instructions. A signal's exception comes out of the pass itself; a pass
    stopped by the budget fails as SQLite's 'interrupted' (RuntimeError), raised here as the budget's one line."""
    b = guard.budget(Path(urllib.parse.unquote(uri.removeprefix("file:").partition("?")[0])))
    try:
        yield b
    except RuntimeError:
        if b.pending is not None:
            raise b.pending from None
        raise
    finally:
        guard.done(b)
