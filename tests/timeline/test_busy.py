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
    """Every covered nanosecond, one by one: the union's length inside [first kernel start, last kernel end]."""
    lo, hi = window
    cut = [(g, d, max(s, lo), min(e, hi), k) for k, rows in ((True, kernels), (False, copies))
           for g, d, s, e in rows if e >= s and s < hi and e >= lo]
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
    conn = store([(1, 0, 0, 10), (1, 0, 5, 20), (1, 0, 30, 40), (1, 1, 0, 100)], [(1, 0, 35, 50), (1, 0, 60, 60)])
    # device 0: kernels span 0..40; the copy 35..50 counts up to 40, the zero-length copy at 60 not at all
    assert sorted(busy_time(conn, SOURCES)) == [(1, 0, 0, 40, 30), (1, 1, 0, 100, 100)]


def test_start_up_copies_before_the_first_kernel_are_not_idle_time() -> None:
    conn = store([(1, 0, 1000, 1100), (1, 0, 1200, 1300)], [(1, 0, 0, 50), (1, 0, 1050, 1250), (1, 0, 1400, 1500)])
    assert busy_time(conn, SOURCES) == [(1, 0, 1000, 1300, 300)]  # span 300 ns, not 1,500
    conn = store([], [(1, 0, 0, 50), (1, 0, 100, 150)])
    assert busy_time(conn, SOURCES) == [(1, 0, 0, 150, 100)]  # copies only: their own span


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
