"""The time budget of a step (timeline/series.py measures its parts, analyses/budget.py makes the mean step):

- on a real H200 Nsight Systems capture, every step's parts equal a brute-force sweep written here from the capture's
  own tables (each nanosecond of the step given to the first kind active in it: kernels, copies by direction,
  memsets, then the host's CUDA calls by kind) — an independent reading, not the code under test;
- the parts add up to the step on real captures of every backend with steps (Nsight Systems, torch.profiler, the
  CUPTI tracer), and the budget's JSON says so;
- the kernels' part is split by verdict, and the rest of an idle step is "outside CUDA calls" only where every call
  was recorded."""
from __future__ import annotations

import gzip
import itertools
import shutil
import sqlite3
from pathlib import Path

import pytest

from nvprof_wrap import analyze, readers
from nvprof_wrap.analyses.budget import StepSpan, budget, kind_of
from nvprof_wrap.text.cuda_calls import kind_of as call_kind
from nvprof_wrap.timeline.sql import MEMCPY_DIRECTION
from tests._paths import ROOT

RUNS = ROOT / "tests" / "data" / "h200_runs"
ORDER = ("kernels", "communication", "copy_htod", "copy_dtoh", "copy_dtod", "copy_other", "memset",
         "api_launch", "api_sync", "api_alloc", "api_other")
COPY = {"HtoD": "copy_htod", "DtoH": "copy_dtoh", "DtoD": "copy_dtod", "PtoP": "copy_dtod"}


def _sweep(rows: list[tuple[int, int, int]], lo: int, hi: int) -> dict[str, int]:
    """Each nanosecond of [lo, hi) to the lowest priority active in it: a sweep over the interval ends."""
    events = sorted({lo, hi} | {t for s, e, _ in rows for t in (s, e) if lo < t < hi})
    out: dict[str, int] = {}
    for a, b in itertools.pairwise(events):
        active = [p for s, e, p in rows if s <= a and e >= b]
        if active:
            part = ORDER[min(active)]
            out[part] = out.get(part, 0) + b - a
    return out


def test_the_parts_of_each_step_are_a_brute_force_sweep_of_the_capture(tmp_path: Path) -> None:
    src = RUNS / "gpt_bf16_nsys" / "nsys.sqlite.gz"
    db = tmp_path / "nsys.sqlite"
    with gzip.open(src) as f, db.open("wb") as out:
        shutil.copyfileobj(f, out)
    series = readers.read(db).series
    assert series is not None and series.kind == "steps" and series.host == "all"
    steps = sorted(series.steps, key=lambda r: r.start_ns)
    assert len({r.pid for r in steps}) == 1 and len(steps) == 30
    first, last = steps[0].start_ns, steps[-1].end_ns
    c = sqlite3.connect(db)
    names = dict(c.execute("SELECT id, value FROM StringIds"))
    rows = [(s, e, 0) for s, e in c.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL")]
    rows += [(s, e, ORDER.index(COPY.get(MEMCPY_DIRECTION.get(k, ""), "copy_other")))
             for s, e, k in c.execute("SELECT start, end, copyKind FROM CUPTI_ACTIVITY_KIND_MEMCPY")]
    rows += [(s, e, ORDER.index("memset")) for s, e in c.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET")]
    rows += [(s, e, ORDER.index("api_" + call_kind(names[n])))
             for s, e, n in c.execute("SELECT start, end, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME")]
    rows = [r for r in rows if first <= r[0] < last and r[1] > r[0]]  # what starts in the steps, as the series
    checked = 0
    for r in steps:
        inside = [x for x in rows if x[0] < r.end_ns and x[1] > r.start_ns]
        assert dict(r.parts_ns) == _sweep(inside, r.start_ns, r.end_ns), r.step
        checked += bool(r.parts_ns)
    assert checked == 30


@pytest.mark.parametrize("run", ["gpt_bf16_nsys", "kineto_gpt_bf16_shapes", "kineto_gpt_fp32_shapes",
                                 "keras_steps_fp16_cupti", "keras_steps_fp32_cupti"])
def test_the_parts_add_up_to_the_step_on_every_backend(run: str) -> None:
    report = analyze(RUNS / run, health=False)
    b = report.time_budget
    assert b is not None and b.kind == "steps" and b.steps >= 2
    assert abs(sum(p.seconds for p in b.parts) - b.step_s) <= 0.01 * b.step_s
    assert abs(sum(p.share for p in b.parts) - 1) <= 0.01
    d = report.to_dict()["time_budget"]
    assert d["step_s"] == b.step_s and [p["name"] for p in d["parts"]] == [p.name for p in b.parts]
    kernels = sum(k.seconds for k in b.kernels)
    assert abs(kernels - b.seconds("tensor_core", "other_math", "math_unknown", "other_kernels")) <= 1e-6


def test_the_kernels_part_is_split_by_verdict_and_the_idle_rest_by_what_was_recorded() -> None:
    steps = [StepSpan(1, 10_000, 1), StepSpan(2, 10_000, 1)]
    parts = {1: {"kernels": 4_000, "copy_htod": 1_000, "api_launch": 1_000},
             2: {"kernels": 4_000, "copy_htod": 1_000, "api_launch": 1_000}}
    weights = {("tensor_core", "bf16"): 3, ("other_kernels", "fp32"): 1}
    b = budget(steps, parts, weights, "all", "steps")
    assert b is not None
    got = {p.name: round(p.seconds * 1e9) for p in b.parts}
    assert got == {"tensor_core": 3000, "other_kernels": 1000, "copy_htod": 1000, "api_launch": 1000,
                   "outside_cuda": 4000}
    for host, rest in (("launch", "idle_unknown"), ("none", "idle_unknown"), ("launch, sync, alloc", "outside_cuda")):
        b = budget(steps, parts, weights, host, "steps")
        assert b is not None and b.parts[-1].name == rest
    assert budget([], parts, weights, "all", "steps") is None


@pytest.mark.parametrize(("name", "verdict", "kind"), [
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "yes", "tensor_core"),
    ("volta_sgemm_128x64_nn", "no", "other_math"),
    ("ampere_sgemm_128x64_tn", "unknown", "math_unknown"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", "no", "other_kernels"),
    ("flash_fwd_kernel", "yes", "tensor_core"),
])
def test_a_kernels_kind_in_the_budget(name: str, verdict: str, kind: str) -> None:
    assert kind_of(name, verdict) == kind


def test_a_series_that_folds_its_steps_gives_the_mean_step_not_the_mean_row(monkeypatch: pytest.MonkeyPatch) -> None:
    # a job of more steps than a series keeps (timeline/series.MAX_STEPS) gets rows of `folded` consecutive steps:
    # its budget and its median step are still of one step (they were of one row: "mean of 2 steps: 178 ms" for
    # nanoGPT's 17.9 ms steps folded 10 a row), of the steps in the rows kept, counted one by one
    from nvprof_wrap.report.series import steady
    from nvprof_wrap.timeline import series
    whole = analyze(RUNS / "gpt_fp32_nsys_steps", health=False)
    monkeypatch.setattr(series, "MAX_STEPS", 7)  # 30 steps: rows of 5
    folded = analyze(RUNS / "gpt_fp32_nsys_steps", health=False)
    assert (whole.series.folded, folded.series.folded, len(folded.series.rows)) == (1, 5, 6)
    b, b1 = folded.time_budget, whole.time_budget
    assert b is not None and b1 is not None
    assert b.step_s == pytest.approx(b1.step_s, rel=0.02)  # the first row and the last (fewer steps, maybe) left out
    assert (b.steps, b.first, b.last) == (20, 5, 24)  # rows 1-4: steps 5..24
    assert b.seconds("tensor_core") == pytest.approx(b1.seconds("tensor_core"), rel=0.02)
    assert sum(p.seconds for p in b.parts) == pytest.approx(b.step_s, rel=1e-6)  # the parts still add up to it
    s, s1 = steady(folded.series), steady(whole.series)
    assert s is not None and s1 is not None
    assert (s.rows, s.first, s.last) == (20, 5, 24)
    assert s.duration_ns == pytest.approx(s1.duration_ns, rel=0.02)
    assert s.kernel_ns == pytest.approx(s1.kernel_ns, rel=0.02) and s.launches == pytest.approx(s1.launches, rel=0.02)


def test_the_mfu_line_says_what_a_steps_flops_are() -> None:
    # a PyTorch job's: the capture's FLOPs over its steps (an evaluation pass between them would count); a JAX job's:
    # its step program's own (tests/classify/test_xla_graph_flops.py checks the figure)
    from nvprof_wrap.renderers._budget import lines
    from nvprof_wrap.report.serialise import to_dict
    torch_job = to_dict(analyze(RUNS / "kineto_gpt_bf16_shapes", health=False))
    jax_job = to_dict(analyze(ROOT / "tests" / "data" / "h100_runs" / "jax_mnist_cublas_graphs_nsys", health=False))
    said = [next(line for line in lines(d) if line.startswith("Model FLOPs utilisation")) for d in (torch_job, jax_job)]
    assert "589 GFLOP of matrix ops a step (the capture's over its 3 steps: work between them, evaluation " \
           "included, counts) in 19.6 ms" in said[0]
    assert "1.22 GFLOP of matrix ops a step (jit_update's own: the program each step executes)" in said[1]


def test_a_budget_line_names_its_parts_where_all_are_small() -> None:
    """NVIDIA Fuser's public H200 capture: the GPU busy 0.6% of its time buckets, every GPU part under the 0.5% the
    lines fold into "N more" — the line read "GPU busy: 4 more 56.6 µs", naming nothing. The two largest are named;
    a lone small part is named, not "1 more"."""
    from nvprof_wrap.renderers import _budget
    from tests._paths import fixture_file

    data = analyze(fixture_file("public/NVIDIA__Fuser__report1.sqlite")).to_dict()
    busy, idle = _budget.lines(data)[1:3]
    assert busy.startswith("GPU busy: other kernels ") and "tensor-core kernels" in busy and "2 more" in busy, busy
    assert "1 more" not in idle and "copies and waits" in idle, idle


def test_a_dump_folder_without_hlo_text_is_not_said_to_hold_flops(tmp_path: Path) -> None:
    """A Keras-on-JAX run whose dump is there but holds no HLO text (packed here, as the tests keep it): the line said
    XLA's dump gave FLOPs that did not run one by one "inside CUDA graphs … --cuda-graph-trace=node", of a capture
    without a CUDA graph. It says the dump holds no module, and how to get one."""
    from nvprof_wrap.renderers import _budget
    from tests._paths import H100_RUNS

    run = shutil.copytree(H100_RUNS / "keras_jax_convnet_nographs_nsys", tmp_path / "run")
    data = analyze(run).to_dict()
    assert data["xla_modules"] == 0 and data["achieved"] is None
    (line,) = [x for x in _budget.lines(data) if x.startswith("Achieved")]
    assert "holds no module's optimized HLO text" in line and "cuda-graph-trace" not in line, line
