"""Tests of the CUPTI tracer (nvprof_wrap/tracer) with CUPTI faked: no GPU, no libcupti.

tests/fakes/cupti is a stand-in for cupti-python with the real names, values and callback protocol.
Most tests run real Python processes the way the launcher does (PYTHONPATH = inject dir : repo : fakes,
NVPROF_WRAP_CUPTI_DIR = run folder) and read the per-process SQLite files back, read-only and immutable
as the reader does. The rest drive a Tracer in-process, without installing any process hook.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import urllib.parse
from pathlib import Path
from types import SimpleNamespace

import pytest

from nvprof_wrap.tracer import cupti_trace, objects
from nvprof_wrap.tracer import setup as tracer_setup
from tests._paths import FAKES, ROOT

INJECT = ROOT / "nvprof_wrap" / "tracer" / "inject"
BUSY = "nvprof-wrap: CUPTI is already in use by another profiler ({}); this process is not traced"
SCRUB = ("PYTHONPATH", "NVPROF_WRAP_CUPTI_DIR", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
         "FAKE_CUPTI", "FAKE_CUPTI_RECORDS_PER_BUFFER", "RANK", "LOCAL_RANK", "SLURM_PROCID",
         "SLURM_LOCALID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK",
         "MPI_LOCALRANKID", "PYTHONSTARTUP", "PYTHONNOUSERSITE")


# ------------------------------------------------------------------------------------------------ helpers

def run_job(code: str, out_dir: Path | None, *, fakes: bool = True, extra_path: tuple = (),
            **env: str) -> subprocess.CompletedProcess:
    """Run `python -c code` as a traced job would be run."""
    environ = {k: v for k, v in os.environ.items() if k not in SCRUB}
    paths = [INJECT, ROOT, *extra_path, *([FAKES] if fakes else [])]
    environ["PYTHONPATH"] = os.pathsep.join(map(str, paths))
    if out_dir is not None:
        environ["NVPROF_WRAP_CUPTI_DIR"] = str(out_dir)
    environ.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environ, capture_output=True,
                          text=True, timeout=30, check=False)


def script(*parts: str) -> str:
    """A program made of (indented) parts, each dedented on its own."""
    return "\n".join(textwrap.dedent(part) for part in parts)


def captures(out_dir: Path) -> list[Path]:
    return sorted(out_dir.glob("cupti-*")) if out_dir.exists() else []


def read(path: Path) -> dict[str, object]:
    """Every table of a capture, opened like the reader: read-only and immutable (no journal replay)."""
    uri = "file:" + urllib.parse.quote(str(path)) + "?mode=ro&immutable=1"
    conn = sqlite3.connect(uri, uri=True)
    try:
        out: dict[str, object] = {"meta": dict(conn.execute("SELECT key, value FROM meta"))}
        for table in ("kernel", "memcpy", "memset", "nvtx", "device", "runtime", "driver"):
            cur = conn.execute(f"SELECT * FROM {table}")
            cols = [d[0] for d in cur.description]
            out[table] = [dict(zip(cols, row)) for row in cur]
        return out
    finally:
        conn.close()


def only_capture(out_dir: Path) -> dict[str, object]:
    files = captures(out_dir)
    assert len(files) == 1, files
    assert files[0].name.endswith(".sqlite"), files
    return read(files[0])


WORK = """
    from cupti import cupti as c
    c._fake_nvtx_push("step", "train")
    for _ in range({n}):
        c._fake_kernel("_Z10gemm_kernelILi128EEvPKfS1_Pf", grid=(64, 2, 1), block=(256, 1, 1))
    c._fake_memcpy(8192, 1)
    c._fake_memset(2048, 7)
    c._fake_nvtx_mark("checkpoint")
    c._fake_nvtx_pop()
    print("work done", flush=True)
"""


# ------------------------------------------------------------------------------- per-process capture

def test_normal_exit_writes_a_complete_capture(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = run_job(WORK.format(n=5), out, RANK="3", LOCAL_RANK="1")
    assert (r.returncode, r.stderr) == (0, "")
    cap = only_capture(out)
    meta = cap["meta"]
    assert captures(out) == [out / f"cupti-{cupti_trace._hostname()}-{meta['pid']}.sqlite"]
    assert meta["format"] == "nvprof-wrap-cupti" and meta["format_version"] == "1"
    assert meta["status"] == "complete" and meta["rank"] == "3" and meta["local_rank"] == "1"
    assert int(meta["ppid"]) == os.getpid() and "-c" in json.loads(meta["argv"])
    assert int(meta["started_ns"]) < int(meta["ended_ns"]) and meta["clock"] == "cupti"
    assert meta["hostname"] and meta["cupti_version"].startswith("cupti-python")
    assert json.loads(meta["kinds"]) == ["CONCURRENT_KERNEL", "MEMCPY", "MEMSET", "DEVICE", "MARKER"]
    # launch calls only: cudaLaunchKernel(_ptsz), cudaGraphLaunch; cuLaunchKernel(_ptsz), cuGraphLaunch,
    # cuLaunchKernelEx
    assert meta["api_records"] == \
        "kernel launch calls, copies, waits and allocations (7 launch and 189 other callback ids)"
    assert [r["cbid"] for r in cap["runtime"]] == [211] * 5 and cap["driver"] == []  # no cudaGetDevice records
    assert len(cap["kernel"]) == 5
    k = cap["kernel"][0]
    assert k["name"] == "_Z10gemm_kernelILi128EEvPKfS1_Pf"  # stored mangled, the reader demangles
    assert (k["grid_x"], k["grid_y"], k["block_x"], k["dynamic_shared"], k["registers_per_thread"]) == \
        (64, 2, 256, 4096, 32)
    assert k["end"] - k["start"] == 1000 and k["stream_id"] == 7 and k["device_id"] == 0
    assert [(m["bytes"], m["copy_kind"]) for m in cap["memcpy"]] == [(8192, 1)]
    assert [(m["bytes"], m["value"]) for m in cap["memset"]] == [(2048, 7)]
    assert cap["device"] == [{"device_id": 0, "name": "NVIDIA H200", "cc_major": 9, "cc_minor": 0,
                              "sm_count": 132, "uuid": "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"}]
    ranges = {row["name"]: row for row in cap["nvtx"]}
    assert ranges["step"]["domain"] == "train" and ranges["step"]["end"] > ranges["step"]["start"]
    assert ranges["checkpoint"]["end"] is None and ranges["step"]["tid"] is not None


def test_the_lead_reader_accepts_the_capture(tmp_path: Path) -> None:
    readers = pytest.importorskip("nvprof_wrap.readers.cupti_sqlite")
    out = tmp_path / "run"
    assert run_job(WORK.format(n=3), out).returncode == 0
    cap = readers.read(captures(out)[0])
    assert not cap.partial and sum(k.launches for k in cap.kernels) == 3


@pytest.mark.parametrize("tail, code, needle", [
    ("sys.exit(3)", 3, ""),
    ("raise ValueError('boom')", 1, "ValueError: boom"),
    ("pass", 0, ""),
])
def test_exit_code_is_kept_and_pending_records_are_flushed(tmp_path: Path, tail: str, code: int,
                                                           needle: str) -> None:
    out = tmp_path / "run"
    r = run_job(script(WORK.format(n=4), f"import sys\n{tail}\n"), out)
    assert r.returncode == code and needle in r.stderr and "nvprof-wrap" not in r.stderr
    cap = only_capture(out)
    assert cap["meta"]["status"] == "complete" and len(cap["kernel"]) == 4  # all from the exit flush


def test_sigint_raises_keyboard_interrupt_after_flushing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = run_job(script(WORK.format(n=3), "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\n"
                       "time.sleep(20)\n"), out)
    assert r.returncode == -signal.SIGINT and "KeyboardInterrupt" in r.stderr
    cap = only_capture(out)
    assert cap["meta"]["status"] == "complete" and len(cap["kernel"]) == 3


def test_sigint_caught_by_the_job_lets_it_go_on(tmp_path: Path) -> None:
    code = script(WORK.format(n=2), """
    import os, signal, time
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(20)
    except KeyboardInterrupt:
        print("caught", flush=True)
    c._fake_kernel("_Z5afterv")
    """)
    out = tmp_path / "run"
    r = run_job(code, out)
    assert r.returncode == 0 and "caught" in r.stdout
    cap = only_capture(out)
    assert [k["name"] for k in cap["kernel"]][-1] == "_Z5afterv" and len(cap["kernel"]) == 3
    assert cap["meta"]["exit"] == "exit"


def test_sigterm_finishes_the_file_then_dies_by_the_signal(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = run_job(script(WORK.format(n=6), "import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\n"
                       "time.sleep(20)\n"), out)
    assert r.returncode == -signal.SIGTERM and r.stderr == ""
    cap = only_capture(out)
    assert cap["meta"]["status"] == "complete" and cap["meta"]["exit"] == "SIGTERM"
    assert len(cap["kernel"]) == 6 and len(cap["nvtx"]) == 2


def test_os_exit_leaves_a_readable_partial_file(tmp_path: Path) -> None:
    code = """
    import os
    from cupti import cupti as c
    for _ in range(10):
        c._fake_kernel()
    c._fake_wait_delivered()   # 5 full buffers of 4 (device record, then runtime call + kernel pairs) reached it
    os._exit(5)
    """
    out = tmp_path / "run"
    r = run_job(code, out, FAKE_CUPTI_RECORDS_PER_BUFFER="4")
    assert r.returncode == 5
    files = captures(out)
    assert len(files) == 1 and files[0].name.endswith(".sqlite.partial")  # no journal left either
    cap = read(files[0])
    assert cap["meta"]["status"] == "partial" and len(cap["device"]) == 1
    assert (len(cap["runtime"]), len(cap["kernel"])) == (10, 9)  # 20 of 21 records: the last kernel was unflushed


# ------------------------------------------------------------------------------------ CUPTI unavailable

@pytest.mark.parametrize("mode, detail", [
    ("busy", "CUPTI for Nsight Systems"),  # the name CUPTI reports for the subscriber holding it
    ("busy_enable", "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"),
])
def test_another_profiler_holding_cupti_gives_one_line(tmp_path: Path, mode: str, detail: str) -> None:
    out = tmp_path / "run"
    r = run_job(WORK.format(n=2), out, FAKE_CUPTI=mode)
    assert r.returncode == 0 and "work done" in r.stdout
    assert r.stderr.splitlines() == [BUSY.format(detail)]
    assert captures(out) == []


def test_a_profiler_injected_into_cuda_is_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = run_job(WORK.format(n=2), out, CUDA_INJECTION64_PATH="/opt/nsys/libToolsInjection64.so")
    assert r.returncode == 0
    assert r.stderr.splitlines() == [BUSY.format("CUDA_INJECTION64_PATH=/opt/nsys/libToolsInjection64.so")]
    assert captures(out) == []


def test_libcupti_not_loadable_gives_one_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = run_job(WORK.format(n=2), out, FAKE_CUPTI="no_lib")
    assert r.returncode == 0 and "work done" in r.stdout
    assert r.stderr.splitlines() == [("nvprof-wrap: CUPTI could not be started (RuntimeError: libcupti.so.13: "
                                      "cannot open shared object file: No such file or directory); "
                                      "this process is not traced")]
    assert captures(out) == []


def test_broken_cupti_python_gives_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "cupti").mkdir(parents=True)
    (broken / "cupti" / "__init__.py").write_text("raise ImportError('numpy is missing')\n")
    out = tmp_path / "run"
    r = run_job("print('job ran')", out, fakes=False, extra_path=(broken,))
    assert (r.returncode, r.stdout) == (0, "job ran\n")
    assert r.stderr.splitlines() == [("nvprof-wrap: cupti-python is not usable here (ImportError: numpy is "
                                      "missing); this process is not traced")]


def test_no_cupti_python_gives_one_line(tmp_path: Path) -> None:
    probe = run_job("import importlib.util; print(importlib.util.find_spec('cupti') is None)", None,
                    fakes=False)
    if probe.stdout.strip() != "True":
        pytest.skip("a real cupti-python is installed here")
    r = run_job("print('job ran')", tmp_path / "run", fakes=False)
    assert r.returncode == 0 and r.stdout == "job ran\n"
    assert r.stderr.splitlines() == [("nvprof-wrap: cupti-python is not usable here (ModuleNotFoundError: "
                                      "No module named 'cupti'); this process is not traced")]


def test_unwritable_run_folder_gives_one_line(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    r = run_job(WORK.format(n=1), not_a_dir)
    assert r.returncode == 0 and "work done" in r.stdout
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("nvprof-wrap: cannot write the CUPTI capture")


def test_concurrent_kernel_kind_missing_falls_back_to_kernel(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = run_job(WORK.format(n=2), out, FAKE_CUPTI="no_concurrent,no_marker")
    assert r.returncode == 0 and len(r.stderr.splitlines()) == 1 and "KERNEL kind" in r.stderr
    cap = only_capture(out)
    assert json.loads(cap["meta"]["kinds"]) == ["KERNEL", "MEMCPY", "MEMSET", "DEVICE"]
    assert cap["meta"]["kind_marker"].startswith("not enabled") and cap["nvtx"] == []
    assert len(cap["kernel"]) == 2


def test_without_the_variable_nothing_happens(tmp_path: Path) -> None:
    r = run_job("import sys; print('nvprof_wrap.tracer.cupti_trace' in sys.modules, 'cupti' in sys.modules)",
                None)
    assert (r.returncode, r.stdout, r.stderr) == (0, "False False\n", "")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------- sitecustomize chaining

PREVIOUS = """
import os, sys
os.environ["PREVIOUS_SITECUSTOMIZE"] = "ran"
"""


@pytest.mark.parametrize("traced", [True, False])
def test_a_preexisting_sitecustomize_still_runs(tmp_path: Path, traced: bool) -> None:
    prev = tmp_path / "prev"
    prev.mkdir()
    (prev / "sitecustomize.py").write_text(PREVIOUS)
    out = tmp_path / "run" if traced else None
    r = run_job("import os, sys; print(os.environ.get('PREVIOUS_SITECUSTOMIZE'), "
                "sys.modules['sitecustomize'].__file__)", out, extra_path=(prev,))
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.split() == ["ran", str(prev / "sitecustomize.py")]
    if traced:
        assert only_capture(out)["meta"]["status"] == "complete"


def test_a_failing_preexisting_sitecustomize_gives_one_line(tmp_path: Path) -> None:
    prev = tmp_path / "prev"
    prev.mkdir()
    (prev / "sitecustomize.py").write_text("raise RuntimeError('site boom')\n")
    out = tmp_path / "run"
    r = run_job(WORK.format(n=1), out, extra_path=(prev,))
    assert r.returncode == 0 and "work done" in r.stdout
    assert r.stderr.splitlines() == [(f"nvprof-wrap: the pre-existing sitecustomize ({prev / 'sitecustomize.py'}) "
                                      "failed: RuntimeError: site boom")]
    assert only_capture(out)["meta"]["status"] == "complete"


def test_a_sitecustomize_folder_without_code_is_passed_over_quietly(tmp_path: Path) -> None:
    """A folder named sitecustomize is a namespace package: its spec comes without a loader (module_from_spec
    gives it one that runs nothing), and site.py imports it silently; the chain must not call that a failure."""
    prev = tmp_path / "prev"
    (prev / "sitecustomize").mkdir(parents=True)
    out = tmp_path / "run"
    r = run_job(WORK.format(n=1), out, extra_path=(prev,))
    assert (r.returncode, r.stderr) == (0, "") and "work done" in r.stdout
    assert only_capture(out)["meta"]["status"] == "complete"


def test_sigterm_chains_to_a_handler_installed_before_us(tmp_path: Path) -> None:
    prev = tmp_path / "prev"
    prev.mkdir()
    (prev / "sitecustomize.py").write_text(textwrap.dedent("""
        import signal, sys
        def _bye(signum, frame):
            print("previous handler", flush=True)
            sys.exit(7)
        signal.signal(signal.SIGTERM, _bye)
    """))
    out = tmp_path / "run"
    r = run_job(script(WORK.format(n=2), "import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\n"
                       "time.sleep(20)\n"), out, extra_path=(prev,))
    assert r.returncode == 7 and "previous handler" in r.stdout
    cap = only_capture(out)
    assert cap["meta"]["status"] == "complete" and len(cap["kernel"]) == 2


# --------------------------------------------------------------------------------- process following

def test_a_child_python_gets_its_own_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = """
    import subprocess, sys
    from cupti import cupti as c
    c._fake_kernel("_Z6parentv")
    child = "from cupti import cupti as c\\nfor _ in range(3): c._fake_kernel('_Z5childv')"
    subprocess.run([sys.executable, "-c", child], check=True, cwd="/")   # a relative run folder still works
    c._fake_kernel("_Z6parentv")
    """
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    r = run_job(code, Path("run"))
    assert (r.returncode, r.stderr) == (0, "")
    caps = [read(p) for p in captures(out)]
    assert len(caps) == 2 and all(c["meta"]["status"] == "complete" for c in caps)
    by_name = {c["kernel"][0]["name"]: c for c in caps}
    parent, child = by_name["_Z6parentv"], by_name["_Z5childv"]
    assert len(parent["kernel"]) == 2 and len(child["kernel"]) == 3
    assert child["meta"]["ppid"] == parent["meta"]["pid"]


def test_fork_children_get_their_own_file_and_leave_the_parent_intact(tmp_path: Path) -> None:
    code = """
    import os, sys
    from cupti import cupti as c
    c._fake_kernel("_Z6parentv")
    pid = os.fork()
    if pid == 0:                       # a fork child that exits normally: its own, complete file
        c._fake_kernel("_Z5childv")
        sys.exit(0)
    os.waitpid(pid, 0)
    pid2 = os.fork()
    if pid2 == 0:                      # multiprocessing-style child: os._exit, no record, no file
        os._exit(0)
    os.waitpid(pid2, 0)
    c._fake_kernel("_Z6parentv")
    print(pid, pid2)
    """
    out = tmp_path / "run"
    r = run_job(code, out)
    assert (r.returncode, r.stderr) == (0, "")
    child_pid, _ = r.stdout.split()
    caps = {c["meta"]["pid"]: c for c in map(read, captures(out))}
    assert len(caps) == 2 and all(p.name.endswith(".sqlite") for p in captures(out))
    child = caps.pop(child_pid)
    (parent,) = caps.values()
    assert [k["name"] for k in parent["kernel"]] == ["_Z6parentv", "_Z6parentv"]
    assert child["meta"]["fork_child"] == "1" and child["meta"]["ppid"] == parent["meta"]["pid"]
    assert child["meta"]["cupti_flush"].startswith("skipped") and child["kernel"] == []


# ------------------------------------------------------------------------- in-process: the Tracer itself

@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("FAKE_CUPTI", raising=False)
    monkeypatch.delenv("FAKE_CUPTI_RECORDS_PER_BUFFER", raising=False)
    saved = {m: sys.modules.pop(m) for m in ("cupti", "cupti.cupti") if m in sys.modules}
    monkeypatch.syspath_prepend(str(FAKES))
    from cupti import cupti as module

    module._fake_reset()
    yield module
    for m in ("cupti", "cupti.cupti"):
        sys.modules.pop(m, None)
    sys.modules.update(saved)


@pytest.fixture
def tracer(fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> cupti_trace.Tracer:
    t = cupti_trace.Tracer(fake, str(tmp_path / "run"))
    monkeypatch.setattr(cupti_trace, "_STATE", t)  # where the module-level CUPTI callbacks deliver
    assert t.setup()
    t.open()
    return t


def kernel(name: str = "_Z1kv", device: int = 0, **over: object) -> SimpleNamespace:
    fields = {"kind": 10, "start": 100, "end": 200, "device_id": device, "context_id": 1, "stream_id": 7,
              "correlation_id": 1, "name": name, "grid_x": 1, "grid_y": 1, "grid_z": 1, "block_x": 32,
              "block_y": 1, "block_z": 1, "registers_per_thread": 16, "static_shared_memory": 0,
              "dynamic_shared_memory": 0}
    return SimpleNamespace(**(fields | over))


def marker(flags: int, mid: int, ts: int, name: str | None = None) -> SimpleNamespace:
    pt = SimpleNamespace(thread_id=42, process_id=1)
    return SimpleNamespace(kind=12, flags_=flags, id=mid, timestamp=ts, name=name, domain=None,
                           object_id=SimpleNamespace(pt=pt))


def finish(t: cupti_trace.Tracer) -> dict[str, object]:
    t.finalize("exit")
    return read(Path(t.writer.final_path))


def test_nvtx_ranges_pair_across_buffers_in_any_order() -> None:
    p = cupti_trace.NvtxPairer()
    assert p.feed(marker(2, 1, 10, "outer")) is None
    assert p.feed(marker(4, 2, 25)) is None  # END of range 2 before its START (other buffer)
    assert p.feed(marker(2, 2, 20, "inner")) == (20, 25, "inner", None, 42)
    assert p.feed(marker(1, 3, 30, "mark")) == (30, None, "mark", None, 42)
    assert p.feed(marker(8, 4, 31, "sync acquire")) is None  # sync-object markers are not ranges
    assert p.feed(marker(4, 1, 40)) == (10, 40, "outer", None, 42)
    assert p.feed(marker(2, 5, 50, "never closed")) is None
    assert p.leftovers() == [(50, None, "never closed", None, 42)]


def test_a_buffer_is_written_in_bounded_batches(tracer: cupti_trace.Tracer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(objects, "BATCH_ROWS", 3)
    records = [kernel(correlation_id=i) for i in range(10)]
    sizes = [len(item[-1]) for item in tracer.objects.items(records)]
    assert max(sizes) <= 3 and sum(sizes) == 10
    cupti_trace._on_buffer_completed(records)
    assert len(finish(tracer)["kernel"]) == 10


def test_odd_records_never_break_the_callback(tracer: cupti_trace.Tracer, capsys) -> None:
    no_regs = kernel()
    del no_regs.registers_per_thread
    huge = kernel(end=2**64 - 1)  # CUPTI_TIMESTAMP_UNKNOWN does not fit SQLite's int64
    cupti_trace._on_buffer_completed([no_regs, huge, SimpleNamespace(kind="x"), object(), kernel()])
    cupti_trace._on_buffer_completed(None)  # not even a list
    cap = finish(tracer)
    assert [k["registers_per_thread"] for k in cap["kernel"]] == [None, 16, 16]
    assert [k["end"] for k in cap["kernel"]] == [200, None, 200]
    assert json.loads(cap["meta"]["missing_fields"]) == ["registers_per_thread"]
    assert int(cap["meta"]["record_errors"]) == 3
    assert len(capsys.readouterr().err.splitlines()) == 1  # warned once


def test_buffers_after_finalize_are_counted_not_written(tracer: cupti_trace.Tracer) -> None:
    tracer.finalize("exit")
    cupti_trace._on_buffer_completed([kernel(), kernel()])
    assert tracer.late_records == 2 and len(read(Path(tracer.writer.final_path))["kernel"]) == 0


def test_flush_flags_and_teardown(tracer: cupti_trace.Tracer, fake) -> None:
    fake._fake_kernel()
    tracer.flush(forced=False)  # SIGINT path: the job may go on, only complete buffers
    finish(tracer)
    names = [c[0] for c in fake.calls]
    assert ("activity_flush_all", 0) in fake.calls and ("activity_flush_all", 1) in fake.calls
    assert names.index("subscribe_v2") == 0  # subscribing is the first CUPTI call
    assert names[-1] == "unsubscribe" and fake._state["enabled"] == set()


def test_a_failed_flush_is_noted_and_the_file_still_finished(tracer: cupti_trace.Tracer, fake) -> None:
    fake._fake_configure("bad_flush")
    cap = finish(tracer)
    assert cap["meta"]["status"] == "complete"
    assert cap["meta"]["cupti_flush"] == "failed: CUPTI_ERROR_UNKNOWN"


def test_device_facts_fall_back_to_torch(tracer: cupti_trace.Tracer, monkeypatch: pytest.MonkeyPatch) -> None:
    props = SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132,
                            uuid="8d6fa8bc-0000-1111-2222-333344445555")
    cuda = SimpleNamespace(is_initialized=lambda: True, get_device_properties=lambda i: props)
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda))
    cupti_trace._on_buffer_completed([kernel(device=1)])  # no DEVICE record for device 1
    assert finish(tracer)["device"] == [{"device_id": 1, "name": "NVIDIA H200", "cc_major": 9, "cc_minor": 0,
                                         "sm_count": 132, "uuid": "GPU-8d6fa8bc-0000-1111-2222-333344445555"}]


def test_nvtx_injection_points_at_the_loaded_libcupti(tracer: cupti_trace.Tracer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NVTX_INJECTION64_PATH", raising=False)
    monkeypatch.setattr(tracer_setup, "_loaded_libcupti", lambda: "/site/nvidia/cu13/lib/libcupti.so.13")
    tracer.enable_nvtx_injection()
    assert os.environ["NVTX_INJECTION64_PATH"] == "/site/nvidia/cu13/lib/libcupti.so.13"
    assert tracer.notes["nvtx"] == "enabled"
    monkeypatch.setenv("NVTX_INJECTION64_PATH", "/opt/other/libinjection.so")
    tracer.enable_nvtx_injection()
    assert tracer.notes["nvtx"] == "unavailable: NVTX_INJECTION64_PATH is /opt/other/libinjection.so"


def test_a_reused_pid_gets_a_new_name(tmp_path: Path) -> None:
    base = f"cupti-h-{os.getpid()}"
    (tmp_path / f"{base}.sqlite").write_text("")
    (tmp_path / f"{base}-1.sqlite.partial").write_text("")
    partial, final = cupti_trace._claim_path(str(tmp_path), base)
    assert (Path(partial).name, Path(final).name) == (f"{base}-2.sqlite.partial", f"{base}-2.sqlite")


@pytest.mark.parametrize("value, text", [
    (SimpleNamespace(bytes=bytes(range(16))), "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"),
    (bytes(16), "GPU-00000000-0000-0000-0000-000000000000"),
    ("GPU-abc", "GPU-abc"), ("MIG-abc", "MIG-abc"), (None, None),
])
def test_uuids_read_like_nvidia_smi(value: object, text: str | None) -> None:
    assert cupti_trace.format_uuid(value) == text


def test_the_inject_folder_shadows_nothing_but_sitecustomize() -> None:
    assert sorted(p.name for p in INJECT.iterdir() if p.name != "__pycache__") == ["sitecustomize.py"]


def test_kernels_are_attributed_to_the_nvtx_ranges_of_their_launching_thread(tmp_path: Path) -> None:
    """The tracer records launch calls, so the reader can follow kernel → launch call → enclosing ranges —
    through the driver API too, which is how cuBLAS launches its GEMMs (the H200 run that found this:
    docs/backends.md)."""
    out = tmp_path / "run"
    assert run_job(ATTRIBUTION_JOB, out).returncode == 0
    assert attributed_ops(out) == ATTRIBUTED


ATTRIBUTION_JOB = """
from cupti import cupti as c
c._fake_nvtx_push("keras:dense (Dense)")
c._fake_nvtx_push("aten::mm")
c._fake_kernel("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", api="driver")
c._fake_nvtx_pop()
c._fake_kernel("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_")
c._fake_nvtx_pop()
c._fake_kernel("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", api="driver")
"""
ATTRIBUTED = {("keras:dense (Dense)", "aten::mm", "nvjet_sm90_h", 1),
              ("keras:dense (Dense)", "keras:dense (Dense)", "void at::nat", 1),
              ("(no NVTX range)", "(no NVTX range)", "nvjet_sm90_h", 1)}


def attributed_ops(out: Path) -> set[tuple]:
    from nvprof_wrap import readers

    (path,) = captures(out)
    return {(o.scope, o.op, o.name[:12], o.launches) for o in readers.read(path).ops}


def test_without_per_call_enabling_every_api_call_is_recorded_and_attribution_still_works(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert run_job(ATTRIBUTION_JOB, out, FAKE_CUPTI="no_api_filter").returncode == 0
    cap = only_capture(out)
    assert cap["meta"]["api_records"].startswith("every runtime and driver call (per-call enabling failed")
    assert json.loads(cap["meta"]["kinds"])[-2:] == ["RUNTIME", "DRIVER"]
    assert sorted(r["cbid"] for r in cap["runtime"]) == [17, 17, 17, 211]  # cudaGetDevice too
    assert [r["cbid"] for r in cap["driver"]] == [652, 652]
    assert attributed_ops(out) == ATTRIBUTED


def test_api_records_can_be_turned_off(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert run_job(ATTRIBUTION_JOB, out, NVPROF_WRAP_CUPTI_RUNTIME="0").returncode == 0
    cap = only_capture(out)
    assert cap["meta"]["api_records"] == "none (NVPROF_WRAP_CUPTI_RUNTIME=0)"
    assert (cap["runtime"], cap["driver"], len(cap["kernel"])) == ([], [], 3)
    assert attributed_ops(out) == set()
