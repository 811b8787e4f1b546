"""Issue 44: every exit-code class (docs/exit-codes.md), the environment checked in one place, the Python API's
arguments checked at the boundary, pools sized to the work, and signals at any point of a report."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput, Terminated
from tests._paths import FAKE_BIN, ROOT, RUNS

CAPTURE = RUNS / "gemm_nsys" / "nsys.sqlite"  # 7 kernels, 20% of their time on tensor cores


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def env(**extra) -> dict:
    return {"NVPROF_WRAP_HISTORY": "off", "PATH": f"{FAKE_BIN}:/usr/local/bin:/usr/bin:/bin",
            "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "HOME": os.environ.get("HOME", "/root"), **extra}


def wrapper(args, stdout=subprocess.PIPE, **extra):
    return subprocess.run([sys.executable, "-m", "nvprof_wrap", *map(str, args)], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=env(**extra), timeout=120, check=False)


def one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


# -- one test per class of docs/exit-codes.md ---------------------------------------------------------------------

def _bug(monkeypatch):
    from nvprof_wrap.cli import report_cmd

    def broken(_args):
        raise RuntimeError("a bug")
    monkeypatch.setattr(report_cmd, "run", broken)


@pytest.mark.parametrize("case, argv, setup, code", [
    ("done", ["report", CAPTURE], None, 0),
    ("gate missed", ["report", CAPTURE, "--min-tensor-core-share", "0.9"], None, 1),
    ("bad input", ["report", "{tmp}/notes.txt"], lambda tmp, mp: (tmp / "notes.txt").write_text("hello\n"), 2),
    ("bad environment", ["report", CAPTURE], lambda tmp, mp: mp.setenv("NVPROF_WRAP_SERIES_MAX_LAUNCHES", "x"), 2),
    ("output under a file", ["report", CAPTURE, "-o", "{tmp}/f/out.json"],
     lambda tmp, mp: (tmp / "f").write_text(""), 2),
    ("internal error", ["report", CAPTURE], lambda tmp, mp: _bug(mp), 70),
])
def test_each_exit_code_class(capsys, tmp_path, monkeypatch, case, argv, setup, code):
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", "off")
    if setup:
        setup(tmp_path, monkeypatch)
    got, _out, err = run(capsys, *[str(a).format(tmp=tmp_path) for a in argv])
    assert got == code, (case, err)
    assert code in (0, 1) or one_line(err), (case, err)


def test_exit_74_when_the_machines_storage_fails():
    """A full disk (/dev/full as stdout: a real ENOSPC) is EX_IOERR, not bad input."""
    with open("/dev/full", "w") as full:
        proc = wrapper(["report", CAPTURE], stdout=full)
    assert proc.returncode == 74 and one_line(proc.stderr) and "disk full" in proc.stderr


@pytest.mark.parametrize("errno_name, code", [("ENOSPC", 74), ("EIO", 74), ("EDQUOT", 74), ("EACCES", 2),
                                              ("EROFS", 2), ("ENOTDIR", 2)])
def test_an_oserror_reaching_the_cli_is_74_for_the_machine_and_2_for_the_path(capsys, monkeypatch, errno_name,
                                                                               code):
    import errno

    from nvprof_wrap.cli import report_cmd

    def fails(_args):
        raise OSError(getattr(errno, errno_name), os.strerror(getattr(errno, errno_name)), "/some/file")
    monkeypatch.setattr(report_cmd, "run", fails)
    got, _out, err = run(capsys, "report", CAPTURE)
    assert got == code and one_line(err) and "/some/file" in err


def test_run_exits_with_the_jobs_code(tmp_path):
    proc = wrapper(["run", "--backend", "nsys", "-o", tmp_path / "r", "--no-report", "--", sys.executable, "-c",
                    "raise SystemExit(3)"])
    assert proc.returncode == 3, proc.stderr


# -- the environment ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("columns", ["abc", "-5", "0", "99999999999", " "])
def test_columns_that_is_no_width_is_ignored_with_a_warning(capsys, monkeypatch, columns):
    """COLUMNS=abc was exit 70 (int() in the renderer's options), COLUMNS=-5 printed nothing, 99999999999 a
    MemoryError. As Python's and Rich's own readers of it, a value that is no width is ignored."""
    monkeypatch.setenv("COLUMNS", columns)
    code, out, err = run(capsys, "report", CAPTURE)
    assert code == 0 and "Tensor cores used" in out, err
    assert err.count("COLUMNS") == (1 if columns.strip() else 0) and "Traceback" not in err
    assert max(len(line) for line in out.splitlines()) <= 10_000


def test_columns_sets_the_width(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    code, out, _ = run(capsys, "report", CAPTURE)
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 60


@pytest.mark.parametrize("columns", ["1", "12"])
def test_a_terminal_too_narrow_for_a_table_gets_it_40_columns_wide(capsys, monkeypatch, columns):
    """COLUMNS=1 printed every character of the verdict on a line of its own: the report is rendered 40 columns
    wide at least (the terminal wraps it further); --width below 40 is refused like any width out of range."""
    monkeypatch.setenv("COLUMNS", columns)
    code, out, err = run(capsys, "report", CAPTURE)
    lines = out.splitlines()
    assert code == 0 and err == "" and max(len(line) for line in lines) == 40, out[:400]
    assert lines[0].startswith("Tensor cores used:"), lines[:3]
    with pytest.raises(SystemExit) as e:
        main(["report", str(CAPTURE), "--width", "5"])
    assert e.value.code == 2 and "a width between 40 and 10000, got 5" in capsys.readouterr().err


@pytest.mark.parametrize("name, value", [("NVPROF_WRAP_NSYS_EXTRA", "--capture-range 'cudaProfilerApi"),
                                         ("NVPROF_WRAP_NSYS_EXTRA", "--x \\"),
                                         ("NVPROF_WRAP_SERIES_MAX_LAUNCHES", "lots")])
def test_our_own_variables_that_cannot_be_used_are_one_line_exit_2(tmp_path, name, value):
    """The unbalanced quote was shlex's ValueError: exit 70 from `run`."""
    proc = wrapper(["run", "--backend", "nsys", "-o", tmp_path / "r", "--", "true"], **{name: value})
    assert proc.returncode == 2 and one_line(proc.stderr) and f"${name}=" in proc.stderr, proc.stderr
    assert not (tmp_path / "r").exists()  # refused before anything ran


def test_a_variable_only_run_uses_does_not_refuse_a_report(capsys, monkeypatch):
    """A broken NVPROF_WRAP_NSYS_EXTRA left in the shell refuses `run` (above), never a `report`, which runs no nsys."""
    monkeypatch.setenv("NVPROF_WRAP_NSYS_EXTRA", "--x 'y")
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", "off")
    code, out, err = run(capsys, "report", CAPTURE)
    assert code == 0 and "Tensor cores used" in out and "NSYS_EXTRA" not in err


def test_a_tmpdir_that_is_no_folder_is_said(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "none"))
    code, _out, err = run(capsys, "report", CAPTURE)
    assert code == 0 and "$TMPDIR=" in err and err.count("\n") == 1


def test_width_option_is_bounded(capsys):
    with pytest.raises(SystemExit) as e:
        main(["report", str(CAPTURE), "--width", "99999999999"])
    assert e.value.code == 2 and "--width" in capsys.readouterr().err


# -- the Python API's arguments ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, named", [
    ({"steps": (1, "a")}, "steps="), ({"steps": "ten:twenty"}, "steps="), ({"steps": (5, 2)}, "steps="),
    ({"steps": (True, 2)}, "steps="), ({"window": "1-2"}, "window="), ({"window": (0, float("nan"))}, "window="),
    ({"workers": "many"}, "workers="), ({"workers": 0}, "workers="), ({"workers": 2.5}, "workers="),
    ({"health": "yes"}, "health="), ({"dask": 5}, "dask="), ({"progress": 5}, "progress="),
])
def test_analyze_refuses_arguments_of_the_wrong_kind_naming_them(kwargs, named):
    """workers='many' was "'<=' not supported between…", steps='10:20' "got 1:0"."""
    import nvprof_wrap

    with pytest.raises(BadInput) as e:
        nvprof_wrap.analyze(CAPTURE, **kwargs)
    assert str(e.value).startswith(named) and "\n" not in str(e.value)


def test_steps_and_window_take_the_command_lines_syntax():
    import nvprof_wrap
    from nvprof_wrap.pipeline.arguments import span

    assert span("10:20", "steps", True) == span([10, 20], "steps", True) == (10, 20)
    assert span("0.5:2", "window", False) == (0.5, 2.0)
    with pytest.raises(BadInput, match="no step ranges"):  # read as steps 10..19, not as "1:0"
        nvprof_wrap.analyze(CAPTURE, steps="10:20")
    assert nvprof_wrap.profile(steps="10:20").steps == (10, 20)


# -- pools sized to the work -------------------------------------------------------------------------------------

def test_jobs_64_for_2_captures_starts_at_most_2_processes(monkeypatch, tmp_path):
    from nvprof_wrap.pipeline import reading
    from nvprof_wrap.system import fork

    sizes = []
    real = reading.ProcessPoolExecutor
    monkeypatch.setattr(reading, "ProcessPoolExecutor", lambda n, **kw: sizes.append(n) or real(n, **kw))
    monkeypatch.setattr(fork, "cores", lambda: 4)
    paths = [tmp_path / "a.sqlite", tmp_path / "b.sqlite"]
    for p in paths:
        shutil.copy(CAPTURE, p)
    results = list(reading.locally(paths, None, 64, None))
    assert len(results) == 2 and sizes == [2]
    assert fork.pool_size(64, 1000) == 8 and fork.pool_size(None, 1000) == 4 and fork.pool_size(0, 3) == 1


# -- a reader interrupted while its forked children work ----------------------------------------------------------

def _sleep(seconds):
    time.sleep(seconds)
    return seconds


def test_an_interrupt_in_this_process_ends_and_reaps_the_children_at_once():
    """Ctrl-C while the NVTX pass ran its first slice here was UnboundLocalError 'parts' (bound in the `try`, used
    by the `finally`), which the reader reported as an unreadable capture; and the children were waited for."""
    from nvprof_wrap.system import fork

    if not fork.can_fork():
        pytest.skip("no fork here")
    others = [fork.Forked(_sleep, 60) for _ in range(2)]

    def here():
        raise KeyboardInterrupt
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        fork.alongside(here, others)
    assert time.monotonic() - t0 < 5
    for other in others:
        with pytest.raises(ChildProcessError):
            os.waitpid(other.pid, os.WNOHANG)  # reaped


def test_an_interrupt_in_the_nvtx_pass_is_an_interrupt(monkeypatch):
    from nvprof_wrap import readers
    from nvprof_wrap.timeline import nvtx

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt
    monkeypatch.setattr(nvtx, "_attribute_slice", interrupted)
    monkeypatch.setattr(nvtx, "_compiled_slice", interrupted)
    with pytest.raises(KeyboardInterrupt):
        readers.read(RUNS / "gpt_fp32_nsys_steps" / "nsys.sqlite.gz")


# -- signals at any point of a report ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def big_capture(tmp_path_factory) -> Path:
    """A 1.5M-launch Nsight Systems export (~170 MB): `report` takes 2 s or more on this project's machine."""
    out = tmp_path_factory.mktemp("big") / "big.sqlite"
    subprocess.run([sys.executable, "-m", "benchmarks.generate", "nsys", "1500000", str(out)], cwd=ROOT, check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=300)
    return out


def _handled(pid: int, sig: int, timeout: float = 30.0) -> None:
    """Wait until the process handles sig (Linux: its SigCgt mask in /proc), so that a delay counts from there: under
    load the interpreter's own start-up, before any handler, once outlasted 0.3 s and the signal ended the process by
    itself (-2, -15: nothing of ours ran yet)."""
    status = Path(f"/proc/{pid}/status")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            caught = next(int(line.split()[1], 16) for line in status.read_text().splitlines()
                          if line.startswith("SigCgt:"))
        except (OSError, StopIteration):  # no /proc here, or the process ended
            return
        if caught >> (sig - 1) & 1:
            return
        time.sleep(0.002)


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.3, 0.6, 1.0, 1.6])  # from the import of nvprof_wrap on (not
# Python's own start, .pth files included: a signal there is the interpreter's, not ours)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_any_point_of_a_report_ends_it_promptly_and_cleanly(big_capture, tmp_path, sig, delay):
    """SIGINT to the process group (what Ctrl-C does: the forked children get it too) or SIGTERM to the command:
    128+signal within 2 s, one line, no traceback, nothing left in TMPDIR. Before: a KeyboardInterrupt traceback
    while importing, death by SIGTERM with nothing said, and 'unreadable nsys-sqlite capture (UnboundLocalError…)'
    exit 2 in the NVTX pass."""
    _signalled_report(big_capture, tmp_path, sig, delay)


@pytest.mark.slow
@pytest.mark.parametrize("delay", [1.8, 2.4])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_series_is_measured_beside_its_worker_ends_it_cleanly(big_capture, tmp_path, sig, delay):
    """The same with the per-step series measured (its launch calls in a forked worker beside the GPU's side,
    series_np._host_aside): the signal lands in the series' pass, after the attribution, on this project's machine."""
    _signalled_report(big_capture, tmp_path, sig, delay, NVPROF_WRAP_SERIES_MAX_LAUNCHES="-1")


def _signalled_report(capture: Path, tmp_path: Path, sig: int, delay: float, **extra: str) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "nvprof_wrap", "report", str(capture), "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=env(TMPDIR=str(tmp), **extra))
    _handled(proc.pid, sig)
    time.sleep(delay)
    if proc.poll() is None:
        (os.killpg if sig == signal.SIGINT else os.kill)(proc.pid, sig)
    signalled = time.monotonic()
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    took = time.monotonic() - signalled
    if proc.returncode == 0 and out.startswith("{"):
        pytest.skip("the report was done before the signal")
    assert proc.returncode == 128 + sig, err
    assert one_line(err) and ("interrupted" if sig == signal.SIGINT else "terminated") in err, err
    assert took <= 2.0
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("raised", [KeyboardInterrupt, lambda: Terminated(signal.SIGTERM)])
def test_a_signal_before_the_commands_work_is_one_line_too(monkeypatch, capsys, raised) -> None:
    """Ctrl-C or SIGTERM while the command sets itself up (the entry's handlers put back, the temporary-folder sweep
    scanning TMPDIR): one line, 130 or 143, the signal handlers as they were. A Ctrl-C in the sweep was a
    KeyboardInterrupt traceback and exit -2 (test_a_signal_at_any_point_…[2-0.3] above, in CI under load)."""
    from nvprof_wrap import cli
    from nvprof_wrap.system import tempdirs

    def interrupted(*_a, **_k):
        raise raised()

    monkeypatch.setattr(tempdirs, "sweep", interrupted)
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)
    code = cli.main(["report", "x.sqlite"])
    err = capsys.readouterr().err
    if raised is KeyboardInterrupt:
        assert code == 130 and err == "nvprof-wrap: interrupted\n"
    else:
        assert code == 143 and err == "nvprof-wrap: terminated (SIGTERM)\n"
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)) == before


def test_the_commands_module_is_imported_under_the_entrys_own_handlers(monkeypatch) -> None:
    """A command's module is imported on first use (cli.COMMANDS): the entry imports it while its one-line handlers
    still hold. Imported later, under Python's default, a Ctrl-C 0.3 s into `report` was a KeyboardInterrupt
    traceback and exit -2 (test_a_signal_at_any_point_…[2-0.3] above, once in a run of the whole suite)."""
    from nvprof_wrap import _entry, cli

    seen = []
    monkeypatch.setattr(cli, "preload", lambda argv: seen.append(
        (argv, signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))))
    monkeypatch.setattr(cli, "main", lambda argv=None: 0)
    monkeypatch.setattr(sys, "argv", ["nvprof-wrap", "report", "x.sqlite"])
    assert _entry.main() == 0
    assert seen and seen[0][0] == ["report", "x.sqlite"]
    assert seen[0][1] is _entry._before_main and seen[0][2] is _entry._before_main
    assert signal.getsignal(signal.SIGINT) is not _entry._before_main  # put back before the command runs
    # and preload imports the command's module (a fresh interpreter: here it is imported already)
    code = ("import sys; from nvprof_wrap.cli import preload; before = 'nvprof_wrap.cli.report_cmd' in sys.modules; "
            "preload(['report', 'x', '--width', '80']); print(before, 'nvprof_wrap.cli.report_cmd' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.split() == ["False", "True"]
