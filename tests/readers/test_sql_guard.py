"""Every query on a SQLite capture bounded and right (readers/_guard.py, readers/_sqlite.py): views and triggers
refused, duplicated lookup ids refused, a budget of VM steps, signals that end a query as themselves, per-device
busy time linear in rows — on real captures rewritten in tmp_path."""
from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvprof_wrap import readers
from nvprof_wrap.errors import BadInput, Terminated, terminate
from nvprof_wrap.readers import _guard
from nvprof_wrap.readers._sqlite import opened
from tests._paths import PUBLIC, RUNS

NSYS = RUNS / "ddp_nsys" / "nsys.sqlite"
NVPROF = PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp"
CUPTI = RUNS / "gemm_cupti" / "cupti-vm-4574.sqlite"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RECURSIVE = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT t.* FROM r, {old} t"


def copy(src: Path, tmp_path: Path, *sql: str) -> Path:
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    with sqlite3.connect(dst) as conn:
        for s in sql:
            conn.execute(s)
    conn.close()
    return dst


def cli(path: Path, timeout: float = 60) -> tuple[int, str, float]:
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "nvprof_wrap", "report", str(path), "--format", "json"],
                       check=False, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stderr.strip(), time.monotonic() - t


@pytest.mark.parametrize(("src", "table"), [(NSYS, KERNEL), (NSYS, "StringIds"),
                                            (NVPROF, "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"),
                                            (NVPROF, "StringTable"), (CUPTI, "kernel")])
def test_a_recursive_view_for_a_table_is_refused_at_once(tmp_path, src, table) -> None:
    """It ran until killed, filling temporary space; now one line, exit 2, before any query of the reader."""
    path = copy(src, tmp_path, f"ALTER TABLE {table} RENAME TO old_t",
                f"CREATE VIEW {table} AS " + RECURSIVE.format(old="old_t"))
    rc, err, took = cli(path)
    assert rc == 2 and err.count("\n") == 0, err
    assert f"{table} is a view, not a table: not as" in err and str(path) in err
    assert took < 30


def test_a_view_of_huge_names_and_a_trigger_are_refused(tmp_path) -> None:
    path = copy(NSYS, tmp_path, "ALTER TABLE StringIds RENAME TO s0",
                "CREATE VIEW StringIds AS SELECT id, printf('%.*c', 400000000, 'x') AS value FROM s0")
    with pytest.raises(BadInput, match="StringIds is a view, not a table: not as Nsight Systems writes it"):
        readers.read(path)
    (tmp_path / "t").mkdir()
    path = copy(NVPROF, tmp_path / "t", "CREATE TRIGGER tr AFTER INSERT ON StringTable BEGIN SELECT 1; END")
    with pytest.raises(BadInput, match="tr is a trigger on StringTable: not as nvprof writes it"):
        readers.read(path)


def _no_key(table: str, key: str) -> list[str]:
    """The lookup table rebuilt without its primary key, one id duplicated (another name for it)."""
    return [f"CREATE TABLE l0 AS SELECT * FROM {table}", f"DROP TABLE {table}", f"ALTER TABLE l0 RENAME TO {table}",
            f"INSERT INTO {table}({key}, value) SELECT {key}, value || ' again' FROM {table} "
            f"WHERE {key} IN (SELECT MIN(demangledName) FROM {KERNEL})" if table == "StringIds" else
            f"INSERT INTO {table}({key}, value) SELECT {key}, value || ' again' FROM {table} "
            "WHERE _id_ IN (SELECT MIN(name) FROM CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)"]


@pytest.mark.parametrize(("src", "table", "key", "profiler"), [(NSYS, "StringIds", "id", "Nsight Systems"),
                                                               (NVPROF, "StringTable", "_id_", "nvprof")])
def test_a_duplicated_lookup_id_is_refused_not_counted_twice(tmp_path, src, table, key, profiler) -> None:
    """A join on it counted 5,657 launches of 5,152 with exit 0; a clean copy without the key still reads."""
    clean = readers.read(copy(src, tmp_path, *_no_key(table, key)[:3]))
    assert sum(k.launches for k in clean.kernels) == sum(k.launches for k in readers.read(src).kernels)
    (tmp_path / "dup").mkdir()
    path = copy(src, tmp_path / "dup", *_no_key(table, key))
    with pytest.raises(BadInput, match=f"{table} has 2 rows for {key} .*: not as {profiler} writes it"):
        readers.read(path)


def test_queries_past_the_budget_stop_with_one_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(_guard, "FLOOR_STEPS", 0)
    monkeypatch.setattr(_guard, "STEPS_PER_BYTE", 1)
    monkeypatch.setenv("NVPROF_WRAP_NATIVE", "off")
    with pytest.raises(BadInput, match="queries ran past their budget"):
        readers.read(copy(NSYS, tmp_path))


def test_real_captures_read_well_inside_the_budget() -> None:
    """The budget is far above a real read: measured here, whole reads under 1/20 of it."""
    for src in (NSYS, NVPROF, CUPTI):
        used = []
        real = _guard.Budget.__call__

        def count(self, real=real, used=used):
            used.append(1)
            return real(self)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_guard.Budget, "__call__", count)
            readers.read(src)
        allowed = (_guard.FLOOR_STEPS + _guard.STEPS_PER_BYTE * src.stat().st_size) // _guard.GRAIN
        assert len(used) < allowed / 20


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_a_running_query_as_itself(signum) -> None:
    """The query stopped at once, and what the signal's handler raised comes out — not 'interrupted', also where
    the reader caught SQLite's error and went on."""
    previous = signal.signal(signal.SIGTERM, terminate) if signum == signal.SIGTERM else None
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signum))
    t = time.monotonic()
    try:
        timer.start()
        with pytest.raises(Terminated if signum == signal.SIGTERM else KeyboardInterrupt), \
                opened(NSYS, "Nsight Systems") as conn:
            with pytest.raises(sqlite3.OperationalError):
                conn.execute("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
                             "SELECT COUNT(*) FROM r").fetchone()
            conn.execute("SELECT COUNT(*) FROM StringIds").fetchone()  # a reader going on after the error
    finally:
        timer.cancel()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    assert time.monotonic() - t < 5


@pytest.mark.parametrize("native", ["on", "off"])
def test_twenty_thousand_devices_take_time_linear_in_rows(tmp_path, monkeypatch, native) -> None:
    """A query per device scanned every table once per device: 24 s without the compiled helper. Now one pass."""
    monkeypatch.setenv("NVPROF_WRAP_NATIVE", native)
    path = copy(NSYS, tmp_path, *[f"INSERT INTO {KERNEL} SELECT * FROM {KERNEL}"] * 3,
                f"UPDATE {KERNEL} SET deviceId = rowid % 20000")
    t = time.monotonic()
    capture = readers.read(path)
    assert time.monotonic() - t < 15
    assert len({a.device_id for a in capture.activity}) == 20000


# ---- property: random schema mutations of a real small capture read right, or are refused in one line ----
MUTATIONS = {
    "view": lambda t: [f"ALTER TABLE {t} RENAME TO m0", f"CREATE VIEW {t} AS SELECT * FROM m0"],
    "negative times": lambda t: [f'UPDATE {t} SET start = "end" + 5 WHERE rowid % 7 = 0'],
    "absurd times": lambda t: [f'UPDATE {t} SET "end" = 9223372036854775807 WHERE rowid % 5 = 0'],
    "many devices": lambda t: [f"UPDATE {t} SET deviceId = rowid % 3000"],
    "odd devices": lambda t: [f"UPDATE {t} SET deviceId = -9223372036854775807 WHERE rowid % 3 = 0"],
    "huge name": lambda t: [("UPDATE StringIds SET value = printf('%.*c', 300000, 'k') WHERE id = "
                             f"(SELECT MIN(demangledName) FROM {KERNEL})")],
}
SAME = {"odd devices", "many devices", "huge name"}  # launches and their total time keep their meaning


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(MUTATIONS)), st.sampled_from([KERNEL, "CUPTI_ACTIVITY_KIND_MEMCPY"]),
       st.sampled_from(["on", "off"]))
def test_mutated_captures_read_right_or_are_refused_in_one_line(tmp_path_factory, mutation, table, native) -> None:
    tmp = tmp_path_factory.mktemp("m")
    if mutation in ("many devices", "odd devices", "huge name") and table != KERNEL:
        table = KERNEL
    path = copy(NSYS, tmp, *MUTATIONS[mutation](table))
    os.environ["NVPROF_WRAP_NATIVE"] = native
    t = time.monotonic()
    try:
        capture = readers.read(path)
    except BadInput as e:
        assert mutation == "view" and "\n" not in str(e)
        return
    finally:
        os.environ.pop("NVPROF_WRAP_NATIVE", None)
    assert time.monotonic() - t < 30
    assert mutation != "view"
    clean = readers.read(NSYS)
    assert sum(k.launches for k in capture.kernels) == sum(k.launches for k in clean.kernels)
    if mutation in SAME:
        assert sum(k.total_ns for k in capture.kernels) == sum(k.total_ns for k in clean.kernels)
    assert all(len(k.name) <= 100_001 for k in capture.kernels)
