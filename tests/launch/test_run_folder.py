"""`run` (issue 14): a run folder holds one run, exit codes are the truth, and what goes wrong around the job is
one line — against the fake nsys of tests/fakes, which behaves like the real one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.launch.runner import expand_output
from tests._paths import FAKE_BIN, ROOT
from tests.readers.test_bounds import unprivileged


def env(**extra: str) -> dict[str, str]:
    # the session's throwaway run history (tests/conftest.py): without it `run` recorded into the user's own
    return {"PATH": f"{FAKE_BIN}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "NO_COLOR": "1",
            "HOME": os.environ.get("HOME", "/root"),
            "NVPROF_WRAP_HISTORY": os.environ.get("NVPROF_WRAP_HISTORY", "off"), **extra}


def wrapper(*args: object, extra_env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", *map(str, args)],
                          capture_output=True, text=True, env=env(**(extra_env or {})), timeout=120, check=False, **kw)


def one_line(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for w in words:
        assert w in proc.stderr, proc.stderr


def test_a_second_run_into_a_run_folder_is_refused_and_force_replaces_it(tmp_path):
    """`run -o DIR` twice summed both runs (22 → 44 launches)."""
    out = tmp_path / "run"
    first = wrapper("-o", out, "--format", "json", "--", sys.executable, "-c", "print('first')")
    assert first.returncode == 0 and json.loads(first.stdout)["launches"] == 22, first.stderr
    again = wrapper("-o", out, "--", "true")
    one_line(again, str(out), "already holds a run", "--force")
    assert (out / "stdout.log").read_text() == "first\n"  # untouched
    forced = wrapper("-o", out, "--force", "--format", "json", "--", sys.executable, "-c", "print('second')")
    assert forced.returncode == 0 and json.loads(forced.stdout)["launches"] == 22, forced.stderr
    assert (out / "stdout.log").read_text() == "second\n"
    assert json.loads((out / "manifest.json").read_text())["status"] == "ended"


def test_a_folder_that_holds_other_files_is_never_a_run_folder(tmp_path):
    """-o ~ must not write into (or, with --force, empty) a home folder."""
    (tmp_path / "notes.txt").write_text("mine")
    for args in (["-o", tmp_path], ["-o", tmp_path, "--force"]):
        one_line(wrapper(*args, "--", "true"), "is not empty and holds no run")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_two_runs_racing_for_one_folder_cannot_both_own_it(tmp_path):
    out = tmp_path / "race"
    job = [sys.executable, "-c", "import time; time.sleep(1.5)"]
    procs = [subprocess.Popen([sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "--no-report",
                               "-o", str(out), "--", *job], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env()) for _ in range(3)]
    results = sorted((p.wait(timeout=120), p.stderr.read()) for p in procs)
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [code for code, _ in results] == [0, 2, 2], results
    assert all(err.count("\n") == 1 and "Traceback" not in err for _, err in results[1:])


def test_force_waits_for_nobody_and_takes_nothing_from_a_running_run(tmp_path):
    """--force on a folder whose run is still going (its job holds the lock): refused, nothing removed."""
    out = tmp_path / "busy"
    p = subprocess.Popen([sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "--no-report", "-o",
                          str(out), "--", sys.executable, "-c", "import time; print('x', flush=True); time.sleep(3)"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env())
    deadline = time.time() + 30
    while time.time() < deadline and not (out / "stdout.log").is_file():
        time.sleep(0.05)
    one_line(wrapper("-o", out, "--force", "--", "true"), "is still writing into this folder")
    assert p.wait(timeout=60) == 0 and (out / "stdout.log").read_text() == "x\n"


def test_the_jobs_exit_code_survives_a_closed_pipe(tmp_path):
    """`nvprof-wrap run … | head -1` exited 0 although the job exited 42."""
    out = tmp_path / "pipe"
    job = "import sys\nfor i in range(2000): print('line', i)\nsys.exit(42)"
    cmd = [sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "-o", str(out), "--", sys.executable,
           "-c", job]
    proc = subprocess.run(["bash", "-c", 'set -o pipefail; "$@" | head -1', "bash", *cmd], capture_output=True,
                          text=True, env=env(), timeout=120, check=False)
    assert proc.returncode == 42, proc.stderr
    assert proc.stdout == "line 0\n" and "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert len((out / "stdout.log").read_text().splitlines()) == 2000
    report = subprocess.run(["bash", "-c", 'set -o pipefail; "$@" | head -1', "bash", sys.executable, "-m",
                             "nvprof_wrap", "report", str(out)], capture_output=True, text=True, env=env(),
                            timeout=120, check=False)
    assert report.returncode == 0 and report.stderr == ""


@pytest.mark.parametrize("make, words", [
    (lambda t: (t / "file").write_text("x") and t / "file", "-o names a file, not a folder"),
    (lambda t: (t / "file").write_text("x") and t / "file" / "sub", "a folder on this path is a file"),
])
def test_an_output_that_cannot_be_a_folder_is_one_line(tmp_path, make, words):
    one_line(wrapper("-o", make(tmp_path), "--", "true"), words)


def test_a_read_only_output_and_a_mode_000_run_folder_are_one_line(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    locked = tmp_path / "locked"
    (locked).mkdir()
    (locked / "manifest.json").write_text("{}")
    locked.chmod(0)
    try:
        cmd = [sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "-o", str(ro / "run"), "--", "true"]
        one_line(subprocess.run(unprivileged(cmd), capture_output=True, text=True, env=env(), timeout=60, check=False),
                 "cannot create the run folder (Permission denied)")
        cmd = [sys.executable, "-m", "nvprof_wrap", "report", str(locked)]
        one_line(subprocess.run(unprivileged(cmd), capture_output=True, text=True, env=env(), timeout=60, check=False),
                 "cannot read the folder (Permission denied)")
    finally:
        locked.chmod(0o755)
        ro.chmod(0o755)


def test_disk_full_at_the_end_is_reported_as_such_and_the_first_manifest_stays(tmp_path):
    """The job succeeds; writing the final manifest meets a full disk (/dev/full, a real ENOSPC): the manifest
    written before the job started stays, one line says "disk full" and that the job exited 0, and the exit code
    is 74 — the run was not recorded, the machine's storage failed (before: a traceback, and the job's success
    reported as a failure; then 2, issue 44 made it EX_IOERR)."""
    out = tmp_path / "full"
    # The wrapper's second fsync (the final manifest's) meets a full disk; the job is another process. (It was a
    # link to /dev/full planted by the job at manifest.json.tmp, which is now refused as a link: below.)
    wrapper_with_full_disk = ("import errno, os, sys\ncalls = []\n"
                              "def full(fd):\n    calls.append(fd)\n"
                              "    if len(calls) > 1:\n        raise OSError(errno.ENOSPC, 'No space left on device')\n"
                              "os.fsync = full\nfrom nvprof_wrap.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", wrapper_with_full_disk, "run", "--backend", "nsys", "-o", str(out),
                           "--", sys.executable, "-c", "pass"], capture_output=True, text=True, env=env(),
                          timeout=120, check=False)
    assert proc.returncode == 74, proc.stderr
    assert "Traceback" not in proc.stderr and "(exit 0," in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "disk full: the run's manifest could not be written" in errors[0]
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"
    assert not (out / "manifest.json.tmp").exists()


def test_a_link_planted_at_the_manifests_temporary_is_refused_not_written_through(tmp_path):
    """The job links manifest.json.tmp to /dev/full: the final manifest is not written through it (it was: a
    device replaced or written, outside the run folder for a link elsewhere); one line says so, exit 2, the first
    manifest and the link stay."""
    out = tmp_path / "linked"
    job = "import os; os.symlink('/dev/full', os.path.join(os.environ['NVPROF_WRAP_RUN_DIR'], 'manifest.json.tmp'))"
    proc = wrapper("-o", out, "--", sys.executable, "-c", job)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "(exit 0," in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "not a regular file but a symbolic link" in errors[0], proc.stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"
    assert (out / "manifest.json.tmp").is_symlink()


def test_q_variables_expand_to_one_folder_name_only(tmp_path, monkeypatch):
    """`-o '%q{HOME}'` wrote into the home folder."""
    home = tmp_path / "home"
    home.mkdir()
    proc = wrapper("-o", "%q{HOME}", "--", "true", extra_env={"HOME": str(home)})
    one_line(proc, "%q{HOME} is", "only a single folder name may come from it")
    assert list(home.iterdir()) == []
    monkeypatch.setenv("JOBTAG", "..")
    with pytest.raises(BadInput, match="single folder name"):
        expand_output("runs/%q{JOBTAG}")
    monkeypatch.delenv("JOBTAG")
    with pytest.raises(BadInput, match="not set"):
        expand_output("runs/%q{JOBTAG}")
    monkeypatch.setenv("JOBTAG", "abc")
    assert expand_output("runs/%q{JOBTAG}-%%") == "runs/abc-%"


def test_an_unknown_precision_is_refused_before_anything_runs(capsys, tmp_path):
    out = tmp_path / "exp"
    assert main(["experiment", "matmul_probe", "--precisions", "fp32,fp99", "-o", str(out)]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "unknown precision 'fp99'" in err and not out.exists()


def test_default_run_folders_never_collide(tmp_path):
    """Two runs in the same second with the default name get NAME-TIME and NAME-TIME-2."""
    procs = [subprocess.Popen([sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "--no-report",
                               "--name", "same", "--", "true"], cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0], [p.stderr.read() for p in procs]
    for p in procs:
        p.stderr.close()
    assert len(list((tmp_path / "runs").iterdir())) == 2


def test_every_command_documents_its_exit_codes(capsys):
    for command in ("report", "kernels", "classify", "demo", "run", "doctor", "verify", "experiment"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "exit codes:" in capsys.readouterr().out, command


def test_numbered_claims_racing_in_threads_each_get_their_own_folder(tmp_path):
    """Eight claims of one default name at once (the race two `run`s in one second can lose): eight folders,
    NAME, NAME-2, …, NAME-8, none refused."""
    import threading

    from nvprof_wrap.run.lock import claim

    got, errors = [], []
    start = threading.Barrier(8)

    def one():
        start.wait()
        try:
            got.append(claim(tmp_path / "runs" / "same", numbered=True)[0].name)
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and sorted(got) == sorted(["same", *(f"same-{i}" for i in range(2, 9))])
