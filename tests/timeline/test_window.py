"""Steady state (timeline/window.py): --window / --steps on real captures of this project's H200 runs, checked against
the capture's own rows read independently; GPU idle measured from the first to the last kernel; one version of a
file per run store; formats without a timeline refused in one line."""
from __future__ import annotations

import gzip
import json
import shutil
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvprof_wrap import readers
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.pipeline import analyze
from nvprof_wrap.pipeline.ingest import ingest
from nvprof_wrap.readers import _kineto_rows
from nvprof_wrap.store import Store
from nvprof_wrap.timeline import window
from tests._paths import ROOT, RUNS

KERAS = ROOT / "nvprof_wrap" / "samples" / "keras_reuters_fp16" / "nsys_annotated.sqlite"
KINETO = RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz"


def launches(capture) -> int:
    return sum(k.launches for k in capture.kernels)


def kernel_ns(capture) -> int:
    return sum(k.total_ns for k in capture.kernels)


def test_steps_of_the_gpt_trainer_are_the_kernels_started_between_its_step_ranges(gpt):
    conn = sqlite3.connect(gpt)
    start = dict(conn.execute("SELECT text, start FROM NVTX_EVENTS WHERE text LIKE 'step %'"))
    lo, hi = start["step 5"], start["step 15"]
    n, ns = conn.execute('SELECT COUNT(*), SUM("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL '
                         "WHERE start >= ? AND start < ?", (lo, hi)).fetchone()
    cap = readers.read(gpt, steps=(5, 15))
    assert (launches(cap), kernel_ns(cap)) == (n, ns) == (3460, 163_712_415)
    assert sum(o.launches for o in cap.ops) == n  # ops: the same launches, each once
    (act,) = cap.activity
    assert lo <= act.first_ns and act.last_ns <= hi + 10**7 and act.busy_ns <= act.last_ns - act.first_ns
    whole = readers.read(gpt)
    assert launches(whole) == 10532 and 0 < launches(cap) < launches(whole)


def test_the_last_step_ends_where_its_range_ends(gpt):
    conn = sqlite3.connect(gpt)
    (s0,), (e29,) = (conn.execute(f"SELECT {c} FROM NVTX_EVENTS WHERE text = ?", (t,)).fetchone()
                     for c, t in (("start", "step 0"), ('"end"', "step 29")))
    (n,) = conn.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start >= ? AND start < ?",
                        (s0, e29)).fetchone()
    assert launches(readers.read(gpt, steps=(0, 30))) == n == 10420  # 112 launches before step 0 (set-up)


def test_windows_in_seconds_add_up_and_count_from_the_first_gpu_activity(gpt):
    parts = [readers.read(gpt, (a, b)) for a, b in ((0, 4.5), (4.5, 4.7), (4.7, 6.0))]
    both = readers.read(gpt, (0, 6.0))
    assert sum(map(launches, parts)) == launches(both) == 10532
    assert sum(map(kernel_ns, parts)) == kernel_ns(both)
    # the first copy is 4.41 s before the first kernel: a window of the first 4.5 s holds 8 kernels
    assert launches(parts[0]) == 8
    conn = sqlite3.connect(gpt)
    (origin,) = conn.execute("SELECT MIN(start) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()
    (n,) = conn.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start < ?",
                        (origin + 4_500_000_000,)).fetchone()
    assert n == 8


def test_gpu_idle_is_measured_from_the_first_to_the_last_kernel(gpt):
    """Start-up (4.4 s of copies and nothing else before the first kernel) is not idle GPU time."""
    conn = sqlite3.connect(gpt)
    first, last = conn.execute('SELECT MIN(start), MAX("end") FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchone()
    (act,) = readers.read(gpt).activity
    assert (act.first_ns, act.last_ns) == (first, last)
    assert act.busy_ns <= last - first
    rep = analyze(gpt, health=False)
    (dev,) = rep.devices
    assert dev.span_ns == last - first


def test_torch_profiler_steps_in_a_kineto_trace():
    trace = json.loads(gzip.decompress(KINETO.read_bytes()))["traceEvents"]
    steps = {e["name"]: e["ts"] for e in trace if e.get("cat") == "user_annotation"}
    lo, hi = steps["ProfilerStep#3"], steps["ProfilerStep#4"]
    want = [e for e in trace if e.get("cat") == "kernel" and lo <= e["ts"] < hi]
    cap = readers.read(KINETO, steps=(3, 4))
    assert launches(cap) == len(want) == 441
    assert sum(o.launches for o in cap.ops) == 441
    assert launches(readers.read(KINETO, steps=(2, 5))) == 1323  # every step recorded: the whole trace
    with pytest.raises(BadInput, match=r"no step 5 in this capture \(steps 2\.\.4\)"):
        readers.read(KINETO, steps=(2, 6))


def test_keras_batches_are_the_calls_of_the_model():
    """--annotate keras: 'keras:sequential (Sequential)' around each call of the model — twice, nested (the Keras
    layer patch and, on the torch backend, the torch module patch) — the layers' ranges inside; 'keras:dense'
    calls outside it (building) are not batches."""
    conn = sqlite3.connect(KERAS)
    ranges = conn.execute("""SELECT n.start, n."end" FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
                             WHERE COALESCE(n.text, s.value) = 'keras:sequential (Sequential)'
                             ORDER BY n.start, n."end" DESC""").fetchall()
    calls, reach = [], None
    for start, end in ranges:
        if reach is None or start > reach:
            calls.append(start)
            reach = end
    assert (len(ranges), len(calls)) == (34, 17)
    (n,) = conn.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start >= ? AND start < ?",
                        (calls[1], calls[3])).fetchone()
    assert launches(readers.read(KERAS, steps=(1, 3))) == n == 196
    with pytest.raises(BadInput, match=r"no step 17 .*steps 0\.\.16"):
        readers.read(KERAS, steps=(0, 18))


def test_kineto_fast_parallel_and_general_paths_give_the_same_capture(monkeypatch, tmp_path):
    """The orjson path (in one process, and in parts side by side) and the general ijson path read the same,
    the ops included (the general path reads as the reader did before the one-pass change)."""
    plain = tmp_path / "trace.json"  # parts need an uncompressed file
    plain.write_bytes(gzip.decompress(KINETO.read_bytes()))
    got = {}
    monkeypatch.setattr(_kineto_rows, "BIG", 0)  # parts even for a small file
    monkeypatch.setattr(_kineto_rows, "cores", lambda: 2)
    for ways, path in ((("general",), plain), (("fast",), plain), (("parts",), plain), (("parts", "gz"), KINETO)):
        monkeypatch.setattr(_kineto_rows, "WAYS", ways[:1])
        if ways[-1] == "gz":  # the gzipped trace as torch.profiler wrote it: unpacked, then read in parts
            assert _kineto_rows._worth_parts(KINETO, tmp_path).name == "unpacked.json"
        cap = readers.read(path)
        got[ways] = tuple(sorted(x, key=repr) for x in (cap.kernels, cap.memops, cap.ops, cap.activity)) + \
            (cap.devices, cap.notes)
    assert got[("general",)] == got[("fast",)] == got[("parts",)] == got[("parts", "gz")]
    # cuda_driver launches attributed (READ_VERSION 5)
    assert sum(k.launches for k in got[("fast",)][0]) == 1323 and len(got[("fast",)][2]) == 81
    assert sum(o.launches for o in got[("fast",)][2]) == 1323


def test_a_run_store_holds_one_version_of_a_file(gpt, tmp_path):
    store = Store(tmp_path / "run.sqlite")
    ingest(store, [gpt], steps=(5, 15))
    ingest(store, [gpt])
    ingest(store, [gpt], window=(4.5, 4.7))
    assert [r["n"] for r in store.rows("SELECT COUNT(*) AS n FROM captures")] == [1]
    assert store.rows("SELECT SUM(launches) AS n FROM kernels")[0]["n"] == 108


def test_formats_without_a_timeline_refuse_a_window_in_one_line(capsys):
    csv = next((RUNS / "gpt_fp32_stats").glob("*.csv"))
    assert main(["report", str(csv), "--window", "0:1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "need a timeline of GPU activity" in err and csv.name in err


@pytest.mark.parametrize("argv, why", [(["--window", "5"], "expected START:END"),
                                       (["--window", "3:1"], "0 <= start < end"),
                                       (["--steps", "1.5:3"], "expected START:END"),
                                       (["--window", "0:1", "--steps", "1:2"], "give one of them")])
def test_bad_windows_are_one_line(gpt, argv, why, capsys):
    assert main(["report", str(gpt), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and why in err


def test_report_and_kernels_take_steps(gpt, capsys):
    assert main(["report", str(gpt), "--steps", "5:15", "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["launches"] == 3460
    assert main(["kernels", str(gpt), "--steps", "5:15", "--format", "json"]) == 0
    assert sum(k["launches"] for k in json.loads(capsys.readouterr().out)["kernels"]) == 3460


def test_a_windowed_report_says_so_everywhere(gpt, capsys):
    """The figures of a windowed report are of the window: the terminal, markdown, HTML and JSON say which, and the
    terminal names the base of every percentage column."""
    assert main(["report", str(gpt), "--steps", "10:20", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["scope"] == {"kind": "steps", "start": 10, "end": 20, "option": "--steps 10:20", "description":
                          "Steady state only: steps 10 to 19 (--steps 10:20) — every time, share and idle figure is "
                          "of what started in it."}
    assert main(["report", str(gpt), "--steps", "10:20", "--width", "160"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[1] == d["scope"]["description"]
    for base in ("share: of GPU time (kernels, copies and sets)", "% time: of all kernel time",
                 "GPU idle: of first kernel start to last kernel end"):
        assert base in text
    for fmt in ("markdown", "html"):
        assert main(["report", str(gpt), "--steps", "10:20", "--format", fmt]) == 0
        assert "steps 10 to 19" in capsys.readouterr().out
    assert main(["report", str(gpt), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["scope"] is None


def test_a_window_after_the_gpu_work_says_how_long_it_lasted(gpt, capsys):
    """The GPT capture's first GPU activity is a start-up copy 4.41 s before its first kernel; its GPU activity
    lasts 5.42 s."""
    assert main(["report", str(gpt), "--window", "10:20"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "lasts 5.42 s from its first copy, set or kernel" in err \
        and "first kernel starts at 4.41 s" in err


def test_a_folder_with_no_timeline_refuses_steps_instead_of_reporting_nothing(capsys):
    """A run folder of nsys-stats CSVs read with --steps: every file is skipped, so exit 2 — not an empty report."""
    assert main(["report", str(RUNS / "gpt_fp32_stats"), "--steps", "1:2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "none of its captures could be read through it" in err


def test_compare_takes_the_same_steps_of_both_runs(gpt, capsys):
    assert main(["compare", str(gpt), str(gpt), "--steps", "5:15", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["before"]["launches"] == d["after"]["launches"] == 3460


def test_numbered_ranges_are_one_row_in_the_tables_people_read(gpt, capsys):
    """The GPT trainer's 30 'step N' ranges: one row 'step * (30 ranges)' in the terminal and markdown (launches and
    time add up), every range in JSON."""
    assert main(["report", str(gpt), "--format", "json"]) == 0
    steps = [o for o in json.loads(capsys.readouterr().out)["ops"] if o["op"].startswith("step ")]
    assert len(steps) == 30
    launches = sum(o["launches"] for o in steps)
    for fmt in ("table", "markdown"):
        assert main(["report", str(gpt), "--format", fmt, "--width", "140"]) == 0
        out = capsys.readouterr().out.replace("\\", "")  # markdown escapes * ( )
        (row,) = [line for line in out.splitlines() if "step * (30 ranges)" in line]
        assert f"{launches:,}" in row or str(launches) in row
        assert "step 12" not in out


def test_a_gzip_that_unpacks_to_too_much_is_read_in_one_streamed_pass(monkeypatch, tmp_path):
    """The unpacking for parts stops at GUNZIP_RATIO times the file's size (a gzip of whitespace must not fill the
    disk); the trace is then read in one streamed pass, bounded as ever."""
    bomb = tmp_path / "spaces.json.gz"
    bomb.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (8 << 20) + b"]}", 9))
    monkeypatch.setattr(_kineto_rows, "BIG", 0)
    monkeypatch.setattr(_kineto_rows, "cores", lambda: 2)
    work = tmp_path / "work"
    work.mkdir()
    assert _kineto_rows._worth_parts(bomb, work) is None and list(work.iterdir()) == []
    assert _kineto_rows._worth_parts(KINETO, work) is not None  # a real trace: ~10x


def _as_optimizer_steps(gpt, tmp_path, keep_job_marks: bool):
    """The GPT capture with its 'step N' ranges also (or only) as the 'optimizer step N' ranges `run` marks in an
    unmodified PyTorch script (nvprof_wrap/tracer/annotate.py), eventType 60 (start/end) as NVTX writes them."""
    path = tmp_path / "nsys.sqlite"
    shutil.copy(gpt, path)
    conn = sqlite3.connect(path)
    if keep_job_marks:  # a copy one step later, as if the marks disagreed: the job's own must win
        conn.execute("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid) "
                     "SELECT start, \"end\", 60, 'optimizer step ' || (CAST(substr(text, 6) AS INTEGER) + 1), "
                     "globalTid FROM NVTX_EVENTS WHERE text LIKE 'step %'")
    else:
        conn.execute("UPDATE NVTX_EVENTS SET text = 'optimizer ' || text, eventType = 60 WHERE text LIKE 'step %'")
    conn.commit()
    conn.close()
    return path


def test_optimizer_step_marks_are_steps_when_the_job_marks_none(gpt, tmp_path):
    """Issue 22: nanoGPT, pytorch/examples ImageNet and the HF Trainer mark no steps; `run` marks optimizer steps."""
    marked = readers.read(_as_optimizer_steps(gpt, tmp_path, keep_job_marks=False), steps=(5, 15))
    assert launches(marked) == launches(readers.read(gpt, steps=(5, 15))) == 3460


def test_the_jobs_own_step_marks_win_over_the_optimizer_steps(gpt, tmp_path):
    both = readers.read(_as_optimizer_steps(gpt, tmp_path, keep_job_marks=True), steps=(5, 15))
    assert (launches(both), kernel_ns(both)) == (3460, 163_712_415)
    # the optimizer marks are one step later: had they won, steps 5:15 would be the job's steps 4:14
    assert kernel_ns(readers.read(gpt, steps=(4, 14))) != 163_712_415


def test_no_step_marks_names_every_kind_it_looked_for(tmp_path):
    from nvprof_wrap.timeline.window import NO_STEPS, step_bounds

    with pytest.raises(BadInput, match="optimizer steps") as e:
        step_bounds((0, 2), [("forward", 1, 0, 10)])
    assert str(e.value).endswith(NO_STEPS)


@given(st.lists(st.one_of(st.none(), st.text(max_size=20),
                          st.sampled_from(["step 3", "STEP 4", "Step x", "profilerstep#2", "ProfilerStep#", "keras:fit",
                                           "xlamodule:#a", "train batch 1", "optimizer step 2", "Optimizer.step#SGD",
                                           "ŝtep 1", "_step 1", "%", "steps", "aten::mm"])), max_size=30))
@settings(max_examples=200, deadline=None)
def test_the_step_filter_selects_what_the_patterns_like(names) -> None:
    """window.step_filter (the first character compared first) keeps exactly the names STEP_LIKE's LIKEs keep."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE r(name)")
    db.executemany("INSERT INTO r VALUES (?)", [(n,) for n in names])
    like = " OR ".join(f"name LIKE '{p}'" for p in window.STEP_LIKE)
    plain = db.execute(f"SELECT rowid FROM r WHERE {like} ORDER BY rowid").fetchall()
    assert db.execute(f"SELECT rowid FROM r WHERE {window.step_filter()} ORDER BY rowid").fetchall() == plain


def _ranges(capture: str, tmp_path) -> list[window.Range]:
    """(name, tid, start, end) of a gzipped nsys export's NVTX ranges."""
    db = tmp_path / "c.sqlite"
    db.write_bytes(gzip.decompress((ROOT / "tests" / "data" / "h100_runs" / capture / "nsys.sqlite.gz").read_bytes()))
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT COALESCE(text, (SELECT value FROM StringIds WHERE id = textId)), globalTid, start, "
                            "end FROM NVTX_EVENTS").fetchall()
    conn.close()
    return rows


def test_keras_batches_on_jax_name_the_programs_xla_ran_inside_them_only_where_none_ran_outside(tmp_path) -> None:
    """Keras's transformer on JAX (H100), steps 20..23: each 'train batch N' holds one execution of the train step's
    program, so a step's FLOPs are that program's (report/build.py _step_flops). With batch 21's range gone its
    execution is outside every step: the program ran inside and outside them, which of its FLOPs were the steps' is
    not known, and no program is named (every FLOP counts, as before) — never the programs left inside alone."""
    ranges = _ranges("keras_jax_transformer_graphs_nsys", tmp_path)
    marked = window.marked_steps(ranges)
    assert (marked.source, len(marked.starts), marked.program) == ("keras batches", 4, "jit_train_step#15251")
    cut = window.marked_steps([r for r in ranges if r[0] != "train batch 21"])
    assert (len(cut.starts), cut.program) == (3, None)
