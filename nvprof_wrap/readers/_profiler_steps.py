"""The steps the JAX and TensorFlow profilers mark, and the per-step series the xplane and tf-trace-json readers
measure from them.

``jax.profiler.StepTraceAnnotation("train", step_num=N)`` (and TensorFlow's ``tf.profiler.experimental.Trace("train",
step_num=N, _r=1)``, which Keras' fit opens per batch) records one host event named for the loop, with a
``step_num`` stat (in the XSpace) or arg (in the trace JSON written beside it): step N runs from that event's start
to the next step's (timeline/window.py spans). A job that marks two loops ('train' and 'eval', each counted from 0)
has its steps from the one marked most often.

The readers keep their GPU intervals in a temporary SQLite table ``iv``: (start, "end", k: 1 for a kernel, key: the
kernel's name id, kind / dir: a copy's or set's words from readers/_tfop.copy_kind); timeline/series.py measures
the series from views of it, the steps turned into the job's own marks ('step N', run/steps.py).
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from nvprof_wrap.model import StepSeries
from nvprof_wrap.run.steps import step_name
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline import series as step_series
from nvprof_wrap.timeline.series_tables import MEMSET_PART, copy_part_sql
from nvprof_wrap.timeline.sql import EVERYTHING
from nvprof_wrap.timeline.window import Range

STEP_NUM = "step_num"
# the iv table's columns the series reads (the readers create it with these and their own)
IV_COLUMNS = 'start INTEGER, "end" INTEGER, k INTEGER, key INTEGER, kind TEXT, dir TEXT'


def step_number(value: object) -> int | None:
    """A step_num stat or arg (an integer, or its text in the trace JSON) → the step; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def pick(marks: Iterable[tuple[str, int, int, int]]) -> list[Range]:
    """(event name, step, start ns, end ns) of every host event with a step number → the step ranges (as
    timeline/window.py reads them: 'step N') of the name that marks the most of them."""
    by_name: dict[str, list[tuple[int, int, int]]] = {}
    for name, n, s, e in marks:
        by_name.setdefault(name, []).append((n, s, e))
    if not by_name:
        return []
    best = max(sorted(by_name), key=lambda k: len(by_name[k]))
    return [(step_name(n), 0, s, e) for n, s, e in by_name[best]]


def measure(db: sqlite3.Connection, ranges: list[Range], names: dict[int, str], launches: int,
            span: tuple[int, int] = EVERYTHING, table: str = "iv") -> tuple[StepSeries | None, tuple[str, ...]]:
    """(the per-step series, notes) from the table of GPU intervals (IV_COLUMNS) and the step ranges; (None, ())
    without steps."""
    if not ranges or not launches:
        return None, ()
    if why := step_series.too_big(launches):
        return None, (why,)
    db.execute("CREATE TEMP TABLE IF NOT EXISTS _nvw_psteps(name TEXT, tid INTEGER, s INTEGER, e INTEGER)")
    db.execute("DELETE FROM _nvw_psteps")
    db.executemany("INSERT INTO _nvw_psteps VALUES (?, ?, ?, ?)", ranges)
    copy = copy_part_sql("dir", {d: d for d in ("HtoD", "DtoH", "DtoD", "PtoP")})
    db.execute(f'CREATE TEMP VIEW IF NOT EXISTS _nvw_pk AS SELECT start, "end", key FROM {table} WHERE k = 1')
    db.execute(f'CREATE TEMP VIEW IF NOT EXISTS _nvw_pc AS SELECT start, "end", '
               f"(CASE WHEN kind = 'memset' THEN {MEMSET_PART} ELSE {copy} END) AS part FROM {table} "
               "WHERE k = 0 AND kind != 'other'")
    tables = [step_series.GpuTable("_nvw_pk", "NULL", "key"), step_series.GpuTable("_nvw_pc", "NULL", part="part")]
    series = step_series.measure(db, tables, [], "SELECT name, tid, s, e FROM _nvw_psteps", "none",
                                 lambda keys: {k: demangle(names.get(k) or "<unnamed kernel>") for k in keys},
                                 span, launches)
    return series, ()
