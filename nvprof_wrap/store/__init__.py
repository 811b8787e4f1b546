"""The run store: one SQLite database holding aggregates of every capture of a run, the classification of each
distinct kernel name, and counter evidence.

This is the only module that imports sqlite_utils (on first use: database()). Schema: docs/store-schema.md.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import operator
import os
import sqlite3
import stat
import sys
import time
import types
import urllib.parse
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import TYPE_CHECKING

from nvprof_wrap.errors import BadInput, CannotWrite, IOFailure
from nvprof_wrap.model import Capture, Classification, StepSeries
from nvprof_wrap.run.names import SET_ASIDE
from nvprof_wrap.store.queries import Queries, Row
from nvprof_wrap.system import files

if TYPE_CHECKING:
    from _typeshed import DataclassInstance  # model.py's flat row records

    from nvprof_wrap.classify.static import StaticVerdict


def _import_sqlite_utils() -> types.ModuleType:
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


if TYPE_CHECKING:  # the checker reads sqlite-utils' own types; at run time it is imported on first use (database)
    import sqlite_utils


def database(conn: sqlite3.Connection) -> sqlite_utils.Database:
    """sqlite-utils over a connection, imported on first use: the report's path reads and writes the store through
    its sqlite3 connection alone, and importing sqlite-utils (with click, pluggy and dateutil) cost 32 ms of every
    command's start-up (-X importtime, 2 cores). Without its plugins: loading them scans every installed
    distribution's entry points (24 ms of each command here, more beside more packages), and a plugin's
    prepare_connection hook has no business in a run store or the run history (store/history.py)."""
    module = sys.modules.get("sqlite_utils") or _import_sqlite_utils()
    db: sqlite_utils.Database = module.Database(conn, execute_plugins=False)
    return db


SCHEMA_VERSION = 3  # the tables' shapes: a store of another one is emptied and rebuilt as for another data version
# (_prepare), which a summary (it holds no table) does not carry. 3: step_kernels' names as ids (step_kernel_names).
# The one data-version knob: change it whenever what a run store holds of a capture changes (what a reader extracts,
# how it is aggregated or identified; a table's shape alone: SCHEMA_VERSION). A store whose meta.data_version differs
# is emptied and rebuilt from its captures (_prepare), and every capture's identity carries the knob
# (pipeline/ingest.py): nothing read by another version is kept, mixed or summed with what the current code makes of
# it.
# History. 2026.11.29-2: stores rebuilt when readers change. -3: captures identified by content, not path. -4: busy
# time by one streamed merge per GPU, NVTX attribution by time-line segments. 2026.11.30-1: the store marker (issue
# 14); evidence ranked per (kernel, GPU). -13: console text, nvprof metrics as counter evidence. -13a, -15: the merges
# of issues 13, 16 and 14. 2026.12.01-16: nsys session start and length, the CUPTI tracer's process start, end,
# command and parent pid in the captures table.
# Beside it until -17, READ_VERSION (readers/__init__.py) in each capture's identity, bumped when a reader's output
# changed. 2: busy time from the first to the last kernel; --window / --steps. 3: launches on threads without an open
# range count in their process main thread's ranges. 4: an nvprof summary CSV takes its GPU from the Unified Memory
# section when that names one device. 5: torch.profiler's cuda_driver launch calls (cuLaunchKernelEx) attribute their
# kernels to ops; launch calls without kernel records refused by every reader; pyprof CSV names demangled. 6: a
# gzipped capture's identity is that of what it unpacks to (x.sqlite beside x.sqlite.gz: one capture).
# 2026.12.01-17: READ_VERSION merged into this knob (issue 24); identities carry "data=" and the knob, not "read6".
# 2026.12.01-18: the hardware's tensor-pipe activity (tables hw_devices, hw_kernels, hw_series; issue 25), and the
# run's GPM samples (RUN/gpm.jsonl) part of a capture's identity.
# 2026.12.01-19c: console logs' devices also from the GPUs the log names outside the profiler's tables (TensorFlow
# and XLA start-up lines, nvprof's 'Device "…"' lines; readers/_log_gpus.py, issue 26).
# 2026.12.01-19b: nsys stats tables pasted anywhere in text / Markdown (fences, CSV, pipe tables, locale separators,
# GPUs named by headings), ncu rows without their rule columns (Duration of section exports), tensor-pipe totals as
# counter evidence (issue 26).
# 2026.12.01-19: both of the above, merged (issue 26).
# 2026.12.01-20: the per-step series (tables series, steps, step_kernels; issue 28). -21: steps.compute_busy_ns.
# 2026.12.03-22: each step's time budget (table step_parts; issue 41); FLOPs per kernel name from torch.profiler's
# recorded op shapes (table op_flops; issue 41). -23: both (a store of -22 may lack either).
# -24: pasted nsys stats tables read in their boxed layout, rows out of line, NVTX-prefixed names (issue 45).
# -25: CUDA graph launches without kernels counted as kernels; JAX steps (XLA executions); a JAX job's warm-up
# before its first step left out (table warmup; issue 43). Alongside, also -25: nvprof summaries pasted without their
# header, nvprof --metrics --csv, ncu tensor-pipe totals net of the HFMA thread-instruction bound (issue 45).
# -26: both -25s, and the commands nsys recorded (captures of different jobs told apart; issue 45), merged.
# -27: JAX steps and warm-up by one program (module and id); kernels named by StringIds id 0 are names nsys lost.
# -28: the JAX / TensorFlow profilers' step marks (StepTraceAnnotation) in XSpace and trace JSON captures.
# -29: each step's communication kernels' starts (table step_collectives; issue 47).
# -30: FLOPs from the op shapes `run --annotate torch` records in NVTX ranges (readers/_nvtx_flops.py; issue 41).
# -31: a series' step kernels held as columns (model.StepKernels): a summary written before holds them one record
# each, and is refused as another version's (the store's tables are as they were).
# -32: where in XLA's CUDA graphs each kernel ran (table graph_nodes): the FLOPs of cuBLAS's kernels in them; the
# steps a series marked, one by one (series.marked: its rows may fold them).
# -33: the program whose executions are a JAX job's steps (series.program): MFU's FLOPs a step are that program's.
DATA_VERSION = "2026.12.06-33"
# The marker in the SQLite header (PRAGMA application_id, "nvwr"): a file without it is not opened as a store.
APPLICATION_ID = 0x6E767772
_TABLES: dict[str, dict[str, type]] = {
    "captures": {"id": int, "identity": str, "path": str, "file": str, "format": str, "size": int, "mtime_ns": int,
                 "ino": int, "partial": int, "notes": str, "ingested_at": float, "started_ns": int, "ended_ns": int,
                 "command": str, "ppid": int},
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
    "op_flops": {"capture_id": int, "pid": int, "op": str, "name": str, "precision": str, "flops": float,
                 "launches": int, "total_ns": int},
    "hw_devices": {"capture_id": int, "device_id": int, "source": str, "interval_ns": int, "samples": int,
                   "busy_samples": int, "sm_busy": float, "tensor_busy": float},
    "hw_kernels": {"capture_id": int, "device_id": int, "name": str, "source": str, "interval_ns": int,
                   "samples": int, "tensor": float, "hmma": float, "imma": float, "dfma": float},
    "hw_series": {"capture_id": int, "device_id": int, "t_ns": int, "dt_ns": int, "sm": float, "tensor": float},
    "series": {"capture_id": int, "kind": str, "source": str, "bucket_ns": int, "host": str, "folded": int,
               "marked": int, "program": str},
    "steps": {"capture_id": int, "pid": int, "step": int, "start_ns": int, "end_ns": int, "launches": int,
              "kernel_ns": int, "copy_ns": int, "busy_ns": int, "compute_busy_ns": int, "api_launch_ns": int,
              "api_sync_ns": int, "api_alloc_ns": int, "api_other_ns": int, "api_union_ns": int},
    # a step kernel's name as its index into the capture's step_kernel_names (tens of thousands of rows of a
    # thousand names: ints are stored, read and summed in SQL at a fraction of the text's cost)
    "step_kernels": {"capture_id": int, "pid": int, "step": int, "name_id": int, "launches": int, "total_ns": int},
    "step_kernel_names": {"capture_id": int, "name_id": int, "name": str},
    "step_parts": {"capture_id": int, "pid": int, "step": int, "part": str, "ns": int},
    "step_collectives": {"capture_id": int, "pid": int, "step": int, "nth": int, "start_ns": int, "name": str},
    "warmup": {"capture_id": int, "pid": int, "device_id": int, "name": str, "launches": int, "total_ns": int,
               "program": str},
    "graph_nodes": {"capture_id": int, "pid": int, "module": str, "graph": int, "slot": int, "child": int,
                    "name": str, "launches": int, "total_ns": int},
    "static_evidence": {"name": str, "tensor_core": str, "detail": str, "source": str, "precision": str},
    "classifications": {"name": str, "rules_version": str, "tensor_core": str, "precision": str, "family": str,
                        "reason": str, "rule": str},
}
_KEYS = {"captures": ("id",), "classifications": ("name", "rules_version"), "static_evidence": ("name",)}
_INDEXES = ("CREATE UNIQUE INDEX idx_captures_identity ON captures(identity)",
            "CREATE INDEX idx_captures_file ON captures(file)", "CREATE INDEX idx_kernels_name ON kernels(name)")
_SQL_TYPE = {int: "INTEGER", str: "TEXT", float: "FLOAT"}
_CHILDREN = ("processes", "devices", "kernels", "memops", "activity", "counters", "ops", "op_flops", "hw_devices",
             "hw_kernels", "hw_series", "warmup", "graph_nodes")
# a capture's StepSeries (Store._insert_series)
_SERIES = ("series", "steps", "step_kernels", "step_kernel_names", "step_parts", "step_collectives")
_LEGACY = set(_TABLES) | {"meta"}  # a store written before the marker: these tables, meta.data_version among them
BUSY_TIMEOUT_S = 60


# An in-memory store larger than this moves to a temporary file while captures are merged (Store.spill).
SPILL_BYTES = 48 << 20


class Store(Queries):
    """A run store on disk, or in memory for a one-off report.

    A file is opened only when it is a store: it carries the marker, or is a store from before the marker (its
    tables and meta), or is new (missing or empty). Anything else, an Nsight Systems capture passed as --store
    say, is refused untouched. A store whose pages are damaged is renamed aside and rebuilt from the captures (it
    holds only what they hold); a locked, read-only or full one is reported as such."""

    def __init__(self, path: Path | None = None, mirror: Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.mirror = mirror  # the run folder whose captures this store holds, exactly (ingest prunes the rest)
        self.rebuilt_from: Path | None = None
        self.spilled: str | None = None  # the temporary folder an in-memory store moved to (spill)
        if self.path is None:
            self.conn = sqlite3.connect(":memory:")
            self._prepare()
            return
        files.refuse_sqlite_names(self.path, "run store")  # a link, FIFO or device there is refused, not followed
        if _ownership(self.path) == "damaged":
            self._set_aside(self.path)
        try:
            self._open(self.path)
        except sqlite3.DatabaseError as e:
            if _code(e) not in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
                raise store_error(self.path, e) from None
            self.conn.close()
            self._set_aside(self.path)
            try:
                self._open(self.path)
            except sqlite3.DatabaseError as e2:
                raise store_error(self.path, e2) from None

    def _open(self, path: Path) -> None:
        self.conn = sqlite3.connect(files.sqlite_uri(path, "run store"), uri=True, timeout=BUSY_TIMEOUT_S)
        self.conn.execute("PRAGMA journal_mode=WAL")  # concurrent ingests and readers of one run store
        self._prepare()

    def _set_aside(self, path: Path) -> None:
        """The store only holds what the captures hold: move the damaged file aside (nothing is deleted)."""
        aside = Path(f"{path}{SET_ASIDE}{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            files.replace(path, aside, "damaged run store's new name")
            for suffix in ("-wal", "-shm", "-journal"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        except OSError as e:
            raise CannotWrite(path, f"damaged run store, and it cannot be set aside ({e.strerror})") from None
        self.rebuilt_from = aside

    def _prepare(self) -> None:
        """Create the schema, or rebuild it for another data version: one transaction, so that concurrent
        first-time opens wait for each other (busy timeout) and never see half a schema."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('data_version', 'schema_version')"
                                        ).fetchall()) if "meta" in names else {}
            if version.get("data_version") != DATA_VERSION or version.get("schema_version") != str(SCHEMA_VERSION):
                for name in names & _LEGACY:  # ours only (_ownership checked the file)
                    conn.execute(f"DROP TABLE [{name}]")
                self._create_schema()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _create_schema(self) -> None:
        conn = self.conn
        for name, cols in _TABLES.items():
            defs = [f"[{c}] {_SQL_TYPE[t]}" + (" PRIMARY KEY" if _KEYS.get(name) == (c,) and c == "id" else "")
                    for c, t in cols.items()]
            key = _KEYS.get(name)
            if key and key != ("id",):
                defs.append(f"PRIMARY KEY ({', '.join(f'[{k}]' for k in key)})")
            conn.execute(f"CREATE TABLE [{name}] ({', '.join(defs)})")
        for sql in _INDEXES:
            conn.execute(sql)
        conn.execute("CREATE TABLE [meta] ([key] TEXT PRIMARY KEY, [value] TEXT)")
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [("data_version", DATA_VERSION),
                                                            ("schema_version", str(SCHEMA_VERSION))])
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        self.conn.close()
        if self.spilled is not None:
            import shutil

            shutil.rmtree(self.spilled, ignore_errors=True)
            self.spilled = None

    def spill(self, most: int = SPILL_BYTES) -> bool:
        """An in-memory store past ``most`` bytes moves to a temporary file (SQLite's backup), so that merging many
        ranks' aggregates holds SQLite's page cache, not every rank's rows, in memory (256 generated ranks: 32 MB of
        aggregates). True when it moved. Between ingests only: temporary tables do not move."""
        if self.path is not None or self.spilled is not None:
            return False
        conn = self.conn
        if conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0] < most:
            return False
        from nvprof_wrap.system import tempdirs

        folder = tempdirs.make("store")
        disk = sqlite3.connect(os.path.join(folder, "store.sqlite"))
        try:
            conn.backup(disk)
        except BaseException:
            disk.close()
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            raise
        conn.close()
        disk.execute("PRAGMA journal_mode=OFF")  # a scratch copy: nothing to recover after a crash
        disk.execute("PRAGMA synchronous=OFF")
        self.conn, self.spilled = disk, folder
        return True

    # ------------------------------------------------------------------ ingest
    def has(self, identity: str) -> bool:
        return self.conn.execute("SELECT 1 FROM captures WHERE identity=?", [identity]).fetchone() is not None

    def known_identity(self, file: str, st: os.stat_result) -> str | None:
        """The identity of a file ingested before and unchanged since (same path, size, mtime and inode): its
        content need not be hashed again."""
        row = self.conn.execute(
            "SELECT identity FROM captures WHERE file = ? AND size = ? AND mtime_ns = ? AND ino = ?",
            [file, st.st_size, st.st_mtime_ns, st.st_ino]).fetchone()
        return row[0] if row else None

    def forget_except(self, identities: Container[str]) -> int:
        """Remove every capture whose identity is not in ``identities`` (files overwritten or removed since
        they were ingested); returns how many."""
        gone = [r[0] for r in self.conn.execute("SELECT id, identity FROM captures") if r[1] not in identities]
        if gone:
            with self._writing():
                marks = ",".join("?" * len(gone))
                for table in (*_CHILDREN, *_SERIES):
                    self.conn.execute(f"DELETE FROM {table} WHERE capture_id IN ({marks})", gone)
                self.conn.execute(f"DELETE FROM captures WHERE id IN ({marks})", gone)
        return len(gone)

    def ingest(self, capture: Capture, identity: str, st: os.stat_result, file: str) -> int | None:
        """Add one capture atomically; None when a file with this content identity is already in (also when
        the run folder was moved or copied since: the identity does not depend on the path).

        Plain executemany inside one explicit IMMEDIATE transaction: sqlite-utils' insert_all commits on its
        own, which would let a killed ingest leave half a capture behind (tests/whole/test_reliability.py)."""
        conn = self.conn
        with self._writing():
            if self.has(identity):
                return None
            cur = conn.execute(
                "INSERT INTO captures (identity, path, file, format, size, mtime_ns, ino, partial, notes, ingested_at, "
                "started_ns, ended_ns, command, ppid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (identity, capture.path, file, capture.format, st.st_size, st.st_mtime_ns, st.st_ino,
                 int(capture.partial), json.dumps(list(capture.notes)), time.time(), capture.started_ns,
                 capture.ended_ns, capture.command, capture.ppid))
            cid = cur.lastrowid
            assert cid is not None  # set by every INSERT
            for table in _CHILDREN:  # each child table is named after its Capture field
                self._insert(table, cid, getattr(capture, table))
            if capture.series is not None:
                self._insert_series(cid, capture.series)
        return cid

    def _insert_series(self, cid: int, series: StepSeries) -> None:
        conn = self.conn
        conn.execute("INSERT INTO series (capture_id, kind, source, bucket_ns, host, folded, marked, program) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (cid, series.kind, series.source, series.bucket_ns, series.host, series.folded, series.marked,
                      series.program))
        kinds, known = ("launch", "sync", "alloc", "other"), series.host != "none"
        conn.executemany(
            "INSERT INTO steps (capture_id, pid, step, start_ns, end_ns, launches, kernel_ns, copy_ns, busy_ns, "
            "compute_busy_ns, api_launch_ns, api_sync_ns, api_alloc_ns, api_other_ns, api_union_ns) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((cid, r.pid, r.step, r.start_ns, r.end_ns, r.launches, r.kernel_ns, r.copy_ns, r.busy_ns,
              r.compute_busy_ns,
              *((dict(r.api_ns).get(k, 0) if known else None) for k in kinds),
              r.api_union_ns) for r in series.steps))
        k = series.kernels  # columns, zipped: no record a row
        conn.executemany(f"INSERT INTO step_kernel_names (capture_id, name_id, name) VALUES ({int(cid)}, ?, ?)",
                         enumerate(k.names))
        conn.executemany(f"INSERT INTO step_kernels (capture_id, pid, step, name_id, launches, total_ns) "
                         f"VALUES ({int(cid)}, ?, ?, ?, ?, ?)", zip(k.pid, k.step, k.name, k.launches, k.total_ns))
        self._insert("step_collectives", cid, series.collectives)
        conn.executemany("INSERT INTO step_parts (capture_id, pid, step, part, ns) VALUES (?, ?, ?, ?, ?)",
                         ((cid, r.pid, r.step, part, ns) for r in series.steps for part, ns in r.parts_ns))

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """One IMMEDIATE transaction (the write lock first: concurrent writers queue here)."""
        conn = self.conn
        with self._errors():
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
                    conn.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's errors as what they are: disk full, locked, read-only (store_error)."""
        try:
            yield
        except sqlite3.OperationalError as e:
            raise store_error(self.path, e) from None

    def damage(self) -> str | None:
        """What makes the rows unusable for a report (a store edited or damaged by hand), or None."""
        # A count or time that is missing, not a number, or below zero (the readers never write one: they count a
        # negative duration without its time) would be summed into every total.
        bad = "{c} IS NULL OR typeof({c}) NOT IN ('integer', 'real') OR {c} < 0"
        maybe = "typeof({c}) NOT IN ('integer', 'real', 'null') OR {c} < 0"  # NULL: launches without a time
        n = self.conn.execute(f"SELECT COUNT(*) FROM kernels WHERE name IS NULL OR {bad.format(c='launches')} OR "
                              f"{maybe.format(c='total_ns')}").fetchone()[0]
        m = self.conn.execute(f"SELECT COUNT(*) FROM memops WHERE {bad.format(c='count')} OR "
                              f"{bad.format(c='total_ns')} OR {maybe.format(c='bytes')}").fetchone()[0]
        o = self.conn.execute(f"SELECT COUNT(*) FROM ops WHERE {bad.format(c='launches')} OR "
                              f"{maybe.format(c='total_ns')}").fetchone()[0]
        if n or m or o:
            rows = ", ".join(f"{k:,} {what} row(s)" for k, what in ((n, "kernel"), (m, "memory-operation"), (o, "op"))
                             if k)
            return (f"damaged run store: {rows} with a count or time that is missing, not a number or negative; "
                    "delete it to rebuild it from the captures")
        return None

    def _insert(self, table: str, cid: int, rows: Sequence[DataclassInstance]) -> None:
        if not rows:
            return
        # The model's rows are flat: their fields as they are (dataclasses.astuple deep-copies each value: 0.35 s
        # for the 6,000 op rows of a torch.profiler trace), those the table keeps (a Gpu's driver is the manifest's).
        # The capture's id is written into the statement and each row is one attrgetter call: no Python frame per
        # row (half the time of a generator's tuple per row).
        names = [f.name for f in fields(rows[0]) if f.name in _TABLES[table]]
        sql = f"INSERT INTO {table} (capture_id, {', '.join(names)}) VALUES ({int(cid)}, {', '.join('?' * len(names))})"
        get = operator.attrgetter(*names)
        self.conn.executemany(sql, map(get, rows) if len(names) > 1 else ((get(r),) for r in rows))

    def set_ranks(self, ranks: dict[int, int]) -> None:
        """Label processes with the distributed rank their launcher gave them (from a run manifest)."""
        with self._errors(), self.conn:
            self.conn.executemany("UPDATE processes SET rank = ? WHERE pid = ? AND rank IS NULL",
                                     [(r, pid) for pid, r in ranks.items()])

    def add_static(self, verdicts: Iterable[StaticVerdict]) -> None:
        """Compiled-code evidence (classify/static.py, classify/xla_hlo.py), one row per kernel name; a store from
        before the precision column gains it. None: nothing written, and sqlite-utils not imported (database)."""
        rows = [asdict(v) for v in verdicts]
        if not rows:
            return
        with self._errors(), self.conn:
            database(self.conn).table("static_evidence").upsert_all(rows, pk="name", alter=True)

    def add_classifications(self, classifications: Iterable[Classification], rules_version: str) -> None:
        """Name-rule verdicts, cached per rules version (pipeline/evidence.py decides what to add)."""
        with self._errors(), self.conn:  # one executemany (asdict and sqlite-utils' batches: 0.07 s, 1.5k names)
            self.conn.executemany(
                "INSERT OR IGNORE INTO classifications (name, rules_version, tensor_core, precision, family, reason, "
                "rule) VALUES (?, ?, ?, ?, ?, ?, ?)",
                ((c.name, rules_version, c.tensor_core, c.precision, c.family, c.reason, c.rule)
                 for c in classifications))

    def rows(self, sql: str, params: Iterable[object] = ()) -> list[Row]:
        cur = self.conn.execute(sql, list(params))
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]


def file_identity(path: Path, chunk: int = 1 << 20) -> str:
    """A content fingerprint: SHA-256 of the whole content, streamed (a partial hash can take a different file for
    the same one). A gzipped file's content is what it unpacks to: x.sqlite and x.sqlite.gz holding the same bytes
    are one capture, read once (a gzip stream that does not unpack — damaged, or past MAX_GUNZIPPED_SQLITE_BYTES —
    is fingerprinted as it is on disk; its reader says what is wrong). The same for a capture wherever its run
    folder is moved or copied; the store remembers it per (path, size, mtime, inode), so an unchanged file is
    hashed once."""
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    if gz:
        unpacked = _gunzipped_identity(path, chunk)
        if unpacked is not None:
            return unpacked
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()[:32]


def _gunzipped_identity(path: Path, chunk: int) -> str | None:
    """None past the gzip budget (a bomb: unpacked up to MAX_GUNZIPPED_SQLITE_BYTES, 32 GiB, it cost minutes
    before its reader was asked) or for a damaged stream."""
    import zlib

    from nvprof_wrap.system.bounded import Gunzip
    from nvprof_wrap.system.limits import GUNZIP_FREE_JSON_BYTES, MAX_GUNZIPPED_SQLITE_BYTES

    h = hashlib.sha256()
    try:
        with Gunzip(path, MAX_GUNZIPPED_SQLITE_BYTES, GUNZIP_FREE_JSON_BYTES) as g:
            while block := g.read(chunk):
                h.update(block)
    except (OSError, EOFError, zlib.error, BadInput):
        return None
    return h.hexdigest()[:32]


def _ownership(path: Path) -> str:
    """'new', 'ours' or 'damaged' (ours, with damaged pages) — or BadInput: not a store, or not readable."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return "new"
    except OSError as e:
        raise BadInput(path, f"cannot use as run store ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(path, "cannot use as run store: not a regular file")
    if st.st_size == 0:
        return "new"
    try:
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError as e:
        raise BadInput(path, f"cannot read the run store ({e.strerror})") from None
    if not header.startswith(b"SQLite format 3\x00"):
        raise BadInput(path, "not an nvprof-wrap run store (not an SQLite file); left untouched")
    if len(header) == 100 and int.from_bytes(header[68:72], "big") == APPLICATION_ID:
        return "ours" if _readable(path) else "damaged"
    tables = _tables_read_only(path)
    if tables == set():
        return "new"  # an SQLite file with nothing in it (a store whose creation was interrupted): nothing to lose
    if tables is not None and "meta" in tables and {"captures", "kernels"} <= tables <= _LEGACY:
        return "ours"  # written before the marker
    what = f"its tables: {', '.join(sorted(tables)[:4])}{', …' if len(tables) > 4 else ''}" if tables else \
        "unreadable"
    raise BadInput(path, f"not an nvprof-wrap run store ({what}); left untouched. A capture is passed as PATH, "
                         "not as --store")


def _tables_read_only(path: Path) -> set[str] | None:
    try:
        conn = sqlite3.connect(f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro", uri=True, timeout=5)
        try:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return None


def _readable(path: Path) -> bool:
    """Whether a store's schema can be read (damaged pages say SQLITE_CORRUPT / NOTADB; busy is not damage)."""
    try:
        conn = sqlite3.connect(f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro", uri=True,
                               timeout=BUSY_TIMEOUT_S)
        try:
            conn.execute("SELECT name FROM sqlite_master").fetchall()
            conn.execute("PRAGMA quick_check(1)").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        return _code(e) not in ("SQLITE_CORRUPT", "SQLITE_NOTADB")
    return True


def _code(e: sqlite3.Error) -> str:
    return getattr(e, "sqlite_errorname", "") or ""


_STORE_ERRORS = {
    "SQLITE_FULL": "disk full while writing the run store",
    "SQLITE_BUSY": f"run store locked by another process (waited {BUSY_TIMEOUT_S} s)",
    "SQLITE_LOCKED": f"run store locked by another process (waited {BUSY_TIMEOUT_S} s)",
    "SQLITE_READONLY": "run store is read-only",
    "SQLITE_PERM": "run store: permission denied",
    "SQLITE_CANTOPEN": "cannot open the run store (its folder missing or not writable?)",
    "SQLITE_IOERR": "I/O error on the run store",
}


# The machine's storage failed, not the store or the path chosen for it: IOFailure (exit 74).
_MACHINE = ("SQLITE_FULL", "SQLITE_IOERR")


def store_error(path: Path | None, e: sqlite3.Error) -> BadInput | IOFailure:
    """An SQLite error on the store as what it is, one line; never a reason to call the store damaged."""
    code = "_".join(_code(e).split("_")[:2])  # SQLITE_IOERR_WRITE → SQLITE_IOERR
    why = _STORE_ERRORS.get(code)
    if why is None:
        return BadInput(path, f"run store: {e}")
    return (IOFailure if code in _MACHINE else CannotWrite)(path, f"{why} ({e})")
