"""Contracts every reader and every renderer keeps (issue 15): one test over the whole registry each, on real files.

Readers: each format's real capture reads into a Capture whose every field has its documented type and range;
reading an .nsys-rep (through Nsight Systems' export) gives exactly the Capture of the export, ops included, and a
gzipped SQLite capture exactly the plain file's.
Renderers: each one implements every method of the Renderer protocol and renders the same real report, kernel rows,
classifications, experiment rows, doctor facts, comparison and run history without printing, keeping capture text
out of the terminal.
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import os

import pytest

from nvprof_wrap import readers
from nvprof_wrap.classify import classify_many
from nvprof_wrap.model import Activity, Capture, CounterVerdict, Gpu, KernelAgg, MemAgg, OpAgg, Process
from nvprof_wrap.pipeline import analyze
from nvprof_wrap.renderers import (
    BY_EXTENSION,
    KINDS,
    RENDERERS,
    Classifications,
    Doctor,
    Experiment,
    Kernels,
    Named,
    Options,
    Renderer,
    Reports,
    Runs,
    render,
)
from nvprof_wrap.renderers._frame import notebook
from nvprof_wrap.report import Report
from nvprof_wrap.report.compare import Comparison
from tests._paths import DATA, FAKE_BIN, PUBLIC, ROOT

SAMPLES = ROOT / "nvprof_wrap" / "samples"
FAKE_NSYS = FAKE_BIN / "nsys"

# A real capture of every format (public fixtures where the project may not commit the file).
REAL = {
    "nsys-sqlite": SAMPLES / "keras_reuters_fp16" / "nsys_annotated.sqlite",
    "nvprof": PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp",
    "cupti": DATA / "h200_runs" / "gemm_cupti" / "cupti-vm-4574.sqlite",
    "xplane": DATA / "h200_runs" / "jax_bf16_xplane" / "vm.xplane.pb",
    "tf-trace-json": DATA / "h200_runs" / "jax_bf16_xplane" / "vm.trace.json.gz",
    "kineto-json": DATA / "h200_runs" / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz",
    "ncu-csv": SAMPLES / "torch_ops" / "ncu_tensor_metrics.csv",
    "nvprof-csv": PUBLIC / "nanzifan__nvprof-result__print-gpu-summary.csv",
    "pyprof-csv": PUBLIC / "josiahdavis__profiling-lm__lm.csv",
    "nsys-stats-csv": DATA / "h200_runs" / "gpt_fp32_stats" / "cuda_gpu_kern_sum.csv",
    "console-text": DATA / "console" / "xplacer_nvprof_summary_bfs.log",
}
FIELD_TYPES = {"kernels": KernelAgg, "memops": MemAgg, "activity": Activity, "devices": Gpu,
               "processes": Process, "counters": CounterVerdict, "ops": OpAgg}


def test_every_reader_has_a_real_file_here():
    assert set(REAL) | {"nsys-rep", "nvprof-wrap-summary"} == set(readers.READERS)


@pytest.mark.parametrize("fmt", sorted(REAL))
def test_a_summary_gives_back_the_capture_field_for_field(fmt, tmp_path):
    """`summarize` keeps what reading a capture gave (readers/summary.py); reading the summary gives it back, every
    field equal — the path too: a report of summaries names the captures, as a report of the captures does."""
    from nvprof_wrap.readers import summary

    path = REAL[fmt]
    if not path.is_file():
        pytest.skip(f"needs {path}")
    cap = readers.read(path)
    out = tmp_path / ("x" + summary.SUFFIX)
    summary.write(cap, "content@data=x", None, out)
    assert readers.detect(out) == summary.FORMAT and out.stat().st_size < max(4096, path.stat().st_size)
    assert readers.read(out) == cap


@pytest.mark.parametrize("fmt", sorted(REAL))
def test_reader_contract(fmt):
    path = REAL[fmt]
    if not path.is_file():
        pytest.skip(f"needs {path}")
    assert readers.detect(path) == fmt
    cap = readers.read(path)
    assert isinstance(cap, Capture) and cap.path == str(path) and cap.kernels
    for name, cls in FIELD_TYPES.items():
        rows = getattr(cap, name)
        assert isinstance(rows, tuple) and all(isinstance(r, cls) for r in rows), name
    for k in cap.kernels:
        assert k.name and "\n" not in k.name and k.launches > 0
        assert k.total_ns is None or k.total_ns >= 0
        assert k.min_ns is None or k.max_ns is None or 0 <= k.min_ns <= k.max_ns
    assert len({(k.pid, k.device_id, k.name) for k in cap.kernels}) == len(cap.kernels)  # aggregated, once each
    for m in cap.memops:
        assert m.kind in ("memcpy", "memset") and m.count > 0 and m.total_ns >= 0
    for a in cap.activity:
        assert a.first_ns <= a.last_ns and 0 <= a.busy_ns
    assert all(isinstance(n, str) for n in cap.notes) and isinstance(cap.partial, bool)


def test_nsys_rep_keeps_every_field_of_its_export(tmp_path):
    """An .nsys-rep goes through `nsys export` (here the fake nsys, handing out a real export with NVTX ops): the
    Capture is the export's, field for field — ops, counters, notes and partial included — under the report's path."""
    sample = SAMPLES / "keras_reuters_fp16" / "nsys_annotated.sqlite"
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"NSYS-FAKE\x00" + b'{"pids": [], "trace": null}')
    env = {**os.environ, "NVPROF_WRAP_NSYS": str(FAKE_NSYS), "FAKE_NSYS_SAMPLE": str(sample)}
    old = dict(os.environ)
    os.environ.update(env)
    try:
        got = readers.read(rep)
    finally:
        os.environ.clear()
        os.environ.update(old)
    export = readers.read(rep.with_suffix(".sqlite"))
    assert got.format == "nsys-rep" and got.path == str(rep) and got.ops
    for f in dataclasses.fields(Capture):
        if f.name not in ("path", "format"):
            assert getattr(got, f.name) == getattr(export, f.name), f.name


@pytest.mark.parametrize("fmt", ["nsys-sqlite", "nvprof", "cupti"])
def test_a_gzipped_sqlite_capture_keeps_every_field(fmt, tmp_path):
    """The other indirect path: a gzipped SQLite capture is unpacked and read; its Capture is the plain file's, field
    for field, under the .gz's path."""
    import gzip
    import shutil

    path = REAL[fmt]
    if not path.is_file():
        pytest.skip(f"needs {path}")
    gz = tmp_path / (path.name + ".gz")
    with path.open("rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    got, plain = readers.read(gz), readers.read(path)
    assert got.path == str(gz) and got.kernels
    for f in dataclasses.fields(Capture):
        if f.name != "path":
            assert getattr(got, f.name) == getattr(plain, f.name), f.name


# --- renderers -------------------------------------------------------------------------------------------
# Every kind a renderer dispatches on (report/kinds.py KINDS): the contract below gives each one real input.
def _experiment_rows():
    from nvprof_wrap.report.experiment import ExperimentRow

    return [ExperimentRow("fp16", 0, 12.5, 40, 3.1, 4_520_000, 0.118, "fp16", 0.78, 0.99, 1606, 40.2, 0.0043, 1.0,
                          0.913, "healthy", ("loss fell from 2.99 to 0.0043",), "runs/x/fp16"),
            ExperimentRow("fp32", 1, 9.0, None, None, 0, 0.0, "", 0.0, None, 0, None, None, None, None, "unknown",
                          ("\x1b[2Jhostile finding",), "runs/x/fp32")]


FACTS = {"gpus": [{"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0", "driver": "580.159.04"}],
         "profilers": {"nsys": None, "nvprof": None, "ncu": {"path": "/opt/ncu", "version": "2025.3.1"}},
         "cupti_python": False, "python_packages": {"torch": True}, "keras_backend": "torch"}
HOSTILE = "\x1b]0;owned\x07"  # an OSC sequence (sets the terminal's title), in a run's name and its command


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict:
    """Real input for every method of the protocol: two real reports, their comparison, the run history's rows."""
    from nvprof_wrap.report.compare import compare
    from nvprof_wrap.run import HistoryRow
    from nvprof_wrap.store import history

    keras, torch_ops = analyze(SAMPLES / "keras_reuters_fp16"), analyze(SAMPLES / "torch_ops")
    old = os.environ.get("NVPROF_WRAP_HISTORY")
    os.environ["NVPROF_WRAP_HISTORY"] = str(tmp_path_factory.mktemp("history") / "h.sqlite")
    try:
        keras_run, ops_run = SAMPLES / "keras_reuters_fp16", SAMPLES / "torch_ops"
        history.record(HistoryRow(str(keras_run.resolve()), keras_run.name, command="python reuters_mlp.py",
                                  backend="nsys", exit_code=0), keras)
        history.record(HistoryRow(str(ops_run.resolve()), ops_run.name, command=f"python {HOSTILE}ops.py"), torch_ops)
        runs = history.runs()
    finally:
        os.environ.pop("NVPROF_WRAP_HISTORY") if old is None else os.environ.update(NVPROF_WRAP_HISTORY=old)
    samples = Reports((Named("keras", "The seed's Keras MLP", str(SAMPLES / "keras_reuters_fp16"), keras),
                       Named("torch_ops", f"{HOSTILE}ops", str(SAMPLES / "torch_ops"), torch_ops)))
    return {Report: (keras, Options(width=100, limit=5)),
            Kernels: (Kernels(keras.kernels[:5]), Options(width=100)),
            Classifications: (Classifications(tuple(classify_many(["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
                                                                   f"{HOSTILE}volta_sgemm_128x64_nn"]))),
                              Options(width=100)),
            Experiment: (Experiment(tuple(_experiment_rows())), Options(width=120)),
            Doctor: (Doctor(FACTS), Options(width=100)),
            Comparison: (compare(torch_ops, keras, labels=(f"{HOSTILE}torch_ops", "keras"),
                                 folders=(None, SAMPLES / "keras_reuters_fp16")), Options(width=120, limit=5)),
            Runs: (Runs(tuple(runs)), Options(width=120)),
            Reports: (samples, Options(width=100, limit=3))}


def test_the_contract_gives_every_kind_input(inputs):
    assert len(KINDS) >= 8 and set(inputs) == set(KINDS)


def test_a_renderer_is_one_method():
    """A new output format is one module with one public function, render(subject, options), and the constants
    that name it: everything else it has is private (shared helpers live in the underscore modules)."""
    for name, r in RENDERERS.items():
        public = {n for n, v in vars(r).items() if not n.startswith("_") and callable(v)
                  and getattr(v, "__module__", None) == r.__name__}
        assert public == {"render"}, (name, public)
        assert inspect.signature(r.render).parameters.keys() == {"subject", "options"}
        assert isinstance(r.NAME, str) and r.EXTENSION.startswith(".") and BY_EXTENSION[r.EXTENSION] == name
    # the registry names each module's extensions without importing it: the same as the modules' own
    assert BY_EXTENSION == {ext: r.NAME for r in RENDERERS.values()
                            for ext in (r.EXTENSION, *getattr(r, "ALIASES", ()))}


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_renderer_contract(name, inputs, capsys):
    r: Renderer = RENDERERS[name]
    assert r.NAME == name and r.EXTENSION.startswith(".")
    outs = {kind.__name__: r.render(subject, options) for kind, (subject, options) in inputs.items()}
    assert all(isinstance(o, str) and o for o in outs.values()), [m for m, o in outs.items() if not o]
    assert capsys.readouterr() == ("", "")  # renderers return values, never print
    if name != "json":  # JSON keeps the exact text, escaped JSON's way
        assert [m for m, o in outs.items() if "\x1b" in o or "\x07" in o] == []
    else:
        assert all(json.loads(o) is not None for o in outs.values())
    with pytest.raises(TypeError, match="no form for"):
        r.render(object(), Options())


def test_report_display_methods_use_the_registry():
    report = analyze(SAMPLES / "torch_ops")
    assert str(report) == render("table", report, Options(width=120))
    assert report._repr_html_() == notebook(render("html", report), f"nvprof-wrap report: {report.verdict.message}")
    assert json.loads(render("json", report)) == json.loads(json.dumps(report.to_dict()))


# --- commands --------------------------------------------------------------------------------------------
def test_every_command_is_one_module_with_its_help_and_examples():
    from nvprof_wrap.cli import COMMANDS, parser

    choices = next(a for a in parser()._actions if a.dest == "command").choices
    assert set(choices) == set(COMMANDS)
    for name, module in COMMANDS.items():
        assert callable(getattr(module, "add_parser", None)) and callable(getattr(module, "run", None)), name
        assert "\nexamples:\n" in (module.__doc__ or ""), name
        assert f"nvprof-wrap {name}" in choices[name].format_help(), name
