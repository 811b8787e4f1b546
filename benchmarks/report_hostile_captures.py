"""Hostile captures and run folders (issue 44), and how `report` meets each: exit code, time, peak memory, the one
line it says, and whether anything outside the input changed.

    python -m benchmarks.hostile_captures make DIR
    python -m benchmarks.hostile_captures measure DIR [--python VENV/bin/python] [--timeout 60] [--mem-gb 3]

`make` builds each input from a real H200 capture of this repository (tests/data/h200_runs/ddp_nsys: two GPUs,
3,098 launches); `measure` runs `report INPUT --format json` on each in a fresh process under an address-space
limit (benchmarks/pathological.measure_one) — with --python, that interpreter's installed nvprof-wrap (a fresh venv
with the wheel: what users get). Each case names what it must give: an exit code, and for the cases that read, the
launches the committed capture holds. The results are in docs/reliability.md.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from benchmarks.pathological import ROOT, measure_one

SRC = ROOT / "tests" / "data" / "h200_runs" / "ddp_nsys" / "nsys.sqlite"
RUN = ROOT / "tests" / "data" / "h200_runs" / "gemm_nsys"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
SUMMARY_MAGIC = b'{"nvprof_wrap_summary": 1'  # readers/summary.py


def _copy(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(SRC, folder / name))


def _edit(db: Path, *sqls: str) -> None:
    with sqlite3.connect(db, isolation_level=None) as c:
        for sql in sqls:
            c.execute(sql)
    c.close()


def _dying_writer(db: Path, setup: str, *sqls: str) -> None:
    """sqls run by a process that dies right after (os._exit): what a killed writer leaves beside the file."""
    code = (f"import os, sqlite3\nc = sqlite3.connect({str(db)!r}, isolation_level=None)\n{setup}\n"
            + "".join(f"c.execute({q!r})\n" for q in sqls) + "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def make(folder: Path) -> dict[str, dict]:
    """The inputs, and what each must give: {"rc": code, "launches": n (reads), "outside": path (must not change)}."""
    folder.mkdir(parents=True, exist_ok=True)
    launches = sqlite3.connect(f"file:{SRC}?mode=ro&immutable=1", uri=True).execute(
        f"SELECT COUNT(*) FROM {KERNEL}").fetchone()[0]
    cases: dict[str, dict] = {}
    db = _copy(folder, "view_recursive.sqlite")
    _edit(db, f"DROP TABLE {KERNEL}", f"CREATE VIEW {KERNEL} AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL "
              "SELECT i + 1 FROM n) SELECT i AS start, i + 1 AS end, 0 AS deviceId, 0 AS shortName FROM n")
    cases[db.name] = {"rc": 2}
    db = _copy(folder, "view_huge_names.sqlite")
    _edit(db, "ALTER TABLE StringIds RENAME TO ids", "CREATE VIEW StringIds AS SELECT id, "
              "value || printf('%.*c', 100000000, 'x') AS value FROM ids")
    cases[db.name] = {"rc": 2}
    db = _copy(folder, "devices_20000.sqlite")
    _edit(db, f"UPDATE {KERNEL} SET deviceId = rowid % 20000")
    cases[db.name] = {"rc": 0, "launches": launches}
    db = _copy(folder, "duplicate_string_id.sqlite")
    _edit(db, "CREATE TABLE ids AS SELECT * FROM StringIds", "DROP TABLE StringIds",
          "CREATE TABLE StringIds (id INTEGER NOT NULL, value TEXT NOT NULL)",
          "INSERT INTO StringIds SELECT * FROM ids", "DROP TABLE ids",
          f"INSERT INTO StringIds SELECT id, value FROM StringIds WHERE id = (SELECT shortName FROM {KERNEL} LIMIT 1)")
    cases[db.name] = {"rc": 2}
    db = _copy(folder / "hot_journal", "x.sqlite")  # an interrupted write moving launches to another device
    _dying_writer(db, "c.execute('PRAGMA cache_size=2'); c.execute('BEGIN')",
                  f"UPDATE {KERNEL} SET deviceId = 1 - deviceId WHERE rowid > 26",
                  "CREATE TABLE spill AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                  "WHERE i < 3000) SELECT i, randomblob(200) FROM n")
    cases["hot_journal"] = {"rc": 0, "launches": launches}
    db = _copy(folder / "wal", "x.sqlite")  # every launch twice, committed only in the WAL
    _dying_writer(db, "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')",
                  f"INSERT INTO {KERNEL} SELECT * FROM {KERNEL}")
    cases["wal"] = {"rc": 0, "launches": 2 * launches}
    bomb = folder / "bomb.summary.gz"  # a summary that unpacks to 1.2 GiB of spaces
    with gzip.open(bomb, "wb", compresslevel=9) as g:
        g.write(SUMMARY_MAGIC + b', "body": ')
        for _ in range(1200):
            g.write(b" " * (1 << 20))
    cases[bomb.name] = {"rc": 2}
    nested = folder / "nested_summary"  # a good capture beside a summary nested 200,000 levels
    nested.mkdir(exist_ok=True)
    shutil.copy(SRC, nested / "nsys.sqlite")
    with gzip.open(nested / "deep.summary.gz", "wb") as g:
        g.write(SUMMARY_MAGIC + b', "body": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")
    cases[nested.name] = {"rc": 0, "launches": launches}
    run, outside = folder / "run_link", folder / "outside"  # a run folder whose run.sqlite is a dangling link
    if run.exists():
        shutil.rmtree(run)
    shutil.copytree(RUN, run, ignore=shutil.ignore_patterns("run.sqlite*"))
    outside.mkdir(exist_ok=True)
    (run / "run.sqlite").symlink_to(outside / "evil.sqlite")
    cases[run.name] = {"rc": 2, "outside": str(outside)}
    (folder / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    return cases


def _state(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))} if folder.exists() else {}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("make", "measure"))
    p.add_argument("folder", type=Path)
    p.add_argument("--python", help="an interpreter whose installed nvprof-wrap runs (default: this checkout)")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--mem-gb", type=float, default=3)
    args = p.parse_args(argv)
    if args.action == "make":
        for name, want in make(args.folder).items():
            print(f"{name:28s} must give {want}")
        return 0
    cases = json.loads((args.folder / "cases.json").read_text())
    failed = 0
    for name, want in cases.items():
        outside = Path(want["outside"]) if "outside" in want else None
        before = _state(outside) if outside else None
        r = measure_one((args.folder / name).resolve(), args.timeout, args.mem_gb, ROOT, args.python)
        ok = r["rc"] == want["rc"] and r["wall_s"] <= args.timeout and (r["rc"] == 0 or r["stderr_lines"] == 1) \
            and want.get("launches") in (None, r["launches"]) and (outside is None or _state(outside) == before)
        failed += not ok
        read = "" if r["launches"] is None else f"  {r['launches']:,} launches"
        print(f"{'ok  ' if ok else 'FAIL'} {name:28s} {r['wall_s']:6.2f} s {r['peak_rss_mb']:6d} MB  exit {r['rc']}"
              f"{read}  {r['last'][:110]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    sys.exit(main())
