"""SQLite captures opened once, read-only: the opening every reader, exporter and forked worker shares (its queries
under timeline/guard.py's budget, pending writes recovered on a copy by timeline/recover.py), schema probing, names cut
in SQL, and a time window as SQL bounds."""
from __future__ import annotations

import contextlib
import sqlite3
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.system.limits import MAX_NAME_CHARS, USABLE
from nvprof_wrap.system.storage import machine_failure
from nvprof_wrap.timeline import recover
from nvprof_wrap.timeline.guard import guard, reading
from nvprof_wrap.timeline.window import OPEN_ENDS, Window, bounds, step_filter

# CUPTI_ActivityMemcpyKind → the direction users know (A = CUDA array, P = peer device).
MEMCPY_DIRECTION = {1: "HtoD", 3: "HtoD", 2: "DtoH", 4: "DtoH", 5: "DtoD", 6: "DtoD", 7: "DtoD",
                    8: "DtoD", 9: "HtoH", 10: "PtoP"}


def connect_ro(path: Path) -> sqlite3.Connection:
    """Open a capture read-only and immutable: works in read-only folders and never writes a journal. What opens is
    the capture's committed content (uri_of): with writes pending beside it, the copy a read recovered them on."""
    try:
        conn = sqlite3.connect(uri_of(path), uri=True)
        # Damaged text (invalid UTF-8 in names or even in the schema) must not raise while reading.
        conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:  # SQLite's message may quote damaged bytes
        raise machine_failure(path, e) or BadInput(path, f"not a readable SQLite database ({e})") from None
    return conn


@contextlib.contextmanager
def opened(path: Path, profiler: str | None = None) -> Iterator[sqlite3.Connection]:
    """connect_ro, then every query under timeline/guard.py's budget (and, given the profiler, its schema checked):
    the connection, closed at the end; what stopped a query (a signal, the budget) is raised as itself."""
    conn = connect_ro(path)
    try:
        budget = guard(conn, path, profiler)
    except BaseException:
        conn.close()
        raise
    with reading(conn, budget):
        yield conn


def reopened(path: Path) -> sqlite3.Connection:
    """A second connection to a capture already opened(): under its own budget (the caller closes it)."""
    conn = connect_ro(path)
    guard(conn, path, None)
    return conn


def cut(expr: str) -> str:
    """A name (kernel, device, process, NVTX range) cut in SQL to one character more than readers/_validate.py keeps:
    a capture's name of 100 MB never reaches Python whole (only SQLite holds it, one row at a time), and _validate
    still sees it is longer than MAX_NAME_CHARS — it cuts it and its note says so. NULL stays NULL."""
    return f"substr({expr}, 1, {MAX_NAME_CHARS + 1})"


def uri_of(path: Path) -> str:
    """The URI that opens a capture read-only and immutable (connect_ro; the compiled reader, timeline/native.py):
    immutable ignores side files, so it names the copy recovered with them while a read holds one
    (timeline/recover.py) and refuses a capture that has them outside such a read."""
    return "file:" + urllib.parse.quote(str(Path(recover.source(path)).resolve())) + "?mode=ro&immutable=1"


def tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"SELECT * FROM pragma_table_info('{table}')")}


WINDOW_MIN, WINDOW_MAX = OPEN_ENDS  # the open ends of the first and the last time window
EVERYTHING: tuple[int, int] = (WINDOW_MIN, WINDOW_MAX)


def window_bounds(conn: sqlite3.Connection, window: Window | None, gpu_tables: list[str],
                  ranges_sql: str | None) -> tuple[int, int]:
    """[lo, hi) of a window in a SQLite capture's clock (EVERYTHING without one). gpu_tables: the tables of GPU
    activity (the origin of a window in seconds is their first start); ranges_sql: (tid, s, e, name) of the
    capture's NVTX ranges, None when it has none."""
    if window is None:
        return EVERYTHING
    ranges = () if ranges_sql is None or window.seconds is not None and window.cut is None else \
        conn.execute(f"SELECT name, tid, s, e FROM ({ranges_sql}) WHERE {step_filter()}")
    if window.seconds is None:
        return bounds(window, None, ranges)
    extents = [conn.execute(f"SELECT MIN(start), MAX(end) FROM {t} WHERE {USABLE}").fetchone() for t in gpu_tables]
    origin = min((s for s, _ in extents if s is not None), default=None)
    lo, hi = bounds(window, origin, ranges)
    assert origin is not None  # bounds() refuses a window in seconds in a capture without GPU activity
    last = max((e for _, e in extents if e is not None), default=lo)
    if lo >= last:  # after everything: say how long the capture's GPU activity lasts, and where its kernels are
        first_kernel = extents[0][0] if gpu_tables and "kernel" in gpu_tables[0].lower() else None
        kernels = f"; its first kernel starts at {(first_kernel - origin) / 1e9:.3g} s" if first_kernel else ""
        raise BadInput(None, f"no GPU activity in {window.describe()}: the capture's GPU activity lasts "
                             f"{(last - origin) / 1e9:.3g} s from its first copy, set or kernel{kernels}")
    return lo, hi


def in_window(bounds: tuple[int, int], alias: str = "") -> str:
    """The SQL condition that keeps rows starting inside [lo, hi) ('true' for the whole capture)."""
    if bounds == EVERYTHING:
        return "true"
    a = f"{alias}." if alias else ""
    return f"{a}start >= {bounds[0]} AND {a}start < {bounds[1]}"
