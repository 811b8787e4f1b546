"""Where the output goes, and what is never replaced (issue 23): -o / --save write a regular file atomically and
write through a FIFO, a device or a symlink; an output that is an input or a run folder's own file is refused
before anything is written; `run` exits with the job's code whatever becomes of our stdout; --name is one folder
name; `runs` reads any history it can and names the rows it cannot. (docs/reliability.md, "Output paths and exit
codes".)"""
from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nvprof_wrap.cli import main
from tests._paths import FAKE_BIN, ROOT, RUNS

SAMPLE = ROOT / "nvprof_wrap" / "samples" / "two_children" / "nsys_two_child_processes.sqlite"
RUN = RUNS / "gemm_nsys"  # a run folder: manifest.json and nsys.sqlite


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


def env(**extra) -> dict:
    return {"NVPROF_WRAP_HISTORY": os.environ["NVPROF_WRAP_HISTORY"],
            "PATH": f"{FAKE_BIN}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "NO_COLOR": "1",
            "HOME": os.environ.get("HOME", "/root"), **extra}


def wrapper(args, stdout=subprocess.PIPE, cwd=None, **extra):
    return subprocess.run([sys.executable, "-m", "nvprof_wrap", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, env=env(**extra), timeout=120, check=False, cwd=cwd)


@pytest.fixture
def capture(tmp_path) -> Path:
    dst = tmp_path / "capture.sqlite"
    shutil.copy(SAMPLE, dst)
    return dst


@pytest.fixture
def run_folder(tmp_path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(RUN, dst)
    (dst / "stdout.log").write_text("the job's output\n")
    return dst


def _reader(fifo: Path, got: list) -> threading.Thread:
    def read():
        with open(fifo, "rb") as f:
            got.append(f.read())
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


# -- written through, never renamed over ------------------------------------------------------------------------

def test_a_fifo_given_to_o_is_written_through_not_replaced(capsys, tmp_path, capture):
    """`-o FIFO` renamed a regular file over the FIFO (as root, `-o /dev/null` replaced /dev/null)."""
    fifo, got = tmp_path / "pipe", []
    os.mkfifo(fifo)
    reader = _reader(fifo, got)
    code, out, err = run(capsys, "report", capture, "--format", "json", "-o", fifo)
    reader.join(timeout=30)
    assert code == 0 and out == "" and one_line(err)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO
    assert got and json.loads(got[0])["verdict"] == "yes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["capture.sqlite", "pipe"]  # no temporary file left


def test_a_symlink_given_to_o_writes_its_target_and_stays_a_link(capsys, tmp_path, capture):
    target, link = tmp_path / "target.json", tmp_path / "link.json"
    target.write_text("old")
    link.symlink_to(target.name)
    code, _, err = run(capsys, "report", capture, "-o", link)
    assert code == 0 and one_line(err)
    assert link.is_symlink() and os.readlink(link) == target.name
    assert json.loads(target.read_text())["verdict"] == "yes"


def test_a_link_to_our_stdout_is_written_through(tmp_path, capture):
    """`-o /dev/stdout` (a link to /proc/self/fd/1): tested through a link of our own to the same place, so that the
    machine's /dev/stdout is never at stake."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    proc = wrapper(["report", str(capture), "--format", "json", "-o", str(link)])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "yes" and link.is_symlink()


def test_dash_is_stdout(capsys, tmp_path, capture, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "report", capture, "--format", "json", "-o", "-")
    assert code == 0 and json.loads(out)["verdict"] == "yes" and err == "" and not (tmp_path / "-").exists()


def test_a_regular_file_is_still_replaced_whole(capsys, tmp_path, capture):
    out = tmp_path / "r.txt"
    out.write_text("an older report " * 1000)
    assert run(capsys, "report", capture, "-o", out)[0] == 0
    assert out.read_text().startswith("Tensor cores used: yes") and not out.is_symlink()
    assert not list(tmp_path.glob(".*.tmp"))


# -- refused before anything is written ---------------------------------------------------------------------------

def test_the_input_capture_is_never_the_output(capsys, tmp_path, capture):
    before = capture.read_bytes()
    link = tmp_path / "same.txt"
    link.symlink_to(capture)
    for target in (capture, link):
        code, out, err = run(capsys, "report", capture, "-o", target)
        assert code == 2 and out == "" and one_line(err) and "is the input" in err and str(target) in err
    assert capture.read_bytes() == before


@pytest.mark.parametrize("name, what", [("nsys.sqlite", "a capture"), ("run.sqlite", "the run store"),
                                        ("manifest.json", "the manifest"), ("stdout.log", "a log")])
def test_a_run_folders_own_files_are_never_the_output(capsys, capture, run_folder, name, what):
    """`report X -o RUN/nsys.sqlite` (or run.sqlite, manifest.json, a log) replaced the run's file, exit 0."""
    assert run(capsys, "report", run_folder, "--format", "json")[0] == 0  # makes RUN/run.sqlite
    target = run_folder / name
    before = target.read_bytes()
    code, out, err = run(capsys, "report", capture, "-o", target)
    assert code == 2 and out == "" and one_line(err) and what in err and str(run_folder) in err
    assert target.read_bytes() == before
    code, out, _ = run(capsys, "report", run_folder, "--format", "json")  # the run still reads as before
    assert code == 0 and json.loads(out)["verdict"] == "yes"


def test_a_run_folder_still_takes_a_report_of_its_own(capsys, run_folder):
    assert run(capsys, "report", run_folder, "-o", run_folder / "report.txt")[0] == 0
    assert run(capsys, "report", run_folder, "-o", run_folder / "report.txt")[0] == 0  # and replaces it
    assert (run_folder / "report.txt").read_text().startswith("Tensor cores used")


def test_compare_and_runs_never_write_over_their_inputs(capsys, tmp_path, capture):
    other = tmp_path / "other.sqlite"
    shutil.copy(capture, other)
    code, _, err = run(capsys, "compare", capture, other, "-o", other)
    assert code == 2 and one_line(err) and "is the input" in err
    assert run(capsys, "report", run_folder_of(tmp_path))[0] == 0  # one row in the history
    hist = Path(os.environ["NVPROF_WRAP_HISTORY"])
    before = hist.read_bytes()
    code, _, err = run(capsys, "runs", "-o", hist)
    assert code == 2 and one_line(err) and "is the input" in err and hist.read_bytes() == before


def run_folder_of(tmp_path: Path) -> Path:
    dst = tmp_path / "r"
    shutil.copytree(RUN, dst)
    return dst


def test_run_save_inside_its_own_run_folder_is_refused_before_the_job(tmp_path):
    marker = tmp_path / "job-ran"
    proc = wrapper(["run", "--backend", "nsys", "-o", str(tmp_path / "r"), "--save", str(tmp_path / "r" / "x.txt"),
                    "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    assert proc.returncode == 2 and one_line(proc.stderr) and "inside the run folder" in proc.stderr
    assert not marker.exists()


# -- exit codes -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("job_code", [0, 3])
def test_run_exits_with_the_jobs_code_when_our_stdout_is_full(tmp_path, job_code):
    """`run … > /dev/full`: the job's code (it was 70 after a job that succeeded, and an 'internal error' line)."""
    with open("/dev/full", "w") as full:
        proc = wrapper(["run", "--backend", "nsys", "-o", str(tmp_path / "r"), "--", sys.executable, "-c",
                        f"print('hi'); raise SystemExit({job_code})"], stdout=full)
    assert proc.returncode == job_code, proc.stderr
    said = [ln for ln in proc.stderr.splitlines() if "cannot write" in ln]
    assert len(said) == 1 and "stdout" in said[0] and "internal error" not in proc.stderr
    assert json.loads((tmp_path / "r" / "manifest.json").read_text())["exit_code"] == job_code


def test_report_to_a_full_stdout_is_one_line_exit_74(capture):
    """A full disk is the machine's failure (74, EX_IOERR; issue 44), not bad input (2)."""
    with open("/dev/full", "w") as full:
        proc = wrapper(["report", str(capture)], stdout=full)
    assert proc.returncode == 74 and one_line(proc.stderr) and "stdout" in proc.stderr and "disk full" in proc.stderr


@pytest.mark.parametrize("name", ["../../x", "/abs/p", "a/b", "..", ".", ""])
def test_run_name_is_one_folder_name(capsys, tmp_path, monkeypatch, name):
    """--name ../../x or /abs/p wrote the run folder outside runs/."""
    where = tmp_path / "a" / "b"
    where.mkdir(parents=True)
    monkeypatch.chdir(where)
    monkeypatch.setenv("NVPROF_WRAP_NSYS", str(FAKE_BIN / "nsys"))
    marker = tmp_path / "job-ran"
    code, _, err = run(capsys, "run", "--backend", "nsys", "--no-report", "--name", name, "--", sys.executable, "-c",
                       f"open({str(marker)!r}, 'w')")
    assert code == 2 and one_line(err) and "--name" in err
    assert not marker.exists() and sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b"]


def test_report_refuses_what_follows_a_double_dash(capsys, capture):
    code, out, err = run(capsys, "report", capture, "--", "--min-tensor-core-share", "0.9")
    assert code == 2 and out == "" and one_line(err) and "'--'" in err


def test_a_symlink_swapped_during_the_run_does_not_split_it(tmp_path):
    """-o LINK: the logs went to the folder LINK named at the start, the manifest and the capture to the one it named
    at the end."""
    a, b, link = tmp_path / "a", tmp_path / "b", tmp_path / "link"
    a.mkdir()
    b.mkdir()
    link.symlink_to(a)
    job = (f"import os; os.remove({str(link)!r}); os.symlink({str(b)!r}, {str(link)!r}); print('swapped')")
    proc = wrapper(["run", "--backend", "nsys", "--no-report", "-o", str(link), "--", sys.executable, "-c", job])
    assert proc.returncode == 0, proc.stderr
    assert os.readlink(link) == str(b)  # the job did swap it
    assert list(b.iterdir()) == []
    m = json.loads((a / "manifest.json").read_text())
    assert (a / "stdout.log").read_text() == "swapped\n" and m["captures"] and all((a / c).is_file()
                                                                                  for c in m["captures"])


# -- the run history ------------------------------------------------------------------------------------------------

def _history(path: Path, rows: list[dict], columns: str | None = None) -> None:
    conn = sqlite3.connect(path)
    conn.execute(columns or "CREATE TABLE [runs] ([folder] TEXT, [scope] TEXT, [name] TEXT, [recorded_at] TEXT, "
                 "[started] TEXT, [command] TEXT, [backend] TEXT, [exit_code] INTEGER, [verdict] TEXT, "
                 "[tensor_core_share] FLOAT, [precisions] TEXT, [kernel_time_ns] INTEGER, [launches] INTEGER, "
                 "[health] TEXT, PRIMARY KEY ([folder], [scope]))")
    for r in rows:
        conn.execute(f"INSERT INTO runs ({', '.join(r)}) VALUES ({', '.join('?' * len(r))})", list(r.values()))
    conn.commit()
    conn.close()


GOOD = {"folder": "/x/good", "scope": "whole", "name": "good", "recorded_at": "2025-01-02T00:00:00.000+00:00",
        "verdict": "yes", "tensor_core_share": 0.5, "precisions": '["bf16"]', "exit_code": 0}


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown", "html"])
def test_runs_reads_an_edited_history_and_names_the_rows_it_cannot(capsys, tmp_path, monkeypatch, fmt):
    hist = tmp_path / "h.sqlite"
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", str(hist))
    _history(hist, [GOOD,
                    {**GOOD, "folder": "/x/share", "tensor_core_share": "abc"},  # TypeError in the renderers
                    {**GOOD, "folder": "/x/huge", "tensor_core_share": 1e308, "exit_code": "x"},  # OverflowError
                    {**GOOD, "folder": "/x/odd", "name": None, "recorded_at": 1e300, "precisions": "[1, 2]",
                     "exit_code": 2.0, "command": None}])
    code, out, err = run(capsys, "runs", "--format", fmt, "--width", "200")
    assert code == 0 and "Traceback" not in err
    notes = err.splitlines()
    assert len(notes) == 2 and all(str(hist) in n and "skipped" in n for n in notes)
    assert "/x/share" in notes[0] and "tensor_core_share" in notes[0] and "/x/huge" in notes[1]
    assert "good" in out and "odd" in out
    if fmt == "json":
        rows = json.loads(out)["runs"]
        assert [r["name"] for r in rows] == ["good", "odd"] and rows[1]["exit_code"] == 2


def test_runs_reads_a_history_of_another_version(capsys, tmp_path, monkeypatch):
    """Columns missing (KeyError in the renderers), others it does not know: read with what it has, never written."""
    hist = tmp_path / "h.sqlite"
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", str(hist))
    _history(hist, [{"folder": "/x/new", "name": "new", "when_recorded": "2030-01-01", "flavour": "x"}],
             "CREATE TABLE runs (folder TEXT PRIMARY KEY, name TEXT, when_recorded TEXT, flavour TEXT)")
    before = hist.read_bytes()
    code, out, err = run(capsys, "runs", "--format", "json")
    assert code == 0 and err == "" and json.loads(out)["runs"][0]["name"] == "new"
    assert run(capsys, "runs")[0] == 0 and hist.read_bytes() == before


def test_runs_on_a_file_that_is_not_a_history_is_one_line(capsys, tmp_path, monkeypatch):
    bad = tmp_path / "h.sqlite"
    bad.write_bytes(b"not a database at all\n" * 100)
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", str(bad))
    code, _, err = run(capsys, "runs")
    assert code == 2 and one_line(err) and str(bad) in err


def test_a_fifo_as_history_records_nothing_and_stays_a_fifo(tmp_path):
    """SQLite on NVPROF_WRAP_HISTORY=FIFO (or /dev/null: /dev/null-journal beside it)."""
    fifo = tmp_path / "hist"
    os.mkfifo(fifo)
    folder = run_folder_of(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "nvprof_wrap", "report", str(folder)], capture_output=True,
                          text=True, env={**env(), "NVPROF_WRAP_HISTORY": str(fifo)}, timeout=60, check=False)
    assert proc.returncode == 0 and "not a regular file" in proc.stderr and one_line(proc.stderr)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and sorted(p.name for p in tmp_path.iterdir()) == ["hist", "r"]


def test_dev_null_as_history_records_nothing_and_creates_nothing_beside_it(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", os.devnull)
    journals = [Path(os.devnull + s) for s in ("-journal", "-wal", "-shm")]
    assert not any(j.exists() for j in journals)
    code, _, err = run(capsys, "report", run_folder_of(tmp_path))
    assert code == 0 and err == ""
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode) and not any(j.exists() for j in journals)


# -- what a full disk or doctor leaves --------------------------------------------------------------------------------

def test_a_full_disk_leaves_no_half_manifest_beside_the_last(tmp_path, monkeypatch):
    from nvprof_wrap.launch import runner
    from nvprof_wrap.run.manifest import Manifest

    def full(_fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    (tmp_path / "manifest.json").write_text("{}")
    monkeypatch.setattr(runner.os, "fsync", full)
    with pytest.raises(OSError):
        runner.write_manifest(tmp_path, Manifest(command=("x",), backend="nsys"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]
    assert (tmp_path / "manifest.json").read_text() == "{}"


def test_doctor_leaves_nothing_in_the_current_folder(tmp_path):
    proc = wrapper(["doctor", "--format", "json"], cwd=tmp_path, FAKE_GPUS="NVIDIA H200:9.0")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["probe"]["ran"] is True
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, fixed", [
    (["--width", "80", "report", "CAPTURE"], "nvprof-wrap report --width 80 CAPTURE"),
    (["--format=json", "kernels", "CAPTURE"], "nvprof-wrap kernels --format=json CAPTURE"),
    (["--width", "80"], "nvprof-wrap COMMAND --width"),  # no command at all
])
def test_a_commands_option_before_the_command_is_said_with_the_line_that_works(capsys, capture, argv, fixed):
    """argparse took '80' for the command ("invalid choice: '80'"); now one line that names the option and gives the
    command line with it after the command."""
    code, out, err = run(capsys, *[str(capture) if a == "CAPTURE" else a for a in argv])
    assert code == 2 and out == "" and one_line(err)
    assert fixed.replace("CAPTURE", str(capture)) in err and "invalid choice" not in err


@pytest.mark.parametrize("argv", [["--version"], ["--help", "report"], ["report", "--help"]])
def test_nvprof_wraps_own_options_before_a_command_still_work(capsys, argv):
    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 0 and capsys.readouterr().out.startswith(("nvprof-wrap", "usage:"))
