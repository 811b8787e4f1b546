"""Writes stay in the run folder (issue 44): every writer of a file in a run folder refuses a name that is a
symlink (dangling, or to a file outside), a FIFO or a device — it neither follows nor blocks on nor replaces it, and
the link's target is untouched. One table of writers, each tried against each kind of planted name
(docs/reliability.md)."""
from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from nvprof_wrap import readers
from nvprof_wrap.errors import NvprofWrapError
from nvprof_wrap.system import files
from tests._paths import RUNS

CAPTURE = RUNS / "gemm_nsys" / "nsys.sqlite"


def _store(folder: Path) -> None:
    from nvprof_wrap.store import Store

    Store(folder / "run.sqlite", mirror=folder).close()


def _manifest(folder: Path) -> None:
    from nvprof_wrap.launch.runner import write_manifest
    from nvprof_wrap.run.manifest import Manifest

    write_manifest(folder, Manifest(command=("x",), backend="nsys"))


def _logs(folder: Path) -> None:
    from nvprof_wrap.launch.job import run_job

    run_job(["true"], {}, folder, silent=True)


def _lock(folder: Path) -> None:
    from nvprof_wrap.run import lock as run_folder

    os.close(run_folder._open(folder / run_folder.LOCK, os.O_WRONLY | os.O_CREAT))


def _summary(folder: Path) -> None:
    from nvprof_wrap.readers import summary

    summary.write(readers.read(CAPTURE), "x", None, folder / ("nsys.sqlite" + summary.SUFFIX))


def _export_lock(folder: Path) -> None:
    from nvprof_wrap.system import tools

    tools.nsys_export(folder / "x.nsys-rep", "/nonexistent/nsys", folder / "x.sqlite")


def _ncu_export(folder: Path) -> None:
    from nvprof_wrap.launch import ncu

    ncu.export_csv("/nonexistent/ncu", folder / "ncu.ncu-rep", folder / "ncu.csv")


def _report_html(folder: Path) -> None:
    from nvprof_wrap.cli._write import write_text

    write_text(folder / "report.html", "<p>", run_file=True)


def _history(folder: Path, monkeypatch) -> None:
    from nvprof_wrap.run import Run
    from nvprof_wrap.store import history

    monkeypatch.setenv("NVPROF_WRAP_HISTORY", str(folder / "history.sqlite"))
    history.record(Run(folder).history_row(), _FakeReport())


class _FakeReport:
    scope = capture = health = None

    class verdict:
        tensor_cores, tc_fraction, precisions, kernel_ns, launches = "yes", 0.5, ("fp16",), 1, 1


# writer → the names it writes in the run folder, each tried with a planted link, FIFO or device
WRITERS = {
    "store": (_store, ["run.sqlite", "run.sqlite-wal", "run.sqlite-journal", "run.sqlite-shm"]),
    "manifest": (_manifest, ["manifest.json.tmp", "manifest.json"]),
    "logs": (_logs, ["stdout.log", "stderr.log"]),
    "lock": (_lock, [".nvprof-wrap.lock"]),
    "summary": (_summary, ["nsys.sqlite.summary.json.gz"]),
    "nsys export lock": (_export_lock, [".x.sqlite.nvprof-wrap-export.lock"]),
    "ncu export": (_ncu_export, ["ncu.csv"]),
    "report.html": (_report_html, ["report.html"]),
    "history": (_history, ["history.sqlite", "history.sqlite-journal"]),
}
CASES = [(w, name, kind) for w, (_, names) in WRITERS.items() for name in names
         for kind in ("dangling link", "link to a file outside", "link to /dev/null", "FIFO", "device")]


def _plant(path: Path, kind: str, outside: Path) -> None:
    if kind == "dangling link":
        path.symlink_to(outside / "missing")
    elif kind == "link to a file outside":
        path.symlink_to(outside / "kept.txt")
    elif kind == "link to /dev/null":
        path.symlink_to("/dev/null")
    elif kind == "FIFO":
        os.mkfifo(path)
    else:
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
        except PermissionError:
            pytest.skip("making a device node needs CAP_MKNOD")


def _snapshot(folder: Path) -> dict[str, tuple]:
    return {p.name: (stat.S_IFMT(p.lstat().st_mode), p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
            for p in folder.iterdir()}


@pytest.mark.parametrize(("writer", "name", "kind"), CASES)
def test_every_writer_refuses_a_link_fifo_or_device_in_the_run_folder(tmp_path, monkeypatch, writer, name, kind):
    folder, outside = tmp_path / "run", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (outside / "kept.txt").write_text("the user's")
    _plant(folder / name, kind, outside)
    before = _snapshot(outside)
    planted = stat.S_IFMT((folder / name).lstat().st_mode)
    fn = WRITERS[writer][0]
    done: list[BaseException | None] = []

    def call():
        try:
            fn(folder, monkeypatch) if writer == "history" else fn(folder)
            done.append(None)
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            done.append(e)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # a writer blocked on the FIFO: opening it read-write lets a blocked open() return
        if kind == "FIFO":
            os.close(os.open(folder / name, os.O_RDWR | os.O_NONBLOCK))
        pytest.fail(f"{writer} blocked on {name} ({kind})")
    err = done[0]
    if (writer, name) == ("history", "history.sqlite") and kind in ("link to /dev/null", "device"):
        assert err is None and sorted(p.name for p in folder.iterdir()) == [name]  # records nothing, on purpose
    else:
        assert isinstance(err, NvprofWrapError), f"{writer} wrote through {name} ({kind}): {err!r}"
        assert str(folder / name) in str(err) and "\n" not in str(err)
    assert _snapshot(outside) == before, "a file outside the run folder was created or changed"
    assert stat.S_IFMT((folder / name).lstat().st_mode) == planted, "the planted name was replaced"
    assert not os.path.exists("/dev/null-journal")


def test_open_fd_writes_a_regular_file_and_truncates_only_it(tmp_path):
    p = tmp_path / "f"
    p.write_text("old contents")
    with files.open_file(p, "w") as f:
        f.write("new")
    assert p.read_text() == "new"
    files.write_whole(p, b"whole")
    assert p.read_text() == "whole" and sorted(x.name for x in tmp_path.iterdir()) == ["f"]


def test_a_temporary_is_never_a_name_someone_left_there(tmp_path):
    """temp_beside creates with O_EXCL|O_NOFOLLOW: a link planted at its first name is skipped, not written."""
    out = tmp_path / "out"
    planted = tmp_path / f".out.{os.getpid()}-0.tmp"
    planted.symlink_to(tmp_path / "elsewhere")
    fd, tmp = files.temp_beside(out)
    os.close(fd)
    assert tmp != planted and not (tmp_path / "elsewhere").exists()


def test_the_tracer_never_names_a_capture_over_a_link(tmp_path):
    """The tracer (in the user's process) skips a name taken by a dangling link, and keeps a capture .partial
    rather than rename it over a link planted while it wrote."""
    from nvprof_wrap.tracer import capture_file

    (tmp_path / "cupti-h-1.sqlite").symlink_to(tmp_path / "missing")
    _, final = capture_file._claim_path(str(tmp_path), "cupti-h-1")
    assert final.endswith("cupti-h-1-1.sqlite") and not (tmp_path / "missing").exists()
    assert not capture_file._replaceable(str(tmp_path / "cupti-h-1.sqlite"))


def test_a_planted_fifo_lock_does_not_hang_the_run_folder_check(tmp_path):
    from nvprof_wrap.run import lock as run_folder

    os.mkfifo(tmp_path / run_folder.LOCK)
    assert run_folder.held(tmp_path) is None  # it blocked in open() before



@pytest.mark.parametrize("kind", ["dangling link", "link to a file outside", "FIFO"])
def test_the_tracers_window_log_is_not_written_through_a_link_or_fifo(tmp_path, kind, capsys):
    """windows.jsonl is appended to from inside the job: a link or FIFO there is left alone, with a warning."""
    from nvprof_wrap.tracer import window

    folder, outside = tmp_path / "run", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (outside / "kept.txt").write_text("the user's")
    _plant(folder / window.FILE, kind, outside)
    before = _snapshot(outside)
    window._writer(str(folder), "steps 1:2")({"event": "opened"})
    assert _snapshot(outside) == before and stat.S_IFMT((folder / window.FILE).lstat().st_mode) != stat.S_IFREG


def test_checking_an_export_writes_nothing_beside_it(tmp_path):
    """system/tools.export_problem looks into an existing nsys export before it is reused: with a WAL beside it,
    opening it mode=ro alone made SQLite create a -shm file beside the user's export."""
    import shutil
    import subprocess
    import sys

    from nvprof_wrap.system.tools import export_problem
    from tests._paths import RUNS

    out = Path(shutil.copy(RUNS / "ddp_nsys" / "nsys.sqlite", tmp_path / "report1.sqlite"))
    code = (f"import os, sqlite3\nc = sqlite3.connect({str(out)!r}, isolation_level=None)\n"
            "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')\n"
            "c.execute('CREATE TABLE extra(x)')\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    (tmp_path / "report1.sqlite-shm").unlink()  # what the writer left: the test looks for a new one
    before = sorted(p.name for p in tmp_path.iterdir())
    assert export_problem(out) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == before
