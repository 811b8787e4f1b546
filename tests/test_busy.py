"""GPU busy time (readers/_sqlite.py): the union of kernel and copy intervals, measured in one time window or
cut into several (big captures, one window per forked worker) — checked against a brute-force union."""
from __future__ import annotations

import os
import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from nvprof_wrap.readers._sqlite import busy_combine, busy_part, busy_plan, busy_time

SOURCES = [("k", "g", "d"), ("m", "g", "d")]


def store(kernels: list[tuple], copies: list[tuple]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    for table, rows in (("k", kernels), ("m", copies)):
        conn.execute(f'CREATE TABLE {table}(g, d, start INTEGER, "end" INTEGER)')
        conn.executemany(f"INSERT INTO {table} VALUES (?,?,?,?)", rows)
    return conn


def brute(rows: list[tuple]) -> dict[tuple, tuple]:
    out = {}
    for key in {(g, d) for g, d, _s, _e in rows}:
        spans = sorted((s, e) for g, d, s, e in rows if (g, d) == key and e >= s)
        if not spans:
            continue
        covered, reach = 0, None
        for s, e in spans:
            if reach is None or s >= reach:
                covered, reach = covered + e - s, e
            elif e > reach:
                covered, reach = covered + e - reach, e
        out[key] = (spans[0][0], max(e for _s, e in spans), covered)
    return out


def test_overlaps_gaps_and_two_devices() -> None:
    conn = store([(1, 0, 0, 10), (1, 0, 5, 20), (1, 0, 30, 40), (1, 1, 0, 100)], [(1, 0, 35, 50), (1, 0, 60, 60)])
    assert sorted(busy_time(conn, SOURCES)) == [(1, 0, 0, 60, 40), (1, 1, 0, 100, 100)]


interval = st.tuples(st.sampled_from([1, 2]), st.sampled_from([0, 1, None]), st.integers(0, 1000),
                     st.integers(-5, 300)).map(lambda r: (r[0], r[1], r[2], r[2] + r[3]))


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None)
@given(st.lists(interval, max_size=30), st.lists(interval, max_size=10), st.integers(1, 5))
def test_windows_add_up_to_the_union(kernels, copies, parts) -> None:
    conn = store(kernels, copies)
    got = busy_combine((p, busy_part(conn, SOURCES, p)) for p in busy_plan(conn, SOURCES, parts))
    assert {(g, d): (first, last, busy) for g, d, first, last, busy in got} == brute(kernels + copies)
