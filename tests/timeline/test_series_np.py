"""The per-step series measured in numpy (timeline/series_np.py) against the SQL it replaced (timeline/series._in_sql,
kept as the reference and the fallback): the same StepSeries, to the order of its rows, from every real capture
here, from generated Nsight Systems exports (several processes, NCCL kernels among the names, overlapping kernels),
and from random small captures made to reach every branch (processes without an id, keys without a value, text and
integer keys, zero-length and damaged rows, steps with equal starts and out of order); the unions against a
brute-force union on random intervals."""
from __future__ import annotations

import itertools
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import generate
from nvprof_wrap import readers
from nvprof_wrap.readers import nsys_sqlite
from nvprof_wrap.system.fork import can_fork
from nvprof_wrap.system.limits import MAX_DURATION_NS
from nvprof_wrap.timeline import native, series_np
from nvprof_wrap.timeline import series as step_series
from nvprof_wrap.timeline.window import make
from tests._paths import ROOT

CAPTURES = sorted(p for d in (ROOT / "nvprof_wrap" / "samples", ROOT / "tests" / "data" / "h200_runs")
                  for p in d.iterdir() if p.is_dir() and p.name not in ("triton_ptx", "verify_compile"))


class Spy:
    """Records whether the numpy path measured (not declined to the SQL)."""

    def __init__(self, monkeypatch) -> None:
        self.measured = self.declined = 0
        real = series_np.measure

        def spy(*a, **k):
            out = real(*a, **k)
            self.measured += out is not None
            self.declined += out is None
            return out
        monkeypatch.setattr(series_np, "measure", spy)
        monkeypatch.setattr(step_series, "NUMPY_FROM", 0)  # the small captures here too


def _both(monkeypatch, path: Path) -> tuple[list, list]:
    """The series of each capture under path: in SQL, then in numpy."""
    monkeypatch.setenv(step_series.ENV_MAX, "-1")
    out = []
    for reference in (True, False):
        monkeypatch.setattr(step_series, "REFERENCE", reference)
        out.append([readers.read(p).series for p, _ in readers.expand([path])])
    return out[0], out[1]


@pytest.mark.parametrize("folder", CAPTURES, ids=lambda p: p.name)
def test_real_captures_get_the_sqls_series(monkeypatch, folder: Path) -> None:
    spy = Spy(monkeypatch)
    sql, fast = _both(monkeypatch, folder)
    assert fast == sql
    assert spy.declined == 0 and spy.measured == sum(s is not None for s in sql)


@pytest.mark.parametrize(("processes", "at_once", "dense"), [(1, series_np.AT_ONCE, series_np.DENSE_CELLS),
                                                              (3, series_np.AT_ONCE, series_np.DENSE_CELLS),
                                                              (3, 1000, 0)])
def test_generated_exports_get_the_sqls_series(monkeypatch, tmp_path: Path, processes: int, at_once: int,
                                               dense: int) -> None:
    """Kernels up to 400 µs long launched every 9 µs overlap; the generator's names include NCCL's kernels (the
    random captures below and ddp_* above show them left out of the compute-only union). at_once: columns read as
    one text each, or (more rows than that) in chunks of rows; dense: the kernels per step counted in place, or
    (0) by a sort."""
    cap = tmp_path / "nsys.sqlite"
    generate.nsys(20_000, cap, processes=processes, devices=2)
    monkeypatch.setattr(series_np, "AT_ONCE", at_once)
    monkeypatch.setattr(series_np, "DENSE_CELLS", dense)
    spy = Spy(monkeypatch)
    (sql,), (fast,) = _both(monkeypatch, cap)
    assert fast == sql and spy.measured == 1
    assert len({r.pid for r in sql.steps}) == processes
    assert any(k.name.startswith("nccl") for k in sql.kernels)  # so the compute-only union ran (without them)


@pytest.mark.skipif(not native.available(), reason="the compiled helper is not built here (setup.py build_ext)")
def test_the_compiled_columns_give_the_pythons_series(monkeypatch, tmp_path: Path) -> None:
    """series_np._read's compiled read (native.columns) and its fetchmany give the same series, and a generated
    export's tables are read compiled (not declined to Python)."""
    cap = tmp_path / "nsys.sqlite"
    generate.nsys(20_000, cap, processes=2, devices=2)
    monkeypatch.setenv(step_series.ENV_MAX, "-1")
    monkeypatch.setattr(step_series, "NUMPY_FROM", 0)
    compiled = []
    real = native.columns
    monkeypatch.setattr(native, "columns", lambda *a: compiled.append(real(*a)) or compiled[-1])
    (on,) = [readers.read(p).series for p, _ in readers.expand([cap])]
    assert compiled and all(c is not None for c in compiled)
    monkeypatch.setenv("NVPROF_WRAP_NATIVE", "off")
    count = len(compiled)
    (off,) = [readers.read(p).series for p, _ in readers.expand([cap])]
    assert len(compiled) == count and on == off and on is not None and on.steps


@pytest.mark.skipif(not native.available() or not can_fork(),
                    reason="the host's side is measured beside only with the compiled helper and fork")
@pytest.mark.parametrize(("odd", "marked"), [("", False), ("", True), ("calls", False), ("kernels", False),
                                             ("calls", True)])
def test_the_host_side_measured_in_a_worker_gives_the_same_series(monkeypatch, tmp_path: Path, odd: str,
                                                                  marked: bool) -> None:
    """series_np._host_aside (the calls' side in a forked worker while this process measures the GPU's, for big
    captures: here from any size) gives the SQL's series, in this process's process codes (3 processes), in time
    buckets (the worker is handed their spans once this process has read the kernels' extent) and in marked steps
    (given at once); where a value sends either side to the SQL (odd: a call's or a kernel's end not an integer),
    the series is the SQL's and the worker is ended and reaped."""
    cap = tmp_path / "nsys.sqlite"
    generate.nsys(20_000, cap, processes=3, devices=2)
    with sqlite3.connect(cap) as db:
        if odd:
            table = "CUPTI_ACTIVITY_KIND_RUNTIME" if odd == "calls" else "CUPTI_ACTIVITY_KIND_KERNEL"
            db.execute(f'UPDATE {table} SET "end" = "end" + 0.5 WHERE rowid = 7')
        if marked:  # 7 steps of 20 ms on the first process's main thread, in NVTX
            lo, tid = db.execute("SELECT MIN(start), MIN(globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
            db.executemany('INSERT INTO NVTX_EVENTS(start, "end", eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)',
                           [(lo + n * 20_000_000, lo + (n + 1) * 20_000_000, f"step {n}", tid) for n in range(7)])
    db.close()
    monkeypatch.setattr(series_np, "ASIDE_FROM", 0)
    recoded, started = [], []
    real_recoded, real_aside = series_np._recoded, series_np._host_aside
    monkeypatch.setattr(series_np, "_recoded", lambda *a: recoded.append(1) or real_recoded(*a))
    monkeypatch.setattr(series_np, "_host_aside", lambda *a: started.append(real_aside(*a)) or started[-1])
    spy = Spy(monkeypatch)
    (sql,), (fast,) = _both(monkeypatch, cap)
    assert fast == sql and sql is not None and len({r.pid for r in sql.steps}) == 3
    assert (sql.kind, len({r.step for r in sql.steps})) == (("steps", 7) if marked else ("buckets", 37))
    assert any(r.api_ns for r in sql.steps) and any(r.api_union_ns for r in sql.steps)
    assert len(started) == 1 and started[0] is not None and started[0].pid > 0
    with pytest.raises(ChildProcessError):  # reaped, whichever way it ended
        os.waitpid(started[0].pid, os.WNOHANG)
    # the odd call: the worker's _Odd comes back as the answer, and the series goes to the SQL
    assert (spy.measured, spy.declined, len(recoded)) == ((0, 1, 0) if odd else (1, 0, 1))


@pytest.mark.parametrize("marked", [False, True], ids=["buckets", "steps"])
def test_a_window_gets_the_sqls_series(monkeypatch, tmp_path: Path, marked: bool) -> None:
    """A window's series as the SQL measures it: time buckets from the extent of the GPU rows that start in the
    window, or the steps that start in it — the last one running on past the window's end, with what starts in it
    after (numpy reads every row, not the window's: the steps decide)."""
    cap = tmp_path / "nsys.sqlite"
    generate.nsys(20_000, cap, processes=2, devices=2)
    with sqlite3.connect(cap) as db:
        lo = db.execute("SELECT MIN(start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        if marked:  # steps of 30 ms on one thread: the window (20-100 ms) keeps those starting at 30, 60 and 90 ms
            tid = db.execute("SELECT MIN(globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
            db.executemany('INSERT INTO NVTX_EVENTS(start, "end", eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)',
                           [(lo + n * 30_000_000, lo + (n + 1) * 30_000_000, f"step {n}", tid) for n in range(8)])
    db.close()
    monkeypatch.setenv(step_series.ENV_MAX, "-1")
    spy = Spy(monkeypatch)
    out = []
    for reference in (True, False):
        monkeypatch.setattr(step_series, "REFERENCE", reference)
        out.append(readers.read(cap, make((0.02, 0.1), None)).series)
    sql, fast = out
    assert fast == sql and sql is not None and spy.measured == 1
    if marked:
        assert [r.step for r in sql.steps if r.pid == sql.steps[0].pid] == [1, 2, 3]
        assert max(r.end_ns for r in sql.steps) - lo == 120_000_000  # past the window's 100 ms
        assert any(r.launches for r in sql.steps if r.step == 3)
    else:
        assert sql.kind == "buckets" and len({r.step for r in sql.steps}) > 10


# ---- random small captures, through step_series.measure itself ----

_NAMES = ["ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, unsigned long, ncclWork *)", "gemm_kernel",
          "elementwise", "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", None]
_KEY = st.one_of(st.sampled_from(_NAMES), st.integers(0, 3))
_T = st.integers(0, 400)
_ROW = st.tuples(st.sampled_from([None, 7, 9]), _T, st.integers(-5, 120), _KEY)
_MARK = st.tuples(st.integers(0, 6), _T, st.integers(0, 60))


def _capture(kernels, copies, calls, marks) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute('CREATE TABLE k(pid, start, "end", name)')
    db.execute('CREATE TABLE m(pid, start, "end")')
    db.execute('CREATE TABLE c(pid, start, "end", id)')
    db.execute("CREATE TABLE r(tid, s, e, name)")
    db.executemany("INSERT INTO k VALUES (?, ?, ?, ?)", [(p, s, s + d, key) for p, s, d, key in kernels])
    db.executemany("INSERT INTO m VALUES (?, ?, ?)", [(p, s, s + d) for p, s, d, _ in copies])
    db.executemany("INSERT INTO c VALUES (?, ?, ?, ?)", [(p, s, s + d, key) for p, s, d, key in calls])
    db.executemany("INSERT INTO r VALUES (1, ?, ?, ?)", [(s, s + d, f"step {n}") for n, s, d in marks])
    return db


def _kinds(_conn: sqlite3.Connection, keys: list) -> dict:
    return {k: ("launch", "sync", None)[k % 3] if isinstance(k, int) else "alloc" for k in keys if k is not None}


def _measure(db: sqlite3.Connection, marks: bool, host: str) -> step_series.StepSeries | None:
    gpu = [step_series.GpuTable("k", "pid", "name"), step_series.GpuTable("m", "pid")]
    api = [step_series.ApiTable("c", "pid", "id", _kinds)]
    # key 3 is named as the text key 'gemm_kernel' is: two keys of one name, merged into one kernel per step
    return step_series.measure(db, gpu, api, "SELECT tid, s, e, name FROM r" if marks else None, host,
                               lambda keys: {k: k if isinstance(k, str) else "gemm_kernel" if k == 3 else f"kernel {k}"
                                             for k in keys})


@settings(max_examples=300, deadline=None)
@given(st.lists(_ROW, max_size=40), st.lists(_ROW, max_size=8), st.lists(_ROW, max_size=30),
       st.lists(_MARK, max_size=6), st.sampled_from(["all", "launch", "none"]))
def test_random_captures_get_the_sqls_series(kernels, copies, calls, marks, host) -> None:
    db = _capture(kernels, copies, calls, marks)
    out = []
    for reference, dense, helper in ((True, 0, "on"), (False, series_np.DENSE_CELLS, "on"), (False, 0, "off")):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(step_series, "REFERENCE", reference)
            m.setattr(step_series, "NUMPY_FROM", 0)
            m.setattr(series_np, "DENSE_CELLS", dense)  # the kernels per step counted in place, and by a sort
            m.setenv("NVPROF_WRAP_NATIVE", helper)  # the islands compiled (where built), and in numpy
            out.append(_measure(db, bool(marks), host))
    assert out[1] == out[0] and out[2] == out[0]


def test_a_time_that_is_not_an_integer_is_measured_in_sql(monkeypatch) -> None:
    db = _capture([(1, 10, 5, "gemm_kernel"), (1, 12, 30, "elementwise")], [], [], [(0, 0, 100)])
    db.execute("UPDATE k SET \"end\" = 40.5 WHERE start = 12")
    spy = Spy(monkeypatch)
    series = _measure(db, True, "none")
    assert spy.declined == 1 and series is not None and sum(r.busy_ns for r in series.steps) == 30.5


@pytest.mark.parametrize("marks", [[], [(0, -50, 49), (1, 0, 60), (2, 60, 80)]], ids=["buckets", "steps"])
def test_damaged_times_are_left_out_as_the_sql_leaves_them_out(monkeypatch, marks) -> None:
    """Rows whose end is before their start, or too far after it — to int64's ends, where end - start does not fit
    int64 — reach numpy unfiltered (the SQL's filter cost 0.07 s a 1M-row table): numpy leaves them out itself and
    measures the SQL's series (the buckets from the extent of the rows whose times are usable, as the SQL's MIN and
    MAX)."""
    far = MAX_DURATION_NS
    db = _capture([(7, 10, 5, "gemm_kernel"), (7, 12, 30, "elementwise"), (9, 40, 20, 2)], [(7, 30, 4, None)],
                  [(7, 5, 10, 0), (9, 45, 3, 1)], marks)
    damaged = [(7, 20, -(1 << 63), "gemm_kernel"), (9, 50, 50 + far + 1, 2), (9, 70, 69, 2),
               (7, (1 << 63) - 1, (1 << 63) - 1, 2), (7, -2, (1 << 63) - 1, 2)]  # the last: end - start wraps
    if marks:  # (in buckets, a start this early would move every bucket before the other rows: none measured)
        damaged.append((7, -(1 << 63), (1 << 63) - 1, "gemm_kernel"))
    db.executemany("INSERT INTO k VALUES (?, ?, ?, ?)", damaged)
    db.executemany("INSERT INTO c VALUES (?, ?, ?, ?)", [(p, s, e, 0) for p, s, e, _ in damaged])
    db.execute("INSERT INTO m VALUES (7, 60, 60 + ?)", (far,))  # sound: exactly MAX_DURATION_NS long
    spy = Spy(monkeypatch)
    fast = _measure(db, bool(marks), "all")
    monkeypatch.setattr(step_series, "REFERENCE", True)
    assert fast == _measure(db, bool(marks), "all") and fast is not None and fast.steps
    assert (spy.measured, spy.declined) == (1, 0)


def _brute(intervals: list[tuple[int, int, int]]) -> dict[int, int]:
    covered: dict[int, set[int]] = {}
    for g, s, e in intervals:
        covered.setdefault(g, set()).update(range(s, e))
    return {g: len(ts) for g, ts in covered.items()}


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(-50, 200), st.integers(1, 80)), max_size=60))
def test_the_unions_are_the_covered_time(rows) -> None:
    """In numpy and, where it is built, in the compiled loop (native.islands): the same islands, the covered time."""
    rows = sorted((g, s, s + d) for g, s, d in rows)
    group, s, e = (np.array(c, dtype=np.int64) for c in zip(*rows)) if rows else [np.zeros(0, np.int64)] * 3
    got = []
    for on in ("on", "off") if native.available() else ("off",):
        with pytest.MonkeyPatch.context() as m:
            m.setenv("NVPROF_WRAP_NATIVE", on)
            groups, totals = series_np._unions(group, s, e)
            assert dict(zip(groups.tolist(), totals.tolist())) == _brute(rows)
            got.append([a.tolist() for a in series_np._islands(group, s, e)] if rows else [])
    assert got[0] == got[-1]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(1, 200), st.integers(1, 80)),
                max_size=60),
       st.lists(st.tuples(st.integers(0, 200), st.integers(0, 90)), min_size=1, max_size=6))
def test_the_islands_cut_into_steps_compiled_are_numpys(rows, marks) -> None:
    """_cut's islands cut into the steps they span, in numpy and in the compiled loop (native.cut_islands, island by
    island): the same pieces, each (process, step, part)'s in time order (the budget's sweep asks for that order), and
    each piece inside its step and its island; steps that overlap, start alike or leave gaps included."""
    steps = series_np._Steps([(n, lo, lo + d) for n, (lo, d) in enumerate(marks)])
    p, pri, s, e = (np.array(c, dtype=np.int64) for c in zip(*rows)) if rows else [np.zeros(0, np.int64)] * 4
    e = s + e
    inside, i, _cut = steps.assign(s, e)
    p, pri, s, e = (a[inside] for a in (p, pri, s, e))  # (i: the kept rows' already)
    got = []
    for on in ("on", "off") if native.available() else ("off",):
        with pytest.MonkeyPatch.context() as m:
            m.setenv("NVPROF_WRAP_NATIVE", on)
            pieces = list(zip(*(a.tolist() for a in series_np._cut(steps, (p, i, s, e, pri)))))
        runs: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
        for gp, step, a, b, part in pieces:  # each (process, step, part)'s pieces, in the order given
            runs.setdefault((gp, step, part), []).append((a, b))
            assert steps.lo[step] <= a < b <= steps.hi[step]
        assert all(b <= a2 for run in runs.values() for (_, b), (a2, _) in itertools.pairwise(run))  # in time order
        got.append(sorted(pieces))
    assert got[0] == got[-1]


@pytest.mark.parametrize("on", ["on", "off"])
def test_intervals_too_wide_for_the_offsets_are_declined_either_way(monkeypatch, on: str) -> None:
    """Groups whose widths add up to 2^62 or more: numpy's offsets would overflow, so both paths decline (_Odd)."""
    if on == "on" and not native.available():
        pytest.skip("the compiled helper is not built here (setup.py build_ext)")
    monkeypatch.setenv("NVPROF_WRAP_NATIVE", on)
    far = 1 << 61
    group = np.array([0, 1, 2], dtype=np.int64)
    s = np.array([-far, -far, -far], dtype=np.int64)
    e = np.array([far, far, 10], dtype=np.int64)
    with pytest.raises(series_np._Odd):
        series_np._islands(group, s, e)
    assert series_np._unions(group[:1], s[:1], e[:1] // 2)[1].tolist() == [far + far // 2]


def _brute_claimed(pieces: list[tuple[int, int, int, int]]) -> dict[tuple[int, int], int]:
    """{(group, part): ns} of (group, part, s, e) pieces: each instant goes to the lowest part covering it."""
    cover: dict[tuple[int, int], int] = {}
    for g in {p[0] for p in pieces}:
        for t in range(min(p[2] for p in pieces if p[0] == g), max(p[3] for p in pieces if p[0] == g)):
            parts = [p[1] for p in pieces if p[0] == g and p[2] <= t < p[3]]
            if parts:
                cover[(g, min(parts))] = cover.get((g, min(parts)), 0) + 1
    return cover


@st.composite
def _budget_pieces(draw) -> list[tuple[int, int, int, int]]:
    """(group, part, s, e) pieces, a part's pieces of one group disjoint (cut from its islands, as _cut gives them),
    some touching end to start, none of 0 ns."""
    out = []
    for g in range(draw(st.integers(1, 3))):
        for part in draw(st.sets(st.integers(0, 9), max_size=5)):
            points = sorted(draw(st.sets(st.integers(-40, 160), min_size=2, max_size=10)))
            # some of the segments between the points: disjoint, two chosen side by side touching end to start
            for a, b in itertools.pairwise(points):
                if draw(st.booleans()):
                    out.append((g, part, a, b))
    return out


@settings(max_examples=400, deadline=None)
@given(_budget_pieces(), st.randoms(use_true_random=False))
def test_the_budget_sweep_claims_each_instant_for_the_lowest_part(pieces, rnd) -> None:
    """series_np._claimed, in numpy and in the compiled sweep (native.claimed): each instant of a group goes to the
    lowest part covering it, by group then part, none of 0 ns. The compiled sweep answers where each (group, part)'s
    pieces come in time order, in any order of the (group, part)s (_claimed sorts them stably: _cut's runs), and
    declines — the numpy then answers — where they do not."""
    want = _brute_claimed(pieces)
    blocks: dict[tuple[int, int], list] = {}
    for p in pieces:
        blocks.setdefault(p[:2], []).append(p)
    keys = list(blocks)
    rnd.shuffle(keys)
    in_runs = [p for k in keys for p in blocks[k]]  # whole (group, part)s moved, each in time order
    shuffled = list(pieces)
    rnd.shuffle(shuffled)
    for order in (in_runs, shuffled):
        g, part, s, e = (np.array(c, dtype=np.int64) for c in zip(*order)) if order else [np.zeros(0, np.int64)] * 4
        for on in ("on", "off") if native.available() else ("off",):
            with pytest.MonkeyPatch.context() as m:
                m.setenv("NVPROF_WRAP_NATIVE", on)
                got_g, got_p, got_ns = series_np._claimed(g, s, e, part, 10) if order else ([], [], [])
            assert dict(zip(zip(got_g, got_p), got_ns)) == want
            assert list(zip(got_g, got_p)) == sorted(want)  # by group, then part
        if native.available() and order is in_runs and order:
            assert series_np._claimed_compiled(g, s, e, part, 10) is not None  # answered, not declined


@pytest.mark.skipif(not native.available(), reason="the compiled helper is not built here (setup.py build_ext)")
@pytest.mark.parametrize("pieces", [
    [(0, 1, 0, 10), (0, 1, 5, 20)],  # overlapping within a part
    [(0, 1, 0, 10), (0, 1, 10, 10)],  # a piece of 0 ns
    [(0, 1, 10, 20), (0, 1, 0, 5)],  # a part's pieces out of time order
    [(0, 2, 0, 5), (0, 1, 0, 5), (0, 2, 10, 20)],  # a part met again after another
    [(1, 1, 0, 5), (0, 1, 0, 5)],  # groups out of order
    [(-1, 1, 0, 5)],  # a negative key
])
def test_the_compiled_sweep_declines_pieces_it_cannot_sweep(pieces) -> None:
    """Where the pieces are not sorted by (group, part, start), a part's overlap, or one lasts 0 ns, the compiled
    sweep declines (None: the numpy measures them) rather than claim wrong time."""
    g, part, s, e = (np.array(c, dtype=np.int64) for c in zip(*pieces))
    assert native.claimed(g * 10 + part, s, e, 10) is None
    with pytest.raises(ValueError, match="1 to 16 parts"):
        native.claimed(g, s, e, 17)


@pytest.mark.skipif(not native.available(), reason="the compiled helper is not built here (setup.py build_ext)")
@pytest.mark.parametrize("marked", [False, True], ids=["buckets", "steps"])
def test_a_generated_exports_budget_is_swept_compiled(monkeypatch, tmp_path: Path, marked: bool) -> None:
    """A generated export's time budget (GPU parts and the calls', 3 processes; time buckets, and 7 marked steps
    holding islands that run on into the next step) is swept by the compiled helper — not declined — and the
    series is the SQL's."""
    cap = tmp_path / "nsys.sqlite"
    generate.nsys(20_000, cap, processes=3, devices=2)
    if marked:
        with sqlite3.connect(cap) as db:
            lo, tid = db.execute("SELECT MIN(start), MIN(globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
            db.executemany('INSERT INTO NVTX_EVENTS(start, "end", eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)',
                           [(lo + n * 20_000_000, lo + (n + 1) * 20_000_000, f"step {n}", tid) for n in range(7)])
        db.close()
    answered = []
    real = native.claimed
    monkeypatch.setattr(native, "claimed", lambda *a: answered.append(real(*a)) or answered[-1])
    spy = Spy(monkeypatch)
    (sql,), (fast,) = _both(monkeypatch, cap)
    assert fast == sql and spy.measured == 1 and any(r.parts_ns for r in sql.steps)
    assert answered and all(a is not None for a in answered)


@pytest.mark.skipif(not native.available() or not can_fork(),
                    reason="the calls' side is measured beside only with the compiled helper and fork")
@pytest.mark.parametrize("aside", [True, False])
def test_meanwhile_runs_while_the_calls_worker_ends(monkeypatch, tmp_path: Path, aside: bool) -> None:
    """The reader's own work handed to the series (Ahead.result's meanwhile: classifying the kernel names) runs once,
    in this process, after the GPU's side and before the calls' worker's answer is taken — where there is such a
    worker; without one it is not run (the report's evidence classifies them), and the series is the same."""
    cap = tmp_path / "nsys.sqlite"
    generate.nsys(20_000, cap, processes=2, devices=2)
    monkeypatch.setattr(series_np, "ASIDE_FROM", 0 if aside else 1 << 62)
    monkeypatch.setattr(step_series, "AHEAD_LAUNCHES", 1 << 62)  # measured in the reading process
    monkeypatch.setattr(step_series, "AHEAD_CORES", 1 << 20)
    order: list[str] = []
    real_side, real_recoded = series_np._gpu_side, series_np._recoded
    monkeypatch.setattr(series_np, "_gpu_side", lambda *a: order.append("gpu") or real_side(*a))
    monkeypatch.setattr(series_np, "_recoded", lambda *a: order.append("calls") or real_recoded(*a))
    real_classify = nsys_sqlite.classify_meanwhile
    monkeypatch.setattr(nsys_sqlite, "classify_meanwhile", lambda names: order.append(f"pid {os.getpid()}") or
                        real_classify(names))
    spy = Spy(monkeypatch)
    (sql,), (fast,) = _both(monkeypatch, cap)
    assert fast == sql and spy.measured == 1
    assert order == (["gpu", f"pid {os.getpid()}", "calls"] if aside else ["gpu"])


@pytest.mark.skipif(not native.available(), reason="the compiled helper is not built here (setup.py build_ext)")
@pytest.mark.parametrize("how", ["dense", "sorted cells", "too many groups"])
def test_the_compiled_rows_pass_gives_the_sqls_series(monkeypatch, tmp_path: Path, how: str) -> None:
    """A generated export's GPU rows and launch calls (3 processes, 2 GPUs, copies, NCCL kernels, 7 marked steps) are
    assigned to steps and summed by the compiled pass (native.step_rows: the GPU's side with its (process, step,
    kernel) cells, the calls' side without) — not declined — and the series is the SQL's; with more cells than are
    counted in place the kernels per step come from numpy's sort of the pass's rows, and with more (process, step)
    groups than it sums the numpy measures it all (the pass is not asked)."""
    cap = tmp_path / "nsys.sqlite"
    generate.nsys(20_000, cap, processes=3, devices=2)
    with sqlite3.connect(cap) as db:
        lo, tid = db.execute("SELECT MIN(start), MIN(globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
        db.executemany('INSERT INTO NVTX_EVENTS(start, "end", eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)',
                       [(lo + n * 20_000_000, lo + (n + 1) * 20_000_000, f"step {n}", tid) for n in range(7)])
    db.close()
    if how == "sorted cells":
        monkeypatch.setattr(series_np, "DENSE_CELLS", 0)
    if how == "too many groups":
        monkeypatch.setattr(series_np, "DENSE_GROUPS", 0)
    monkeypatch.setattr(series_np, "ASIDE_FROM", 1 << 62)  # the calls' side in this process: its pass seen here
    answered: list[tuple[bool, int | None]] = []
    real = native.step_rows
    monkeypatch.setattr(native, "step_rows", lambda *a: answered.append((len(a[-1][0]) > 0, real(*a))) or
                        answered[-1][1])
    spy = Spy(monkeypatch)
    (sql,), (fast,) = _both(monkeypatch, cap)
    assert fast == sql and spy.measured == 1 and len(sql.steps) >= 7 * 3 and any(r.parts_ns for r in sql.steps)
    assert any(k.launches for k in sql.kernels)
    if how == "too many groups":
        assert answered == []
    else:  # the GPU's rows (with cells where they are few enough), then the calls'
        assert [cells for cells, _ in answered] == [how == "dense", False]
        assert all(kept for _, kept in answered)


@pytest.mark.skipif(not native.available(), reason="the compiled helper is not built here (setup.py build_ext)")
def test_the_compiled_rows_pass_refuses_arrays_that_do_not_fit() -> None:
    """step_rows checks what it is given (a code past its count, columns of unequal length, sums of another size, a
    part for each key) rather than read or write past an array."""
    z = np.zeros(3, dtype=np.int64)
    t = np.array([1, 2, 3], dtype=np.int64)
    lo, hi = np.array([0], dtype=np.int64), np.array([10], dtype=np.int64)
    out = tuple(np.empty(3, dtype=np.int64) for _ in range(7))
    sums = tuple(np.zeros(1, dtype=np.int64) for _ in range(4))
    none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    args = (lo, hi, None, 0, np.array([1], dtype=np.int64), 1 << 62, MAX_DURATION_NS, 1, 1)
    assert native.step_rows([(z, t, t + 1, z, True)], *args, out, sums, none) == 3
    assert list(out[1]) == [0, 0, 0] and list(out[4]) == [1, 1, 1] and list(sums[0]) == [3] and list(sums[2]) == [3]
    with pytest.raises(ValueError):  # no part for the one key
        native.step_rows([(z, t, t + 1, z, True)], *args[:4], np.zeros(0, dtype=np.int64), *args[5:], out, sums, none)
    for tables, o, s in (([(z + 1, t, t + 1, z, True)], out, sums),  # a process code past the processes
                         ([(z, t, t[:2], z, True)], out, sums),  # an end column shorter than the starts
                         ([(z, t, t + 1, z, True)], out, sums[:3]),  # three sums, not four
                         ([(z, t, t + 1, z, True)], tuple(o[:2] for o in out), sums)):  # columns too short
        with pytest.raises(ValueError):
            native.step_rows(tables, *args, o, s, none)
