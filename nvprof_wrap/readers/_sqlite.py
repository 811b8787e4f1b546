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


def busy_time(conn: sqlite3.Connection, sources: list[tuple[str, str, str]]) -> list[tuple]:
    """(group, dev, first, last, busy) per group and device, from GPU intervals in `sources`:
    (table, group column or expression, device column) — start and "end" are read from each table.

    busy is the length of the union of the intervals. Each group's intervals are streamed in start order
    (one SQL sort, two integers per row, nothing held) and merged in one pass: an interval adds only the part
    past the furthest end seen so far. Measured at 1M launches: 0.7 s, where a window function (MAX OVER
    ... PARTITION BY) took 2.0 s.
    """
    groups: set[tuple] = set()
    for table, group, dev in sources:
        groups.update(conn.execute(f"SELECT DISTINCT {group}, {dev} FROM {table}"))
    out = []
    for g, d in sorted(groups, key=lambda k: tuple((v is None, v if v is not None else 0) for v in k)):
        union = " UNION ALL ".join(f'SELECT start, "end" FROM {table} WHERE {group} IS ? AND {dev} IS ? '
                                   f'AND "end" >= start' for table, group, dev in sources)
        first = reach = None
        busy = 0
        for start, end in conn.execute(union + " ORDER BY 1", (g, d) * len(sources)):
            if reach is None:
                first, reach, busy = start, end, end - start
            elif start >= reach:
                busy += end - start
                reach = end
            elif end > reach:
                busy += end - reach
                reach = end
        if first is not None:
            out.append((g, d, first, reach, busy))
    return out
