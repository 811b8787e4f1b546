"""A JAX job under Nsight Systems on the H200 (tests/data/h200_runs/jax_mnist_nsys: jax's examples/mnist_classifier.py,
unmodified, under `nvprof-wrap run --backend nsys` with nsys' default graph trace; trimmed to its warm-up and steps
0..7 by benchmarks/trim_steps.py): CUDA graph launches count as GPU work, steps are XLA's executions of the program
run most, and the compilation and autotuning before the first step are left out and said."""
from __future__ import annotations

import contextlib
import gzip
import json
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvprof_wrap import analyze, readers
from nvprof_wrap.model import CUDA_GRAPH_KERNEL
from nvprof_wrap.run.steps import XLA_EXECUTIONS, xla_program
from tests._paths import DATA

RUN = DATA / "h200_runs" / "jax_mnist_nsys"
AUTOTUNER = ("RedzoneAllocatorKernelImpl", "DelayKernel", "xla_fp_comparison")


@pytest.fixture(scope="module")
def capture():
    return readers.read(RUN / "nsys.sqlite.gz")


def test_graph_launches_are_kernels_of_unknown_kind_and_the_note_says_how_to_see_inside(capture):
    graphs = [k for k in capture.kernels if k.name == CUDA_GRAPH_KERNEL]
    assert sum(k.launches for k in graphs) == 8  # one per step: XLA runs the step as a command buffer
    assert all(k.total_ns and k.total_ns > 0 for k in graphs)
    assert any("--cuda-graph-trace=node" in n and "8 CUDA graph launches" in n for n in capture.notes)


def test_steps_are_the_executions_of_the_program_run_most(capture):
    assert capture.series is not None and capture.series.source == XLA_EXECUTIONS
    assert sorted({s.step for s in capture.series.steps}) == list(range(8))
    # the graphs' time is GPU work of the steps: a report of idle GPUs was the bug
    assert sum(s.busy_ns for s in capture.series.steps) >= sum(
        k.total_ns or 0 for k in capture.kernels if k.name == CUDA_GRAPH_KERNEL)


def test_the_warmup_is_left_out_and_kept_apart(capture):
    assert capture.warmup and {w.program for w in capture.warmup} == {"jit_update"}
    warm = {w.name for w in capture.warmup}
    assert all(any(a in n for n in warm) for a in AUTOTUNER)
    assert not [k for k in capture.kernels if any(a in k.name for a in AUTOTUNER)]
    # what the capture holds before the first step is all in the warm-up (kernels and graph launches alike)
    with _unzipped(RUN / "nsys.sqlite.gz") as conn:
        first = min(s for (name, s) in conn.execute(
            "SELECT COALESCE(n.text, s.value), n.start FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
            "WHERE COALESCE(n.text, s.value) LIKE 'XlaModule:%'") if xla_program(name or "") == "jit_update")
        before = conn.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start < ?", (first,)).fetchone()[0]
    assert before > 0 and sum(w.launches for w in capture.warmup) >= before


@contextlib.contextmanager
def _unzipped(path: Path) -> Iterator[sqlite3.Connection]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "c.sqlite"
        db.write_bytes(gzip.decompress(path.read_bytes()))
        conn = sqlite3.connect(db)
        try:
            yield conn
        finally:
            conn.close()


def test_the_report_says_the_warmup_on_its_own_line_and_with_warmup_counts_it(tmp_path):
    rep = analyze(RUN)
    assert rep.warmup is not None and rep.warmup.program == "jit_update" and 0.9 < rep.warmup.share < 1
    assert rep.verdict.tensor_cores == "unknown" and "CUDA graphs ran 100.0% of kernel time" in rep.verdict.message
    data = json.loads(json.dumps(rep.to_dict()))
    assert data["warmup"]["program"] == "jit_update" and data["warmup"]["launches"] == rep.warmup.launches
    assert "Warm-up left out" in str(rep) and "--with-warmup counts them" in str(rep)
    whole = analyze(RUN, warmup=True)
    assert whole.warmup is None and "warmup" not in whole.to_dict()
    assert whole.verdict.kernel_ns == rep.verdict.kernel_ns + rep.warmup.kernel_ns


def test_steps_windows_count_xla_executions():
    rep = analyze(RUN, steps=(2, 5))
    assert rep.series is not None and [r.step for r in rep.series.rows] == [2, 3, 4]
    assert sum(k.launches for k in rep.kernels if k.name == CUDA_GRAPH_KERNEL) == 3


def test_a_kernel_named_by_string_id_zero_is_a_lost_name_not_nsys_first_string(tmp_path):
    """StringIds id 0 is nsys' own first string ('GpuMetrics'); an import with errors left kernels named by it (a
    Keras-on-JAX experiment on the H200): they read as a lost name, of unknown kind, and a note says so."""
    from nvprof_wrap.model import LOST_NAME_KERNEL

    db = tmp_path / "lost.sqlite"
    db.write_bytes(gzip.decompress((RUN / "nsys.sqlite.gz").read_bytes()))
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        assert conn.execute("SELECT value FROM StringIds WHERE id = 0").fetchone()[0] == "GpuMetrics"
        conn.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 0 WHERE rowid IN "
                     "(SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start DESC LIMIT 3)")
    from nvprof_wrap.timeline.window import Window

    cap = readers.read(db, Window(warmup=True))  # the last kernels the capture has may be warm-up: all kept here
    assert not [k for k in cap.kernels if k.name == "GpuMetrics"]
    assert sum(k.launches for k in cap.kernels if k.name == LOST_NAME_KERNEL) == 3
    assert any("have no name in the export" in n for n in cap.notes)
    rep = analyze(db, warmup=True)
    assert {k.tensor_core for k in rep.kernels if k.name == LOST_NAME_KERNEL} == {"unknown"}
