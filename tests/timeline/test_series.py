"""The per-step series (timeline/series.py, report/series.py) on real captures, checked against the capture's own
rows read independently here (plain Python over the kernel table, bisect on the step starts)."""
from __future__ import annotations

import bisect
import gzip
import json
import os
import sqlite3
from pathlib import Path

import pytest

import nvprof_wrap as nw
from nvprof_wrap.report.experiment import ExperimentRow, where_the_time_went
from nvprof_wrap.report.series import steady
from nvprof_wrap.timeline import series as step_series

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "tests" / "data" / "h200_runs"
SAMPLES = ROOT / "nvprof_wrap" / "samples"


def _unpacked(src: Path, tmp: Path) -> Path:
    out = tmp / src.name.removesuffix(".gz")
    out.write_bytes(gzip.decompress(src.read_bytes()))
    return out


def test_step_marks_of_a_real_nsys_capture_match_its_rows(tmp_path):
    """nanoGPT (fp32, H200) with its own 'step N' ranges: per step, the kernels that start in it, counted here
    from the capture's rows, equal the series'; every step's busy time is at most its wall time."""
    cap = _unpacked(RUNS / "gpt_fp32_nsys_steps" / "nsys.sqlite.gz", tmp_path)
    rep = nw.analyze(cap)
    s = rep.series
    assert (s.kind, s.source, s.host, len(s.rows)) == ("steps", "step marks", "all", 30)
    conn = sqlite3.connect(cap)
    steps = sorted((int(t.split()[1]), a) for t, a in conn.execute(
        "SELECT COALESCE(n.text, s.value), n.start FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
        "WHERE COALESCE(n.text, s.value) LIKE 'step %' AND n.eventType IN (59, 60)"))
    starts = [a for _, a in steps]
    last_end = conn.execute(
        "SELECT MAX(n.\"end\") FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
        f"WHERE COALESCE(n.text, s.value) = 'step {steps[-1][0]}'").fetchone()[0]
    counts = [0] * len(starts)
    for (t,) in conn.execute("SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and t < (starts[i + 1] if i + 1 < len(starts) else last_end):
            counts[i] += 1
    assert [r.launches for r in s.rows] == counts
    assert all(0 < r.gpu_busy_ns <= r.duration_ns for r in s.rows)
    assert all(r.api_ns is not None and r.outside_api_ns is not None for r in s.rows)
    # tensor-core time per step sums to at most the report's tensor-core time
    assert sum(r.tc_ns for r in s.rows) <= rep.verdict.tc_ns


def test_a_capture_without_steps_is_cut_into_time_buckets():
    rep = nw.analyze(SAMPLES / "torch_ops" / "nsys_torch_ops.sqlite")
    s = rep.series
    assert s.kind == "buckets" and s.source == "time" and s.bucket_s > 0
    assert [r.step for r in s.rows] == list(range(len(s.rows)))  # idle buckets are rows too
    assert sum(r.kernel_ns for r in s.rows) == rep.verdict.kernel_ns
    assert sum(r.launches for r in s.rows) == rep.verdict.launches
    idle = [r for r in s.rows if not r.launches and not r.copy_ns and not any(r.api_ns.values())]
    assert idle and all(r.outside_api_ns == r.duration_ns for r in idle)  # nothing in CUDA: all of it outside


def test_host_time_adds_up_where_every_call_was_recorded():
    """nsys records every runtime call: per step, the time in CUDA calls plus the time outside them is the step."""
    s = nw.analyze(SAMPLES / "keras_reuters_fp16").series
    assert s.source == "keras batches" and s.host == "all"
    for r in s.rows:
        assert r.outside_api_ns is not None and 0 <= r.outside_api_ns <= r.duration_ns
        assert max(r.api_ns.values()) <= r.duration_ns - r.outside_api_ns  # each kind inside the union


def test_an_older_capture_with_launch_calls_only_does_not_guess_the_time_outside_them(tmp_path):
    """keras_fp16_cupti_ops was traced when the tracer recorded kernel launch calls only."""
    folder = tmp_path / "run"
    folder.mkdir()
    _unpacked(RUNS / "keras_fp16_cupti_ops" / "cupti-vm-559.sqlite.gz", folder)
    s = nw.analyze(folder).series
    assert s.host == "launch"
    assert all(r.outside_api_ns is None and set(r.api_ns) >= {"launch"} for r in s.rows)
    assert "not known" in s.notes[0]


def _folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for f in (RUNS / name).glob("*.gz"):
        _unpacked(f, folder)
    return folder


def test_the_seeds_question_fp16_is_slower_in_each_epochs_last_batch_not_in_its_steps(tmp_path):
    """The seed's workload on the H200 (reuters_mlp, Keras on torch, 20 epochs of 16 batches, our CUPTI tracer):
    fp16's median training batch is faster than fp32's, but each epoch's last batch (holding the epoch's end and
    validation) takes hundreds of ms, nearly all outside CUDA calls — where the fp16 run's extra time went."""
    fp32 = steady(nw.analyze(_folder(tmp_path, "keras_steps_fp32_cupti")).series)
    fp16 = steady(nw.analyze(_folder(tmp_path, "keras_steps_fp16_cupti")).series)
    assert fp32.rows == fp16.rows == 319
    assert fp16.duration_ns < fp32.duration_ns and fp16.kernel_ns < fp32.kernel_ns
    assert fp16.mean_duration_ns > 2 * fp32.mean_duration_ns
    # every epoch's last batch but the job's last (a step ends at the next one's start, the last one at its own end)
    assert fp16.slow == tuple(range(15, 319, 16))
    assert fp16.slow_outside_api_ns > 0.95 * fp16.slow_ns
    rows = [ExperimentRow(p, 0, 0.0, None, None, 0, 0.0, "", 0.0, None, 0, None, None, None, None, "healthy", (),
                          "", step_ms=s.duration_ns / 1e6, step_outside_cuda_ms=s.outside_api_ns / 1e6,
                          step_mean_ms=s.mean_duration_ns / 1e6, slow_steps=len(s.slow),
                          slow_steps_ms=s.slow_ns / 1e6, slow_steps_outside_cuda_ms=s.slow_outside_api_ns / 1e6,
                          slow_step_numbers=s.slow[:8])
            for p, s in (("fp32", fp32), ("fp16", fp16))]
    said = where_the_time_went(rows)
    assert said[0].startswith("Where the step time went, fp16 vs fp32: median step -")
    assert "mean step +" in said[0]
    assert any(line.strip().startswith("fp16: 19 step(s) over 3x its median") for line in said)


def test_a_folded_series_counts_its_slow_rows_steps_and_their_whole_time(tmp_path, monkeypatch):
    """The seed's fp16 run folded 2 steps a row (a job past timeline/series.MAX_STEPS): a row holding an epoch's last
    batch is slow; its steps, both of them, and the row's whole time count — not one "step" of the row's mean
    (19 slow steps of half the time, before)."""
    folder = _folder(tmp_path, "keras_steps_fp16_cupti")
    whole = steady(nw.analyze(folder).series)
    monkeypatch.setattr(step_series, "MAX_STEPS", 160)  # 320 steps: rows of 2
    report = nw.analyze(folder)
    assert report.series.folded == 2
    s = steady(report.series)
    assert s.slow_each == 2 and s.slow == tuple(n for r in range(14, 318, 16) for n in (r, r + 1))
    # the slow steps' own time, and one ordinary step beside each
    assert s.slow_ns == pytest.approx(whole.slow_ns + 19 * whole.duration_ns, rel=0.05)
    assert s.slow_outside_api_ns == pytest.approx(whole.slow_outside_api_ns + 19 * whole.outside_api_ns, rel=0.05)
    rows = [ExperimentRow(p, 0, 0.0, None, None, 0, 0.0, "", 0.0, None, 0, None, None, None, None, "healthy", (), "",
                          step_ms=s.duration_ns / 1e6, slow_steps=len(s.slow), slow_steps_ms=s.slow_ns / 1e6,
                          slow_step_numbers=s.slow[:8], slow_steps_per_row=s.slow_each) for p in ("fp32", "fp16")]
    said = where_the_time_went(rows)
    assert any(line.strip().startswith("fp16: 38 step(s) in rows of 2 whose mean step is over 3x its median took")
               and "(steps 14, 15, 30, 31, 46, 47, 62, 63, …)" in line for line in said)


def test_the_series_is_not_measured_past_its_size_limit(monkeypatch):
    monkeypatch.setenv(step_series.ENV_MAX, "100")
    rep = nw.analyze(SAMPLES / "torch_ops" / "nsys_torch_ops.sqlite")
    assert rep.series is None
    assert any("per-step series not measured" in n for src in rep.sources for n in src.notes)


def test_the_limit_the_note_names_measures_a_run_folders_capture_already_read(monkeypatch, tmp_path):
    """A run folder keeps its captures in its store: read once under a limit that left the series out, then again
    with the limit the note names (-1), the capture is read again and its series measured — once, the kernels not
    counted twice; the default limit and 0 (never) are readings of their own too."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "keras_reuters_fp16", run)

    def reported(limit: str | None) -> tuple[int, int, bool]:
        if limit is None:
            monkeypatch.delenv(step_series.ENV_MAX, raising=False)
        else:
            monkeypatch.setenv(step_series.ENV_MAX, limit)
        from nvprof_wrap.cli import main

        out = tmp_path / "report.json"
        assert main(["report", str(run), "--format", "json", "-o", str(out)]) == 0
        rep = json.loads(out.read_text())
        left_out = any("per-step series not measured" in n for src in rep["sources"] for n in src["notes"])
        return len(rep["series"]), sum(k["launches"] for k in rep["kernels"]), left_out

    launches = reported("10")[1]
    assert (run / "run.sqlite").exists() and reported("10") == (0, launches, True)
    measured = reported("-1")
    assert measured[0] > 0 and measured[1:] == (launches, False)
    assert reported(None) == measured and reported("0") == (0, launches, True)


def _limits(monkeypatch, user_limit: str | None, per_step_most: int) -> None:
    """The series' default limit lowered to 10 launches (the H200 export below holds 122), the lifted one set, and
    NVPROF_WRAP_SERIES_MAX_LAUNCHES as the user left it (None: unset)."""
    monkeypatch.setattr(step_series, "MAX_LAUNCHES", 10)
    monkeypatch.setattr(step_series, "PER_STEP_MAX_LAUNCHES", per_step_most)
    if user_limit is None:
        monkeypatch.delenv(step_series.ENV_MAX, raising=False)
    else:
        monkeypatch.setenv(step_series.ENV_MAX, user_limit)


@pytest.mark.parametrize(("per_step", "user_limit", "per_step_most", "measured"), [
    (True, None, 10**6, True),  # the rows asked for: the limit lifted
    (False, None, 10**6, False),  # not asked: the default limit
    (True, None, 100, False),  # asked, but more launches than the lifted limit too
    (True, "10", 10**6, False),  # the user's own limit wins
    (True, "", 10**6, True),  # set but empty: as unset (system/environ.py), and left empty afterwards
])
def test_per_step_lifts_the_series_limit_the_user_left_unset(monkeypatch, tmp_path, per_step, user_limit,
                                                             per_step_most, measured):
    """`report --per-step` asks for one row per step: a capture over the default limit (300,000 launches; lowered to
    10 here, the H200 export holds 122) gets its series up to PER_STEP_MAX_LAUNCHES, where the user set no limit of
    their own; otherwise the note, naming the limit that left it out. The environment is as it was afterwards."""
    from nvprof_wrap.cli import main

    _limits(monkeypatch, user_limit, per_step_most)
    out = tmp_path / "report.json"
    argv = ["report", str(SAMPLES / "torch_ops" / "nsys_torch_ops.sqlite"), "--format", "json", "-o", str(out)]
    assert main(argv + (["--per-step"] if per_step else [])) == 0
    rep = json.loads(out.read_text())
    notes = [n for src in rep["sources"] for n in src["notes"] if "per-step series not measured" in n]
    assert (len(rep["series"]) > 0, not notes) == (measured, measured)
    if not measured:
        most = int(user_limit) if user_limit else per_step_most if per_step else 10
        assert f"122 kernel launches (more than {most:,};" in notes[0]
    assert os.environ.get(step_series.ENV_MAX) == user_limit


@pytest.mark.parametrize(("user_limit", "per_step_most", "charted"), [
    (None, 10**6, True),  # the page draws the series: the limit lifted, as --per-step lifts it
    ("10", 10**6, False),  # the user's own limit wins
    (None, 100, False),  # more launches than the lifted limit too
])
def test_the_html_page_lifts_the_series_limit_and_the_note_says_what_lifts_it(monkeypatch, tmp_path, user_limit,
                                                                              per_step_most, charted):
    """`report -o page.html` draws the series ("Over time"): a capture over the default limit (lowered to 10 here;
    the H200 export holds 122 launches) gets it up to PER_STEP_MAX_LAUNCHES where the user set no limit, as with
    --per-step. Where the default limit left the series out of another format and the lifted one would not, the
    note says what lifts it; where that would not help (the user's limit, a capture past the lift) it does not."""
    from nvprof_wrap.cli import main

    _limits(monkeypatch, user_limit, per_step_most)
    capture = str(SAMPLES / "torch_ops" / "nsys_torch_ops.sqlite")
    page, out = tmp_path / "page.html", tmp_path / "report.json"
    assert main(["report", capture, "-o", str(page)]) == 0  # the format from the extension
    assert ('<section class="timeview"' in page.read_text()) == charted
    assert os.environ.get(step_series.ENV_MAX) == user_limit
    assert main(["report", capture, "--format", "json", "-o", str(out)]) == 0
    rep = json.loads(out.read_text())
    notes = [n for src in rep["sources"] for n in src["notes"] if "per-step series not measured" in n]
    assert rep["series"] == [] and len(notes) == 1
    hint = f"report --per-step or --format html measures up to {per_step_most:,}, "
    most = int(user_limit) if user_limit else 10
    assert notes[0].endswith(f"(more than {most:,}; {hint if charted else ''}NVPROF_WRAP_SERIES_MAX_LAUNCHES=-1 "
                             "measures any size)")


def test_a_summary_says_how_the_series_it_left_out_is_measured(monkeypatch, tmp_path):
    """A summary keeps what its capture's reading gave: reporting it under NVPROF_WRAP_SERIES_MAX_LAUNCHES=-1 (what
    the reader's note says to set) reads no capture and measures nothing, so the summary's note says to summarize
    again with it — which does measure the series."""
    from nvprof_wrap.cli import main

    capture = SAMPLES / "torch_ops" / "nsys_torch_ops.sqlite"

    def reported(folder: Path) -> dict:
        out = tmp_path / f"{folder.name}.json"
        assert main(["report", str(folder), "--format", "json", "-o", str(out)]) == 0
        return json.loads(out.read_text())

    monkeypatch.setattr(step_series, "MAX_LAUNCHES", 10)
    monkeypatch.delenv(step_series.ENV_MAX, raising=False)
    assert main(["summarize", str(capture), "-o", str(tmp_path / "short")]) == 0
    monkeypatch.setenv(step_series.ENV_MAX, "-1")
    rep = reported(tmp_path / "short")
    notes = [n for src in rep["sources"] for n in src["notes"] if "per-step series not measured" in n]
    assert rep["series"] == [] and len(notes) == 1
    assert notes[0].endswith("(more than 10; NVPROF_WRAP_SERIES_MAX_LAUNCHES=-1 measures any size when the capture "
                             "is summarized again: the summary keeps what its capture's reading gave)")
    assert main(["summarize", str(capture), "-o", str(tmp_path / "whole")]) == 0
    rep = reported(tmp_path / "whole")
    assert rep["series"] and not any("per-step series" in n for src in rep["sources"] for n in src["notes"])
    assert step_series.as_summarized("kernels without a duration") == "kernels without a duration"


@pytest.mark.parametrize(("per_step", "html"), [(False, False), (True, False), (False, True)])
def test_run_per_step_lifts_the_series_limit_for_its_report(monkeypatch, tmp_path, capsys, per_step, html):
    """`run --per-step` reports the run it recorded with the limit lifted as `report --per-step` does, and so does
    `run --html` (the page draws the series) (the job itself runs without it: only the report after it is inside
    the lift)."""
    import shutil
    from types import SimpleNamespace

    from nvprof_wrap.cli import main, run_cmd

    folder = tmp_path / "run"
    shutil.copytree(SAMPLES / "keras_reuters_fp16", folder)
    manifest = SimpleNamespace(backend="nsys", exit_code=0, wall_s=0.1, recorded=True, captures=["x"], problems=(),
                               hardware=None, gpus=(), storage_failed=False)
    seen: list[str | None] = []

    def execute(spec):
        seen.append(os.environ.get(step_series.ENV_MAX))
        return folder, manifest

    monkeypatch.setattr(run_cmd, "execute", execute)
    monkeypatch.setattr(step_series, "MAX_LAUNCHES", 10)
    monkeypatch.delenv(step_series.ENV_MAX, raising=False)
    assert main(["run", "--format", "json", *(["--per-step"] if per_step else []), *(["--html"] if html else []),
                 "--", "true"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert (len(rep["series"]) > 0) == (per_step or html) and seen == [None]
    assert not html or '<section class="timeview"' in (folder / "report.html").read_text()
    assert step_series.ENV_MAX not in os.environ


@pytest.mark.parametrize("per_step", [False, True])
def test_the_terminal_shows_the_series(per_step):
    from nvprof_wrap.renderers import console
    from nvprof_wrap.renderers._options import Options

    rep = nw.analyze(SAMPLES / "keras_reuters_fp16")
    text = console.render(rep, Options(width=120, per_step=per_step))
    assert "Over time: 17 steps (keras batches), step time " in text
    assert "Median step (steps 1-16):" in text
    rows = [line for line in text.splitlines() if line.split()[:1] and line.split()[0].isdigit()
            and "ms" in line and line.split()[0] in {str(i) for i in range(17)}]
    assert (len(rows) >= 17) == per_step


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_per_step_rows_or_why_there_are_none_in_the_terminal_and_markdown(monkeypatch, fmt):
    """--per-step in the terminal and in Markdown: the series' rows (Markdown wrote none: its option was dropped), one
    step's row without a sparkline; where the report has none, one line saying why (the readers' note that left the
    series out, or no timeline at all: a console log) in place of silence; without --per-step, Markdown as before."""
    import dataclasses

    from nvprof_wrap.renderers import render
    from nvprof_wrap.renderers._options import Options

    def text(rep, per_step: bool) -> str:
        return render(fmt, rep, Options(width=200, per_step=per_step))

    seed = nw.analyze(SAMPLES / "keras_reuters_fp16")
    rows = [line for line in text(seed, True).replace("\\", "").splitlines() if line.strip(" |").split(" ")[0] in
            {str(i) for i in range(17)} and "%)" in line]  # a step's row: its GPU busy share in parentheses
    assert len(rows) == 17
    assert ("Over time" in text(seed, False)) == (fmt == "table")  # Markdown's default unchanged: no section
    one = dataclasses.replace(seed, series=dataclasses.replace(seed.series, rows=seed.series.rows[:1]))
    assert "Over time: 1 step (keras batches)" in text(one, True).replace("\\", "")
    assert "Over time" not in text(one, False)
    monkeypatch.setenv(step_series.ENV_MAX, "10")
    left_out = nw.analyze(SAMPLES / "torch_ops" / "nsys_torch_ops.sqlite")
    said = " ".join(text(left_out, True).replace("\\", "").split())
    assert "One row per step: none — per-step series not measured: 122 kernel launches (more than 10;" in said
    assert "One row per step" not in text(left_out, False)
    log = nw.analyze(Path(__file__).resolve().parents[1] / "data" / "console" / "xplacer_nvprof_gpu_trace_bfs.log")
    assert log.series is None
    assert "One row per step: none — the captures give no timeline to cut into steps" in \
        " ".join(text(log, True).replace("\\", "").split())


def test_hints_stand_on_the_steady_state():
    """host-bound only where the steady state shows it, with the busy time said; a capture with too little GPU work
    gets no host-bound line; a DDP run gets the communication line; the verdict's tone follows share and hints."""
    from nvprof_wrap.report.hints import host_bound

    seed = nw.analyze(SAMPLES / "keras_reuters_fp16")
    idle, over = host_bound(seed)
    assert idle > 0.9 and over == "the mean step (steps 2-16, 1 slow one left out)" and seed.tone == "partial"
    fp32 = nw.analyze(RUNS / "gpt_fp32_nsys_steps")  # nanoGPT fp32: the GPU busy 92% of its median step
    assert host_bound(fp32) is None and not any(h.startswith("Host-bound") for h in fp32.hints)
    assert fp32.tone == "partial"  # tensor cores ran 9.5% of the kernel time: a "yes" that is not green
    two = nw.analyze(SAMPLES / "two_children")  # 95% on tensor cores, no hint
    assert two.hints == () and two.tone == "good"
    ddp = nw.analyze(RUNS / "ddp_cupti")
    assert any(h.startswith("28% of GPU time is communication (NCCL kernels); in the median") and "exposed" in h
               for h in ddp.hints)


def test_a_loop_whose_kernels_queue_behind_the_host_is_not_host_bound():
    """20 bf16 8192³ matmuls under torch.profiler on the H200, one ProfilerStep each: each step is ~37 µs on the host
    while its matmul runs 1.4 ms later, queued; the steps' own GPU time is 0, yet the GPU was busy 99.9% of the time
    from its first kernel to its last (the loop's own timing: 787 TFLOP/s). It was called host-bound."""
    from nvprof_wrap.report.hints import host_bound

    loop = nw.analyze(RUNS / "kineto_matmul_bf16_shapes")
    s = steady(loop.series)
    assert loop.series.kind == "steps" and s is not None and s.idle_share > 0.9  # what the host's steps alone say
    assert sum(d.busy_ns for d in loop.devices) / sum(d.span_ns for d in loop.devices) > 0.99
    assert host_bound(loop) is None and not any("Host-bound" in h for h in loop.hints)


def test_exposed_communication_is_busy_time_without_the_nccl_kernels():
    s = nw.analyze(RUNS / "ddp_cupti").series
    assert any(r.comm_ns for r in s.rows)
    for r in s.rows:
        assert 0 <= r.exposed_comm_ns <= min(r.comm_ns, r.gpu_busy_ns)
        assert r.comm_ns or not r.exposed_comm_ns


def test_compare_says_idle_host_bound_noise_and_the_window():
    from nvprof_wrap.report.compare import compare

    fp32, bf16 = nw.analyze(RUNS / "gpt_fp32_nsys"), nw.analyze(RUNS / "gpt_bf16_nsys")
    found = compare(fp32, bf16).findings
    assert "step time (median step of each capture): 17.77 → 25.13 ms (1.41× slower)" in found
    assert any(f.startswith("GPU idle in the median step: 7.7% → 84.3% (not host-bound before, host-bound after)")
               for f in found)
    same = compare(nw.analyze(RUNS / "gpt_fp32_nsys", steps=(5, 25)),
                   nw.analyze(RUNS / "gpt_fp32_nsys_steps", steps=(5, 25))).findings
    assert same[0] == "compared: steps 5 to 24 of each run (--steps 5:25)"
    assert any(f.endswith("(no change: within ±2%)") for f in same)


@pytest.mark.parametrize(("trace", "steps"), [("public/facebookresearch__param__resnet_kineto.json.gz", 30),
                                              ("wild/kineto-param-linear-rtx2080ti.json.gz", 40),
                                              ("wild/kineto-autograd-api-resnet50-2021.pt.trace.json.gz", 6)])
def test_a_torch_profiler_trace_without_profiler_steps_has_its_optimizer_steps(trace, steps):
    """Real public traces made without a schedule (no ProfilerStep#N): torch.profiler's Optimizer.step#SGD.step
    ranges (user_annotation or Operator events, unnumbered) mark the steps, numbered in start order from 0; --steps
    windows them."""
    from tests._paths import FIXTURES

    path = FIXTURES / trace
    if not path.exists():
        pytest.skip(f"needs ../shared/fixtures ({trace})")
    report = nw.analyze(path)
    assert report.series is not None and report.series.kind == "steps" and report.series.source == "optimizer steps"
    assert len(report.series.rows) == steps and [r.step for r in report.series.rows] == list(range(steps))
    assert report.time_budget is not None and report.time_budget.kind == "steps"
    part = nw.analyze(path, steps=(1, 3))
    assert part.series is not None and [r.step for r in part.series.rows] == [1, 2]
    assert 0 < part.verdict.kernel_ns < report.verdict.kernel_ns


@pytest.mark.parametrize("rel", ["public/GindaChen__nsys-ai__mfu_2gpu_after.sqlite",
                                 "public/GindaChen__nsys-ai__h100_2gpu_1s.sqlite"])
@pytest.mark.parametrize("reference", [False, True])
def test_a_steps_busy_time_holds_what_ran_on_into_it_from_an_earlier_step(rel, reference, monkeypatch):
    """Two H100s' 5 ms time buckets, flash attention running 8 ms at a time: the busy time was the union of what
    started in a bucket, cut at its end, so the bucket after one such kernel read 0 ns busy (and its 5 ms as the host's
    time outside CUDA calls) where the GPU ran all of it. Each bucket's busy time is now the union of the process's
    GPU intervals (kernels, copies, sets) inside it, counted here in plain Python from the capture's rows; the busy
    time but for NCCL's kernels, the union of the others. In numpy (from 10,000 launches; here forced) and in SQL."""
    from tests._paths import fixture_file

    path = fixture_file(rel)
    monkeypatch.setattr(step_series, "REFERENCE", reference)
    monkeypatch.setattr(step_series, "NUMPY_FROM", 0)
    from nvprof_wrap.readers import read
    capture = read(path)
    assert capture.series is not None and capture.series.kind == "buckets"
    conn = sqlite3.connect(path)
    names = dict(conn.execute("SELECT id, value FROM StringIds"))
    rows: dict[int, list[tuple[int, int, bool]]] = {}
    for table, named in (("CUPTI_ACTIVITY_KIND_KERNEL", True), ("CUPTI_ACTIVITY_KIND_MEMCPY", False),
                         ("CUPTI_ACTIVITY_KIND_MEMSET", False)):
        name = "demangledName" if named else "NULL"
        for gpid, s, e, n in conn.execute(f'SELECT globalPid, start, "end", {name} FROM {table}'):
            rows.setdefault((gpid >> 24) & 0xFFFFFF, []).append(
                (s, e, named and names.get(n, "").startswith("ncclDevKernel")))

    def union(ivs: list[tuple[int, int]], lo: int, hi: int) -> int:
        total, reach = 0, lo
        for s, e in sorted((max(s, lo), min(e, hi)) for s, e in ivs if s < hi and e > lo):
            if e > reach:
                total += e - max(s, reach)
                reach = e
        return total
    first = min(r.start_ns for r in capture.series.steps)
    carried = 0
    for r in capture.series.steps:
        mine = rows.get(r.pid, [])
        if r.start_ns < first or not mine:
            continue
        assert r.busy_ns == union([(s, e) for s, e, _c in mine if s >= first], r.start_ns, r.end_ns), r
        assert r.compute_busy_ns == union([(s, e) for s, e, c in mine if s >= first and not c],
                                          r.start_ns, r.end_ns), r
        carried += r.busy_ns > 0 and r.launches == 0 and r.copy_ns == 0
    assert carried  # buckets busy only with what an earlier one started: 0 ns before
