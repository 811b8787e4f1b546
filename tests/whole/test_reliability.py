"""What is kept when things go wrong: concurrent ingests, damaged stores, failing jobs, the wrapper killed,
run-folder permissions. (Fuzzing of the readers: test_fuzz.py; signals: test_launch.py.)"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nvprof_wrap import report
from nvprof_wrap.pipeline import evidence
from nvprof_wrap.pipeline.ingest import ingest
from nvprof_wrap.store import Store
from tests._paths import FAKE_BIN, H200, PUBLIC, ROOT, RUNS

CAPTURES = [H200 / "nsys_torch_ops.sqlite", H200 / "nsys_two_child_processes.sqlite",
            PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp", PUBLIC / "josiahdavis__profiling-lm__net.sql",
            PUBLIC / "NVIDIA__Fuser__report1.sqlite", PUBLIC / "LeiWang1999__memfusion_artifact__report1.sqlite",
            PUBLIC / "wenscarl__cutlass_benchmark__report1.sqlite",
            PUBLIC / "facebookresearch__HolisticTraceAnalysis__benchmark_result_2869224_1695835535_trace.json.gz"]


def _ingest_one(args: tuple[str, str]) -> int:
    store_path, capture = args
    store = Store(Path(store_path))
    try:
        ingest(store, [Path(capture)])
        return 0
    finally:
        store.close()


def _launches(store_path: Path) -> tuple[int, int]:
    conn = sqlite3.connect(store_path)
    try:
        return conn.execute("SELECT COUNT(*), SUM(launches) FROM kernels").fetchone()
    finally:
        conn.close()


def test_eight_concurrent_ingests_into_one_store_lose_no_row(tmp_path):
    expected = tmp_path / "serial.sqlite"
    s = Store(expected)
    ingest(s, CAPTURES)
    s.close()
    shared = tmp_path / "run.sqlite"
    Store(shared).close()  # created once, as `run` does, before the workers start
    with mp.get_context("spawn").Pool(8) as pool:
        assert pool.map(_ingest_one, [(str(shared), str(c)) for c in CAPTURES]) == [0] * 8
    assert _launches(shared) == _launches(expected)
    conn = sqlite3.connect(shared)
    assert conn.execute("SELECT COUNT(*) FROM captures").fetchone()[0] == 8
    conn.close()


def test_a_killed_ingest_leaves_no_half_capture(tmp_path):
    """A process killed inside the ingest transaction: SQLite rolls it back at the next open."""
    store_path = tmp_path / "run.sqlite"
    Store(store_path).close()
    code = f"""
import os, sys
sys.path.insert(0, {str(ROOT)!r})
from pathlib import Path
from nvprof_wrap.store import Store
from nvprof_wrap import readers
s = Store(Path({str(store_path)!r}))
cap = readers.read(Path({str(CAPTURES[0])!r}))
orig = Store._insert
def die(self, table, cid, rows):
    orig(self, table, cid, rows)
    if table == "kernels":
        os.kill(os.getpid(), 9)  # mid-transaction: captures row and kernels inserted, not committed
Store._insert = die
s.ingest(cap, "identity-x", os.stat({str(CAPTURES[0])!r}), {str(CAPTURES[0])!r})
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    store = Store(store_path)
    assert store.rows("SELECT COUNT(*) AS n FROM captures")[0]["n"] == 0
    assert store.rows("SELECT COUNT(*) AS n FROM kernels")[0]["n"] == 0
    skipped = ingest(store, [CAPTURES[0]])
    evidence.rank(store)
    r = report.build(store, skipped)
    assert r.verdict.launches == 122


def test_a_damaged_store_is_set_aside_and_rebuilt(tmp_path, capsys):
    """A real run store whose pages past the header are overwritten: it carries the store's marker, so it is
    ours, damaged: renamed aside (nothing deleted) and rebuilt from the captures."""
    from nvprof_wrap.cli import main

    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    (run / "nsys.sqlite").write_bytes((H200 / "nsys_two_child_processes.sqlite").read_bytes())
    assert main(["report", str(run), "--format", "json"]) == 0
    capsys.readouterr()
    data = bytearray((run / "run.sqlite").read_bytes())
    data[100:] = os.urandom(len(data) - 100)
    (run / "run.sqlite").write_bytes(bytes(data))
    assert main(["report", str(run), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["launches"] == 22
    assert "was damaged" in err and len(list(run.glob("run.sqlite.corrupt-*"))) == 1


def wrapper(args, **kw):
    env = {"NVPROF_WRAP_HISTORY": "off", "PATH": f"{FAKE_BIN}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "--no-report", *args],
                          capture_output=True, check=False, text=True, env=env, timeout=120, **kw)


@pytest.mark.parametrize("job, code", [
    ("raise RuntimeError('boom')", 1),
    ("import os; os._exit(9)", 9),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 137),
    ("import ctypes; ctypes.string_at(0)", 139),
    ("import sys; sys.exit(42)", 42),
])
def test_a_failing_job_keeps_capture_and_manifest(tmp_path, job, code):
    out = tmp_path / "run"
    proc = wrapper(["-o", str(out), "--", sys.executable, "-c", job])
    assert proc.returncode == code, proc.stderr
    m = json.loads((out / "manifest.json").read_text())
    assert m["exit_code"] == code and "nsys.sqlite" in m["captures"]
    store = Store()
    skipped = ingest(store, [out])
    evidence.rank(store)
    r = report.build(store, skipped)
    assert r.verdict.tensor_cores == "yes"  # the (fake) profiler's capture of the job is readable


def test_the_wrapper_killed_leaves_the_job_and_its_capture(tmp_path):
    """SIGKILL to nvprof-wrap itself while its job keeps printing: the job writes to the log files directly (not
    through a pipe only the wrapper read, which killed it with BrokenPipe on its next line), so it prints to the
    end, its log is complete, the profiler writes its capture, the manifest written at the start says
    "running", and `report RUN_DIR` reads what the profiler wrote."""
    out = tmp_path / "run"
    flag = tmp_path / "job-finished"
    job = ("import time, pathlib, sys\n"
           "for i in range(40):\n    print('line', i, flush=True); print('err', i, file=sys.stderr, flush=True)\n"
           "    time.sleep(0.05)\n"
           f"pathlib.Path({str(flag)!r}).write_text('ok')\n")
    env = {"NVPROF_WRAP_HISTORY": "off", "PATH": f"{FAKE_BIN}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "NO_COLOR": "1"}
    p = subprocess.Popen([sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "--no-report", "-o",
                          str(out), "--", sys.executable, "-c", job], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    log, deadline = out / "stdout.log", time.time() + 30
    while time.time() < deadline and not (log.exists() and "line 5" in log.read_text()):
        time.sleep(0.02)
    assert p.stdout.readline() == b"line 0\n"  # shown live, from the log file
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    p.stdout.close()  # the terminal goes with the wrapper
    p.stderr.close()
    deadline = time.time() + 30
    while time.time() < deadline and not (out / "nsys.nsys-rep").exists():
        time.sleep(0.1)
    assert flag.read_text() == "ok" and (out / "nsys.nsys-rep").exists()
    assert log.read_text().splitlines() == [f"line {i}" for i in range(40)]
    assert (out / "stderr.log").read_text().count("err ") == 40
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"
    store = Store()
    os.environ["NVPROF_WRAP_NSYS"] = str(FAKE_BIN / "nsys")
    try:
        skipped = ingest(store, [out])
        evidence.rank(store)
        r = report.build(store, skipped)
    finally:
        os.environ.pop("NVPROF_WRAP_NSYS", None)
    assert r.verdict.tensor_cores == "yes"


def test_a_closed_terminal_leaves_the_job_running_and_the_run_recorded(tmp_path):
    """The wrapper on a terminal that goes away (an SSH session closed): the kernel sends it SIGHUP. It forwarded
    that to the job, which died at its 6th line. Now the job, in its own session, runs to the end; the wrapper
    stops printing, waits, and records the run (manifest "ended", the capture) and exits with the job's code."""
    import pty

    out, flag = tmp_path / "run", tmp_path / "job-finished"
    job = ("import time, pathlib\nfor i in range(60):\n    print('line', i, flush=True); time.sleep(0.05)\n"
           f"pathlib.Path({str(flag)!r}).write_text('ok')\nraise SystemExit(3)\n")
    env = {"NVPROF_WRAP_HISTORY": "off", "PATH": f"{FAKE_BIN}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "NO_COLOR": "1"}
    argv = [sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "-o", str(out), "--", sys.executable,
            "-c", job]
    pid, terminal = pty.fork()  # the wrapper leads a session whose controlling terminal is this pty
    if pid == 0:
        os.execve(sys.executable, argv, env)
    seen, deadline = b"", time.time() + 60
    while time.time() < deadline and b"line 5" not in seen:
        try:
            seen += os.read(terminal, 4096)
        except OSError:
            break
    assert b"line 5" in seen, seen
    os.close(terminal)  # the terminal hangs up
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 3  # the job's code, after it ran to its end
    assert flag.read_text() == "ok"
    assert (out / "stdout.log").read_text().splitlines() == [f"line {i}" for i in range(60)]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "ended" and manifest["exit_code"] == 3 and manifest["signal"] is None
    assert "nsys.nsys-rep" in manifest["captures"]


def test_run_folders_follow_the_users_umask(tmp_path):
    out = tmp_path / "umask-run"
    old = os.umask(0o077)
    try:
        proc = wrapper(["-o", str(out), "--", "true"])
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr
    assert (out.stat().st_mode & 0o777) == 0o700
    assert ((out / "manifest.json").stat().st_mode & 0o077) == 0


def test_parallel_reading_gives_the_serial_result_and_skips_the_bad_file(tmp_path, monkeypatch):
    import shutil

    from nvprof_wrap.pipeline import ingest as ingest_mod

    for c in CAPTURES[:4]:
        shutil.copy(c, tmp_path / c.name)
    (tmp_path / "broken.nvvp").write_bytes(b"SQLite format 3\x00" + b"\x01" * 3000)
    serial = Store()
    skipped_serial = ingest(serial, [tmp_path], workers=1)
    monkeypatch.setattr(ingest_mod, "PARALLEL_MIN_BYTES", 0)
    parallel = Store()
    skipped_parallel = ingest(parallel, [tmp_path], workers=2)
    q = "SELECT name, SUM(launches) AS n, SUM(total_ns) AS t FROM kernels GROUP BY name ORDER BY name"
    assert parallel.rows(q) == serial.rows(q) and len(serial.rows(q)) > 50
    assert [p.rsplit("/", 1)[1] for p, _ in skipped_parallel] == ["broken.nvvp"]
    assert skipped_parallel == skipped_serial
    # With another thread alive the pool spawns its workers instead of forking them: the same result.
    import threading

    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        spawned = Store()
        assert ingest(spawned, [tmp_path], workers=2) == skipped_serial
    finally:
        release.set()
        other.join()
    assert spawned.rows(q) == serial.rows(q)


@pytest.mark.needs_fixtures  # through a subprocess: the fake nvprof / benchmarks.generate copy them
@pytest.mark.slow
def test_forked_workers_give_the_one_process_result_on_a_big_capture(tmp_path, monkeypatch):
    """A 200k-launch Nsight Systems capture (20 MB, real schema) read with forked workers — busy time in a
    child, the NVTX sweep in two pieces of time, attribution in two rowid slices — and in one process: the same
    capture, to the launch."""
    from nvprof_wrap.readers import nsys_sqlite
    from nvprof_wrap.system import fork as _fork
    from nvprof_wrap.timeline import nvtx

    path = tmp_path / "big.sqlite"
    subprocess.run([sys.executable, "-m", "benchmarks.generate", "nsys", "200000", str(path), "--seed", "3"],
                   cwd=ROOT, check=True, capture_output=True)
    assert path.stat().st_size >= _fork.BIG
    slices = []
    real = nvtx._slices
    monkeypatch.setattr(nvtx, "_slices", lambda *a: slices.append(real(*a)) or slices[-1])
    cuts = []
    real_cuts = nvtx._time_cuts
    monkeypatch.setattr(nvtx, "_time_cuts", lambda *a: cuts.append(real_cuts(*a)) or cuts[-1])
    monkeypatch.setattr(nvtx, "MIN_SPLIT_RANGES", 1000)  # the capture has 25,000 ranges
    monkeypatch.setattr(nvtx, "cores", lambda: 3)
    monkeypatch.setattr(_fork, "cores", lambda: 2)
    monkeypatch.setenv("NVPROF_WRAP_NATIVE", "off")  # the SQL/Python path's pieces (test_native: the compiled one)
    forked = nsys_sqlite.read(path)
    assert len(slices[0]) == 3 and len(cuts[0]) == 1  # 3 (pretended) cores: 3 slices; 2 pieces beside the busy time
    monkeypatch.setattr(_fork, "can_fork", lambda: False)
    monkeypatch.setattr(nvtx, "can_fork", lambda: False)
    alone = nsys_sqlite.read(path)
    assert sum(k.launches for k in forked.kernels) == 200_000
    for field in ("kernels", "memops", "activity", "ops"):
        assert sorted(getattr(forked, field), key=repr) == sorted(getattr(alone, field), key=repr), field


def test_a_cupti_capture_read_with_forked_workers_matches_the_one_process_read(tmp_path, monkeypatch):
    """The real H200 cupti capture (5,152 kernels, per-op records), with the size thresholds lowered so that it
    is read like a big one: busy-time windows and attribution slices in forked workers — the same capture."""
    import gzip
    import shutil

    from nvprof_wrap.readers import cupti_sqlite
    from nvprof_wrap.system import fork as _fork
    from nvprof_wrap.timeline import busy, nvtx

    capture = tmp_path / "cupti-vm-559.sqlite"
    with gzip.open(RUNS / "keras_fp16_cupti_ops/cupti-vm-559.sqlite.gz") as src, \
            open(capture, "wb") as dst:
        shutil.copyfileobj(src, dst)
    alone = cupti_sqlite.read(capture)
    for module in (_fork, nvtx, busy):
        monkeypatch.setattr(module, "cores", lambda: 4, raising=False)
    monkeypatch.setattr(busy, "BIG", 0)
    monkeypatch.setattr(cupti_sqlite, "BIG", 0)
    monkeypatch.setattr(nvtx, "MIN_SLICED_LAUNCHES", 1000)
    forked = cupti_sqlite.read(capture)
    for field in ("kernels", "memops", "activity", "ops", "devices", "processes"):
        assert sorted(getattr(forked, field), key=repr) == sorted(getattr(alone, field), key=repr), field
    assert sum(o.launches for o in forked.ops) == 5152


def test_no_forking_while_another_thread_may_be_inside_sqlite():
    import threading

    from nvprof_wrap.system import fork as _fork
    from nvprof_wrap.system.fork import Forked

    assert _fork.can_fork() == (os.name == "posix" and sys.platform != "darwin" and _fork.cores() > 1)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not _fork.can_fork()  # e.g. an application's own SQLite thread
        assert Forked(os.getpid).result() == os.getpid()  # the work runs in this process instead
    finally:
        release.set()
        other.join()


def test_the_command_lines_spinner_does_not_stop_forking():
    """`run` shows rich's status spinner while it reads the captures: its refresh thread never touches SQLite."""
    import io

    from rich.console import Console

    from nvprof_wrap.system import fork as _fork

    expected = _fork.can_fork()
    with Console(file=io.StringIO(), force_terminal=True).status("reading the captures"):
        assert _fork.can_fork() == expected


def test_a_forked_worker_reports_errors_and_survives_deaths():
    from nvprof_wrap.errors import BadInput
    from nvprof_wrap.system.fork import Forked

    def bad():
        raise BadInput("x.sqlite", "damaged")

    with pytest.raises(BadInput, match="damaged"):
        Forked(bad).result()
    parent = os.getpid()
    dies_in_child = Forked(lambda: os._exit(3) if os.getpid() != parent else "done here")
    assert dies_in_child.result() == "done here"  # a worker killed (e.g. for memory): its work is redone here
    assert Forked(sum, [1, 2]).result() == 3 and Forked(sum, [1, 2], inline=True).result() == 3


def test_a_signal_during_a_forked_workers_read_is_not_turned_into_a_bad_file_descriptor():
    """SIGTERM while the parent waits on a worker's pipe: the read ends with the signal's exception and the file
    object closes the pipe; cancel() in the cleanup used to close the same number again and its OSError (EBADF)
    replaced the signal (CI: a SIGTERM'd report exited 2, 'unreadable capture (Bad file descriptor)')."""
    from nvprof_wrap.errors import Terminated, terminate
    from nvprof_wrap.system import fork as _fork
    from nvprof_wrap.system.fork import Forked

    if not _fork.can_fork():
        pytest.skip("no forked workers on this machine (one core, or no fork)")
    previous = signal.signal(signal.SIGALRM, terminate)
    worker = Forked(time.sleep, 30)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Terminated):
            try:
                worker.result()
            finally:
                worker.cancel()  # what a reading stage's cleanup does: no OSError may come out of it
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    with pytest.raises(ProcessLookupError):
        os.kill(worker.pid, 0)  # ended and reaped


def test_a_signal_that_reaches_a_worker_while_it_is_forked_ends_it_in_silence():
    """A SIGTERM that reaches a child while os.fork() runs Python's after-fork hooks (random reseeds there) found
    the parent's handler, inherited: it raised Terminated inside the hook and Python printed "Exception ignored in:
    <bound method Random.seed …>" with a traceback onto the command's stderr (a report cancelled 0.3 s in, 1 run in
    7). Here an after-fork hook sends the child that signal itself, every time: the child must end silently, and
    its work is done in the parent as for any worker that died."""
    code = ("import os, signal, sys; from nvprof_wrap.errors import terminate; from nvprof_wrap.system import fork\n"
            "if not fork.can_fork(): print('no fork'); sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, terminate); parent = os.getpid()\n"
            "os.register_at_fork(after_in_child=lambda: os.kill(os.getpid(), signal.SIGTERM))\n"
            "print(fork.Forked(lambda: 'child' if os.getpid() != parent else 'parent').result())")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env,
                          timeout=60)
    if proc.stdout.strip() == "no fork":
        pytest.skip("no forked workers on this machine (one core, or no fork)")
    assert (proc.returncode, proc.stdout.strip(), proc.stderr) == (0, "parent", "")


# --- temporary folders left by a killed command (nvprof_wrap/system/tempdirs.py) --------------------------------------

def test_a_folder_left_by_a_killed_command_is_removed_by_the_next_one(tmp_path):
    """SIGKILL (or the OOM killer) ends a reading command before its `finally`: its temporary folder, which can
    hold a whole unpacked capture, stays. The next command removes it; folders of live processes stay."""
    from nvprof_wrap.system import tempdirs

    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    code = ("import os, signal; from nvprof_wrap.system import tempdirs; p = tempdirs.make('gz'); "
            "open(os.path.join(p, 'capture.sqlite'), 'wb').write(b'x' * 4096); os.kill(os.getpid(), signal.SIGKILL)")
    killed = subprocess.run([sys.executable, "-c", code], env=env, check=False)
    assert killed.returncode == -signal.SIGKILL
    (left,) = [p for p in tmp_path.iterdir() if p.name.startswith("nvprof-wrap-gz-")]
    live = tmp_path / f"nvprof-wrap-nvtx-{tempdirs._host()}-{os.getpid()}-abc"
    recent = tmp_path / f"nvprof-wrap-kineto-{tempdirs._host()}-{2 ** 22 + 7}-abc"  # dead, but changed just now
    for p in (live, recent):
        p.mkdir()
    old = time.time() - 2 * tempdirs.SWEEP_AFTER_S
    for p in (left, live):
        os.utime(p, (old, old))
    sample = ROOT / "nvprof_wrap" / "samples" / "torch_ops" / "nsys_torch_ops.sqlite"
    r = subprocess.run([sys.executable, "-m", "nvprof_wrap", "report", str(sample), "--format", "json"], env=env,
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert not left.exists()
    assert live.exists() and recent.exists()


def test_sweep_leaves_what_is_not_its_own(tmp_path):
    from nvprof_wrap.system import tempdirs

    host = tempdirs._host()
    dead = 2 ** 22 + 12345  # above the default pid_max: no process has it
    old = time.time() - 2 * tempdirs.SWEEP_AFTER_S
    names = {f"nvprof-wrap-nvtx-{host}-{dead}-x1": True,  # this host, process gone, old: removed
             f"nvprof-wrap-nvtx-{host}-{os.getppid()}-x2": False,  # process alive
             f"nvprof-wrap-nvtx-other.host-{dead}-x3": False,  # another host's, on a shared TMPDIR
             f"someone-else-{dead}": False}
    for name in names:
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (old, old))
    (tmp_path / f"nvprof-wrap-gz-{host}-{dead}-file").write_text("a file, not a folder")
    os.utime(tmp_path / f"nvprof-wrap-gz-{host}-{dead}-file", (old, old))
    removed = tempdirs.sweep(str(tmp_path))
    assert removed == [str(tmp_path / n) for n, gone in names.items() if gone]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([n for n, gone in names.items() if not gone]
                                                                + [f"nvprof-wrap-gz-{host}-{dead}-file"])
