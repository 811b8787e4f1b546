"""Run history: every `run`, and every `report` of a run folder, as one row of one SQLite database that
sqlite-utils writes (browse it with Datasette: `datasette ~/.local/share/nvprof-wrap/history.sqlite`).

Where: $NVPROF_WRAP_HISTORY (a file), else $XDG_DATA_HOME/nvprof-wrap/history.sqlite, else
~/.local/share/nvprof-wrap/history.sqlite. NVPROF_WRAP_HISTORY=off records nothing. A history that cannot be
written never fails the command that reports (one warning line at most, from the CLI).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.store import sqlite_utils

TABLE = "runs"
COLUMNS = {"folder": str, "name": str, "recorded_at": float, "started": str, "command": str, "backend": str,
           "exit_code": int, "verdict": str, "tensor_core_share": float, "precisions": str, "kernel_time_ns": int,
           "launches": int, "health": str}


def path() -> Path | None:
    env = os.environ.get("NVPROF_WRAP_HISTORY")
    if env == "off":
        return None
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "nvprof-wrap" / "history.sqlite"


def _db(p: Path):
    p.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite_utils.Database(p)
    db.conn.execute("PRAGMA busy_timeout = 10000")
    if TABLE not in db.table_names():
        db[TABLE].create(COLUMNS, pk="folder", if_not_exists=True)
    return db


def record(folder: Path, report, manifest: dict | None) -> Path | None:
    """Upsert the row of a run folder (one row per folder: the latest report of it). Returns the history's path."""
    p = path()
    if p is None:
        return None
    m = manifest or {}
    v = report.verdict
    row = {"folder": str(folder.resolve()), "name": folder.name, "recorded_at": time.time(),
           "started": str(m.get("started") or ""), "command": " ".join(map(str, m.get("command") or [])),
           "backend": str(m.get("backend") or ""), "exit_code": m.get("exit_code"), "verdict": v.tensor_cores,
           "tensor_core_share": round(v.tc_fraction, 6), "precisions": " + ".join(v.precisions),
           "kernel_time_ns": v.kernel_ns, "launches": v.launches,
           "health": report.health.status if report.health else ""}
    db = _db(p)
    try:
        with db.conn:
            db[TABLE].upsert(row, pk="folder")
    finally:
        db.conn.close()
    return p


def runs(limit: int | None = None) -> list[dict]:
    """The recorded runs, newest first."""
    p = path()
    if p is None or not p.is_file():
        return []
    db = _db(p)
    try:
        sql = f"SELECT * FROM {TABLE} ORDER BY recorded_at DESC" + (" LIMIT ?" if limit else "")
        return [dict(r) for r in db.query(sql, [limit] if limit else [])]
    finally:
        db.conn.close()


def resolve(name: str) -> Path:
    """A run folder from what a user typed: a path, or the name of a recorded run (the newest with that name)."""
    given = Path(name)
    if given.exists():
        return given
    hits = [r for r in runs() if name in (r["name"], r["folder"])]
    if not hits:
        raise BadInput(name, "no such file, folder or recorded run (nvprof-wrap runs lists them)")
    folder = Path(hits[0]["folder"])
    if not folder.exists():
        raise BadInput(name, f"the recorded run's folder is gone: {folder}")
    return folder
