"""A capture window's cuProfilerStop beside the job (nsys): tracer/window.py, on a stand-in libcuda.

nsys holds cuProfilerStop's caller while it stops collecting (measured on an H200: 2.9-3.5 s per window, the job
stalled at step B). Under nsys a steps window stops on a helper thread, with the job's own context made current
there; the report cuts what nsys recorded meanwhile (tests/timeline/test_window_cut.py). The stand-in
(tests/fakes/libcuda/fake_cuda.c, compiled here) keeps the driver's rules that matter: contexts current per thread,
none on a new thread, the profiler calls refused (201) without one, and the stop holding its caller.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "fakes" / "libcuda" / "fake_cuda.c"
STOP_MS = 600

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc here to build the stand-in libcuda")


@pytest.fixture(scope="module")
def libcuda(tmp_path_factory) -> Path:
    lib = tmp_path_factory.mktemp("libcuda") / "libcuda.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(lib), str(SOURCE), "-lpthread"],
                   check=True, capture_output=True, timeout=120)
    return lib


JOB = textwrap.dedent("""
    import ctypes, json, os, sys, threading, time
    lib = ctypes.CDLL(sys.argv[1], mode=os.RTLD_GLOBAL)  # the job's CUDA, loaded before the window needs it
    for other in filter(None, os.environ.get("FAKE_LOAD", "").split(":")):  # what nsys and torch load beside it
        ctypes.CDLL(other, mode=os.RTLD_GLOBAL)
    pace = float(os.environ.get("FAKE_PACE", "0"))  # seconds per step: the job still stepping when nsys has stopped
    from nvprof_wrap.tracer import window
    window.install()
    lib.fake_make_current()  # the job's first CUDA call made its context current on this thread
    source, last = sys.argv[2], int(sys.argv[3])
    if sys.argv[4] == "keras batches marked":  # what annotate.patch_keras_batches says once it marks them
        window.MARKED.add("keras batches")
    at = {}
    for n in range(last + 1):
        if source == "optimizer steps":
            window.optimizer_step(n)
        else:
            window._CONTROLLER.step(n, source)
        at[n] = time.perf_counter()
        time.sleep(pace)
    print(json.dumps({"main": threading.get_ident(), "after_close_s": at[last] - at[min(9, last)]}))
""")


def _job(tmp_path: Path, libcuda: Path, *, by: str = "profiler-aside", source: str = "optimizer steps",
         last: int = 11, stop: str | None = None, marks: str = "",
         env_more: dict[str, str] | None = None) -> tuple[dict, list[dict], list[list[str]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NVPROF_WRAP_", "FAKE_"))}
    env.update(PYTHONPATH=str(ROOT), NVPROF_WRAP_CAPTURE="steps:3:9", NVPROF_WRAP_CAPTURE_BY=by,
               NVPROF_WRAP_RUN_DIR=str(tmp_path), FAKE_CUDA_LOG=str(tmp_path / "cuda.log"),
               FAKE_CUDA_STOP_MS=str(STOP_MS), **({"NVPROF_WRAP_PROFILER_STOP": stop} if stop else {}),
               **(env_more or {}))
    proc = subprocess.run([sys.executable, "-c", JOB, str(libcuda), source, str(last), marks], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [json.loads(line) for line in (tmp_path / "windows.jsonl").read_text().splitlines()]
    calls = [line.split() for line in (tmp_path / "cuda.log").read_text().splitlines()]
    return json.loads(proc.stdout), events, calls


@pytest.mark.parametrize("kwargs", [{}, {"source": "keras batches", "marks": "keras batches marked"}],
                         ids=["optimizer steps", "keras batches, marked by run"])
def test_under_nsys_the_stop_runs_beside_the_job_with_its_context(tmp_path, libcuda, kwargs):
    out, events, calls = _job(tmp_path, libcuda, **kwargs)
    assert [(e["event"], e.get("step")) for e in events] == [("open", 3), ("close", 9), ("stopped", None),
                                                             ("end", 11)]
    close, stopped = events[1], events[2]
    assert close["stop"] == "aside" and close["held_ms"] < STOP_MS / 4  # the job was not held
    assert stopped["held_ms"] >= STOP_MS and "why" not in stopped  # the stop took its time on the helper
    assert out["after_close_s"] < STOP_MS / 2e3  # steps 10 and 11 ran while nsys stopped
    (start, main, ctx, ok), (stop, helper, ctx2, ok2) = calls
    assert (start, stop, ok, ok2) == ("cuProfilerStart", "cuProfilerStop", "0", "0")
    assert helper != main and ctx2 == ctx  # another thread, the job's context
    # the process ended only once the stop had returned: nsys is not left stopping at the exit
    assert events[3]["unix_ns"] >= stopped["unix_ns"]


def test_a_job_ending_right_after_the_close_waits_for_the_stop(tmp_path, libcuda):
    _out, events, _calls = _job(tmp_path, libcuda, last=9)
    assert [e["event"] for e in events] == ["open", "close", "stopped", "end"]
    assert events[3]["unix_ns"] - events[1]["unix_ns"] >= STOP_MS * 1e6


@pytest.mark.parametrize(("case", "kwargs"), [
    ("asked to stop on the job's thread", {"stop": "job"}),
    ("nvprof", {"by": "profiler"}),
    ("keras batches not marked (no NVTX): none in the capture to cut at", {"source": "keras batches"}),
])
def test_the_stop_stays_on_the_jobs_thread(tmp_path, libcuda, case, kwargs):
    out, events, calls = _job(tmp_path, libcuda, **kwargs)
    close = next(e for e in events if e["event"] == "close")
    assert "stop" not in close and close["held_ms"] >= STOP_MS, case
    assert not any(e["event"] == "stopped" for e in events)
    assert calls[1][0] == "cuProfilerStop" and calls[1][1] == str(out["main"]) and calls[1][3] == "0"


def test_a_window_the_job_ends_inside_stops_at_its_end_on_its_thread(tmp_path, libcuda):
    out, events, calls = _job(tmp_path, libcuda, last=6)
    close = next(e for e in events if e["event"] == "close")
    assert close.get("at") == "end" and "stop" not in close
    assert calls[1][:2] == ["cuProfilerStop", str(out["main"])]


# ------------------------------------------------------------------------------------ nsys' CUPTI detached

CUPTI_SOURCE = ROOT / "tests" / "fakes" / "libcupti" / "fake_cupti.c"


@pytest.fixture(scope="module")
def profilers(tmp_path_factory) -> dict[str, Path]:
    """nsys' folder (its injection library and its libcupti) and torch's own libcupti elsewhere, as on the H200:
    /opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/libcupti.so.13.0 beside nsys' libraries, and
    site-packages/nvidia/cu13/lib/libcupti.so.13 (both mapped in the job, measured there)."""
    top = tmp_path_factory.mktemp("profilers")
    libs = {"nsys": top / "nsys" / "target-linux-x64" / "libcupti.so.13.0",
            "injection": top / "nsys" / "target-linux-x64" / "libToolsInjection64.so",
            "torch": top / "site-packages" / "nvidia" / "cu13" / "lib" / "libcupti.so.13"}
    for tag, lib in libs.items():
        lib.parent.mkdir(parents=True, exist_ok=True)
        flags = ["-DINJECTION"] if tag == "injection" else [f'-DTAG="{tag}"']
        subprocess.run(["gcc", "-shared", "-fPIC", *flags, "-o", str(lib), str(CUPTI_SOURCE), "-lpthread"],
                       check=True, capture_output=True, timeout=120)
    return libs


def _stepping(profilers: dict[str, Path], *names: str, **more: str) -> dict[str, str]:
    """The job loads these libraries and goes on stepping (0.1 s a step) until nsys' stop (0.6 s) has returned."""
    return {"FAKE_LOAD": ":".join(str(profilers[n]) for n in names), "FAKE_PACE": "0.1", **more}


def test_once_nsys_stopped_its_cupti_is_detached_on_the_jobs_thread(tmp_path, libcuda, profilers):
    out, events, calls = _job(tmp_path, libcuda, last=19, env_more=_stepping(profilers, "nsys", "injection", "torch"))
    assert [e["event"] for e in events] == ["open", "close", "stopped", "detached", "end"]
    detached = events[3]
    assert detached["cupti"] == [[str(profilers["nsys"]), 0]] and "why" not in detached  # nsys' copy, not torch's
    assert detached["held_ms"] < 100
    finalize = [c for c in calls if c[0] == "cuptiFinalize"]
    assert finalize == [["cuptiFinalize", str(out["main"]), "nsys", "0"]]  # once, between the job's steps
    assert calls.index(finalize[0]) > [c[0] for c in calls].index("cuProfilerStop")  # after nsys stopped
    # nothing waits for it: the job's steps after the close kept their pace (0.1 s, 10 of them)
    assert out["after_close_s"] < 1.0 + STOP_MS / 2e3


@pytest.mark.parametrize(("case", "names", "more"), [
    ("asked to leave it attached", ("nsys", "injection", "torch"), {"NVPROF_WRAP_NSYS_DETACH": "0"}),
    ("the stop failed (201): nsys may not have stopped", ("nsys", "injection"), {"FAKE_CUDA_PUSH_FAILS": "1"}),
])
def test_nsys_cupti_left_attached(tmp_path, libcuda, profilers, case, names, more):
    _out, events, calls = _job(tmp_path, libcuda, last=19, env_more=_stepping(profilers, *names, **more))
    assert "detached" not in [e["event"] for e in events], case
    assert not any(c[0] == "cuptiFinalize" for c in calls), case


def test_no_profilers_cupti_no_detach(tmp_path, libcuda, profilers):
    """Only a libcupti beside a profiler's injection library counts as the profiler's: torch's is never touched,
    and a failed finalize is said with its status."""
    _out, events, calls = _job(tmp_path, libcuda, last=19, env_more=_stepping(profilers, "torch"))
    detached = next(e for e in events if e["event"] == "detached")
    assert detached["cupti"] == [] and "no libcupti beside" in detached["why"]
    assert str(profilers["torch"]) in detached["mapped"]
    assert not any(c[0] == "cuptiFinalize" for c in calls)
    (tmp_path / "again").mkdir()
    _out, events, _calls = _job(tmp_path / "again", libcuda, last=19,
                                env_more=_stepping(profilers, "nsys", "injection", FAKE_CUPTI_STATUS="15"))
    assert next(e for e in events if e["event"] == "detached")["cupti"] == [[str(profilers["nsys"]), 15]]
