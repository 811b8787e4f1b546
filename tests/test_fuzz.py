"""Property-based fuzzing of every reader (hypothesis): damaged real captures either read or end in one line naming
the file, exit code 2, no traceback — and the run store is unchanged by a file that could not be read.

Case counts are recorded in docs/reliability.md; CI runs the same budgets (FUZZ_EXAMPLES scales them)."""
from __future__ import annotations

import gzip
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvprof_wrap.cli import main
from tests.conftest import H200, PUBLIC, ROOT

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
RUNS = ROOT / "tests" / "data" / "h200_runs"
SEEDS = {
    "nsys-sqlite": H200 / "nsys_two_child_processes.sqlite",
    "nvprof": PUBLIC / "josiahdavis__profiling-lm__net.sql",
    "cupti": next((RUNS / "gemm_cupti").glob("cupti-*.sqlite")),
    "kineto-json": PUBLIC / "facebookresearch__HolisticTraceAnalysis__inference_rank_1.json.gz",
    "nvprof-csv": PUBLIC / "nanzifan__nvprof-result__print-gpu-summary.csv",
    "pyprof-csv": PUBLIC / "josiahdavis__profiling-lm__lm.csv",
    "ncu-csv": H200 / "ncu_tensor_metrics.csv",
}
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _store_rows(store: Path) -> tuple:
    conn = sqlite3.connect(store)
    try:
        return tuple(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                     for t in ("captures", "kernels", "memops", "processes", "devices"))
    finally:
        conn.close()


def check_outcome(capsys, path: Path, template: Path) -> None:
    capsys.readouterr()  # drop anything printed before this example
    store = path.parent / "run.sqlite"  # a fresh copy per example: examples must not see each other's ingests
    shutil.copy(template, store)
    before = _store_rows(store)
    code = main(["report", str(path), "--store", str(store), "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err
        assert out == ""
        assert _store_rows(store) == before  # nothing half-ingested


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A run store that already holds one capture (so 'unchanged' is checked against real rows)."""
    s = tmp_path_factory.mktemp("store") / "template.sqlite"
    from nvprof_wrap.ingest import ingest
    from nvprof_wrap.store import Store

    st_ = Store(s)
    ingest(st_, [SEEDS["nvprof-csv"]])
    st_.close()
    return s


def _data(fmt: str) -> bytes:
    raw = SEEDS[fmt].read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


@pytest.mark.parametrize("fmt", sorted(SEEDS))
@FUZZ
@given(data=st.data())
def test_truncated_and_bit_flipped(fmt, data, tmp_path_factory, capsys, store):
    raw = _data(fmt)
    cut = data.draw(st.integers(0, len(raw)), label="truncate at")
    blob = bytearray(raw[:cut] if data.draw(st.booleans(), label="truncate") else raw)
    for _ in range(data.draw(st.integers(0, 8), label="flips")):
        if blob:
            i = data.draw(st.integers(0, len(blob) - 1))
            blob[i] ^= data.draw(st.integers(1, 255))
    path = tmp_path_factory.mktemp("fuzz") / f"capture-{fmt}"
    path.write_bytes(bytes(blob))
    check_outcome(capsys, path, store)


_SQLITE_TABLES = {"nsys-sqlite": ("CUPTI_ACTIVITY_KIND_KERNEL", "StringIds", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                  "TARGET_INFO_GPU", "PROCESSES", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME"),
                  "nvprof": ("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "StringTable", "CUPTI_ACTIVITY_KIND_DEVICE",
                             "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_RUNTIME"),
                  "cupti": ("kernel", "meta", "device", "memcpy", "memset")}
_HOSTILE = st.one_of(st.text(max_size=50), st.binary(max_size=50), st.just("\x00" * 10), st.just("x" * 200_000),
                     st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=True), st.none(),
                     st.just("<script>alert(1)</script>=cmd|' /C calc'!A0"))


@pytest.mark.parametrize("fmt", sorted(_SQLITE_TABLES))
@FUZZ
@given(data=st.data())
def test_sqlite_schema_and_type_damage(fmt, data, tmp_path_factory, capsys, store):
    path = tmp_path_factory.mktemp("fuzz") / f"capture-{fmt}.sqlite"
    shutil.copy(SEEDS[fmt], path)
    conn = sqlite3.connect(path)
    table = data.draw(st.sampled_from(_SQLITE_TABLES[fmt]), label="table")
    action = data.draw(st.sampled_from(("drop", "retype", "hostile")), label="action")
    try:
        if action == "drop":
            conn.execute(f'DROP TABLE IF EXISTS "{table}"')
        else:
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            if cols:
                col = data.draw(st.sampled_from(cols), label="column")
                value = data.draw(_HOSTILE, label="value")
                try:
                    conn.execute(f'UPDATE "{table}" SET "{col}" = ? WHERE rowid IN '
                                 f'(SELECT rowid FROM "{table}" LIMIT 3)', (value,))
                except sqlite3.IntegrityError:  # e.g. a primary key made non-unique: that damage cannot be made
                    pass
        conn.commit()
    finally:
        conn.close()
    check_outcome(capsys, path, store)


@FUZZ
@given(events=st.lists(st.fixed_dictionaries({
    "cat": st.sampled_from(["kernel", "Kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "weird"]),
    "name": st.one_of(st.text(max_size=40), st.integers(), st.none()),
    "ts": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5), st.integers()),
    "dur": st.one_of(st.floats(allow_nan=True), st.text(max_size=5), st.integers(-10, 10**9)),
    "args": st.one_of(st.dictionaries(st.sampled_from(["device", "bytes", "stream"]),
                                      st.one_of(st.integers(), st.text(max_size=5), st.none())), st.none(),
                      st.text(max_size=5)),
}), max_size=30))
def test_kineto_json_with_wrong_types(events, tmp_path_factory, capsys, store):
    import json

    path = tmp_path_factory.mktemp("fuzz") / "trace.json"
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": [{"id": "x", "name": None}]}))
    check_outcome(capsys, path, store)
