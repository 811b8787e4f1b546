"""Durations a report can stand on. A record whose time is missing (NULL), negative (end before start) or absurd
(longer than MAX_DURATION_NS; in a SQLite capture also a start at or before the clock's zero, system/limits.USABLE)
still counts as a launch, copy or set, but without its time, and the capture's
notes say how many there were: a damaged clock must not subtract from the GPU time or swamp it.

SQL readers ask ``sql_duration(conn, table, what)`` for the expression to aggregate: the plain ``"end" - start``
when every row of the table is sound (one COUNT scan decides: ~0.1 s per million rows), a guarded one when not.
Python readers count through ``Durations``.
"""
from __future__ import annotations

import math
import sqlite3
from typing import Any

from nvprof_wrap.system.limits import MAX_DURATION_NS, USABLE

PLAIN = '"end" - start'
# a time missing, or not usable (a start at or before the clock's zero too: system/limits.USABLE says why)
_BAD = f'(start IS NULL OR "end" IS NULL OR NOT ({USABLE}))'
SOUND = f'CASE WHEN {USABLE} THEN "end" - start END'
_LIMIT = "7 days"  # MAX_DURATION_NS in words, for the notes


def note(count: int, what: str, clock: bool = False) -> str:
    """clock: a SQLite capture's (_BAD's reasons, the clock's zero among them)."""
    zero = "starting at or before the clock's zero (CUPTI's 'not collected'), " if clock else ""
    return (f"{count:,} {what} record(s) without a usable time (missing, {zero}negative, or longer than {_LIMIT}): "
            "counted, without their time")


def sql_duration(conn: sqlite3.Connection, table: str, what: str) -> tuple[str, str | None]:
    """(expression for a record's duration in ns, NULL when unusable; a note when some are) for ``table``,
    whose columns are start and "end"."""
    bad = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {_BAD}").fetchone()[0]
    return (PLAIN if not bad else SOUND), (note(bad, what, clock=True) if bad else None)


def on(expr: str, alias: str) -> str:
    """The expression for a query where the table has an alias."""
    return expr.replace('"end"', f'{alias}."end"').replace("start", f"{alias}.start")


class Durations:
    """Per-record durations in Python readers: ``ns(value_in_ns)`` gives the duration or None, and counts. clock: a
    reader of CUPTI's clock (Kineto), where a start at or before 0 is CUPTI's "not collected" too (``started``)."""

    def __init__(self, what: str, clock: bool = False) -> None:
        self.what, self.bad, self.clock = what, 0, clock

    def started(self, start: int | None, dur: int | None) -> int | None:
        """dur, or None (counted) for a record starting at or before the clock's zero."""
        if start is not None and start <= 0 and dur is not None:
            self.bad += 1
            return None
        return dur

    def ns(self, value: float | None) -> int | None:
        if value is None or math.isnan(value) or not 0 <= value <= MAX_DURATION_NS:
            self.bad += 1
            return None
        return int(value)

    def notes(self) -> tuple[str, ...]:
        return (note(self.bad, self.what, self.clock),) if self.bad else ()


def from_us(value: object) -> int | None:
    """Microseconds (a number, or a number in a string) → integer ns; None when it is not a finite number or not a
    time SQLite can hold (beyond ±2^62 ns: start + duration must still fit)."""
    try:
        ns = float(value) * 1000  # type: ignore[arg-type]  # any value: what float() refuses is caught below
    except (TypeError, ValueError):
        return None
    return int(ns) if abs(ns) < 2**62 else None  # also False for nan



def fold(stats: list[Any] | None, ns: int | None, n: int = 1) -> list[Any]:  # [int, int, int | None, int | None]
    """[count, total, min, max] of a Python reader's aggregate with ``n`` more records of duration ``ns`` (None:
    counted without their time; min and max stay None until a record has one)."""
    if stats is None:
        return [n, ns or 0, ns, ns]
    stats[0] += n
    if ns is not None:
        stats[1] += ns
        stats[2] = ns if stats[2] is None or ns < stats[2] else stats[2]
        stats[3] = ns if stats[3] is None or ns > stats[3] else stats[3]
    return stats
