"""Steps in the JAX / TensorFlow profiler's own output: jax.profiler.StepTraceAnnotation's host events (a 'train'
event with a step_num stat in the XSpace, a step_num arg in the trace JSON) give the per-step series, the time
budget and --steps windows.

Real data: tests/data/jax_profiler, jax.profiler.trace around the second epoch of `KERAS_BACKEND=jax python
workloads/keras_transformer.py --precision bf16 --epochs 2 --samples 512 --jax-profile DIR` on an H200 (16 batches,
each in a StepTraceAnnotation("train", step_num=N)). Trimmed to stay small, every kept record as JAX wrote it: the
XSpace without its '/host:metadata' plane (the HLO protos) and with the host's 'python' line (97,041 Python-tracer
events) cut to its 16 step events; the trace JSON with its GPU process's events, the metadata events and the 16 step
events. Captures without step marks read as before (tests/readers/test_tf_profiler.py).
"""
from __future__ import annotations

import json

import pytest

from nvprof_wrap import readers
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers import _profiler_steps, _xplane_schema
from nvprof_wrap.readers._tfop import copy_kind, is_stream
from nvprof_wrap.timeline.window import NO_STEPS
from tests._paths import DATA, RUNS, fixture_file

HERE = DATA / "jax_profiler"
SPACE, TRACE = HERE / "vm.xplane.pb", HERE / "vm.trace.json.gz"


def _raw():
    """(kernel starts in ns, {step: (start, end)}) of the fixture's XSpace, read here with protobuf alone."""
    space = _xplane_schema.own().XSpace.FromString(SPACE.read_bytes())
    starts, steps = [], {}
    for plane in space.planes:
        stat = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            for ev in line.events:
                at = line.timestamp_ns + ev.offset_ps // 1000
                if plane.name == "/device:GPU:0" and is_stream(line.id, line.name) and \
                        copy_kind(plane.event_metadata[ev.metadata_id].name, {}) is None:
                    starts.append(at)
                for st in ev.stats:
                    if stat.get(st.metadata_id) == "step_num":
                        steps[st.int64_value] = (at, at + ev.duration_ps // 1000)
    return starts, steps


def test_the_fixture_is_small_and_both_files_are_detected():
    assert SPACE.stat().st_size + TRACE.stat().st_size < 2 << 20
    assert (readers.detect(SPACE), readers.detect(TRACE)) == ("xplane", "tf-trace-json")


def test_sixteen_steps_numbered_by_step_num():
    c = readers.read(SPACE)
    s = c.series
    assert s is not None and (s.kind, s.source, s.host, s.folded) == ("steps", "step marks", "none", 1)
    assert [r.step for r in s.steps] == list(range(16))
    _starts, raw = _raw()
    # a step runs from its mark's start to the next step's start, the last one to its mark's end
    assert [(r.start_ns, r.end_ns) for r in s.steps] == \
        [(raw[n][0], raw[n + 1][0] if n < 15 else raw[n][1]) for n in range(16)]
    assert {r.launches for r in s.steps} == {360}  # one jit_train_step per batch, the same kernels each time
    # every kernel that starts in a step is in its row; the 10 launches after the last step's end are in none
    assert sum(r.launches for r in s.steps) == 5760 and sum(k.launches for k in c.kernels) == 5770
    assert sum(k.launches for k in s.kernels) == 5760


def test_each_steps_budget_is_the_steps_gpu_time():
    s = readers.read(SPACE).series
    for r in s.steps:
        gpu = sum(ns for _part, ns in r.parts_ns)
        assert {p for p, _ in r.parts_ns} <= {"kernels", "copy_htod", "copy_dtoh", "memset"}
        assert r.busy_ns <= gpu <= r.end_ns - r.start_ns  # + what a kernel of the step before ran into it
        assert r.api_union_ns is None and r.api_ns == ()  # the host's CUDA calls are not in this capture


def test_report_over_time_and_time_budget(capsys):
    assert main(["report", str(SPACE), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [row["step"] for row in d["series"]] == list(range(16))
    b = d["time_budget"]
    assert (b["kind"], b["steps"], b["first"], b["last"], b["host"]) == ("steps", 15, 1, 15, "none")
    assert sum(p["seconds"] for p in b["parts"]) == pytest.approx(b["step_s"], abs=1e-8)  # idle included
    assert main(["report", str(SPACE)]) == 0
    assert "Over time: 16 steps (step marks)" in capsys.readouterr().out


def test_a_steps_window_keeps_the_kernels_that_start_in_it():
    starts, raw = _raw()
    w = readers.read(SPACE, steps=(2, 5))
    inside = [t for t in starts if raw[2][0] <= t < raw[5][0]]
    assert sum(k.launches for k in w.kernels) == len(inside) == 1080
    whole = readers.read(SPACE).series
    assert w.series is not None and w.series.steps == tuple(r for r in whole.steps if 2 <= r.step < 5)
    (act,) = w.activity
    assert raw[2][0] <= act.first_ns and act.last_ns <= raw[5][0] + 10**6  # the last kernel may run past the edge
    last = readers.read(SPACE, steps=(15, 16))  # to the end of the last step's mark
    assert sum(k.launches for k in last.kernels) == len([t for t in starts if raw[15][0] <= t < sum(raw[15][1:])])


def test_adjacent_step_windows_split_the_launches():
    parts = [readers.read(SPACE, steps=(a, b)) for a, b in ((0, 7), (7, 16))]
    assert sum(k.launches for p in parts for k in p.kernels) == 5760


def test_a_seconds_window_counts_from_the_first_gpu_activity():
    starts, _raw_steps = _raw()
    space = _xplane_schema.own().XSpace.FromString(SPACE.read_bytes())
    gpu = next(p for p in space.planes if p.name == "/device:GPU:0")
    origin = min(ln.timestamp_ns + ev.offset_ps // 1000 for ln in gpu.lines for ev in ln.events)
    w = readers.read(SPACE, window=(0.1, 0.2))
    assert sum(k.launches for k in w.kernels) == \
        len([t for t in starts if origin + 100_000_000 <= t < origin + 200_000_000])
    with pytest.raises(BadInput, match="no GPU activity in --window 5:6"):
        readers.read(SPACE, window=(5, 6))


def test_the_trace_json_beside_it_has_the_same_steps():
    x, t = readers.read(SPACE).series, readers.read(TRACE).series
    assert t is not None and (t.kind, t.source) == ("steps", "step marks")
    assert [(r.step, r.launches, r.copy_ns) for r in t.steps] == [(r.step, r.launches, r.copy_ns) for r in x.steps]
    # microseconds with three decimals in the JSON (a float): the same times within a nanosecond each
    assert all(abs(a.start_ns - b.start_ns) <= 1 and abs(a.kernel_ns - b.kernel_ns) <= a.launches
               for a, b in zip(t.steps, x.steps))


def test_the_trace_json_takes_no_window():
    with pytest.raises(BadInput, match="--window/--steps need a timeline"):
        readers.read(TRACE, steps=(2, 5))


def test_captures_without_step_marks_read_as_before(capsys):
    jax = RUNS / "jax_bf16_xplane"
    assert readers.read(jax / "vm.xplane.pb").series is None
    assert readers.read(jax / "vm.trace.json.gz").series is None
    assert main(["report", str(jax / "vm.xplane.pb"), "--steps", "0:2"]) == 2
    assert "vm.xplane.pb: " + NO_STEPS[:60] in capsys.readouterr().err


def test_tensorflow_xplanes_without_step_annotations_have_no_series():
    """Keras on TensorFlow 2.4 (the public chess engine run): its GPU plane's derived 'Steps' line groups the eager
    kernels into one 'step' of TensorFlow's making, no step the job marked: not read as steps."""
    assert readers.read(fixture_file("wild/tf-keras-chess.xplane.pb")).series is None


def test_the_loop_marked_most_often_gives_the_steps():
    marks = [("eval", 0, 50, 60), *(("train", n, n * 10, n * 10 + 5) for n in range(3)), ("eval", 1, 70, 80)]
    assert _profiler_steps.pick(marks) == [("step 0", 0, 0, 5), ("step 1", 0, 10, 15), ("step 2", 0, 20, 25)]
    assert _profiler_steps.pick([]) == []
    assert [_profiler_steps.step_number(v) for v in (3, "12", True, "x", 1.5, None)] == [3, 12, None, None, None, None]
