"""ingest(): paths → run store. Each capture once (by content), junk in a folder skipped with its reason, a named
file that cannot be read refused, ranks from a run's manifest, and the parallel path equal to the serial one."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nvprof_wrap.errors import BadInput
from nvprof_wrap.pipeline import ingest as ingest_mod
from nvprof_wrap.pipeline.ingest import ingest
from nvprof_wrap.store import Store
from tests._paths import ROOT, RUNS

SAMPLES = ROOT / "nvprof_wrap" / "samples"


def _counts(store: Store) -> tuple:
    return (store.rows("SELECT COUNT(*) AS n FROM captures")[0]["n"],
            store.rows("SELECT SUM(launches) AS n FROM kernels")[0]["n"])


def test_a_capture_is_read_once_by_content(tmp_path):
    src = SAMPLES / "two_children" / "nsys_two_child_processes.sqlite"
    for name in ("a.sqlite", "b.sqlite"):
        shutil.copy(src, tmp_path / name)
    store = Store()
    ingest(store, [tmp_path])
    once = _counts(store)
    assert once[0] == 1  # two paths, one content
    ingest(store, [tmp_path, src])  # again, and under a third path: nothing new
    assert _counts(store) == once


def test_junk_in_a_folder_is_skipped_with_its_reason_and_refused_when_named(tmp_path):
    shutil.copy(SAMPLES / "two_children" / "nsys_two_child_processes.sqlite", tmp_path / "cap.sqlite")
    (tmp_path / "notes.txt").write_text("lunch at noon\n")
    store = Store()
    skipped = ingest(store, [tmp_path])
    assert [(p.rsplit("/", 1)[-1], w) for p, w in skipped] == [
        ("notes.txt", "not a profiler capture this tool reads (docs/formats.md lists them)")]
    with pytest.raises(BadInput, match="notes.txt: not a profiler capture"):
        ingest(Store(), [tmp_path / "notes.txt"])


def test_ranks_come_from_the_run_manifest():
    store = Store()
    ingest(store, [RUNS / "ddp_nsys"])
    ranks = sorted(r["rank"] for r in store.rows("SELECT rank FROM processes WHERE rank IS NOT NULL"))
    assert ranks == [0, 1]


def test_the_parallel_path_gives_the_serial_result(tmp_path, monkeypatch):
    folder = tmp_path / "caps"
    folder.mkdir()
    for f in ("cupti-vm-5269.sqlite", "cupti-vm-5270.sqlite"):
        shutil.copy(RUNS / "ddp_cupti" / f, folder / f)
    serial = Store()
    ingest(serial, [folder], workers=1)
    monkeypatch.setattr(ingest_mod, "PARALLEL_MIN_BYTES", 0)
    parallel = Store()
    ingest(parallel, [folder], workers=2)
    q = "SELECT name, pid, device_id, launches, total_ns FROM kernels ORDER BY 1, 2, 3"
    assert serial.rows(q) == parallel.rows(q) and len(serial.rows(q)) > 40


def test_an_io_error_reading_a_capture_in_a_folder_is_the_machines_never_a_skip(tmp_path, monkeypatch):
    """EIO (or a full disk) while a folder's capture is fingerprinted ends the read with IOFailure (exit 74); it
    was a file skipped as 'cannot read' and a report of the rest, exit 0. A permission stays a skip."""
    import errno
    import os

    from nvprof_wrap.errors import IOFailure

    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(RUNS / "gemm_nsys" / "nsys.sqlite", folder / "a.sqlite")
    shutil.copy(RUNS / "ddp_nsys" / "nsys.sqlite", folder / "b.sqlite")
    real = ingest_mod.file_identity

    def failing(code: int):
        def identity(path, *a, **k):
            if Path(path).name == "b.sqlite":
                raise OSError(code, os.strerror(code), str(path))
            return real(path, *a, **k)
        return identity

    monkeypatch.setattr(ingest_mod, "file_identity", failing(errno.EIO))
    with pytest.raises(IOFailure, match="I/O error"):
        ingest(Store(), [folder])
    monkeypatch.setattr(ingest_mod, "file_identity", failing(errno.EACCES))
    skipped = ingest(Store(), [folder])
    assert [(Path(p).name, why) for p, why in skipped] == [("b.sqlite", "cannot read (Permission denied)")]


def test_a_big_capture_named_alone_is_fingerprinted_while_it_is_read(monkeypatch, tmp_path):
    """Into an empty store, a big capture named alone is hashed in a forked child beside its read: the same identity
    and aggregates as hashed first; into a store holding a capture, or with another path named, it is hashed first
    (its identity decides whether it is read at all)."""
    from nvprof_wrap.system import fork

    src = SAMPLES / "torch_ops" / "nsys_torch_ops.sqlite"
    beside: list[Path] = []
    inner = ingest_mod._hashed_beside
    monkeypatch.setattr(ingest_mod, "_hashed_beside", lambda p, *a: inner(p, *a) and not beside.append(p))

    def read(big: int, paths: list[Path], store: Store | None = None) -> tuple:
        monkeypatch.setattr(fork, "BIG", big)
        store = store or Store()
        ingest(store, paths)
        return tuple(r["identity"] for r in store.rows("SELECT identity FROM captures ORDER BY 1")), _counts(store)

    first = read(1 << 62, [src])
    assert not beside
    assert read(0, [src]) == first and beside == [src]
    beside.clear()
    store = Store()
    read(0, [SAMPLES / "two_children" / "nsys_two_child_processes.sqlite"], store)
    read(0, [src], store)
    assert beside == [SAMPLES / "two_children" / "nsys_two_child_processes.sqlite"]  # the second store was not empty
    shutil.copy(src, tmp_path / "copy.sqlite")
    assert read(0, [src, tmp_path / "copy.sqlite"])[1] == first[1]  # read once: hashed first, not beside
    assert len(beside) == 1
