"""Issue 23: `run --force` replaces only a run folder nvprof-wrap made, and only what its run wrote; an nsys export
is written whole or not at all, one at a time, and never hides its .nsys-rep; a capture is known by its content;
a folder whose only capture is damaged, or whose run is still going, says so — against the fake nsys of
tests/fakes (which exports a real-schema SQLite), with real processes where processes race or die."""
from __future__ import annotations

import fcntl
import gzip
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from nvprof_wrap.errors import BadInput
from nvprof_wrap.run.lock import LOCK, claim
from tests._paths import ROOT, RUNS
from tests.launch.test_run_folder import env, one_line, wrapper

SAMPLE = ROOT / "nvprof_wrap" / "samples" / "two_children" / "nsys_two_child_processes.sqlite"  # 22 launches
KINETO = RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz"


def nvw(*args: object, extra_env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nvprof_wrap", *map(str, args)], capture_output=True, text=True,
                          env=env(**(extra_env or {})), timeout=180, check=False, **kw)


def launches(proc: subprocess.CompletedProcess) -> int:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["launches"]


def fake_rep(folder: Path, name: str = "nsys.nsys-rep") -> Path:
    """What the fake nsys profile writes (tests/fakes/bin/nsys), made here: the fake export reads it."""
    folder.mkdir(parents=True, exist_ok=True)
    rep = folder / name
    rep.write_bytes(b"NSYS-FAKE\x00" + json.dumps({"pids": [4242, 4243], "trace": "cuda"}).encode())
    return rep


def later(path: Path, than: Path, by: float = 5.0) -> None:
    t = than.stat().st_mtime + by
    os.utime(path, (t, t))


# ------------------------------------------------------------------ 2. --force replaces only a run folder of ours
def extension(folder: Path) -> Path:
    """A browser extension's folder: a manifest.json that is not a run's, a subfolder."""
    (folder / "icons").mkdir(parents=True)
    (folder / "icons" / "16.png").write_bytes(b"\x89PNG")
    (folder / "manifest.json").write_text(json.dumps({"manifest_version": 3, "name": "mine", "version": "1.0"}))
    (folder / "background.js").write_text("// mine")
    return folder


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_force_never_empties_a_folder_whose_manifest_is_not_a_runs(tmp_path):
    """`run -o DIR --force` deleted a browser extension (manifest.json), subfolders included; the refusal without
    --force even suggested --force."""
    ext = extension(tmp_path / "ext")
    before = tree(ext)
    for force in ([], ["--force"]):
        proc = wrapper("-o", ext, *force, "--", "true")
        one_line(proc, str(ext), "is not a run folder of nvprof-wrap", "pass a new folder to -o")
        assert "--force" not in proc.stderr
    assert tree(ext) == before
    with pytest.raises(BadInput, match="manifest.json is not one nvprof-wrap wrote"):
        claim(ext, force=True)
    assert tree(ext) == before


@pytest.mark.parametrize("manifest", [
    {"format": "something-else", "version": 1, "command": ["x"], "backend": "nsys"},
    {"command": ["x"], "backend": "nsys"},  # not every key an nvprof-wrap manifest ever had
    {"nvprof_wrap": "0.1.0", "command": ["x"], "profiler_argv": [], "backend": "nsys", "captures": ["../../etc"]},
    [1, 2],
], ids=["other-format", "too-few-keys", "capture-outside", "not-an-object"])
def test_force_refuses_manifests_that_only_look_like_a_runs(tmp_path, manifest):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "data.bin").write_bytes(b"mine")
    with pytest.raises(BadInput, match="is not a run folder of nvprof-wrap"):
        claim(folder, force=True)
    assert sorted(p.name for p in folder.iterdir()) == ["data.bin", "manifest.json"]


def test_force_on_our_run_folder_removes_only_what_the_run_wrote(tmp_path):
    """A file the user put into a run folder, and a subfolder: refused, named, nothing removed; once they are
    moved out, --force replaces the run."""
    out = tmp_path / "run"
    assert wrapper("-o", out, "--no-report", "--", sys.executable, "-c", "print('first')").returncode == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["format"] == "nvprof-wrap-run" and (out / ".nsys.sqlite.nvprof-wrap-export.lock").is_file()
    assert sorted(m["captures"]) == ["nsys.nsys-rep", "nsys.sqlite"]  # never the export's lock
    (out / "notes.txt").write_text("mine")
    (out / "plots").mkdir()
    before = tree(out)
    proc = wrapper("-o", out, "--force", "--", "true")
    one_line(proc, "notes.txt", "plots/", "nothing was removed")
    assert tree(out) == before
    shutil.move(out / "notes.txt", tmp_path / "notes.txt")
    (out / "plots").rmdir()
    forced = wrapper("-o", out, "--force", "--no-report", "--", sys.executable, "-c", "print('second')")
    assert forced.returncode == 0, forced.stderr
    assert (out / "stdout.log").read_text() == "second\n" and (tmp_path / "notes.txt").read_text() == "mine"


def test_force_recognises_the_run_folders_of_earlier_versions(tmp_path):
    """The H200 runs were written by nvprof-wrap 0.1.0 (no format mark): still ours — the files they list go, and
    anything else stops the replacement."""
    old = tmp_path / "gemm_nsys"
    shutil.copytree(RUNS / "gemm_nsys", old)
    (old / "stdout.log").write_text("old\n")
    (old / "mine.csv").write_text("a,b\n")
    with pytest.raises(BadInput, match="also holds mine.csv"):
        claim(old, force=True)
    assert (old / "nsys.sqlite").is_file() and (old / "mine.csv").is_file()
    (old / "mine.csv").unlink()
    forced = wrapper("-o", old, "--force", "--no-report", "--", sys.executable, "-c", "print('new')")
    assert forced.returncode == 0, forced.stderr
    m = json.loads((old / "manifest.json").read_text())
    assert (m["format"], m["version"], m["status"]) == ("nvprof-wrap-run", 1, "ended")
    assert (old / "stdout.log").read_text() == "new\n"


def test_force_over_a_run_whose_wrapper_died_removes_its_captures_and_nothing_else(tmp_path):
    """Killed mid-run, a run's manifest lists no capture: what its backend writes is known by name — and a file the
    user put there is not."""
    out = tmp_path / "dead"
    out.mkdir()
    (out / LOCK).write_text("999999\n")
    m = {"format": "nvprof-wrap-run", "version": 1, "nvprof_wrap": "0.2", "status": "running", "command": ["x"],
         "profiler_argv": [], "backend": "cupti", "captures": []}
    (out / "manifest.json").write_text(json.dumps(m))
    (out / "cupti-vm-77.sqlite.partial").write_bytes(b"x")
    (out / "mine.txt").write_text("mine")
    with pytest.raises(BadInput) as e:
        claim(out, force=True)
    assert "also holds mine.txt," in e.value.why and "cupti-vm-77" not in e.value.why
    assert sorted(p.name for p in out.iterdir()) == [LOCK, "cupti-vm-77.sqlite.partial", "manifest.json", "mine.txt"]
    (out / "mine.txt").unlink()
    _, fd = claim(out, force=True)
    os.close(fd)
    assert sorted(p.name for p in out.iterdir()) == [LOCK]


# ------------------------------------------------------------------ 4. exports: whole, one at a time, never hiding
def test_an_empty_export_never_hides_its_nsys_rep(tmp_path):
    """A full disk left the export empty: "No GPU kernels were recorded" (exit 0) for every report after."""
    rep = fake_rep(tmp_path / "run")
    empty = rep.with_suffix(".sqlite")
    empty.write_bytes(b"")
    later(empty, rep)
    assert launches(nvw("report", rep.parent, "--format", "json")) == 22
    assert sqlite3.connect(empty).execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0] > 0


@pytest.mark.parametrize("damage", ["cut-short", "older"])
def test_a_cut_short_or_stale_export_is_exported_again(tmp_path, damage):
    rep = fake_rep(tmp_path / "run")
    export = rep.with_suffix(".sqlite")
    data = SAMPLE.read_bytes()
    export.write_bytes(data[: len(data) // 3] if damage == "cut-short" else data)
    if damage == "older":
        later(rep, export)  # the report was written again after this export
    else:
        later(export, rep)
    assert launches(nvw("report", rep.parent, "--format", "json")) == 22
    assert export.stat().st_size == len(data) and export.stat().st_mtime >= rep.stat().st_mtime


def test_an_export_that_comes_out_empty_is_never_kept(tmp_path):
    """nsys exited 0 but wrote an empty export (a full disk): the report of the folder is one line (exit 2), and
    nothing is left that would hide the .nsys-rep from the next report."""
    rep = fake_rep(tmp_path / "run")
    proc = nvw("report", rep.parent, extra_env={"FAKE_NSYS_EXPORT_EMPTY": "1"})
    one_line(proc, str(rep), "unusable export", "empty")
    assert not rep.with_suffix(".sqlite").exists() and [p.name for p in rep.parent.glob(".*export-*")] == []
    assert launches(nvw("report", rep.parent, "--format", "json")) == 22


def _export_child(proc: subprocess.Popen, timeout: float = 60) -> psutil.Process | None:
    """The `nsys export` a report process started, once it runs."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            kids = psutil.Process(proc.pid).children(recursive=True)
            found = next((k for k in kids if "export" in k.cmdline()), None)
        except psutil.Error:
            found = None
        if found is not None:
            return found
        time.sleep(0.05)
    return None


@pytest.mark.parametrize("stores", ["one-each", "the-run-folders"])
def test_eight_concurrent_first_reports_of_an_nsys_rep_all_see_its_kernels(tmp_path, stores):
    """8 reports of a folder holding only an .nsys-rep raced on one export path: 4-7 of 8 said "no kernels" (the
    ones that came while the first one's export was being written read it half-written)."""
    rep = fake_rep(tmp_path / "run")

    def start(i: int) -> subprocess.Popen:
        store = ["--store", str(tmp_path / f"store{i}.sqlite")] if stores == "one-each" else []
        return subprocess.Popen([sys.executable, "-m", "nvprof_wrap", "report", str(rep.parent), "--format", "json",
                                 *store], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env(FAKE_NSYS_EXPORT_SLEEP="2"))
    procs = [start(0)]
    assert _export_child(procs[0]) is not None  # the first export is being written: the others come now
    procs += [start(i) for i in range(1, 8)]
    results = [(p.wait(timeout=180), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [(code, json.loads(out)["launches"] if code == 0 else err) for code, out, err in results] == [(0, 22)] * 8
    assert [p.name for p in rep.parent.iterdir() if ".nvprof-wrap-export-" in p.name] == []  # no temporary left


def test_the_nsys_export_dies_with_a_report_killed_by_sigkill(tmp_path):
    """SIGKILL of `report` left its `nsys export` running (writing into the folder after its reader was gone)."""
    rep = fake_rep(tmp_path / "run")
    proc = subprocess.Popen([sys.executable, "-m", "nvprof_wrap", "report", str(rep.parent)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env(FAKE_NSYS_EXPORT_SLEEP="60"))
    export = _export_child(proc)
    assert export is not None, "the fake nsys export never started"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    _, alive = psutil.wait_procs([export], timeout=10)
    assert not alive, f"nsys export (pid {export.pid}) survived its report"
    assert not rep.with_suffix(".sqlite").exists()  # the export never got its name: nothing hides the report
    assert launches(nvw("report", rep.parent, "--format", "json")) == 22  # the killed one's temporary is no capture
    assert [p.name for p in rep.parent.iterdir() if ".nvprof-wrap-export-" in p.name] == []


def test_a_file_of_the_exports_name_that_is_no_export_is_left_alone(tmp_path):
    rep = fake_rep(tmp_path / "run")
    mine = rep.with_suffix(".sqlite")
    db = sqlite3.connect(mine)
    db.execute("CREATE TABLE notes (t TEXT)")
    db.commit()
    db.close()
    later(mine, rep)
    before = mine.read_bytes()
    proc = nvw("report", rep.parent, "--format", "json")
    assert launches(proc) == 22 and mine.read_bytes() == before


# ------------------------------------------------------------------ identity: a capture by its content
def test_a_capture_beside_its_gzipped_copy_counts_once(tmp_path):
    """x.sqlite beside x.sqlite.gz counted one capture twice (44 launches)."""
    folder = tmp_path / "both"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / "x.sqlite")
    with open(SAMPLE, "rb") as src, gzip.open(folder / "x.sqlite.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    proc = nvw("report", folder, "--format", "json")
    assert launches(proc) == 22
    assert "identical content" in json.dumps(json.loads(proc.stdout))


def test_a_trace_json_beside_its_gzipped_copy_counts_once(tmp_path):
    one, both = tmp_path / "one", tmp_path / "both"
    one.mkdir()
    both.mkdir()
    shutil.copy(KINETO, one / KINETO.name)
    shutil.copy(KINETO, both / KINETO.name)
    with gzip.open(KINETO) as src, open(both / KINETO.name.removesuffix(".gz"), "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert launches(nvw("report", both, "--format", "json")) == launches(nvw("report", one, "--format", "json"))


# ------------------------------------------------------------------ a damaged only capture, a run in progress
def test_a_folder_whose_only_capture_is_damaged_says_so(tmp_path):
    """"No GPU kernels were recorded. Did the job run on the GPU?" (exit 0) of a folder whose only capture is a
    download cut short."""
    folder = tmp_path / "cut"
    folder.mkdir()
    packed = gzip.compress(SAMPLE.read_bytes())
    (folder / "nsys.sqlite.gz").write_bytes(packed[: len(packed) // 2])
    proc = nvw("report", folder)
    one_line(proc, str(folder / "nsys.sqlite.gz"), "corrupt gzip file", "the only capture in")
    assert "Did the job run" not in proc.stderr + proc.stdout


def _hold(folder: Path) -> subprocess.Popen:
    """A process holding the run folder's lock, as a running `run` (and its job) does."""
    code = ("import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX); "
            "print('held', flush=True); time.sleep(120)")
    p = subprocess.Popen([sys.executable, "-c", code, str(folder / LOCK)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "held\n"
    return p


def _running_copy(tmp_path: Path) -> Path:
    run = tmp_path / "gemm"
    shutil.copytree(RUNS / "gemm_cupti", run)
    m = json.loads((run / "manifest.json").read_text())
    m.update(status="running", exit_code=None, ended=None, wall_s=None, wrapper_pid=4321)
    (run / "manifest.json").write_text(json.dumps(m))
    (run / LOCK).write_text("4321\n")
    return run


def test_a_run_still_running_is_in_progress_and_one_whose_wrapper_died_says_so(tmp_path):
    run = _running_copy(tmp_path)
    holder = _hold(run)
    try:
        proc = nvw("report", run)
        assert proc.returncode == 0, proc.stderr
        said = " ".join(proc.stdout.split())
        assert said.startswith("Run in progress: job is still running (its manifest says \"running\" and nvprof-wrap "
                               "(pid 4321) or its job still holds the run folder) — report of what it wrote so "
                               "far"), said
    finally:
        holder.kill()
        holder.wait()
    proc = nvw("report", run)
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())
    assert said.startswith("Job's end was not recorded: its run's manifest still says \"running\" (nvprof-wrap was "
                           "killed: no process holds the run folder any more) — report of what ran"), said


def test_a_report_of_a_run_that_has_written_no_capture_yet_says_run_in_progress(tmp_path):
    out = tmp_path / "busy"
    job = [sys.executable, "-c", "import time; print('x', flush=True); time.sleep(30)"]
    p = subprocess.Popen([sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "--no-report", "-o",
                          str(out), "--", *job], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env())
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (out / "stdout.log").is_file():
            time.sleep(0.05)
        proc = nvw("report", out)
        one_line(proc, "run in progress", "stdout.log")
        assert "Did the job run" not in proc.stderr
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=60)


def test_held_tells_a_lock_held_from_a_free_one(tmp_path):
    from nvprof_wrap.run.lock import held

    (tmp_path / LOCK).write_text("1\n")
    assert held(tmp_path) is False
    fd = os.open(tmp_path / LOCK, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert held(tmp_path) is True  # another open file description, as another process has
    finally:
        os.close(fd)
    assert held(tmp_path / "none") is None
