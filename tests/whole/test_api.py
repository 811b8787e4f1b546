"""The Python API (issue 15): analyze(), profile() windows, p.step(), the %%nvprof_wrap cell magic and the Keras
callback. The in-process tracer runs against the fake CUPTI (tests/fakes/cupti, real record layouts), in a child
Python process as a user's script or notebook kernel would run it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import nvprof_wrap
from nvprof_wrap.cli import main
from nvprof_wrap.errors import NvprofWrapError
from tests._paths import DATA, FAKES, H200, PUBLIC, ROOT

SAMPLES = ROOT / "nvprof_wrap" / "samples"
NVJET = "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"
FILL = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"


def python(code: str, tmp_path, **env: str) -> dict:
    """Run code in a fresh Python with the fake cupti importable; it prints one JSON line last."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("NVPROF_WRAP", "FAKE_CUPTI", "CUDA_INJECTION"))}
    environ.update(PYTHONPATH=f"{ROOT}{os.pathsep}{FAKES}", KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3",
                   NVPROF_WRAP_CUPTI_BINDING="python", **env)  # the fake is cupti-python (conftest.py)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, env=environ,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- analyze() is `report --format json` ----------------------------------------------------------------------
# A run folder's own files (what reading a folder skips): not captures, not fixtures.
RUN_FILES = {"manifest.json", "metrics.jsonl", "stdout.log", "stderr.log"}


def _every_fixture() -> list:
    """Every file and run folder the project reads: the bundled samples, every run folder and every file in it under
    tests/data/h200_runs and h100_runs, the console captures, MIT traces, JAX profiler captures and the ncu FLOPs
    export under tests/data, and every file of the shared public and H200 fixtures. Those that are no capture (the
    H200 records JSON and nsys log, PTX, verify.json, the AMD traces) must be refused alike by both."""

    runs = sorted(p for d in ("h200_runs", "h100_runs") for p in (DATA / d).iterdir()
                  if p.is_dir())
    found = [*(SAMPLES / s for s in ("keras_reuters_fp16", "torch_ops", "two_children")), *runs,
             *sorted(p for r in runs for p in r.rglob("*") if p.is_file() and p.name not in RUN_FILES),
             *sorted((DATA / "console").glob("*.log")), *sorted((DATA / "public_mit").glob("*.json.gz")),
             *sorted((DATA / "jax_profiler").glob("*")), *sorted((DATA / "ncu_flops").glob("*.csv"))]
    for shared in (PUBLIC, H200):  # absent (a clean clone): the folder itself, skipped by conftest with the reason
        found += sorted(p for p in shared.glob("*") if p.is_file()) if shared.is_dir() else [shared]
    return found


@pytest.mark.parametrize("path", _every_fixture(), ids=lambda p: str(p.relative_to(p.parents[1])))
def test_analyze_to_dict_is_the_json_report(path, capsys, tmp_path):
    """Issue 15's "done when": analyze(path).to_dict() == the parsed output of `report path --format json`, for every
    fixture; where the command refuses a file, analyze() raises the same error."""
    code = main(["report", str(path), "--format", "json", "--store", str(tmp_path / "s.sqlite")])
    out, err = capsys.readouterr()
    try:
        api = nvprof_wrap.analyze(path).to_dict()
    except NvprofWrapError as e:
        assert (code, out, err) == (e.exit_code, "", f"nvprof-wrap: error: {e}\n")
        return
    assert code == 0, err
    assert api == json.loads(out)


def test_demo_json_is_each_samples_to_dict(capsys):
    """demo's JSON goes through the JSON renderer too: one object, each bundled sample's report under its name."""
    assert main(["demo", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    names = ("keras_reuters_fp16", "torch_ops", "two_children")
    assert got["schema"] == "nvprof-wrap.reports/1" and got["schema_version"] == 1
    assert got["reports"] == {n: nvprof_wrap.analyze(SAMPLES / n).to_dict() for n in names}


def test_every_fixture_folder_is_in_the_list():
    """The list above misses no kind of capture tests/data holds (a new folder there must be added to it)."""
    assert {p.name for p in DATA.iterdir() if p.is_dir()} == {"h200_runs", "h100_runs", "console", "public_mit",
                                                                "golden", "keras_logs", "nanogpt_cpu", "numerics",
                                                                "xla_dump", "jax_profiler", "ncu_flops",
                                                                "annotate_shapes"}
    # golden, keras_logs, nanogpt_cpu, numerics, xla_dump and annotate_shapes hold no captures (golden reports, job
    # logs, numerics records of run --backend none, XLA's HLO dumps, how h200_runs/annotate_shapes_nsys is made)


def test_report_display_methods():
    rep = nvprof_wrap.analyze(SAMPLES / "keras_reuters_fp16")
    assert str(rep).startswith("Tensor cores used: yes")
    assert rep._repr_html_().startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;')  # the page, in a frame of its own
    assert rep.health is not None and rep.health.status == "healthy"  # a run folder: its training health too
    assert rep.to_dict()["health"]["epochs"] == rep.health.epochs
    with pytest.raises(AttributeError):
        rep.extra  # noqa: B018 - the untyped dict is gone


def test_to_pandas_is_one_frame_per_table_of_the_json(monkeypatch):
    """to_pandas(): the JSON's tables (kernels, time_split, devices, processes, ops, scopes, and the hardware's
    tensor-pipe activity: hardware, hardware_checks, hardware_series; the per-step series) as DataFrames, row for
    row — checked with pandas where it is installed, else with a stand-in that records what it was given; and one
    error naming pandas where it is missing."""
    import sys
    import types

    rep = nvprof_wrap.analyze(SAMPLES / "keras_reuters_fp16")
    d = rep.to_dict()
    tables = ("kernels", "time_split", "devices", "processes", "ops", "scopes", "hardware", "hardware_checks",
              "hardware_series", "series", "ranks", "rank_outliers")
    try:
        import pandas  # noqa: F401
    except ImportError:
        fake = types.ModuleType("pandas")
        fake.DataFrame = lambda rows: ("frame", rows)
        monkeypatch.setitem(sys.modules, "pandas", fake)
        frames = rep.to_pandas()
        assert frames == {t: ("frame", d[t]) for t in tables}
    else:
        frames = rep.to_pandas()
        assert set(frames) == set(tables)
        for t in tables:
            assert frames[t].to_dict("records") == d[t], t
    assert len(d["kernels"]) == 53 and len(d["ops"]) > 10  # the frames above are not empty ones
    monkeypatch.setitem(sys.modules, "pandas", None)  # not installed
    with pytest.raises(NvprofWrapError, match=r"to_pandas\(\) needs pandas"):
        rep.to_pandas()


# --- profile(): a window of this process -------------------------------------------------------------------
def test_profile_block(tmp_path):
    got = python(f"""
        import json, nvprof_wrap
        from cupti import cupti as c
        c._fake_kernel("{NVJET}")                      # before the window: not in the report
        with nvprof_wrap.profile("out") as p:
            for _ in range(4):
                c._fake_kernel("{NVJET}", grid=(132, 1, 1), block=(384, 1, 1))
            c._fake_kernel("{FILL}")
        d = p.report.to_dict()
        print(json.dumps({{"capture": str(p.capture), "verdict": d["verdict"], "launches": d["launches"],
                           "kernels": sorted(k["name"] for k in d["kernels"])}}))
    """, tmp_path)
    assert got["verdict"] == "yes" and got["launches"] == 5
    assert NVJET in got["kernels"] and any("FillFunctor<float>" in k for k in got["kernels"])  # demangled
    assert got["capture"].endswith(".sqlite")
    import sqlite3

    meta = dict(sqlite3.connect(got["capture"]).execute("SELECT key, value FROM meta"))
    # A window opens after the process has a CUDA context: per-call API records then never came on the H200, so
    # windows record the RUNTIME and DRIVER kinds (benchmarks/gpu/window_api_records.py, docs/api.md)
    assert meta["api_records"].startswith("every runtime and driver call")
    assert meta["exit"] == "profile window end"


def test_profile_steps_window_and_two_windows_in_one_process(tmp_path):
    got = python("""
        import json, nvprof_wrap
        from cupti import cupti as c
        p = nvprof_wrap.profile("a", steps=(2, 4))
        with p:
            for step in range(6):
                c._fake_kernel(f"step_kernel_{step}")
                p.step()
        first = sorted(k.name for k in p.report.kernels)
        with nvprof_wrap.profile("b") as q:   # another window later in the same process: its own capture
            c._fake_kernel("second_window_kernel")
        print(json.dumps({"first": first, "second": [k.name for k in q.report.kernels],
                          "files": [str(p.capture), str(q.capture)]}))
    """, tmp_path)
    assert got["first"] == ["step_kernel_2", "step_kernel_3"]
    assert got["second"] == ["second_window_kernel"]
    assert got["files"][0] != got["files"][1]


def test_profile_refuses_with_the_reason(tmp_path):
    got = python("""
        import json, nvprof_wrap
        from nvprof_wrap.errors import ToolMissing
        try:
            with nvprof_wrap.profile():
                pass
        except ToolMissing as e:
            print(json.dumps({"error": str(e)}))
    """, tmp_path, FAKE_CUPTI="busy")
    # CUPTI's own answer, not a pointer to a line printed elsewhere
    assert got["error"].startswith("cannot profile this process: CUPTI is already in use by another profiler"), got


def python_without_cupti(code: str, tmp_path) -> subprocess.CompletedProcess:
    """A fresh Python as on a machine with no libcupti and no cupti-python: the tracer's own choice of binding (the
    ctypes one first), nothing faked. Returns the finished process (stdout, stderr, returncode)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("NVPROF_WRAP", "FAKE_CUPTI", "CUDA_"))}
    environ.update(PYTHONPATH=str(ROOT), KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3",
                   CUDA_VISIBLE_DEVICES="", NVPROF_WRAP_HISTORY="off")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, env=environ,
                          capture_output=True, text=True, timeout=300, check=False)


def _expected_refusal() -> str:
    """What the tracer must say here, found the way it looks: with no libcupti the ctypes binding and then
    cupti-python are named; with one (this machine kind has the CUDA toolkit's) but no GPU, CUPTI's own error."""
    from nvprof_wrap.tracer import ccupti

    try:
        ccupti.load()
    except ccupti.Unavailable:
        return "cannot profile this process: no libcupti for the ctypes binding"
    from nvprof_wrap.tracer._util import no_gpu_reason

    return f"cannot profile this process: CUPTI could not be started ({no_gpu_reason() or 'CUPTI_ERROR_'}"


def test_profile_without_a_usable_cupti_raises_one_typed_error_with_the_reason(tmp_path):
    """Issue 22: profile() once demanded cupti-python although the tracer drives libcupti itself. Without cupti-python
    it now tries the ctypes binding, as `run --backend cupti` does, and where that cannot trace either it raises
    ToolMissing with the reason (CUPTI's own error, or both bindings named), not a traceback from deep inside."""
    proc = python_without_cupti("""
        import json, nvprof_wrap
        from nvprof_wrap.errors import ToolMissing
        try:
            with nvprof_wrap.profile():
                raise AssertionError("the block must not run under a window that never opened")
        except ToolMissing as e:
            print(json.dumps({"error": str(e)}))
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    error = json.loads(proc.stdout.strip().splitlines()[-1])["error"]
    assert error.startswith(_expected_refusal()), error
    assert "no libcupti" not in error or "cupti-python is not usable here" in error
    assert proc.stderr == ""


def test_cell_magic_runs_the_cell_unprofiled_with_one_line_when_tracing_cannot_start(tmp_path):
    pytest.importorskip("IPython")
    proc = python_without_cupti("""
        import json
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "nvprof_wrap")
        shown = ip.run_cell_magic("nvprof_wrap", "", "ran = 6 * 7")
        print(json.dumps({"ran": ip.user_ns.get("ran"), "shown": shown is None}))
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"ran": 42, "shown": True}
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"nvprof-wrap: not profiling this cell: {_expected_refusal()}"), \
        proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.tf
def test_keras_callback_lets_fit_run_when_tracing_cannot_start(tmp_path):
    pytest.importorskip("keras")
    proc = python_without_cupti("""
        import json
        import numpy as np
        import keras
        from nvprof_wrap.errors import ToolMissing
        from nvprof_wrap.keras import ProfileSteps

        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
        model.compile("sgd", "mse")
        cb = ProfileSteps(start=0, stop=3)
        history = model.fit(np.zeros((64, 8)), np.zeros((64, 4)), batch_size=8, epochs=2, verbose=0, callbacks=[cb])
        try:
            cb.report
            error = None
        except ToolMissing as e:
            error = str(e)
        print(json.dumps({"epochs": len(history.history["loss"]), "error": error}))
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["epochs"] == 2 and got["error"].startswith(_expected_refusal()), got
    ours = [line for line in proc.stderr.splitlines() if line.startswith("nvprof-wrap")]
    assert len(ours) == 1 and ours[0].startswith("nvprof-wrap: ProfileSteps: not profiling this fit:"), proc.stderr


def test_report_of_an_open_window_is_an_error(tmp_path):
    got = python("""
        import json, nvprof_wrap
        from nvprof_wrap.errors import NvprofWrapError
        p = nvprof_wrap.profile().start()
        try:
            p.report
        except NvprofWrapError as e:
            print(json.dumps({"error": str(e)}))
        p.stop()
    """, tmp_path)
    assert "still open" in got["error"]


# --- the notebook magic --------------------------------------------------------------------------------
def test_cell_magic_profiles_the_cell(tmp_path):
    pytest.importorskip("IPython")
    got = python(f"""
        import json
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "nvprof_wrap")
        cell = "from cupti import cupti as c\\nfor _ in range(3):\\n    c._fake_kernel('{NVJET}')\\n"
        ip.run_cell_magic("nvprof_wrap", "-o cellout", cell)
        rep = ip.user_ns["_nvprof_wrap_report"]
        print(json.dumps({{"verdict": rep.verdict.tensor_cores, "launches": rep.verdict.launches,
                           "html": rep._repr_html_().startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;')}}))
    """, tmp_path)
    assert got == {"verdict": "yes", "launches": 3, "html": True}


# --- the Keras callback ----------------------------------------------------------------------------------------
@pytest.mark.tf
def test_keras_callback_profiles_a_window_of_batches(tmp_path):
    pytest.importorskip("keras")
    got = python("""
        import json
        import numpy as np
        import keras
        from cupti import cupti as c
        from nvprof_wrap.keras import ProfileSteps

        class GpuWork(keras.callbacks.Callback):   # stands in for the kernels a GPU batch launches
            def on_train_batch_begin(self, batch, logs=None):
                c._fake_kernel(f"batch_kernel_{self.model.optimizer.iterations.numpy()}")

        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
        model.compile("sgd", "mse")
        cb = ProfileSteps(start=3, stop=6, folder="kout")
        model.fit(np.zeros((64, 8)), np.zeros((64, 4)), batch_size=8, epochs=1, verbose=0, callbacks=[GpuWork(), cb])
        print(json.dumps({"kernels": sorted(k.name for k in cb.report.kernels)}))
    """, tmp_path)
    assert got["kernels"] == ["batch_kernel_3", "batch_kernel_4", "batch_kernel_5"]
