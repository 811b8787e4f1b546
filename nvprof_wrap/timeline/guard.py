"""What every query on a capture runs under, applied to a connection once it is open (timeline/sql.connect_ro):

- the capture's schema is what a profiler writes: no view and no trigger (none of the 31 real SQLite captures of
  the fixtures and tests/data has one; a view can hide unbounded work — a recursive view filled 500 MB of temporary
  space in 14 s — under the name of any table we read), and every id→name lookup table maps an id to one name (a
  duplicated StringIds id made a join count 5,657 launches of 5,152);
- a budget of SQLite VM steps derived from the file's size (a progress handler), past which the read stops with
  one line; and the same handler lets a pending SIGTERM / SIGINT end a query at once: the exception its Python
  handler raises (errors.Terminated, KeyboardInterrupt) is kept and raised when the read ends (reading()), never
  left as "SQLite error: interrupted".
"""
from __future__ import annotations

import contextlib
import sqlite3
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.system import limits  # SQL_FLOOR_STEPS, SQL_STEPS_PER_BYTE, SQL_STEP_GRAIN: read at each use

# (table, id column) of each lookup table whose ids name things: a duplicate id multiplies every row joined to it.
LOOKUPS = (("StringIds", "id"), ("StringTable", "_id_"))


class Budget:
    """The progress handler of one connection: counts VM work, and keeps a signal's exception raised inside it."""

    def __init__(self, path: Path, steps: int) -> None:
        self.path, self.left = path, steps // limits.SQL_STEP_GRAIN
        self.pending: BaseException | None = None

    def __call__(self) -> int:
        if self.pending is not None:
            return 1
        self.left -= 1
        if self.left < 0:
            self.pending = BadInput(self.path, "its queries ran past their budget (a capture of this size reads in "
                                               "far less): not as a profiler writes it")
            return 1
        return 0


_budgets: weakref.WeakValueDictionary[int, Budget] = weakref.WeakValueDictionary()  # id → budget, for _keep_signal


def _keep_signal(unraisable: sys.UnraisableHookArgs) -> None:
    """A signal's handler runs when the progress handler's Python frame starts, before any try in it: its
    exception leaves the callback, SQLite stops the query ('interrupted') and Python's sqlite3 hands the exception
    here. Kept on the budget whose handler it left, raised by reading(); anything else as before (dropped)."""
    budget = _budgets.get(id(unraisable.object))
    if budget is None:
        _previous(unraisable)
    elif not isinstance(unraisable.exc_value, Exception) and budget.pending is None:
        budget.pending = unraisable.exc_value


_previous = sys.unraisablehook


def guard(conn: sqlite3.Connection, path: Path, profiler: str | None) -> Budget:
    """Refuse a schema that is not as `profiler` writes it (one line), then bound every query on conn. Without
    profiler (a second connection to a capture already checked), only the budget."""
    if profiler is not None:
        _schema(conn, path, profiler)
    b = budget(path)
    conn.set_progress_handler(b, limits.SQL_STEP_GRAIN)
    return b


def budget(path: Path) -> Budget:
    """A fresh budget for one connection to the capture at path (a Python one, guard(); or the compiled helper's,
    timeline/native.py, which calls it every SQL_STEP_GRAIN instructions too). The caller forgets it (done())."""
    steps = limits.SQL_FLOOR_STEPS + limits.SQL_STEPS_PER_BYTE * Path(path).stat().st_size
    b = Budget(Path(path), steps)
    _budgets[id(b)] = b
    if sys.unraisablehook is not _keep_signal:
        sys.unraisablehook = _keep_signal
        sqlite3.enable_callback_tracebacks(True)
    return b


def done(b: Budget) -> None:
    _budgets.pop(id(b), None)


def _schema(conn: sqlite3.Connection, path: Path, profiler: str) -> None:
    for kind, name, table in conn.execute("SELECT type, name, tbl_name FROM sqlite_master "
                                          "WHERE type IN ('view', 'trigger') ORDER BY type DESC, name LIMIT 1"):
        what = f"{name} is a view, not a table" if kind == "view" else f"{name} is a trigger on {table}"
        raise BadInput(path, f"{what}: not as {profiler} writes it")
    for table, key in LOOKUPS:
        _unique(conn, path, profiler, table, key)


def _unique(conn: sqlite3.Connection, path: Path, profiler: str, table: str, key: str) -> None:
    """One row per id: an INTEGER PRIMARY KEY (the rowid: unique by construction, as profilers declare it) costs
    nothing to check; any other declaration is checked with one GROUP BY."""
    info = conn.execute(f"SELECT name, type, pk FROM pragma_table_info('{table}')").fetchall()
    if not any(name == key for name, _, _ in info):
        return
    if [(n, t.upper()) for n, t, pk in info if pk] == [(key, "INTEGER")]:
        return
    dup = conn.execute(f"SELECT {key}, COUNT(*) FROM {table} GROUP BY {key} HAVING COUNT(*) > 1 LIMIT 1").fetchone()
    if dup is not None:
        raise BadInput(path, f"{table} has {dup[1]:,} rows for {key} {str(dup[0])[:40]}: not as {profiler} writes it")


@contextlib.contextmanager
def reading(conn: sqlite3.Connection, budget: Budget) -> Iterator[sqlite3.Connection]:
    """Closes conn; raises what stopped a query (a signal, the budget) in place of SQLite's 'interrupted' — also
    where a reader caught that error and went on."""
    try:
        yield conn
    except BaseException:
        if budget.pending is not None:
            raise budget.pending from None
        raise
    finally:
        conn.close()
        done(budget)
    if budget.pending is not None:
        raise budget.pending
