"""`nvprof-wrap run` orchestration against fake nvprof / nsys / nvidia-smi that behave like the real ones."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._paths import DATA, FAKE_BIN, FAKES, ROOT

CHILD = ("import subprocess, sys, time; print('parent out', flush=True); print('parent err', file=sys.stderr); "
         "rc = subprocess.call([sys.executable, '-c', 'import time; print(\"child out\"); time.sleep(0.3)']); "
         "sys.exit(3)")


def wrapper(args, gpus="", path_fakes=True, extra_env=None, **kw):
    # NVPROF_WRAP_FIXTURES passed on: the fake nvprof copies its capture from the fixtures the tests use (it finds
    # them through tests/_paths.py, which reads this variable; naming FIXTURES here would mark every test calling
    # wrapper as needing them)
    env = {"NVPROF_WRAP_HISTORY": "off",
           "PATH": (f"{FAKE_BIN}:" if path_fakes else "") + "/usr/local/bin:/usr/bin:/bin", "FAKE_GPUS": gpus,
           "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "HOME": os.environ.get("HOME", "/root"),
           **{k: v for k, v in os.environ.items() if k == "NVPROF_WRAP_FIXTURES"}, **(extra_env or {})}
    env.pop("NVPROF_WRAP_NSYS", None)
    return subprocess.run([sys.executable, "-m", "nvprof_wrap", "run", *args], capture_output=True, check=False,
                          text=True, env=env, timeout=120, **kw)


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def test_nsys_follows_children_exports_and_reports(tmp_path):
    out = tmp_path / "run"
    proc = wrapper(["--backend", "nsys", "-o", str(out), "--format", "json", "--", sys.executable, "-c", CHILD],
                   gpus="NVIDIA H200:9.0")
    assert proc.returncode == 3, proc.stderr  # the job's exit code
    m = manifest(out)
    assert m["backend"] == "nsys" and m["exit_code"] == 3 and "fake" in m["backend_version"]
    assert m["profiler_argv"][1:7] == ["profile", "--trace=cuda,nvtx,cublas,cudnn", "--sample=none",
                                       "--cpuctxsw=none", "--cuda-graph-trace=node", "--force-overwrite=true"]
    assert {"nsys.nsys-rep", "nsys.sqlite"} <= set(m["captures"])
    assert m["gpus"] == [{"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0", "driver": "580.95.05"}]
    job_pids = {p["pid"] for p in m["processes"]}
    report = json.loads(proc.stdout)
    assert report["tensor_cores_used"] is True
    assert {p["pid"] for p in report["processes"]} <= job_pids and len(report["processes"]) == 2
    assert (out / "stdout.log").read_text().splitlines() == ["parent out", "child out"]
    assert (out / "stderr.log").read_text().count("parent err") == 1
    assert (out / "run.sqlite").is_file()


@pytest.mark.needs_fixtures  # through a subprocess: the fake nvprof / benchmarks.generate copy them
def test_nvprof_the_seed_invocation_one_capture_per_process(tmp_path):
    out = tmp_path / "seed"
    proc = wrapper(["--backend", "nvprof", "-o", str(out), "--format", "json", "--", sys.executable, "-c", CHILD],
                   gpus="NVIDIA GeForce RTX 2080:7.5")
    assert proc.returncode == 3, proc.stderr
    m = manifest(out)
    argv = m["profiler_argv"]
    assert argv[1:4] == ["-o", str(out / "profile%p.nvvp"), "--profile-child-processes"]
    nvvps = sorted(c for c in m["captures"] if c.endswith(".nvvp"))
    assert len(nvvps) == 2  # the parent and its child, each named by its own pid
    pids = {int(c[len("profile"):-len(".nvvp")]) for c in nvvps}
    assert pids <= {p["pid"] for p in m["processes"]}
    report = json.loads(proc.stdout)
    assert {p["pid"] for p in report["processes"]} == pids
    assert report["verdict"] == "no" and report["devices"][0]["label"] == "TITAN V (sm_70)"


def test_nvprof_refuses_ampere_and_newer_naming_the_gpu(tmp_path):
    proc = wrapper(["--backend", "nvprof", "-o", str(tmp_path / "x"), "--", "true"], gpus="NVIDIA H200:9.0")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "NVIDIA H200 (compute capability 9.0)" in proc.stderr
    assert "--backend nsys" in proc.stderr and "Traceback" not in proc.stderr


def test_auto_prefers_nsys_then_nvprof_then_explains(tmp_path):
    m = manifest_of(wrapper(["-o", str(tmp_path / "a"), "--no-report", "--", "true"], gpus="T4:7.5"), tmp_path / "a")
    assert m["backend"] == "nsys"
    # No nsys on PATH, no cupti-python nor libcupti for the tracer here, an old GPU: nvprof.
    hide_nsys = tmp_path / "bin"
    hide_nsys.mkdir()
    for tool in ("nvprof", "nvidia-smi"):
        (hide_nsys / tool).symlink_to(FAKE_BIN / tool)
    nolib = {"NVPROF_WRAP_LIBCUPTI": str(tmp_path / "no" / "libcupti.so.13")}
    proc = wrapper(["-o", str(tmp_path / "b"), "--no-report", "--", "true"], gpus="T4:7.5", path_fakes=False,
                   extra_env={"PATH": f"{hide_nsys}:/usr/local/bin:/usr/bin:/bin", **nolib})
    if _cupti_importable():
        pytest.skip("cupti-python is installed here: auto would pick it")
    assert manifest(tmp_path / "b")["backend"] == "nvprof"
    # `true` uses no CUDA: nvprof writes nothing and says so; the run fails with that reason.
    assert proc.returncode == 2 and "No CUDA application was profiled" in proc.stderr
    proc = wrapper(["-o", str(tmp_path / "c"), "--", "true"], path_fakes=False, extra_env=nolib)
    assert proc.returncode == 2 and "no profiler backend is usable here" in proc.stderr and "nsys" in proc.stderr


def manifest_of(proc, folder):
    assert proc.returncode == 0, proc.stderr
    return manifest(folder)


def _cupti_importable() -> bool:
    import importlib.util

    return importlib.util.find_spec("cupti") is not None


def test_output_patterns_and_rank_folders(tmp_path):
    proc = wrapper(["--backend", "nsys", "-o", str(tmp_path / "r-%q{JOBTAG}-%h"), "--no-report", "--", "true"],
                   extra_env={"JOBTAG": "abc", "RANK": "1"})
    assert proc.returncode == 0, proc.stderr
    (folder,) = tmp_path.glob("r-abc-*")
    m = manifest(folder / "rank1")
    assert m["rank"] == 1 and "rank1-nsys.sqlite" in m["captures"]


def test_command_never_goes_through_a_shell(tmp_path):
    marker = tmp_path / "pwned"
    proc = wrapper(["--backend", "nsys", "-o", str(tmp_path / "s"), "--no-report", "--", "echo", f"x; touch {marker}"])
    assert proc.returncode == 0 and not marker.exists()
    assert (tmp_path / "s" / "stdout.log").read_text() == f"x; touch {marker}\n"


def test_missing_command_and_unknown_program(tmp_path):
    proc = wrapper(["--backend", "nsys", "-o", str(tmp_path / "n")])
    assert proc.returncode == 2 and "no command to run" in proc.stderr
    proc = wrapper(["--backend", "cupti", "-o", str(tmp_path / "u"), "--", "no-such-program-xyz"],
                   extra_env={"PYTHONPATH": f"{ROOT}:{FAKES}"})  # cupti-python (faked) present
    assert proc.returncode == 2 and "no-such-program-xyz: command not found" in proc.stderr


def test_cupti_backend_without_cupti_python_refuses_before_launching(tmp_path):
    if _cupti_importable():
        pytest.skip("cupti-python is installed here")
    marker = tmp_path / "ran"
    nolib = {"NVPROF_WRAP_LIBCUPTI": str(tmp_path / "no" / "libcupti.so.13")}  # nor a libcupti for its binding
    proc = wrapper(["--backend", "cupti", "-o", str(tmp_path / "c"), "--", sys.executable, "-c",
                    f"open({str(marker)!r}, 'w')"], extra_env=nolib)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and not marker.exists()
    assert "--backend cupti needs libcupti or the cupti-python package" in proc.stderr, proc.stderr
    assert "pip install cupti-python" in proc.stderr and str(tmp_path / "no" / "libcupti.so.13") in proc.stderr
    assert not (tmp_path / "c").exists()  # a refused run leaves no folder behind
    (tmp_path / "mine").mkdir()  # … and a folder the user made stays, empty
    proc = wrapper(["--backend", "cupti", "-o", str(tmp_path / "mine"), "--", sys.executable, "-c", "pass"],
                   extra_env=nolib)
    assert proc.returncode == 2 and list((tmp_path / "mine").iterdir()) == []


def test_without_cupti_python_the_tracer_runs_on_libcupti(tmp_path):
    """No cupti-python, but a libcupti the tracer's ctypes binding finds: the job starts traced. Without a GPU
    driver here CUPTI refuses the subscription, which the run names as the reason it has no capture."""
    if _cupti_importable():
        pytest.skip("cupti-python is installed here")
    from nvprof_wrap.tracer import ccupti

    try:
        ccupti.load()
    except ccupti.Unavailable:
        pytest.skip("no libcupti on this machine")
    proc = wrapper(["--backend", "cupti", "-o", str(tmp_path / "c"), "--", sys.executable, "-c", "print('job ran')"])
    assert "job ran" in (tmp_path / "c" / "stdout.log").read_text()
    said = (tmp_path / "c" / "stderr.log").read_text()
    # issue 44: the machine's reason in plain words (CUPTI says CUPTI_ERROR_UNKNOWN), and exit 2, not the gate's 1
    from nvprof_wrap.tracer._util import no_gpu_reason

    assert said.startswith(f"nvprof-wrap: CUPTI could not be started ({no_gpu_reason() or 'CUPTI_ERROR_'}"), said
    assert proc.returncode == 2 and "CUPTI could not be started" in proc.stderr
    assert manifest(tmp_path / "c")["backend_version"].startswith("tracer on libcupti (")


def test_a_run_whose_profiler_wrote_no_capture_fails_with_the_reason(tmp_path):
    """The cupti backend (cupti faked) traces Python processes; a job that starts none leaves no capture."""
    proc = wrapper(["--backend", "cupti", "-o", str(tmp_path / "n"), "--", "true"],
                   extra_env={"PYTHONPATH": f"{ROOT}:{FAKES}"})
    assert proc.returncode == 2, proc.stderr  # not the gate's 1 (issue 44)
    assert "the cupti run wrote no capture in" in proc.stderr and "no traced process used CUDA" in proc.stderr


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signals_reach_the_job_and_the_capture_is_kept(tmp_path, sig, code):
    out = tmp_path / "sig"
    job = ("import signal, sys, time\n"
           "def h(s, f):\n    print('job got', s, flush=True); sys.exit(128 + s)\n"
           "signal.signal(signal.SIGINT, h); signal.signal(signal.SIGTERM, h)\n"
           "print('ready', flush=True)\ntime.sleep(60)\n")
    env = {"NVPROF_WRAP_HISTORY": "off", "PATH": f"{FAKE_BIN}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "NO_COLOR": "1"}
    p = subprocess.Popen([sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "-o", str(out),
                          "--no-report", "--", sys.executable, "-c", job], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    log, deadline = out / "stdout.log", time.time() + 30
    while time.time() < deadline and not (log.exists() and "ready" in log.read_text()):
        time.sleep(0.05)
    p.send_signal(sig)
    _stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == code, stderr
    m = manifest(out)
    assert m["signal"] == sig.name and m["exit_code"] == code
    assert "nsys.sqlite" in m["captures"]  # nsys still wrote and exported its report
    assert f"job got {int(sig)}" in (out / "stdout.log").read_text()


def test_doctor_lists_the_machine_and_runs_the_probe_under_the_best_backend(tmp_path):
    env = {"NVPROF_WRAP_HISTORY": "off", "PATH": f"{FAKE_BIN}:/usr/local/bin:/usr/bin:/bin",
           "FAKE_GPUS": "NVIDIA H200:9.0", "PYTHONPATH": str(ROOT), "NO_COLOR": "1",
           "HOME": os.environ.get("HOME", "/root")}
    proc = subprocess.run([sys.executable, "-m", "nvprof_wrap", "doctor", "--format", "json", "-o",
                           str(tmp_path / "probe")], capture_output=True, check=False, text=True, env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)
    assert facts["gpus"][0]["compute_capability"] == "9.0"
    assert facts["profilers"]["nsys"]["version"].endswith("fake") and facts["profilers"]["nvprof"]["path"]
    probe = facts["probe"]
    assert probe["ran"] and probe["backend"] == "nsys" and probe["tensor_cores_used"] is True
    assert (tmp_path / "probe" / "manifest.json").is_file()
    # the profiler's and the probe's own output go to the probe folder's logs, not between doctor's lines
    assert "Collecting data" not in proc.stderr + proc.stdout
    assert "Collecting data" in (tmp_path / "probe" / "stderr.log").read_text()


def test_run_reports_training_health_from_the_jobs_keras_log(tmp_path):
    """Any wrapped job, not only ours: the seed's own Keras log lines, printed by the job, are judged."""
    seed_log = (DATA / "keras_logs").glob("*seed*")
    text = next(seed_log).read_text()
    job = f"import sys; sys.stdout.write({text!r})"
    proc = wrapper(["--backend", "nsys", "-o", str(tmp_path / "h"), "--format", "json", "--", sys.executable,
                    "-c", job])
    assert proc.returncode == 0, proc.stderr
    health = json.loads(proc.stdout)["health"]
    assert health["status"] == "collapsed" and health["epochs"] >= 2


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_profiler_chatter_goes_to_the_log_unless_verbose(tmp_path, verbose):
    out = tmp_path / "run"
    job = "import sys; print('job says hi'); print('[1/3] my own bracket line', file=sys.stderr); sys.exit(0)"
    proc = wrapper(["--backend", "nsys", "-o", str(out), "--no-report", *(["--verbose"] if verbose else []), "--",
                    sys.executable, "-c", job], gpus="NVIDIA H200:9.0")
    assert proc.returncode == 0, proc.stderr
    log = (out / "stderr.log").read_text()
    chatter = ("Collecting data...", "Generating '/tmp/nsys-report-", "[1/1] [", "Generated:", "nsys.nsys-rep")
    assert all(c in log for c in chatter)  # the log keeps every byte
    assert "job says hi" in proc.stdout and "[1/3] my own bracket line" in proc.stderr  # the job's own lines stay
    shown = [c for c in chatter if c in proc.stderr]
    assert shown == (list(chatter) if verbose else [])


def test_chatter_filter_gives_the_same_lines_wherever_the_reads_split():
    from nvprof_wrap.launch.job import _filter

    text = (b"Collecting data...\nepoch 1/2\r\n12/12 [====] loss 0.3\r[1/1] [0%     ] nsys.nsys-rep\r"
            b"[1/1] [==100%] nsys.nsys-rep\r\nGenerated:\n    /runs/a/nsys.nsys-rep\n==PROF== Connected to process 7\n"
            b"    indented job line\n[INFO] done")
    want = b"epoch 1/2\r\n12/12 [====] loss 0.3\r    indented job line\n[INFO] done"
    for cut in range(len(text)):
        shown, held = _filter(text[:cut], final=False)
        more, rest = _filter(held + text[cut:], final=True)
        assert shown + more == want and rest == b"", cut
