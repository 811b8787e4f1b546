"""`report RUN_DIR` writes only inside the run folder (issue 44): a run folder whose names are symlinks (dangling,
to files or folders outside, to /dev/null), FIFOs or regular files, in any mix, never makes `report` create, change
or delete anything outside the folder, never hangs it, and ends in exit 0 or exit 2 with one line
(docs/reliability.md). In-process through cli.main; each example in its own folder under tmp_path."""
from __future__ import annotations

import itertools
import os
import shutil
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvprof_wrap.cli import main
from tests._paths import RUNS

RUN = RUNS / "gemm_nsys"  # manifest.json and nsys.sqlite
# every name a run folder holds (run/names.py WRITTEN, the capture, what report writes)
NAMES = ("run.sqlite", "run.sqlite-wal", "run.sqlite-shm", "run.sqlite-journal", "manifest.json",
         "manifest.json.tmp", ".nvprof-wrap.lock", "stdout.log", "stderr.log", "metrics.jsonl", "windows.jsonl",
         "gpm.jsonl", "nsys.sqlite", "report.html")
KINDS = ("dangling link", "link to a file outside", "link to /dev/null", "link to a folder outside", "FIFO",
         "regular file")
HANG_S = 30


def _plant(path: Path, kind: str, outside: Path) -> None:
    path.unlink(missing_ok=True)
    if kind == "dangling link":
        path.symlink_to(outside / f"missing-{path.name}")
    elif kind == "link to a file outside":
        path.symlink_to(outside / "kept.sqlite")
    elif kind == "link to /dev/null":
        path.symlink_to("/dev/null")
    elif kind == "link to a folder outside":
        path.symlink_to(outside / "folder")
    elif kind == "FIFO":
        os.mkfifo(path)
    else:
        path.write_bytes(b"not what this name should hold\n")


def _tree(root: Path) -> dict[str, tuple]:
    """Every entry under ``root`` (links not followed): its type, and a regular file's bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            mode = p.lstat().st_mode
            out[str(p.relative_to(root))] = (stat.S_IFMT(mode),
                                             p.read_bytes() if stat.S_ISREG(mode) else os.readlink(p)
                                             if stat.S_ISLNK(mode) else b"")
    return out


def _unblock_fifos(folder: Path, hung: list[bool], done: threading.Event) -> None:
    """A watchdog: if report is still running after HANG_S, open every FIFO read-write (which lets a blocked open
    return) so that the test fails instead of hanging."""
    if done.wait(HANG_S):
        return
    hung.append(True)
    for p in folder.iterdir():
        if stat.S_ISFIFO(p.lstat().st_mode):
            fd = os.open(p, os.O_RDWR | os.O_NONBLOCK)
            threading.Timer(1.0, os.close, (fd,)).start()


def report_in(folder: Path, capsys) -> tuple[int, str]:
    done, hung = threading.Event(), []
    watchdog = threading.Thread(target=_unblock_fifos, args=(folder, hung, done), daemon=True)
    watchdog.start()
    try:
        code = main(["report", str(folder), "--format", "json"])
    finally:
        done.set()
    err = capsys.readouterr().err
    assert not hung, f"report hung on a FIFO in {sorted(os.listdir(folder))}"
    return code, err


def check(tmp_path: Path, entries: dict[str, str], capsys) -> None:
    folder, outside = tmp_path / "run", tmp_path / "outside"
    shutil.copytree(RUN, folder)
    (outside / "folder").mkdir(parents=True)
    (outside / "kept.sqlite").write_bytes(b"the user's file")
    for name, kind in entries.items():
        _plant(folder / name, kind, outside)
    before, planted = _tree(outside), {n: _tree(folder)[n][0] for n in entries}
    code, err = report_in(folder, capsys)
    assert "Traceback" not in err
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.count("\n") == 1, err
    assert _tree(outside) == before, "report created, changed or deleted something outside the run folder"
    now = _tree(folder)
    for name, kind in entries.items():
        if kind != "regular file":
            assert now[name][0] == planted[name], f"{name} ({kind}) was replaced"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and not os.path.exists("/dev/null-journal")


def test_a_dangling_run_store_link_is_refused_not_followed(tmp_path, capsys):
    """The issue's case: report created the store where a dangling run.sqlite link pointed (outside the folder)."""
    folder, outside = tmp_path / "run", tmp_path / "outside"
    shutil.copytree(RUN, folder)
    outside.mkdir()
    (folder / "run.sqlite").symlink_to(outside / "evil.sqlite")
    code, err = report_in(folder, capsys)
    assert code == 2 and err.count("\n") == 1 and "run.sqlite: the run store is not a regular file" in err
    assert list(outside.iterdir()) == [] and (folder / "run.sqlite").is_symlink()


def test_a_run_store_link_to_a_store_outside_leaves_it_unchanged(tmp_path, capsys):
    folder, outside = tmp_path / "run", tmp_path / "outside"
    shutil.copytree(RUN, folder)
    outside.mkdir()
    main(["report", str(folder), "--format", "json"])  # a real store, then moved outside and linked
    shutil.move(folder / "run.sqlite", outside / "store.sqlite")
    (folder / "run.sqlite").symlink_to(outside / "store.sqlite")
    capsys.readouterr()
    before = _tree(outside)
    code, err = report_in(folder, capsys)
    assert code == 2 and err.count("\n") == 1 and _tree(outside) == before


@pytest.mark.parametrize("keep", [("nsys.sqlite",), ("nsys.sqlite", "manifest.json")])
@pytest.mark.parametrize("kind", [k for k in KINDS if k != "regular file"])
def test_each_kind_at_every_name(tmp_path, capsys, kind, keep):
    """Every name of a run folder but its capture (and its manifest: still a run folder, whose store is written) at
    once as one kind of non-file."""
    check(tmp_path, dict.fromkeys((n for n in NAMES if n not in keep), kind), capsys)


_examples = itertools.count()


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entries=st.dictionaries(st.sampled_from(NAMES), st.sampled_from(KINDS), min_size=1, max_size=6))
def test_any_mix_of_links_fifos_and_files_stays_inside_the_run_folder(tmp_path, capsys, entries):
    check(tmp_path / f"ex{next(_examples)}", entries, capsys)
