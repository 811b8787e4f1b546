"""Hostile captures and run folders (issue 44), and how `report` meets each: exit code, time, peak memory, the one
line it says, and whether anything outside the input changed — beside the untouched capture they were made from.

    python -m benchmarks report_hostile_captures [--quick]     # the same nine inputs; --quick: one round
    python -m benchmarks.report_hostile_captures make DIR
    python -m benchmarks.report_hostile_captures measure DIR [--python VENV/bin/python] [--timeout 60] [--mem-gb 3]

`make` builds each input from a real H200 capture of this repository (tests/data/h200_runs/ddp_nsys: two GPUs,
3,098 launches); `measure` runs `report INPUT --format json` on each in a fresh process under an address-space
limit (benchmarks/report_pathological_inputs.measure_one) — with --python, that interpreter's installed nvprof-wrap
(a fresh venv with the wheel: what users get). Each case names what it must give: an exit code, and for the cases
that read, the launches the committed capture holds. The results are in docs/reliability.md.
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
from typing import Any

from benchmarks.report_pathological_inputs import ROOT, measure_one, said_of
from benchmarks.suite.types import Case, Figure, Result, RunArgs

NAME = "report_hostile_captures"
MEASURES = ("report time, peak memory and exit code on nine hostile captures and run folders (recursive views, a "
            "hot journal, a WAL, a gzip bomb, a dangling run-store link), and whether each gives what it must")
FLOOR = "report on the untouched capture they are made from (tests/data/h200_runs/ddp_nsys, 3,098 launches)"
ANCHOR = "none: no other tool is held to these inputs"
TIMEOUT_S, MEM_GB = 60.0, 3.0

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


def make(folder: Path) -> dict[str, dict[str, Any]]:
    """The inputs, and what each must give: {"rc": code, "launches": n (reads), "outside": path (must not change)}."""
    folder.mkdir(parents=True, exist_ok=True)
    launches = sqlite3.connect(f"file:{SRC}?mode=ro&immutable=1", uri=True).execute(
        f"SELECT COUNT(*) FROM {KERNEL}").fetchone()[0]
    cases: dict[str, dict[str, Any]] = {}
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


def check(folder: Path, name: str, want: dict[str, Any], timeout: float, mem_gb: float,
          python: str | None = None) -> tuple[bool, dict[str, Any]]:
    """One case measured, and whether it gave what it must (its exit code, one line when refused, its launches,
    nothing changed outside it)."""
    outside = Path(want["outside"]) if "outside" in want else None
    before = _state(outside) if outside else None
    r = measure_one((folder / name).resolve(), timeout, mem_gb, ROOT, python)
    ok = r["rc"] == want["rc"] and r["wall_s"] <= timeout and (r["rc"] == 0 or r["stderr_lines"] == 1) \
        and want.get("launches") in (None, r["launches"]) and (outside is None or _state(outside) == before)
    return ok, r


def run(args: RunArgs) -> Result:
    folder = args.work_dir / "hostile"
    cases = json.loads((folder / "cases.json").read_text()) if (folder / "cases.json").exists() else make(folder)
    got: dict[str, list[tuple[bool, dict[str, Any]]]] = {name: [] for name in cases}
    floor: list[float] = []
    for _ in range(args.rounds):
        floor.append(float(measure_one(SRC, TIMEOUT_S, MEM_GB, ROOT)["wall_s"]))
        for name, want in cases.items():
            got[name].append(check(folder, name, want, TIMEOUT_S, MEM_GB))
    out = []
    for name, rs in got.items():
        ok, first = all(k for k, _ in rs), rs[0][1]
        said = said_of(first, folder) if first["launches"] is None else f"{first['launches']:,} launches read"
        out.append(Case(name, (
            Figure("untouched capture", "floor", "s", tuple(floor)),
            Figure("report", "measured", "s", tuple(float(r["wall_s"]) for _, r in rs), versus="untouched capture"),
            Figure("peak RSS", "measured", "MB", tuple(float(r["peak_rss_mb"]) for _, r in rs))),
            note=f"{'as it must' if ok else 'NOT as it must'}: exit {first['rc']}; {said}"))
    return args.result(tuple(out))


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
        ok, r = check(args.folder, name, want, args.timeout, args.mem_gb, args.python)
        failed += not ok
        read = "" if r["launches"] is None else f"  {r['launches']:,} launches"
        print(f"{'ok  ' if ok else 'FAIL'} {name:28s} {r['wall_s']:6.2f} s {r['peak_rss_mb']:6d} MB  exit {r['rc']}"
              f"{read}  {r['last'][:110]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    sys.exit(main())
