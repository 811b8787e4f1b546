"""Run history: every `run`, and every `report` of a run folder, as one row of one SQLite database that
sqlite-utils writes (browse it with Datasette: `datasette ~/.local/share/nvprof-wrap/history.sqlite`).

Where: $NVPROF_WRAP_HISTORY (a file), else $XDG_DATA_HOME/nvprof-wrap/history.sqlite, else
~/.local/share/nvprof-wrap/history.sqlite. NVPROF_WRAP_HISTORY=off records nothing. A history that cannot be
written never fails the command that reports (one warning line at most, from the CLI).

One row per run folder and scope: the whole captures ("whole"), or the part a `--steps` / `--window` report covered
("steps 10:40", "window 30:90"), so that a steady-state report never overwrites the whole run's row; a run that
recorded only a window of its job (`run --capture-steps 100:120`) is "capture steps 100:120", never "whole". Times
are ISO 8601 strings (UTC), precisions JSON arrays (how sqlite-utils stores a list), so that Datasette shows them as
such.
A history written before these (one row per folder, Unix seconds, "fp16 + bf16") is migrated when first opened.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import stat
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict

from nvprof_wrap.errors import BadInput
from nvprof_wrap.run.protocol import RunRow
from nvprof_wrap.store import database
from nvprof_wrap.system import bounded, files

if TYPE_CHECKING:
    import sqlite_utils

TABLE = "runs"
PK = ("folder", "scope")
WHOLE = "whole"
COLUMNS = {"folder": str, "scope": str, "name": str, "recorded_at": str, "started": str, "command": str,
           "backend": str, "exit_code": int, "verdict": str, "tensor_core_share": float, "precisions": str,
           "kernel_time_ns": int, "launches": int, "health": str}


class HistoryRow(TypedDict):
    """One recorded run as runs() gives it (and `runs --format json` prints it): COLUMNS, precisions as a list."""

    folder: str
    scope: str
    name: str
    recorded_at: str
    started: str
    command: str
    backend: str
    exit_code: int | None
    verdict: str
    tensor_core_share: float | None
    precisions: list[str]
    kernel_time_ns: int | None
    launches: int | None
    health: str


# What record() reads of a report (report.Report: the store sits below the report, so it names only these).
class _Verdict(Protocol):
    @property
    def tensor_cores(self) -> str: ...
    @property
    def tc_fraction(self) -> float: ...
    @property
    def precisions(self) -> Sequence[str]: ...
    @property
    def kernel_ns(self) -> int: ...
    @property
    def launches(self) -> int: ...


class _Health(Protocol):
    @property
    def status(self) -> str: ...


class _Scope(Protocol):  # the part of the captures a report covered
    @property
    def kind(self) -> str: ...
    @property
    def start(self) -> float: ...
    @property
    def end(self) -> float: ...


class _CaptureScope(Protocol):  # the window of its job a run recorded
    @property
    def kind(self) -> str: ...
    @property
    def start(self) -> float: ...
    @property
    def end(self) -> float | None: ...


class Recorded(Protocol):
    @property
    def verdict(self) -> _Verdict: ...
    @property
    def health(self) -> _Health | None: ...
    @property
    def scope(self) -> _Scope | None: ...
    @property
    def capture(self) -> _CaptureScope | None: ...


def path() -> Path | None:
    env = os.environ.get("NVPROF_WRAP_HISTORY")
    if env == "off":
        return None
    if env:
        return Path(env)
    return default_path()


def default_path() -> Path:
    """Where the history lives when $NVPROF_WRAP_HISTORY does not say."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "nvprof-wrap" / "history.sqlite"


def iso(value: object) -> str:
    """An ISO 8601 time (UTC) from what a history or a manifest holds: Unix seconds, an ISO string, or nothing."""
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        text = value
        try:
            value = float(text)
        except ValueError:
            return text  # already a date (or text we keep as it was)
    if not isinstance(value, (bytes, int, float)):  # what neither SQLite nor a manifest holds
        return str(value)
    try:
        return datetime.fromtimestamp(float(value), UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return str(value)


def precisions_list(value: object) -> list[str]:
    """Precisions from a history row: a JSON array, or the " + " text of older histories."""
    if isinstance(value, (list, tuple)):
        return [str(p) for p in value]
    if not value:
        return []
    if isinstance(value, str) and value.startswith("["):
        try:
            got = bounded.loads(value)
            if isinstance(got, list):
                return [str(p) for p in got]
        except ValueError:
            pass
    return [p for p in str(value).split(" + ") if p]


def scope_of(report: Recorded) -> str:
    """"whole"; "steps 10:40" / "window 30:90" for a report of part of the captures; "capture steps 100:120" /
    "capture seconds 60:70" (… 60:end) for a run that recorded only that window of its job."""
    s = report.scope
    if s is not None:
        return f"{s.kind} {s.start:g}:{s.end:g}"
    c = report.capture
    if c is None:
        return WHOLE
    return f"capture {c.kind} {c.start:g}:{'end' if c.end is None else format(c.end, 'g')}"


def _db(p: Path) -> sqlite_utils.Database:
    p.parent.mkdir(parents=True, exist_ok=True)
    db = database(sqlite3.connect(files.sqlite_uri(p, "run history"), uri=True))
    db.conn.execute("PRAGMA busy_timeout = 10000")
    if TABLE not in db.table_names():
        with _write_lock(db.conn):
            db.table(TABLE).create(COLUMNS, pk=PK, if_not_exists=True)
    elif "scope" not in {c.name for c in db.table(TABLE).columns}:
        _migrate(db)
    return db


@contextlib.contextmanager
def _write_lock(conn: sqlite3.Connection) -> Iterator[None]:
    """One transaction that takes the write lock first (BEGIN IMMEDIATE): concurrent writers wait for it (the busy
    timeout). sqlite-utils' own transaction (BEGIN, then a read of the schema, then the write) let one of four reports
    that created the history at once be told "database is locked" at once — SQLite's answer to a reader that would
    write while another writer waits for it — and the run went unrecorded (a warning; 2 of 60 rounds on 2 loaded
    cores). sqlite-utils nests its own in a savepoint."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _migrate(db: sqlite_utils.Database) -> None:
    """A history from before scopes: rebuilt in one transaction as today's table, every row the whole run's, its
    times ISO 8601, its precisions a JSON array. Concurrent first opens wait for each other (busy timeout)."""
    conn = db.conn
    with _write_lock(conn):
        if "scope" in {r[1] for r in conn.execute(f"PRAGMA table_info({TABLE})")}:
            return  # another process migrated it meanwhile
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({TABLE})")]
        old = [dict(zip(cols, r)) for r in conn.execute(f"SELECT * FROM {TABLE}")]
        conn.execute(f"ALTER TABLE {TABLE} RENAME TO {TABLE}_before_scopes")
        conn.execute(_create_sql())
        for r in old:
            row = _row({k: r.get(k) for k in COLUMNS} | {"scope": WHOLE})
            conn.execute(f"INSERT OR REPLACE INTO {TABLE} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                         list(row.values()))
        conn.execute(f"DROP TABLE {TABLE}_before_scopes")


def _create_sql() -> str:
    kinds = {str: "TEXT", int: "INTEGER", float: "FLOAT"}
    cols = ",\n   ".join(f"[{c}] {kinds[t]}" for c, t in COLUMNS.items())
    return f"CREATE TABLE [{TABLE}] (\n   {cols},\n   PRIMARY KEY ({', '.join(f'[{c}]' for c in PK)})\n)"


def _row(r: Mapping[str, object]) -> dict[str, object]:
    """A row as this version stores it, from one of any version."""
    out = dict(r)
    out["recorded_at"], out["started"] = iso(r.get("recorded_at")), iso(r.get("started"))
    out["precisions"] = json.dumps(precisions_list(r.get("precisions")))
    out["folder"], out["scope"] = str(r.get("folder") or ""), str(r.get("scope") or WHOLE)
    return out


def record(run: RunRow, report: Recorded) -> Path | None:
    """Upsert the row of a run folder (run/folder.py Run.history_row) and the report's scope (the latest report of
    each). Returns the history's path."""
    p = path()
    if p is None or _discard(p):
        return None
    v = report.verdict
    row = _row({"folder": run.folder, "scope": scope_of(report), "name": run.name,
                "recorded_at": datetime.now(UTC).timestamp(), "started": run.started,
                "command": run.command, "backend": run.backend,
                "exit_code": run.exit_code, "verdict": v.tensor_cores,
                "tensor_core_share": round(v.tc_fraction, 6), "precisions": list(v.precisions),
                "kernel_time_ns": v.kernel_ns, "launches": v.launches,
                "health": report.health.status if report.health else ""})
    db = _db(p)
    try:
        with _write_lock(db.conn):
            db.table(TABLE).upsert(row, pk=PK)
    finally:
        db.conn.close()
    return p


def _discard(p: Path) -> bool:
    """NVPROF_WRAP_HISTORY=/dev/null (any character device): nothing is recorded — SQLite would create
    /dev/null-journal beside it. Another file that is not a regular one (a FIFO, a folder) is refused."""
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        return False
    except OSError as e:
        raise BadInput(p, f"cannot use as the run history ({e.strerror})") from None
    if stat.S_ISCHR(mode):
        return True
    files.refuse_sqlite_names(p, "run history")  # a link is not followed (one to /dev/null was, above: nothing kept)
    if not stat.S_ISREG(mode):
        raise BadInput(p, "the run history is not a regular file; nothing recorded")
    return False


def runs(limit: int | None = None, problems: list[str] | None = None) -> list[HistoryRow]:
    """The recorded runs, newest first; precisions as a list, times as ISO 8601 strings. Read-only: reading
    never creates, migrates or locks the file. A row that cannot be read (a history edited by hand, or written
    by another version) is left out, and ``problems`` gets one line naming it."""
    p = path()
    if p is None or not p.is_file():
        return []
    try:
        conn = sqlite3.connect(f"file:{urllib.parse.quote(str(p.resolve()))}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as e:
        raise BadInput(p, f"not a readable run history ({e})") from None
    try:
        conn.row_factory = sqlite3.Row
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if TABLE not in tables:
                if tables:
                    raise BadInput(p, f"not an nvprof-wrap run history (no {TABLE} table)")
                return []
            try:
                got = [(r[0], dict(r)) for r in conn.execute(f"SELECT rowid AS _rowid_, * FROM [{TABLE}]")]
            except sqlite3.OperationalError:  # a table without rowid: rows numbered in order instead
                got = [(n, dict(r)) for n, r in enumerate(conn.execute(f"SELECT * FROM [{TABLE}]"), 1)]
        except sqlite3.DatabaseError as e:
            raise BadInput(p, f"not a readable run history ({e})") from None
    finally:
        conn.close()
    rows = []
    for n, r in got:
        r.pop("_rowid_", None)
        try:
            rows.append(_readable(r))
        except ValueError as e:
            folder = r.get("folder")
            if problems is not None:
                problems.append(f"{p}: row {n}" + (f" ({folder})" if isinstance(folder, str) and folder else "")
                                + f" skipped: {e}")
    rows.sort(key=lambda r: r["recorded_at"], reverse=True)
    return rows[:limit] if limit else rows


def _text(v: object) -> str:
    return "" if v is None else v.decode("utf-8", errors="replace") if isinstance(v, bytes) else str(v)


def _readable(r: Mapping[str, object]) -> HistoryRow:
    """A history row of any version as runs() gives it: every column of COLUMNS, of its type (or None); raises
    ValueError naming the column whose value is not one."""
    folder = _text(r.get("folder"))
    return HistoryRow(  # in the order of COLUMNS
        folder=folder, scope=_text(r.get("scope")) or WHOLE, name=_text(r.get("name")) or Path(folder).name or "-",
        recorded_at=iso(r.get("recorded_at")), started=iso(r.get("started")), command=_text(r.get("command")),
        backend=_text(r.get("backend")), exit_code=_whole("exit_code", r.get("exit_code")),
        verdict=_text(r.get("verdict")),
        tensor_core_share=_number("tensor_core_share", r.get("tensor_core_share")),
        precisions=precisions_list(r.get("precisions")),
        kernel_time_ns=_whole("kernel_time_ns", r.get("kernel_time_ns")),
        launches=_whole("launches", r.get("launches")), health=_text(r.get("health")))


def _whole(column: str, v: object) -> int | None:
    if isinstance(v, int) and not isinstance(v, bool):
        return v  # exactly, however large (SQLite's integers are 64-bit)
    x = _number(column, v, whole=True)
    return None if x is None else int(x)


def _number(column: str, v: object, whole: bool = False) -> float | None:
    if v is None or v == "":
        return None
    try:
        x = float(v) if isinstance(v, (str, bytes, int, float)) and not isinstance(v, bool) else math.nan
    except ValueError:
        x = math.nan
    if not math.isfinite(x) or (whole and (x != int(x) or abs(x) >= 2 ** 63)):
        raise ValueError(f"{column} is {v!r:.60}, not {'a whole number' if whole else 'a finite number'}")
    return x


def resolve(name: str) -> Path:
    """A run folder from what a user typed: a path, or the name of a recorded run. A name that several recorded run
    folders carry is refused with them listed (which one was meant is not ours to guess)."""
    given = Path(name)
    if given.exists():
        return given
    folders = list(dict.fromkeys(r["folder"] for r in runs() if name in (r["name"], r["folder"])))
    if not folders:
        raise BadInput(name, "no such file, folder or recorded run (nvprof-wrap runs lists them)")
    if len(folders) > 1:
        raise BadInput(name, f"{len(folders)} recorded runs have this name; give the folder of the one meant: "
                             + "; ".join(folders[:10]) + (f"; … {len(folders) - 10} more" if len(folders) > 10 else ""))
    folder = Path(folders[0])
    if not folder.exists():
        raise BadInput(name, f"the recorded run's folder is gone: {folder}")
    return folder
