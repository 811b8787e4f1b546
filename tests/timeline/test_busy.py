"""GPU busy time (timeline/busy.py): the union of kernel and copy intervals between the first kernel's start and
the last kernel's end, measured in one time window or cut into several (big captures, one window per forked worker),
optionally inside a user's window (--window / --steps) — checked against a brute-force union."""
from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvprof_wrap.timeline import native
from nvprof_wrap.timeline.busy import _cut_sqls, busy_combine, busy_part, busy_plan, busy_time
from nvprof_wrap.timeline.sql import EVERYTHING, uri_of

SOURCES = [("k", "g", "d", "1"), ("m", "g", "d", "0")]


def store(kernels: list[tuple], copies: list[tuple], file: str = ":memory:") -> sqlite3.Connection:
    conn = sqlite3.connect(file)
    for table, rows in (("k", kernels), ("m", copies)):
        conn.execute(f'CREATE TABLE {table}(g, d, start INTEGER, "end" INTEGER)')
        conn.executemany(f"INSERT INTO {table} VALUES (?,?,?,?)", rows)
    return conn


def brute(kernels: list[tuple], copies: list[tuple], window: tuple[int, int] = EVERYTHING) -> dict[tuple, tuple]:
    """Every covered nanosecond, one by one: the union's length inside [first kernel start, last kernel end]. A row
    starting at or before 0 has no usable time (CUPTI's "not collected": system/limits.USABLE)."""
    lo, hi = window
    cut = [(g, d, max(s, lo), min(e, hi), k) for k, rows in ((True, kernels), (False, copies))
           for g, d, s, e in rows if e >= s > 0 and s < hi and e >= lo]
    out = {}
    for key in {(g, d) for g, d, *_ in cut}:
        spans = [(s, e, k) for g, d, s, e, k in cut if (g, d) == key]
        ks = [(s, e) for s, e, k in spans if k]
        first, last = (min(s for s, _ in ks), max(e for _, e in ks)) if ks else \
            (min(s for s, _, _ in spans), max(e for _, e, _ in spans))
        covered = {t for s, e, _ in spans for t in range(max(s, first), min(e, last))}
        out[key] = (first, last, len(covered))
    return out


def test_overlaps_gaps_and_two_devices() -> None:
    conn = store([(1, 0, 1, 10), (1, 0, 5, 20), (1, 0, 30, 40), (1, 1, 1, 100)], [(1, 0, 35, 50), (1, 0, 60, 60)])
    # device 0: kernels span 1..40; the copy 35..50 counts up to 40, the zero-length copy at 60 not at all
    assert sorted(busy_time(conn, SOURCES)) == [(1, 0, 1, 40, 29), (1, 1, 1, 100, 99)]


def test_a_row_starting_at_the_clocks_zero_has_no_usable_time() -> None:
    """CUPTI writes 0 for the times it could not collect (and Nsight Systems' clock starts at the session's start):
    such a kernel, or copy, is left out of the union and of the span — read as a time, a kernel from 0 to 40 would
    have made the GPU busy from the clock's start."""
    conn = store([(1, 0, 0, 40), (1, 0, 0, 0), (1, 0, -7, 30), (1, 0, 30, 40)], [(1, 0, 0, 35), (1, 0, 32, 50)])
    assert busy_time(conn, SOURCES) == [(1, 0, 30, 40, 10)]


def test_start_up_copies_before_the_first_kernel_are_not_idle_time() -> None:
    conn = store([(1, 0, 1000, 1100), (1, 0, 1200, 1300)], [(1, 0, 0, 50), (1, 0, 1050, 1250), (1, 0, 1400, 1500)])
    assert busy_time(conn, SOURCES) == [(1, 0, 1000, 1300, 300)]  # span 300 ns, not 1,500
    conn = store([], [(1, 0, 10, 60), (1, 0, 110, 160)])
    assert busy_time(conn, SOURCES) == [(1, 0, 10, 160, 100)]  # copies only: their own span


interval = st.tuples(st.sampled_from([1, 2]), st.sampled_from([0, 1, None]), st.integers(0, 1000),
                     st.integers(-5, 300)).map(lambda r: (r[0], r[1], r[2], r[2] + r[3]))


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None)
@given(st.lists(interval, max_size=30), st.lists(interval, max_size=10), st.integers(1, 5),
       st.one_of(st.none(), st.tuples(st.integers(-10, 1200), st.integers(1, 800))))
def test_windows_add_up_to_the_union(kernels, copies, parts, window) -> None:
    """Cut into `parts` pieces and, when given, to a user's window [lo, lo + length) that cuts intervals."""
    window = EVERYTHING if window is None else (window[0], window[0] + window[1])
    conn = store(kernels, copies)
    got = busy_combine((p, busy_part(conn, SOURCES, p)) for p in busy_plan(conn, SOURCES, parts, window))
    assert {(g, d): (first, last, busy) for g, d, first, last, busy in got} == brute(kernels, copies, window)


files = itertools.count()


@pytest.mark.skipif(native._cattr is None, reason="the compiled helper is not built here")
@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None)
@given(st.lists(interval, max_size=30), st.lists(interval, max_size=10), st.integers(0, 4),
       st.one_of(st.none(), st.tuples(st.integers(-10, 1200), st.integers(1, 800))))
def test_the_compiled_union_in_a_bounded_window(tmp_path_factory, kernels, copies, hold, window) -> None:
    """The compiled pass holding at most `hold` intervals per group and device (0: all), the rows in any order
    (those that come before the window's watermark make it read them all again), against the brute force."""
    window = EVERYTHING if window is None else (window[0], window[0] + window[1])
    file = tmp_path_factory.getbasetemp() / f"busy{next(files)}.sqlite"
    with contextlib.closing(store(kernels, copies, str(file))) as conn:
        conn.commit()
    got = native.busy_held(uri_of(file), _cut_sqls(SOURCES, window), hold)
    assert got is not None
    assert {(g, d): (first, last, busy) for g, d, first, last, busy in busy_combine([(window, got[0])])} == \
        brute(kernels, copies, window)


@pytest.mark.skipif(native._cattr is None, reason="the compiled helper is not built here")
@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None)
@given(st.lists(interval, max_size=30), st.lists(interval, max_size=10), st.integers(1, 4))
def test_islands_of_slices_merged_are_the_union(tmp_path_factory, kernels, copies, slices) -> None:
    """Fused (BusyTime's fused): the kernels' islands taken in `slices` slices of rowids, as the attribution's slices
    take them, the copies' apart (busy_islands), merged by busy_runs — the brute force's union and span."""
    file = tmp_path_factory.getbasetemp() / f"busy{next(files)}.sqlite"
    with contextlib.closing(store(kernels, copies, str(file))) as conn:
        conn.commit()
    step = -(-len(kernels) // slices) or 1
    runs = []
    for lo in range(1, len(kernels) + 1, step):
        part = [(f"(SELECT * FROM k WHERE rowid BETWEEN {lo} AND {lo + step - 1})", "g", "d", "1")]
        got = native.busy_islands(uri_of(file), _cut_sqls(part, EVERYTHING))
        assert got is not None and all(k == 1 for _g, _d, k, _b in got)
        runs += got
    rest = native.busy_islands(uri_of(file), _cut_sqls(SOURCES[1:], EVERYTHING))
    assert rest is not None
    lanes = native.busy_runs(runs + rest)
    assert lanes is not None
    assert {(g, d): (first, last, busy) for g, d, first, last, busy in busy_combine([(EVERYTHING, lanes)])} == \
        brute(kernels, copies)


@pytest.mark.skipif(native._cattr is None, reason="the compiled helper is not built here")
def test_runs_out_of_order_or_too_far_are_declined() -> None:
    """busy_runs merges runs in start order only, each end at or after its start, times within +-2^62: else None
    (the caller's busy_time decides)."""
    def run(*pairs: int) -> bytes:
        return b"".join(v.to_bytes(8, "little", signed=True) for v in pairs)

    # a copy bridging two kernel islands: one union of 30 ns
    bridged = [(1, 0, 1, run(0, 10, 20, 30)), (1, 0, 0, run(5, 25))]
    assert native.busy_runs(bridged) == [(1, 0, (30, 0, 30, 0, 0, 30, 0))]
    assert native.busy_runs([(None, None, 0, run(0, 10))]) == [(None, None, (10, 0, 10, None, 0, None, 10))]
    assert native.busy_runs([(1, 0, 1, run(20, 30, 0, 10))]) is None  # out of start order
    assert native.busy_runs([(1, 0, 1, run(10, 5))]) is None  # ends before it starts
    assert native.busy_runs([(1, 0, 1, run(0, (1 << 62) + 1))]) is None
    assert native.busy_runs([(1, 0, 1, run(-(1 << 62) - 1, 0))]) is None
    assert native.busy_runs([(1, 0, 1, run(0, 1 << 62))]) == [(1, 0, (1 << 62, 0, 1 << 62, 0, 0, 1 << 62, 0))]
    assert native.busy_runs([(1, 0, 1, b"")]) == []
    assert native.busy_runs([(1, 0, 1, b"123")]) is None  # not whole pairs
    assert native.busy_runs([("x", 0, 1, run(0, 1))]) is None  # a group that is not an integer
