"""The run store: one SQLite database (written through sqlite-utils) holding aggregates of every
capture of a run, the classification of each distinct kernel name, and counter evidence.

This is the only module that imports sqlite_utils. Schema: docs/store-schema.md.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, astuple, fields
from pathlib import Path

from nvprof_wrap.classify import RULES_VERSION, classify_many
from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Capture


def _import_sqlite_utils():
    """sqlite-utils imports pandas and numpy when they are installed, for DataFrame support the store does not
    use: 0.27 s of every command's start-up (measured with -X importtime). Keep them out unless something in
    this process already loaded them."""
    blocked = [name for name in ("pandas", "numpy") if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # makes `import pandas` raise ImportError
    try:
        import sqlite_utils
    finally:
        for name in blocked:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]
    return sqlite_utils


sqlite_utils = _import_sqlite_utils()

SCHEMA_VERSION = 1
# Bumped whenever a reader changes what it extracts: a store written by another version is rebuilt from
# its captures rather than mixed with rows the current readers would not produce.
DATA_VERSION = "2026.11.30-13a"
_TABLES = {
    "captures": {"id": int, "identity": str, "path": str, "format": str, "size": int, "mtime_ns": int, "partial": int,
                 "notes": str, "ingested_at": float},
    "processes": {"capture_id": int, "pid": int, "name": str, "rank": int, "host": str},
    "devices": {"capture_id": int, "device_id": int, "name": str, "cc_major": int, "cc_minor": int, "sm_count": int},
    "kernels": {"capture_id": int, "pid": int, "device_id": int, "name": str, "launches": int, "total_ns": int,
                "min_ns": int, "max_ns": int},
    "memops": {"capture_id": int, "pid": int, "device_id": int, "kind": str, "direction": str, "count": int,
               "total_ns": int, "bytes": int},
    "activity": {"capture_id": int, "pid": int, "device_id": int, "first_ns": int, "last_ns": int, "busy_ns": int},
    "counters": {"capture_id": int, "name": str, "tensor_core": str, "launches": int, "metric": str, "value": float,
                 "detail": str},
    "ops": {"capture_id": int, "pid": int, "scope": str, "op": str, "name": str, "launches": int, "total_ns": int},
    "static_evidence": {"name": str, "tensor_core": str, "detail": str, "source": str},
    "classifications": {"name": str, "rules_version": str, "tensor_core": str, "precision": str, "family": str,
                        "reason": str, "rule": str},
}
_CHILDREN = ("processes", "devices", "kernels", "memops", "activity", "counters", "ops")


class Store:
    """A run store on disk, or in memory for a one-off report."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.rebuilt_from: Path | None = None
        try:
            self._open()
        except sqlite3.DatabaseError as e:
            if path is None or not Path(path).is_file():
                raise BadInput(path, f"not a usable nvprof-wrap run store ({e})") from None
            # The store only holds what the captures hold: move the damaged file aside (nothing is deleted)
            # and rebuild from the captures.
            aside = Path(f"{path}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
            Path(path).replace(aside)
            for suffix in ("-wal", "-shm", "-journal"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            self.rebuilt_from = aside
            self._open()

    def _open(self) -> None:
        conn = sqlite3.connect(str(self.path) if self.path else ":memory:", timeout=60)
        self.db = sqlite_utils.Database(conn)
        self._create()

    def _create(self) -> None:
        if self.path:
            self.db.execute("PRAGMA journal_mode=WAL")  # concurrent ingests and readers of one run store
        if "meta" in self.db.table_names():
            row = self.db.execute("SELECT value FROM meta WHERE key = 'data_version'").fetchone()
            if row is None or row[0] != DATA_VERSION:
                with self.db.conn:
                    for name in self.db.table_names():
                        self.db.execute(f"DROP TABLE [{name}]")
        elif self.db.table_names():  # tables but no meta: a store from before versioning
            with self.db.conn:
                for name in self.db.table_names():
                    self.db.execute(f"DROP TABLE [{name}]")
        if "meta" not in self.db.table_names():
            self.db["meta"].insert_all([{"key": "data_version", "value": DATA_VERSION},
                                        {"key": "schema_version", "value": str(SCHEMA_VERSION)}], pk="key")
        for name, cols in _TABLES.items():
            if name not in self.db.table_names():
                pk = {"captures": "id", "classifications": ("name", "rules_version"), "static_evidence": "name"}.get(name)
                self.db[name].create(cols, pk=pk, if_not_exists=True)
        self.db["captures"].create_index(["identity"], unique=True, if_not_exists=True)
        self.db["kernels"].create_index(["name"], if_not_exists=True)
        self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        self.db.conn.close()

    # ------------------------------------------------------------------ ingest
    def has(self, identity: str) -> bool:
        return self.db.execute("SELECT 1 FROM captures WHERE identity=?", [identity]).fetchone() is not None

    def ingest(self, capture: Capture, identity: str, size: int, mtime_ns: int) -> int | None:
        """Add one capture atomically; None when a file with this content identity is already in (also when
        the run folder was moved or copied since: the identity does not depend on the path).

        Plain executemany inside one explicit IMMEDIATE transaction: sqlite-utils' insert_all commits on its
        own, which would let a killed ingest leave half a capture behind (tests/test_reliability.py)."""
        conn = self.db.conn
        conn.execute("BEGIN IMMEDIATE")  # take the write lock first: concurrent ingests queue here
        try:
            if self.has(identity):
                conn.execute("ROLLBACK")
                return None
            cur = conn.execute(
                "INSERT INTO captures (identity, path, format, size, mtime_ns, partial, notes, ingested_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (identity, capture.path, capture.format, size, mtime_ns, int(capture.partial),
                 json.dumps(list(capture.notes)), time.time()))
            cid = cur.lastrowid
            for table in _CHILDREN:  # each child table is named after its Capture field
                self._insert(table, cid, getattr(capture, table))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return cid

    def _insert(self, table: str, cid: int, rows) -> None:
        if not rows:
            return
        cols = ["capture_id", *(f.name for f in fields(rows[0]))]
        sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        self.db.conn.executemany(sql, ((cid, *astuple(r)) for r in rows))

    def set_ranks(self, ranks: dict[int, int]) -> None:
        """Label processes with the distributed rank their launcher gave them (from a run manifest)."""
        with self.db.conn:
            self.db.conn.executemany("UPDATE processes SET rank = ? WHERE pid = ? AND rank IS NULL",
                                     [(r, pid) for pid, r in ranks.items()])

    def add_static(self, verdicts: Iterable) -> None:
        """Compiled-code evidence (nvprof_wrap.static_evidence), one row per kernel name."""
        with self.db.conn:
            self.db["static_evidence"].upsert_all((asdict(v) for v in verdicts), pk="name")

    def unknown_names(self) -> set[str]:
        return {r[0] for r in self.db.execute(
            "SELECT DISTINCT k.name FROM kernels k JOIN classifications c ON c.name = k.name "
            "AND c.rules_version = ? WHERE c.tensor_core = 'unknown'", [RULES_VERSION])}

    def classify_pending(self) -> int:
        """Classify each distinct kernel name not yet classified under the current rules; returns how many."""
        names = [r[0] for r in self.db.execute(
            "SELECT DISTINCT name FROM kernels EXCEPT SELECT name FROM classifications WHERE rules_version=?",
            [RULES_VERSION])]
        with self.db.conn:
            self.db["classifications"].insert_all(
                ({**_without(asdict(c), "evidence"), "rules_version": RULES_VERSION} for c in classify_many(names)),
                ignore=True, batch_size=500)
        return len(names)

    # ------------------------------------------------------------------ queries (used by report.py)
    def rows(self, sql: str, params: Iterable = ()) -> list[dict]:
        cur = self.db.execute(sql, list(params))
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]


def _without(d: dict, key: str) -> dict:
    d.pop(key, None)
    return d


def file_identity(path: Path, size: int, chunk: int = 1 << 20) -> str:
    """A content fingerprint: size plus a hash of the first and last MiB. Cheap for huge captures, and the
    same for a capture wherever its run folder is moved or copied."""
    h = hashlib.sha256(str(size).encode())
    with open(path, "rb") as f:
        h.update(f.read(chunk))
        if size > 2 * chunk:
            f.seek(-chunk, 2)
            h.update(f.read(chunk))
    return h.hexdigest()[:32]
