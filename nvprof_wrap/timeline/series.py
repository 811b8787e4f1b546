"""The per-step series of a SQLite capture (Nsight Systems exports, our CUPTI tracer), measured in SQL.

Steps are the ranges a `--steps` window counts (timeline/window.py: the job's `step N` / `ProfilerStep#N`, else the
optimizer steps `run` marks, else Keras batches); a step runs from its start to the next one's on the host's clock.
Without steps the capture's GPU activity is cut into BUCKETS fixed time buckets. Per step and process:
- what the GPU did: kernels, copies and sets that START in the step (as a `--steps` window counts them, so the
  steps' rows add up to the capture's totals), and the union of their busy intervals, cut at the step's end;
- the host's time inside CUDA calls, by kind (text/cuda_calls.py: launches, copies and waits, allocations, other),
  each the union over the process's threads, and the union of all of them: the step's time outside any CUDA call
  is what is left (Python, the framework, data loading) — only where the capture recorded every call that can
  block (host != "launch").
From NUMPY_FROM launches on, numpy measures it (timeline/series_np.py: one read of the columns it needs, the unions
by a sort and a running maximum); below that, and where a time is not an integer, a few SQL passes over temporary
tables (the capture itself is never written): one GROUP BY per table and two window-function passes for the unions
— the reference the numpy path is tested against, value for value. Big captures skip it (MAX_LAUNCHES; the report
says so).
"""
from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from nvprof_wrap.classify import COMMUNICATION_FAMILIES, classify
from nvprof_wrap.classify.engine import may_communicate
from nvprof_wrap.model import StepAgg, StepKernel, StepKernels, StepSeries
from nvprof_wrap.system import environ
from nvprof_wrap.system.fork import BIG, Forked, can_fork, cores
from nvprof_wrap.system.limits import USABLE, USABLE_OF
from nvprof_wrap.timeline import collectives, window
from nvprof_wrap.timeline.series_tables import (
    BUCKETS,
    GPU_PARTS,
    PARTS,
    ApiTable,
    Given,
    GpuTable,
    Named,
    Names,
    Steps,
    buckets,
)
from nvprof_wrap.timeline.sql import EVERYTHING

# ApiTable and GpuTable too: the readers describe their tables to measure() with them
__all__ = ["AHEAD_CORES", "AHEAD_LAUNCHES", "BUCKETS", "ENV_MAX", "LEFT_OUT", "MAX_LAUNCHES", "MAX_STEPS",
           "NUMPY_FROM", "PER_STEP_MAX_LAUNCHES", "REFERENCE", "Ahead", "ApiTable", "Given", "GpuTable", "Meanwhile",
           "as_summarized", "asked_per_step", "limit", "measure", "too_big"]

MAX_STEPS = 2000  # more steps than this: consecutive steps merged into one row each (StepSeries.folded)
ENV_MAX = "NVPROF_WRAP_SERIES_MAX_LAUNCHES"
MAX_LAUNCHES = 300_000  # beyond this many kernel launches in a capture the series is not measured (ENV_MAX). Set
# when numpy (timeline/series_np.py) cost about 7 µs per launch with its launch call (`report` 2.9 → 10.1 s at 1M
# generated launches, 2 cores; the SQL before it ~25-29 µs). Now ~1 µs: 1.17-1.26 → 2.06-2.08 s at 1M, 1.69-1.78
# → 3.42-3.47 s at 2M, the process tree's peak 340-370 MB at 1M and 677 MB at 2M (about 330 bytes a launch; 2
# cores, docs/performance.md): its memory, not its time, is what a higher default would cost
PER_STEP_MAX_LAUNCHES = 1_000_000  # the limit where the command asked for the rows (`--per-step`, asked_per_step)
# or for the HTML page (its "Over time" charts): a user who asks for one row per step of a 300k-1M-launch capture, or
# for the page that draws them, gets them, not a note (at 1M: +0.9 s, the process tree's peak 340-370 MB on 2 cores);
# beyond it the note (2M: 677 MB), and a day-long job's 20M launches stay within the long-job benchmark's bounds
# (docs/steps.md)
REFERENCE = False  # True: measured in SQL only (the reference the numpy path is tested against)
NUMPY_FROM = 10_000  # launches from which the numpy path measures (timeline/series_np.py): importing numpy costs
# ~0.2 s, what the SQL costs for ~8k launches


def limit() -> int:
    return cast(int, environ.value(ENV_MAX, MAX_LAUNCHES))  # checked before the command (system/environ.py)


@contextmanager
def asked_per_step(asked: bool = True) -> Iterator[None]:
    """Within it, where asked, a capture of up to PER_STEP_MAX_LAUNCHES launches gets its series: the limit, where
    ENV_MAX is not set (the user's own value wins, 0 and lower ones included), is set in this process's environment
    — so the readers' forked or spawned workers see it too, and a run folder's capture read under the default limit
    is read again (pipeline/ingest.py keys a reading by its limit) — and restored afterwards."""
    before = os.environ.get(ENV_MAX)
    if not asked or (before or "").strip():
        yield
        return
    os.environ[ENV_MAX] = str(PER_STEP_MAX_LAUNCHES)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV_MAX, None)
        else:
            os.environ[ENV_MAX] = before  # set but empty: unset for environ.value, kept as it was


LEFT_OUT = "per-step series not measured: "  # too_big's note begins so (renderers/_steps.py looks for it)
_ANY_SIZE = f"{ENV_MAX}=-1 measures any size"


def too_big(launches: int) -> str | None:
    """The note a capture too big for the series gets; None when it is measured. Where the default limit left it
    out and the lifted one (asked_per_step) would not, the note says what lifts it."""
    most = limit()
    if 0 <= most < launches:
        lifts = _lifts() if not (os.environ.get(ENV_MAX) or "").strip() and launches <= PER_STEP_MAX_LAUNCHES else ""
        return f"{LEFT_OUT}{launches:,} kernel launches (more than {most:,}; {lifts}{_ANY_SIZE})"
    return None


def _lifts() -> str:
    """What lifts the default limit to PER_STEP_MAX_LAUNCHES (the commands that ask for the rows: asked_per_step)."""
    return f"report --per-step or --format html measures up to {PER_STEP_MAX_LAUNCHES:,}, "


def as_summarized(note: str) -> str:
    """A reader's note as a summary file keeps it (`summarize`, readers/summary.py): a report of the summary reads
    no capture, so the series too_big left out is measured by summarizing the capture again under ENV_MAX=-1 —
    setting it for the report, as the reader's note says, changed nothing."""
    if not note.startswith(LEFT_OUT):
        return note
    again = "when the capture is summarized again: the summary keeps what its capture's reading gave"
    return note.replace(_lifts(), "").replace(_ANY_SIZE, f"{_ANY_SIZE} {again}")


def numpy_here(guess: Callable[[], int]) -> bool:
    """Whether a capture of about guess() kernel launches (asked only where the series is on at all) gets its
    series measured by numpy: a reader's other passes then keep what it reads for it (readers/nsys_sqlite.py)."""
    if REFERENCE or limit() == 0:
        return False
    n = guess()
    return n >= NUMPY_FROM and too_big(n) is None


Measured = tuple[StepSeries | None, tuple[str, ...]]  # a reader's series and its notes
Meanwhile = Callable[[], object] | None  # the reader's own work, run while it waits for a worker (Ahead.result)
AHEAD_LAUNCHES = 50_000  # launches from which a reader's series is worth a worker of its own where the reader forks
# nothing else (Ahead's from_launches). Timed at 100k on 2 cores: the series 0.10-0.13 s (numpy's import ~0.05 s on
# top, in the worker), its answer pickled and read back ~0.05 s (1.5 MB); below 50k (not timed) the worker's fixed
# costs are a larger share of less work
AHEAD_CORES = 3  # cores from which Ahead forks: on 2 the reading process and the busy time's worker hold both
# (measured, 1M launches, 2 cores loaded by other work: forked 10.1-12.0 s wall, 3.3-3.5 s user; in the reading
# process 9.4-11.2 s, 3.1-3.2 s user — a third process only adds switching and copy-on-write faults)


class Ahead:
    """A reader's series measured in a forked worker beside the reader's other passes (the attribution, the busy
    time), started before they give the kernel launches that decide whether the series is measured at all: it
    starts where guess() (the kernel rows, a cheap count) lets it through MAX_LAUNCHES (a default report of a
    capture too big for it pays no worker). result(launches) takes the worker's answer where launches lets the
    series through too (the launches only choose numpy or SQL, which give the same values:
    tests/timeline/test_series_np.py), else ends the worker and measures here(launches), as without it. alone opens
    a connection of its own: it runs in the child.

    Where it forks: a big capture (path's size, system/fork.py BIG) on AHEAD_CORES or more, as the readers' other
    workers do. With from_launches, also a capture of that many launches or more (guessed) on AHEAD_CORES or more,
    and on 2 cores where path is smaller than BIG: there the reader forks nothing else, so its process would
    otherwise measure the series with the other core idle — it does its own work meanwhile (result's meanwhile:
    classifying the kernel names, say). path: the file whose size decides whether the reader forks its other
    workers (a Kineto trace's rows, not the trace)."""

    def __init__(self, path: Path, guess: Callable[[], int], alone: Callable[[int], Measured],
                 here: Callable[[int, Meanwhile], Measured], *, from_launches: int | None = None) -> None:
        self.here = here
        self.work: Forked | None = None
        if limit() == 0 or not can_fork():
            return
        many, big = cores() >= AHEAD_CORES, Path(path).stat().st_size >= BIG
        if (many and big) or (from_launches is not None and (many or not big)):
            n = guess()
            if n and too_big(n) is None and (many and big or n >= (from_launches or 0)):
                self.work = Forked(alone, n)

    def result(self, launches: int, meanwhile: Meanwhile = None) -> Measured:
        """The series; meanwhile runs first where the worker's answer is taken (work of the reader's own that
        would otherwise wait for it) — measured here, it goes with here() to wait for the series' own worker
        (series_np's calls side), where there is one."""
        if self.work is not None and launches and too_big(launches) is None:
            try:
                if meanwhile is not None:
                    meanwhile()
                got: Measured = self.work.result()
                return got
            except BaseException:
                self.abandon()
                raise
        self.abandon()
        return self.here(launches, meanwhile)

    def abandon(self) -> None:
        if self.work is not None:
            self.work.cancel()


def measure(conn: sqlite3.Connection, gpu: list[GpuTable], api: list[ApiTable], ranges_sql: str | None, host: str,
            names: Names, span: tuple[int, int] = EVERYTHING, launches: int = 0,
            given: dict[str, Given] | None = None, meanwhile: Meanwhile = None) -> StepSeries | None:
    """The capture's series; None when it has no GPU activity in span. names: the kernels' name keys → names;
    launches: the capture's kernel launches (from NUMPY_FROM on, numpy measures; else SQL); given: a kernel
    table's rows that start in span, kept by another pass in pieces (series_tables.Given), which numpy then does
    not read again; meanwhile: the reader's own work, run while numpy waits for its calls' worker (not at all
    without one). A capture without step marks gets time buckets from its GPU activity's extent: numpy takes it
    from the rows it reads anyway, the SQL from a MIN/MAX over each table (0.09 s of its own at 1M launches)."""
    marked = _marked(conn, ranges_sql, span)
    spans, source, program = marked if marked is not None else (None, "time", None)
    folded, count = 1, len(spans) if spans is not None else 0
    if spans is not None:
        folded = max(1, -(-len(spans) // MAX_STEPS))
        if folded > 1:
            spans = [(spans[i][0], spans[i][1], spans[min(i + folded, len(spans)) - 1][2])
                     for i in range(0, len(spans), folded)]
    measured, keys = None, None
    if not REFERENCE and launches >= NUMPY_FROM:
        from nvprof_wrap.timeline import series_np
        measured = series_np.measure(conn, gpu, api, spans, host, names, span, given, meanwhile)
    if measured is not None:
        steps, kernels, spans, keys = measured
    else:
        spans = spans if spans is not None else buckets(_extents(conn, gpu, span))
        steps, kernels = _in_sql(conn, gpu, api, spans, host, names) if spans else ({}, StepKernels())
    if not spans:
        return None
    _fill(steps, spans, host if api else "none")
    rows = tuple(StepAgg(pid, n, a, b, **vals) for (pid, n), (a, b, vals) in sorted(
        steps.items(), key=lambda kv: (kv[0][1], -1 if kv[0][0] is None else kv[0][0])))
    bucket = None if marked is not None else spans[0][2] - spans[0][1]
    return StepSeries("steps" if bucket is None else "buckets", source, bucket, host, rows, kernels, folded,
                      # time buckets are not steps: the nth collective of a bucket is no rank's same collective
                      collectives.starts(conn, gpu, spans, names, kernels, keys) if bucket is None else (),
                      count if bucket is None else 0, program)


def _in_sql(conn: sqlite3.Connection, gpu: list[GpuTable], api: list[ApiTable], spans: list[tuple[int, int, int]],
            host: str, names: Names) -> tuple[Steps, StepKernels]:
    """(the steps' values, the kernels per step) measured in SQL: the reference timeline/series_np.py is checked
    against (tests/timeline/test_series_np.py), and what measures a capture whose times are not all integers."""
    lo, hi = spans[0][1], spans[-1][2]
    conn.execute("DROP TABLE IF EXISTS temp._nvw_steps")
    conn.execute("CREATE TEMP TABLE _nvw_steps(n INTEGER PRIMARY KEY, lo INTEGER, hi INTEGER)")
    conn.executemany("INSERT INTO _nvw_steps VALUES (?, ?, ?)", spans)
    conn.execute("CREATE INDEX temp._nvw_steps_lo ON _nvw_steps(lo)")
    try:
        named = names({key for (key,) in conn.execute("SELECT DISTINCT key FROM _nvw_iv WHERE k = 1")}) \
            if _gpu_intervals(conn, gpu, lo, hi) else {}
        steps = _gpu_side(conn, named)
        kernels = _kernels(conn, named)
        with_api = bool(api) and host != "none"
        if with_api:
            _host_side(conn, api, lo, hi, steps, whole=host != "launch")
        if steps:
            _parts(conn, steps, with_api)
    except BaseException:
        _drop_temp(conn, quiet=True)
        raise
    _drop_temp(conn)
    return steps, kernels


def _drop_temp(conn: sqlite3.Connection, quiet: bool = False) -> None:
    """The series' temporary tables dropped. quiet: after an error, whose cursor may still hold one of them — its
    "database table is locked" had taken the error's place (a kernel's NULL name read as a locked table)."""
    for t in ("_nvw_iv", "_nvw_api", "_nvw_kinds", "_nvw_comm", "_nvw_steps", "_nvw_ix", "_nvw_b"):
        try:
            conn.execute(f"DROP TABLE IF EXISTS temp.{t}")
        except sqlite3.OperationalError:
            if not quiet:
                raise


def _fill(steps: Steps, spans: list[tuple[int, int, int]], host: str) -> None:
    """Every step (bucket) of every process that ran any: a step in which nothing started is idle, not absent —
    and, where every blocking call was recorded, spent wholly outside CUDA calls (but for what the budget's parts
    carried into it from an earlier step)."""
    for pid in {pid for pid, _ in steps}:
        for n, lo, hi in spans:
            if (pid, n) not in steps:
                steps[(pid, n)] = (lo, hi, {"launches": 0, "kernel_ns": 0, "copy_ns": 0, "busy_ns": 0,
                                            "compute_busy_ns": 0, "parts_ns": ()})
    if host != "none":
        for _lo, _hi, vals in steps.values():
            if "api_ns" not in vals:
                vals.update(api_ns=(), api_union_ns=None if host == "launch" else 0)


def _marked(conn: sqlite3.Connection, ranges_sql: str | None,
            span: tuple[int, int]) -> tuple[list[tuple[int, int, int]], str, str | None] | None:
    """([(step, lo, hi)], what marked them, the program executed where XLA's executions did) of the capture's step
    marks in span; None: it has none."""
    if ranges_sql is None:
        return None
    source, spans, program = window.step_spans(conn.execute(f"SELECT name, tid, s, e FROM ({ranges_sql}) WHERE "
                                                            f"{window.step_filter()}"))
    spans = [s for s in spans if span[0] <= s[1] < span[1]]
    return (spans, source, program) if len(spans) >= 1 and source is not None else None


def _extents(conn: sqlite3.Connection, gpu: list[GpuTable], span: tuple[int, int]) -> list[tuple[Any, Any]]:
    """(MIN(start), MAX(end)) of each GPU table's rows that start in span, of those whose times are usable (a start
    at the clock's zero, CUPTI's 'not collected', would stretch the buckets over the time before the job)."""
    inside = "" if span == EVERYTHING else f" AND start >= {span[0]} AND start < {span[1]}"
    return [conn.execute(f'SELECT MIN(start), MAX("end") FROM {g.table} WHERE {USABLE}{inside}').fetchone()
            for g in gpu]


# a row's times usable here (readers/_durations.SOUND): a start after the clock's zero, an end at or after it, at most
# MAX_DURATION_NS later (a damaged row's times would overflow SQLite's SUM; the readers count such rows in their notes)
_SOUND = USABLE_OF
_STEP_OF = "(SELECT n FROM _nvw_steps WHERE lo <= {t} ORDER BY lo DESC LIMIT 1)"


def _gpu_intervals(conn: sqlite3.Connection, gpu: list[GpuTable], lo: int, hi: int) -> bool:
    """_nvw_iv: every GPU interval that starts in a step, with its step (cut at the step's end); False: none."""
    parts = " UNION ALL ".join(
        f'''SELECT {g.pid} AS pid, start AS s, "end" AS e, {1 if g.name else 0} AS k, {g.name or "NULL"} AS key,
                   {"NULL" if g.name else g.part} AS part
            FROM {g.table} WHERE start >= {lo} AND start < {hi} AND {_SOUND.format(s="start", e='"end"')}'''
        for g in gpu)
    conn.execute(f"""CREATE TEMP TABLE _nvw_iv AS SELECT iv.pid, t.n, iv.s, MIN(iv.e, t.hi) AS e, iv.e - iv.s AS d,
                            iv.k, iv.key, iv.part
                     FROM (SELECT *, {_STEP_OF.format(t="s")} AS n FROM ({parts})) iv
                     JOIN _nvw_steps t ON t.n = iv.n AND iv.s < t.hi""")
    return conn.execute("SELECT 1 FROM _nvw_iv LIMIT 1").fetchone() is not None


def _gpu_side(conn: sqlite3.Connection, named: Named) -> Steps:
    """{(pid, step): (lo, hi, values)} of every step a process started GPU work in (its busy time: _parts). named:
    kernel keys → names, whose communication kernels (classify: NCCL's families, each distinct name once) _parts
    sets apart (_nvw_comm)."""
    steps: Steps = {}
    bounds = {n: (a, b) for n, a, b in conn.execute("SELECT n, lo, hi FROM _nvw_steps")}
    for pid, n, launches, kernel_ns, copy_ns in conn.execute(
            "SELECT pid, n, SUM(k), SUM(CASE WHEN k = 1 THEN d ELSE 0 END), SUM(CASE WHEN k = 0 THEN d ELSE 0 END) "
            "FROM _nvw_iv GROUP BY 1, 2"):
        steps[(pid, n)] = (*bounds[n], {"launches": launches, "kernel_ns": kernel_ns, "copy_ns": copy_ns,
                                        "busy_ns": 0, "compute_busy_ns": 0})
    comm = [key for key, name in named.items()
            if may_communicate(name) and classify(name).family in COMMUNICATION_FAMILIES]
    if comm:  # _parts measures the busy time from the budget's pieces, the communication kernels apart
        conn.execute("CREATE TEMP TABLE _nvw_comm(key PRIMARY KEY)")
        conn.executemany("INSERT INTO _nvw_comm VALUES (?)", [(k,) for k in comm])
    return steps


def _union(table: str, by: str) -> str:
    """Per (pid, n, by): the length of the union of [s, e) (gaps and islands: an interval starts an island when it
    begins after every earlier one ended)."""
    return f"""
    SELECT pid, n, b, SUM(ie - ib) FROM (
      SELECT pid, n, b, g, MIN(s) AS ib, MAX(e) AS ie FROM (
        SELECT pid, n, b, s, e, SUM(fresh) OVER (PARTITION BY pid, n, b ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS g
        FROM (SELECT pid, n, {by} AS b, s, e,
                     CASE WHEN s <= MAX(e) OVER (PARTITION BY pid, n, {by} ORDER BY s, e
                                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                          THEN 0 ELSE 1 END AS fresh
              FROM {table} WHERE e > s))
      GROUP BY pid, n, b, g)
    GROUP BY pid, n, b"""


def _parts(conn: sqlite3.Connection, steps: Steps, with_api: bool) -> None:
    """Each step's time budget (series_tables.PARTS). Every GPU interval and CUDA call that starts in a step, merged
    per process and part into islands (so that the pieces below stay as few as the islands and the steps: a damaged
    capture's week-long rows cannot multiply), each island cut into the pieces it spends in the step its first row
    started in and the steps after it (a kernel that runs past its step's end is busy in the next one's time); then,
    per part in PARTS' order, the union of it and the parts before it: what that union adds is the part's own time.
    Where the GPU ran a kernel and a copy at once the time is the kernel's; the host's calls claim only what the GPU
    left idle. The step's GPU busy time is its GPU parts' (the union of the GPU's work inside the step, carried
    from earlier steps included: measured from what started in the step and cut at its end, a time bucket in which
    one 8 ms kernel ran on from the last one read 0 ns busy), and the busy time but for communication kernels is the
    union of the other GPU parts' pieces. The reference of series_np._parts."""
    comm = "key IN (SELECT key FROM _nvw_comm)" if conn.execute(
        "SELECT 1 FROM sqlite_temp_master WHERE name = '_nvw_comm'").fetchone() else "0"
    api_pri = " ".join(f"WHEN '{p[4:]}' THEN {i}" for i, p in enumerate(PARTS) if p.startswith("api_"))
    rows = f"""SELECT pid, n, s, s + d AS fe, CASE WHEN k = 0 THEN part WHEN {comm} THEN {PARTS.index("communication")}
                      ELSE {PARTS.index("kernels")} END AS pri FROM _nvw_iv"""
    if with_api:
        rows += f""" UNION ALL SELECT pid, n, s, fe, CASE kind {api_pri} ELSE {PARTS.index("api_other")} END
                     FROM _nvw_api"""
    conn.execute("CREATE TEMP TABLE _nvw_ix AS SELECT n, lo, hi, ROW_NUMBER() OVER (ORDER BY lo, n) AS ix "
                 "FROM _nvw_steps")
    islands = f"""
      SELECT pid, pri, MIN(s) AS s, MAX(fe) AS fe, MIN(ix0) AS ix0 FROM (
        SELECT *, SUM(fresh) OVER (PARTITION BY pid, pri ORDER BY s, fe ROWS UNBOUNDED PRECEDING) AS g FROM (
          SELECT *, CASE WHEN s <= MAX(fe) OVER (PARTITION BY pid, pri ORDER BY s, fe
                                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                         THEN 0 ELSE 1 END AS fresh
          FROM (SELECT x.*, i.ix AS ix0 FROM ({rows}) x JOIN _nvw_ix i ON i.n = x.n WHERE x.fe > x.s)))
      GROUP BY pid, pri, g"""
    conn.execute(f"""CREATE TEMP TABLE _nvw_b AS
                     SELECT r.pid, t.n, MAX(r.s, t.lo) AS s, MIN(r.fe, t.hi) AS e, r.pri
                     FROM ({islands}) r JOIN _nvw_ix t ON t.ix = r.ix0 OR (t.ix > r.ix0 AND t.lo < r.fe)""")
    present = {p for (p,) in conn.execute("SELECT DISTINCT pri FROM _nvw_b WHERE e > s")}
    before: dict[tuple[Any, int], int] = {}
    parts: dict[tuple[Any, int], list[tuple[str, int]]] = {}
    for j, part in enumerate(PARTS):
        if j not in present:
            continue
        for pid, n, _b, ns in conn.execute(_union(f"(SELECT * FROM _nvw_b WHERE pri <= {j})", "NULL")):
            if ns > before.get((pid, n), 0):
                parts.setdefault((pid, n), []).append((part, ns - before.get((pid, n), 0)))
            before[(pid, n)] = ns
    bounds = {n: (a, b) for n, a, b in conn.execute("SELECT n, lo, hi FROM _nvw_steps")}
    for key in parts.keys() - steps.keys():  # busy only with what started in an earlier step
        steps[key] = (*bounds[key[1]], {"launches": 0, "kernel_ns": 0, "copy_ns": 0, "busy_ns": 0,
                                        "compute_busy_ns": 0})
    compute: dict[tuple[Any, int], int] | None = None
    if PARTS.index("communication") in present:  # the GPU's busy time but for its communication kernels'
        compute = {(pid, n): ns for pid, n, _b, ns in conn.execute(_union(
            f"(SELECT * FROM _nvw_b WHERE pri < {len(GPU_PARTS)} AND pri != {PARTS.index('communication')})",
            "NULL"))}
    for key, (_a, _b, vals) in steps.items():
        vals["parts_ns"] = tuple(parts.get(key, ()))
        vals["busy_ns"] = sum(ns for part, ns in vals["parts_ns"] if part in GPU_PARTS)
        vals["compute_busy_ns"] = vals["busy_ns"] if compute is None else compute.get(key, 0)


def _kernels(conn: sqlite3.Connection, named: Named) -> StepKernels:
    rows = conn.execute("SELECT pid, n, key, COUNT(*), SUM(d) FROM _nvw_iv WHERE k = 1 GROUP BY 1, 2, 3").fetchall()
    merged: dict[tuple[Any, int, str], list[int]] = {}
    for pid, n, key, launches, total in rows:
        m = merged.setdefault((pid, n, named.get(key) or "<unnamed kernel>"), [0, 0])
        m[0] += launches
        m[1] += total
    return StepKernels.of(StepKernel(pid, n, name, a, b) for (pid, n, name), (a, b) in merged.items())


def _host_side(conn: sqlite3.Connection, api: list[ApiTable], lo: int, hi: int, steps: Steps, *, whole: bool) -> None:
    """Add the host's CUDA-call time to the steps; whole: every call that can block was recorded, so the union of
    all of them says how much of the step ran outside CUDA calls."""
    conn.execute("CREATE TEMP TABLE _nvw_kinds(t INTEGER, key, kind TEXT, PRIMARY KEY (t, key))")
    for i, a in enumerate(api):
        keys = [k for (k,) in conn.execute(f"SELECT DISTINCT {a.key} FROM {a.table}")]
        conn.executemany("INSERT INTO _nvw_kinds VALUES (?, ?, ?)",
                         [(i, k, kind) for k, kind in a.kinds(conn, keys).items()])
    parts = " UNION ALL ".join(
        f'''SELECT {a.pid} AS pid, r.start AS s, r."end" AS e, COALESCE(m.kind, 'other') AS kind
            FROM {a.table} r LEFT JOIN _nvw_kinds m ON m.t = {i} AND m.key = r.{a.key}
            WHERE r.start >= {lo} AND r.start < {hi} AND {_SOUND.format(s="r.start", e='r."end"')}'''
        for i, a in enumerate(api))
    conn.execute(f"""CREATE TEMP TABLE _nvw_api AS SELECT c.pid, t.n, c.s, MIN(c.e, t.hi) AS e, c.kind, c.e AS fe
                     FROM (SELECT *, {_STEP_OF.format(t="s")} AS n FROM ({parts})) c
                     JOIN _nvw_steps t ON t.n = c.n AND c.s < t.hi""")
    bounds = {n: (a, b) for n, a, b in conn.execute("SELECT n, lo, hi FROM _nvw_steps")}
    by_kind: dict[tuple[Any, int], dict[str, int]] = {}
    for pid, n, kind, ns in conn.execute(_union("_nvw_api", "kind")):
        by_kind.setdefault((pid, n), {})[kind] = ns
    union = {(pid, n): ns for pid, n, _b, ns in conn.execute(_union("_nvw_api", "NULL"))} if whole else {}
    for key in set(by_kind) | set(union):
        if key not in steps:  # a step with CUDA calls and no GPU work that started in it
            steps[key] = (*bounds[key[1]], {"launches": 0, "kernel_ns": 0, "copy_ns": 0, "busy_ns": 0,
                                            "compute_busy_ns": 0})
    for key, (_a, _b, vals) in steps.items():
        vals["api_ns"] = tuple(sorted(by_kind.get(key, {}).items()))
        if whole:
            vals["api_union_ns"] = union.get(key, 0)
