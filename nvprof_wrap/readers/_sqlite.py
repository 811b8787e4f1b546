"""Shared helpers for readers of SQLite captures: read-only opening, schema probing, SQL aggregates."""
from __future__ import annotations

import itertools
import sqlite3
import urllib.parse
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.limits import MAX_DURATION_NS
from nvprof_wrap.readers._fork import BIG, Forked, can_fork, cores

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


WINDOW_MIN, WINDOW_MAX = -(1 << 62), 1 << 62  # the open ends of the first and the last time window


def busy_time(conn: sqlite3.Connection, sources: list[tuple[str, str, str]]) -> list[tuple]:
    """(group, dev, first, last, busy) per group and device, from GPU intervals in `sources`:
    (table, group column or expression, device column) — start and "end" are read from each table.
    busy is the length of the union of the intervals (busy_part says how)."""
    return busy_combine((piece, busy_part(conn, sources, piece)) for piece in busy_plan(conn, sources, 1))


def busy_plan(conn: sqlite3.Connection, sources: list[tuple[str, str, str]], parts: int) -> list[tuple]:
    """Pieces (group, dev, lo, hi) of the work: each group and device, and its time cut into `parts` windows
    [lo, hi) that are measured independently (busy_part) and added up (busy_combine). The cuts spread the
    time between the first and the last rows of the tables evenly: cheap to find, and where rows are not in
    time order the windows are only less even, never wrong."""
    groups: set[tuple] = set()
    lo, hi = None, None
    for table, group, dev in sources:
        groups.update(conn.execute(f"SELECT DISTINCT {group}, {dev} FROM {table}"))
        for (t,) in (conn.execute(f"SELECT start FROM {table} ORDER BY rowid LIMIT 1").fetchall() +
                     conn.execute(f'SELECT "end" FROM {table} ORDER BY rowid DESC LIMIT 1').fetchall()):
            if t is not None:
                lo, hi = (t, t) if lo is None else (min(lo, t), max(hi, t))
    cuts = [lo + (hi - lo) * i // parts for i in range(1, parts)] if lo is not None and parts > 1 else []
    bounds = [WINDOW_MIN, *sorted(set(cuts)), WINDOW_MAX]
    return [(g, d, a, b) for g, d in sorted(groups, key=lambda k: tuple((v is None, v or 0) for v in k))
            for a, b in itertools.pairwise(bounds)]


def busy_part(conn: sqlite3.Connection, sources: list[tuple[str, str, str]], piece: tuple) -> tuple | None:
    """(busy, first, last) of one group's intervals clipped to the window [lo, hi) of `piece`; None if none.

    The clipped intervals are streamed in start order (one SQL sort, two integers per row, nothing held) and
    merged in one pass: an interval adds only the part past the furthest end seen so far. Their union is the
    whole union's part in [lo, hi), so windows add up exactly; the earliest clipped start over all windows is
    the first start, the latest clipped end the last end. Measured at 1M launches: 0.45 s per half, where a
    window function (MAX OVER ... PARTITION BY) took 2.0 s for the whole."""
    g, d, lo, hi = piece
    whole = lo == WINDOW_MIN and hi == WINDOW_MAX
    s, e, window = ('start', '"end"', "") if whole else \
        (f"MAX(start, {lo})", f'MIN("end", {hi})', f'AND start < {hi} AND "end" >= {lo}')
    # Intervals without a usable duration (readers/_durations.py) are left out of the union too.
    union = " UNION ALL ".join(f"SELECT {s}, {e} FROM {table} WHERE {group} IS ? AND {dev} IS ? "
                               f'AND "end" >= start AND "end" - start <= {MAX_DURATION_NS} {window}'
                               for table, group, dev in sources)
    rows = conn.execute(union + " ORDER BY 1", (g, d) * len(sources))
    first_row = rows.fetchone()
    if first_row is None:
        return None
    first, reach = first_row
    busy = reach - first
    for start, end in rows:
        if start >= reach:
            busy += end - start
            reach = end
        elif end > reach:
            busy += end - reach
            reach = end
    return busy, first, reach  # reach: the furthest end, i.e. the last


def busy_combine(measured) -> list[tuple]:
    """(group, dev, first, last, busy) from (piece, busy_part result) pairs."""
    out: dict[tuple, list] = {}
    for (g, d, _lo, _hi), part in measured:
        if part is None:
            continue
        busy, first, last = part
        row = out.setdefault((g, d), [g, d, first, last, 0])
        row[2], row[3], row[4] = min(row[2], first), max(row[3], last), row[4] + busy
    return [tuple(v) for v in out.values()]


class BusyTime:
    """The busy-time union of a capture, started now and measured side by side with the caller's other work:
    for a big capture in forked children, each GPU's time cut into windows, one per two cores (the caller and
    the attribution slices use the others; on 2 cores one window measured best: 1.23 s at 1M launches, against
    1.45 s with two). result() gives busy_time's rows; abandon() reaps the children after an error."""

    def __init__(self, conn: sqlite3.Connection, path: Path, sources: list[tuple[str, str, str]]) -> None:
        big = Path(path).stat().st_size >= BIG
        pieces = busy_plan(conn, sources, max(1, cores() // 2) if big and can_fork() else 1)
        self.windows = {piece: Forked(_busy_part_alone, path, sources, piece, inline=not big) for piece in pieces}

    def result(self) -> list[tuple]:
        return busy_combine((piece, window.result()) for piece, window in self.windows.items())

    def abandon(self) -> None:
        for window in self.windows.values():
            try:
                window.result()
            except Exception:  # noqa: BLE001, S110 - the caller's error is the one to report
                pass


def _busy_part_alone(path: Path, sources: list[tuple[str, str, str]], piece: tuple) -> tuple | None:
    conn = connect_ro(path)
    try:
        return busy_part(conn, sources, piece)
    finally:
        conn.close()
