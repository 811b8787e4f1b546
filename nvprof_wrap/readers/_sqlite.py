"""Shared helpers for readers of SQLite captures: read-only opening, schema probing, SQL aggregates."""
from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path

from nvprof_wrap.errors import BadInput

# CUPTI_ActivityMemcpyKind → the direction users know (A = CUDA array, P = peer device).
MEMCPY_DIRECTION = {1: "HtoD", 3: "HtoD", 2: "DtoH", 4: "DtoH", 5: "DtoD", 6: "DtoD", 7: "DtoD",
                    8: "DtoD", 9: "HtoH", 10: "PtoP"}


def connect_ro(path: Path) -> sqlite3.Connection:
    """Open a capture read-only and immutable: works in read-only folders and never writes a journal."""
    uri = "file:" + urllib.parse.quote(str(Path(path).resolve())) + "?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
        # Damaged text (invalid UTF-8 in names or even in the schema) must not raise while reading.
        conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:  # SQLite's message may quote damaged bytes
        raise BadInput(path, f"not a readable SQLite database ({e})") from None
    return conn


def tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"SELECT * FROM pragma_table_info('{table}')")}


def busy_sql(intervals: str) -> str:
    """SQL that returns (pid, device_id, first, last, busy) from a subquery of (pid, dev, start, end) rows.

    busy is the length of the union of the intervals: each interval, taken in start order, adds
    only the part past the furthest end seen so far. One sort, no Python loop over launches.
    """
    return f"""
    WITH intervals_ AS ({intervals}),
    o AS (SELECT pid, dev, start, "end",
                 MAX("end") OVER (PARTITION BY pid, dev ORDER BY start, "end"
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
          FROM intervals_ WHERE "end" >= start)
    SELECT pid, dev, MIN(start), MAX("end"),
           SUM(CASE WHEN reach IS NULL OR start >= reach THEN "end" - start
                    WHEN "end" > reach THEN "end" - reach ELSE 0 END)
    FROM o GROUP BY pid, dev"""
