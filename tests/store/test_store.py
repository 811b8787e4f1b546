"""The run store opens only its own files, never loses or mixes data, and reports what it cannot do as what it
is (issue 14). Damage and concurrent ingests: test_reliability.py."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nvprof_wrap import store as store_mod
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput, CannotWrite, IOFailure
from nvprof_wrap.pipeline.ingest import ingest
from nvprof_wrap.store import Store
from tests._paths import H200, PUBLIC, ROOT, RUNS
from tests.readers.test_bounds import one_line_error, unprivileged

CAPTURE = H200 / "nsys_two_child_processes.sqlite"  # 22 launches


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("foreign", [CAPTURE, PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp",
                                     PUBLIC / "nanzifan__nvprof-result__print-gpu-summary.csv"])
def test_a_file_that_is_not_a_store_is_refused_untouched(capsys, tmp_path, foreign):
    """`report X --store some_capture.sqlite` dropped every table of the capture; a non-SQLite file was renamed."""
    target = tmp_path / foreign.name
    shutil.copy(foreign, target)
    before = digest(target)
    code, out, err = run(capsys, "report", PUBLIC / "NVIDIA__Fuser__report1.sqlite", "--store", target)
    one_line_error(code, out, err, str(target), "not an nvprof-wrap run store", "left untouched")
    assert digest(target) == before and sorted(p.name for p in tmp_path.iterdir()) == [foreign.name]


def test_a_store_from_before_the_marker_is_still_ours_and_rebuilt(tmp_path):
    """A store written before the schema marker (tables and meta, no application_id) is recognised and rebuilt."""
    old = tmp_path / "run.sqlite"
    conn = sqlite3.connect(old)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO meta VALUES ('data_version', '2026.11.29-4')")
    conn.execute("CREATE TABLE captures (id INTEGER PRIMARY KEY, identity TEXT, path TEXT)")
    conn.execute("CREATE TABLE kernels (capture_id INTEGER, name TEXT, launches INTEGER)")
    conn.commit()
    conn.close()
    s = Store(old)
    ingest(s, [CAPTURE])
    assert s.rows("SELECT SUM(launches) AS n FROM kernels")[0]["n"] == 22
    s.close()
    assert int.from_bytes(old.read_bytes()[68:72], "big") == store_mod.APPLICATION_ID


def test_creating_a_store_is_one_transaction(tmp_path, monkeypatch):
    """Killed half-way through creating its schema, a new store holds nothing: the next open creates it whole."""
    path = tmp_path / "run.sqlite"
    original = Store._create_schema

    def fail_after_tables(self):
        original(self)
        raise KeyboardInterrupt  # anything, after every CREATE and before COMMIT

    monkeypatch.setattr(Store, "_create_schema", fail_after_tables)
    with pytest.raises(KeyboardInterrupt):
        Store(path)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
    conn.close()
    monkeypatch.setattr(Store, "_create_schema", original)
    Store(path).close()


def test_concurrent_first_reports_of_one_run_folder_wait_for_each_other(tmp_path):
    """Four `report RUN_DIR` started at once on a folder without a store: the first creates it, the others wait
    (busy timeout); none calls the healthy store damaged, all report the same 22 launches."""
    folder = tmp_path / "run"
    folder.mkdir()
    # a real run's manifest: the four reports also record the run in the history at once
    shutil.copy(RUNS / "gpt_fp32_nsys/manifest.json", folder / "manifest.json")
    shutil.copy(CAPTURE, folder / "nsys.sqlite")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "nvprof_wrap", "report", str(folder), "--format", "json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(4)]
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    assert [(code, err) for _, err, code in results] == [(0, "")] * 4
    assert {json.loads(out)["launches"] for out, _, _ in results} == {22}
    assert sorted(p.name for p in folder.iterdir() if "corrupt" in p.name) == []


def test_a_locked_store_is_reported_as_locked_never_renamed(capsys, tmp_path, monkeypatch):
    path = tmp_path / "run.sqlite"
    Store(path).close()
    monkeypatch.setattr(store_mod, "BUSY_TIMEOUT_S", 0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process writing, for longer than the busy timeout
    try:
        code, out, err = run(capsys, "report", CAPTURE, "--store", path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    one_line_error(code, out, err, str(path), "locked by another process")
    assert sorted(p.name for p in tmp_path.iterdir() if "corrupt" in p.name) == []


def test_a_read_only_store_is_reported_never_renamed(tmp_path):
    """A read-only run.sqlite was declared damaged and renamed. Named with --store: one line, exit 2. A run
    folder's own: a warning, and the report from the captures in memory."""
    folder = tmp_path / "run"
    folder.mkdir()
    # a real run's manifest: the four reports also record the run in the history at once
    shutil.copy(RUNS / "gpt_fp32_nsys/manifest.json", folder / "manifest.json")
    shutil.copy(CAPTURE, folder / "nsys.sqlite")
    s = Store(folder / "run.sqlite")
    ingest(s, [folder])
    s.close()
    (folder / "run.sqlite").chmod(0o444)
    before = digest(folder / "run.sqlite")
    cli = [sys.executable, "-m", "nvprof_wrap", "report"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        proc = subprocess.run(unprivileged([*cli, str(CAPTURE), "--store", str(folder / "run.sqlite")]),
                              capture_output=True, text=True, env=env, timeout=120, check=False)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "read-only" in proc.stderr, proc.stderr
        proc = subprocess.run(unprivileged([*cli, str(folder), "--format", "json"]), capture_output=True, text=True,
                              env=env, timeout=120, check=False)
        assert proc.returncode == 0 and json.loads(proc.stdout)["launches"] == 22, proc.stderr
        assert "is read-only: reading the captures in memory" in proc.stderr
    finally:
        (folder / "run.sqlite").chmod(0o644)
    assert digest(folder / "run.sqlite") == before and not list(folder.glob("*corrupt*"))


def test_a_full_disk_is_reported_as_such(tmp_path):
    """SQLite's own 'database or disk is full' (a page limit stands in for the disk): one line, not 'damaged'."""
    s = Store(tmp_path / "run.sqlite")
    pages = s.conn.execute("PRAGMA page_count").fetchone()[0]
    s.conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(IOFailure, match="disk full while writing the run store"):  # the machine's: exit 74
        ingest(s, [PUBLIC / "GindaChen__nsys-ai__h100_2gpu_1s.sqlite"])
    assert s.rows("SELECT COUNT(*) AS n FROM captures")[0]["n"] == 0
    s.close()


def _stored(path: Path, edit: str) -> None:
    """A store of CAPTURE at path, edited by one SQL statement."""
    s = Store(path)
    ingest(s, [CAPTURE])
    s.conn.execute(edit)
    s.conn.commit()
    s.close()


def test_null_launches_in_a_store_is_one_line(capsys, tmp_path):
    path = tmp_path / "run.sqlite"
    _stored(path, "UPDATE kernels SET launches = NULL")
    code, out, err = run(capsys, "report", CAPTURE, "--store", path)
    one_line_error(code, out, err, str(path), "damaged run store")


def test_a_run_folders_store_drops_a_capture_that_was_overwritten(capsys, tmp_path):
    """run.sqlite kept a capture whose file had been overwritten: both were counted."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "manifest.json").write_text("{}")
    shutil.copy(CAPTURE, folder / "capture.sqlite")
    code, out, _ = run(capsys, "report", folder, "--format", "json")
    assert code == 0 and json.loads(out)["launches"] == 22
    shutil.copy(H200 / "nsys_torch_ops.sqlite", folder / "capture.sqlite")  # 122 launches, same name
    code, out, _ = run(capsys, "report", folder, "--format", "json")
    assert code == 0 and json.loads(out)["launches"] == 122


def test_an_unchanged_capture_is_hashed_once(tmp_path, monkeypatch):
    calls = []
    real = store_mod.file_identity
    monkeypatch.setattr("nvprof_wrap.pipeline.ingest.file_identity", lambda p: calls.append(p) or real(p))
    s = Store(tmp_path / "run.sqlite")
    ingest(s, [CAPTURE])
    ingest(s, [CAPTURE])
    assert len(calls) == 1
    s.close()


def test_store_errors_say_what_they_are():
    for name, words in (("SQLITE_FULL", "disk full"), ("SQLITE_BUSY", "locked"), ("SQLITE_READONLY_DBMOVED",
                                                                                 "read-only")):
        e = sqlite3.OperationalError("x")
        e.sqlite_errorname = name
        assert words in str(store_mod.store_error(Path("s.sqlite"), e))
    e = sqlite3.DatabaseError("odd")
    assert isinstance(store_mod.store_error(None, e), BadInput)
    for name, kind in (("SQLITE_FULL", IOFailure), ("SQLITE_IOERR_WRITE", IOFailure), ("SQLITE_BUSY", CannotWrite),
                       ("SQLITE_READONLY", CannotWrite)):  # the machine's storage: 74; the path chosen: 2
        e = sqlite3.OperationalError("x")
        e.sqlite_errorname = name
        assert type(store_mod.store_error(Path("s.sqlite"), e)) is kind, name


def test_a_store_written_by_an_older_reader_is_read_again_not_summed(tmp_path, capsys):
    """A run folder's store keeps what a reader made of each capture. When readers change what they extract (here:
    GPU idle measured from the first kernel, no longer from the first start-up copy), an older store must not go on
    reporting the old numbers — nor be summed with the new ones."""
    run = tmp_path / "gpt_fp32"
    shutil.copytree(RUNS / "gpt_fp32_nsys", run, ignore=shutil.ignore_patterns("run.sqlite*"))
    assert main(["report", str(run), "--format", "json"]) == 0
    fresh = json.loads(capsys.readouterr().out)
    conn = sqlite3.connect(run / "run.sqlite")
    with conn:  # as an older version left it: no reader version in the identity, another busy time
        conn.execute("UPDATE captures SET identity = substr(identity, 1, instr(identity, '@') - 1)")
        conn.execute("UPDATE activity SET busy_ns = 1")
    conn.close()
    assert main(["report", str(run), "--format", "json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["launches"] == fresh["launches"] == 10_532
    assert again["devices"][0]["busy_ns"] == fresh["devices"][0]["busy_ns"] > 1


def test_a_big_in_memory_store_moves_to_a_temporary_file_and_gives_the_same_report(tmp_path):
    """Many ranks' aggregates: past SPILL_BYTES the in-memory store goes to a temporary file (SQLite's backup)
    while the merge goes on; the report is the same, and the file goes with the store."""
    import nvprof_wrap as nw
    from nvprof_wrap.pipeline import evidence
    from nvprof_wrap.report import build

    folder = tmp_path / "caps"
    folder.mkdir()
    for f in ("cupti-vm-5269.sqlite", "cupti-vm-5270.sqlite"):
        shutil.copy(RUNS / "ddp_cupti" / f, folder / f)
    want = nw.analyze(folder)
    st = Store()
    ingest(st, [folder], workers=1)
    assert st.spill(most=10**12) is False and st.spilled is None
    assert st.spill(most=0) is True and os.path.isfile(os.path.join(st.spilled, "store.sqlite"))
    where = st.spilled
    evidence.prepare(st, None)
    got = build(st)
    assert got.kernels == want.kernels and got.processes == want.processes and got.ranks == want.ranks
    st.close()
    assert not os.path.exists(where)


def test_a_report_does_not_import_sqlite_utils_or_cxxfilt_and_a_write_that_needs_sqlite_utils_gets_it(tmp_path):
    """The report's path reads and writes the store through its sqlite3 connection: sqlite-utils (32 ms of start-up
    with click, pluggy and dateutil) is imported only for a write that needs it — static evidence's upsert that may
    add a column — and cxxfilt (4.7 ms) only for a mangled name. Both still work there."""
    sample = ROOT / "nvprof_wrap" / "samples" / "torch_ops" / "nsys_torch_ops.sqlite"
    code = (
        "import sys, json, io, contextlib\n"
        "from nvprof_wrap.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out): rc = main(['report', sys.argv[1], '--format', 'json'])\n"
        "report_modules = {m: m in sys.modules for m in ('sqlite_utils', 'cxxfilt')}\n"
        "from nvprof_wrap.store import Store\n"
        "from nvprof_wrap.classify.static import StaticVerdict\n"
        "s = Store(); s.add_static([StaticVerdict('k', 'yes', 'HMMA', 'triton-cache', 'fp16')])\n"
        "row = s.conn.execute('SELECT name, tensor_core, precision FROM static_evidence').fetchall()\n"
        "from nvprof_wrap.text.demangle import demangle\n"
        "print(json.dumps({'rc': rc, 'kernels': len(json.loads(out.getvalue())['kernels']), 'report': report_modules,"
        " 'static': row, 'after': 'sqlite_utils' in sys.modules, 'demangled': demangle('_Z3fooi')}))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(ROOT),
                                                                       "NVPROF_WRAP_HISTORY": "off"}
    r = subprocess.run([sys.executable, "-c", code, str(sample)], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0 and got["kernels"] > 0
    assert got["report"] == {"sqlite_utils": False, "cxxfilt": False}
    assert got["static"] == [["k", "yes", "fp16"]] and got["after"] is True
    assert got["demangled"] == "foo(int)"


def test_a_store_of_another_table_shape_is_rebuilt(tmp_path):
    """meta.schema_version (the tables' shapes; a summary does not carry it) other than this one's: the store is
    emptied and rebuilt, as for another data version — its old rows are never read as the new shape."""
    path = tmp_path / "run.sqlite"
    _stored(path, "UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    s = Store(path)
    try:
        assert s.rows("SELECT COUNT(*) AS n FROM captures")[0]["n"] == 0
        version = s.rows("SELECT value FROM meta WHERE key = 'schema_version'")[0]["value"]
        assert version == str(store_mod.SCHEMA_VERSION)
        ingest(s, [CAPTURE])
        assert s.rows("SELECT SUM(launches) AS n FROM kernels")[0]["n"] == 22
    finally:
        s.close()


@pytest.mark.parametrize("huge", [False, True])
def test_step_kernels_summed_by_id_in_sql_are_their_rows_sums(tmp_path, huge):
    """A real capture's step kernels (names as ids: step_kernel_names) summed per step under flags and per (capture,
    name id) over chosen steps, in SQL: what the rows add up to in Python. huge: every row 2^62 ns, so that a step's
    sum leaves int64 — SQLite's SUM refuses it, the rows are summed in Python: exact, never a float."""
    import nvprof_wrap as nw

    path = tmp_path / "run.sqlite"
    nw.analyze(RUNS / "gpt_fp32_nsys" / "nsys.sqlite.gz", store=path)
    s = Store(path)
    try:
        if huge:
            s.conn.execute(f"UPDATE step_kernels SET total_ns = {1 << 62}")
        rows = s.conn.execute("SELECT capture_id, step, name_id, total_ns FROM step_kernels").fetchall()
        names = s.step_kernel_names([c for c, in s.conn.execute("SELECT id FROM captures")])
        assert len(rows) > 100 and {(c, i) for c, _s, i, _n in rows} <= set(names)
        flags = [(c, i, i % 2, int(i % 3 == 0), int(i % 5 == 0)) for c, i in names]
        by_key = {(c, i): f for c, i, *f in flags}
        want: dict[int, list[int]] = {}
        for c, step, i, ns in rows:
            acc = want.setdefault(step, [0, 0, 0])
            for j, f in enumerate(by_key[(c, i)]):
                acc[j] += ns * f
        assert s.step_kernel_sums(flags) == {step: tuple(v) for step, v in want.items()}
        steps = sorted({step for _c, step, _i, _n in rows})[1::2]
        totals: dict[tuple[int, int], int] = {}
        for c, step, i, ns in rows:
            if step in steps:
                totals[(c, i)] = totals.get((c, i), 0) + ns
        assert s.step_kernel_totals(sorted({c for c, _i in names}), steps) == totals
        assert huge == any(v >= 1 << 63 for v in totals.values())
    finally:
        s.close()


@pytest.mark.parametrize("exists", [False, True])
def test_the_history_waits_for_another_writer_never_locked_at_once(tmp_path, monkeypatch, exists):
    """Another process holding the history's write lock (here a connection of this one, BEGIN IMMEDIATE) while a
    report records its run: the record waits for it (the busy timeout) and is kept. Creating the table, sqlite-utils'
    own transaction read the schema before writing, and SQLite answered that reader-turned-writer 'database is
    locked' at once: 2 of 60 rounds of four concurrent first reports lost their record (a warning)."""
    import threading
    import time

    from nvprof_wrap.run import Run
    from nvprof_wrap.store import history
    from tests.system.test_files import _FakeReport

    path = tmp_path / "history.sqlite"
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", str(path))
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(RUNS / "gpt_fp32_nsys/manifest.json", folder / "manifest.json")
    if exists:
        history.record(Run(folder).history_row(), _FakeReport())
    else:
        sqlite3.connect(path).close()  # an empty database: the first record creates the table
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    failed: list[BaseException] = []

    def record() -> None:
        try:
            history.record(Run(folder).history_row(), _FakeReport())
        except BaseException as e:  # noqa: BLE001 - the test's answer
            failed.append(e)

    worker = threading.Thread(target=record)
    worker.start()
    time.sleep(0.5)  # the record meets the held lock
    assert worker.is_alive() and not failed
    holder.execute("COMMIT")
    holder.close()
    worker.join(20)
    assert not failed, failed
    rows = sqlite3.connect(path).execute(f"SELECT COUNT(*) FROM {history.TABLE}").fetchone()[0]
    assert rows == 1
