"""Kernel → NVTX range attribution (timeline/nvtx.py), on hand-made ranges whose answer is known, and the same
answer from a brute-force oracle on random ranges (hypothesis)."""
from __future__ import annotations

import os
import re
import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from nvprof_wrap.timeline.nvtx import attribute, borrowed_note, op_name

NONE = "(no NVTX range)"


def run(ranges: list[tuple], launches: list[tuple], lent: dict | None = None, file: str | None = None) -> set[tuple]:
    """ranges (tid, s, e, name); launches (tid, t, key) on pid 1, device 0, 10 ns each; lent gets the borrowed.
    file: an SQLite file to hold them, reopened by forked workers (attribute's reopen)."""
    conn = sqlite3.connect(file or ":memory:")
    conn.execute("CREATE TABLE r(tid, s, e, name)")
    conn.execute("CREATE TABLE l(tid, t, key)")
    conn.executemany("INSERT INTO r VALUES (?,?,?,?)", ranges)
    conn.executemany("INSERT INTO l VALUES (?,?,?)", launches)
    conn.commit()
    rows = attribute(conn, "SELECT tid, s, e, name FROM r",
                     "SELECT 1 AS pid, 0 AS dev, tid, t, key, 10 AS dur FROM l", borrowed=lent,
                     reopen=(lambda: sqlite3.connect(file)) if file else None)
    conn.close()
    return {(scope, op, key, n) for _pid, _dev, scope, op, key, n, _tot in rows}


def test_innermost_op_and_layer_scope_on_nested_ranges() -> None:
    ranges = [(7, 0, 100, "keras:dense (Dense)"), (7, 10, 50, "aten::linear, seq = 3"), (7, 20, 30, "aten::mm"),
              (7, 200, 300, "train_step"), (7, 210, 220, "aten::add")]
    launches = [(7, 25, "gemm"), (7, 40, "bias"), (7, 60, "relu"), (7, 150, "copy"), (7, 215, "add"), (7, 250, "x")]
    assert run(ranges, launches) == {
        ("keras:dense (Dense)", "aten::mm", "gemm", 1),
        ("keras:dense (Dense)", "aten::linear", "bias", 1),  # ", seq = 3" is emit_nvtx decoration
        ("keras:dense (Dense)", "keras:dense (Dense)", "relu", 1),
        (NONE, NONE, "copy", 1),  # in the gap between two ranges
        ("train_step", "aten::add", "add", 1),  # no layer range: the outermost range is the scope
        ("train_step", "train_step", "x", 1)}


def test_ranges_are_closed_intervals_and_per_thread() -> None:
    """Thread 2 is the process's main thread (its ranges last longest in all). A launch on a thread with no range
    open borrows the main thread's ranges open at that moment (threads 1 and 3), if any; a launch whose thread is
    unknown (no API record) stays outside any range."""
    ranges = [(1, 100, 200, "a"), (2, 140, 160, "b"), (2, 300, 1000, "c")]
    launches = [(1, 100, "k"), (1, 200, "k"), (1, 201, "k"), (1, 99, "k"), (2, 150, "k"), (3, 150, "k"),
                (3, 500, "k"), (None, 150, "k")]
    assert run(ranges, launches) == {("a", "a", "k", 2), ("b", "b", "k", 2), ("c", "c", "k", 1), (NONE, NONE, "k", 3)}


def test_the_autograd_thread_borrows_the_training_loops_step() -> None:
    """PyTorch runs backward on its autograd thread while the loop's thread waits inside its 'step N' range: those
    launches count in the step (and are reported as borrowed), not as outside any range."""
    ranges = [(10, 0, 100, "step 0"), (10, 5, 20, "forward"), (10, 200, 300, "step 1")]
    launches = [(10, 10, "fwd"), (11, 50, "bwd"), (11, 250, "bwd"), (11, 150, "bwd")]
    lent: dict = {}
    assert run(ranges, launches, lent) == {
        ("step 0", "forward", "fwd", 1), ("step 0", "step 0", "bwd", 1), ("step 1", "step 1", "bwd", 1),
        (NONE, NONE, "bwd", 1)}  # between the steps: nothing open anywhere
    assert lent == {"launches": 2, "ns": 20}


def test_overlapping_start_end_ranges() -> None:
    """nvtxRangeStart/End ranges need not nest: the latest-started open range is the op, the earliest the scope."""
    ranges = [(1, 0, 100, "A"), (1, 90, 200, "B")]
    assert run(ranges, [(1, 50, "k"), (1, 95, "k"), (1, 150, "k")]) == {
        ("A", "A", "k", 1), ("A", "B", "k", 1), ("B", "B", "k", 1)}


def test_torch_profiler_step_markers_are_not_scopes() -> None:
    ranges = [(1, 0, 100, "ProfilerStep#7"), (1, 10, 50, "aten::linear"), (1, 20, 30, "aten::addmm")]
    assert run(ranges, [(1, 25, "k"), (1, 60, "k")]) == {
        ("aten::linear", "aten::addmm", "k", 1), ("ProfilerStep#7", "ProfilerStep#7", "k", 1)}


def test_keras_batches_and_profiler_steps_are_no_scopes() -> None:
    # each encloses every op of its step: as the scope, the scope table would hold a row per step. Keras's batch
    # around XLA's execution range around its thunk (a Keras-on-JAX job): the execution range is the scope. The
    # job's own step marks and run's optimizer steps stay scopes (the store counts the job's steps from them)
    xla, thunk = "XlaModule:#hlo_module=jit_train_step,program_id=7#", "Thunk:#hlo_op=custom-call.1#"
    for mark, scoped in (("train batch 3", False), ("ProfilerStep#3", False), ("step 3", True),
                         ("optimizer step 3", True)):
        ranges = [(1, 0, 100, mark), (1, 10, 50, xla), (1, 20, 30, thunk)]
        scope = mark if scoped else xla
        assert run(ranges, [(1, 25, "k"), (1, 40, "k"), (1, 60, "k")]) == {
            (scope, thunk, "k", 1), (scope, xla, "k", 1), (mark, mark, "k", 1)}  # the mark alone: its own scope
    # a name like a mark is not one ('train batch' has no number)
    assert run([(1, 0, 100, "train batch"), (1, 10, 50, "fwd")], [(1, 25, "k")]) == {("train batch", "fwd", "k", 1)}


def test_open_ranges_and_no_ranges() -> None:
    assert run([(1, 0, None, "never closed")], [(1, 5, "k")]) == set()  # nothing to attribute to
    assert run([], [(1, 5, "k")]) == set()


def oracle(ranges: list[tuple], launches: list[tuple]) -> set[tuple]:
    counts: dict = {}
    for rt, s, e, _n in ranges:
        counts[rt] = counts.get(rt, 0) + e - s
    main = min(counts, key=lambda tid: (-counts[tid], tid)) if counts else None  # the longest ranges, smallest id
    out: dict[tuple, int] = {}
    for tid, t, key in launches:
        open_ = sorted(((s, -e, name) for rt, s, e, name in ranges if rt == tid and s <= t <= e))
        if not open_ and tid is not None and tid != main:  # borrowed from the main thread
            open_ = sorted(((s, -e, name) for rt, s, e, name in ranges if rt == main and s <= t <= e))
        if not open_:
            label = (NONE, NONE)
        else:
            names = [op_name(n) for _s, _e, n in open_]
            layers = [n for n in names if n.startswith(("keras:", "torch:"))]
            outer = next((n for n in names if not n.startswith("ProfilerStep#")
                          and not re.match(r"train batch \d+$", n)), names[0])
            label = (layers[-1] if layers else outer, names[-1])
        out[(*label, key)] = out.get((*label, key), 0) + 1
    return {(*k, n) for k, n in out.items()}


names = st.sampled_from(["keras:a", "keras:b", "torch:m", "aten::mm", "aten::add", "step", "ProfilerStep#1", "step 2",
                         "train batch 4"])
span = st.tuples(st.integers(0, 60), st.integers(0, 30)).map(lambda p: (p[0], p[0] + p[1]))


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 2), span, names), max_size=8),
       st.lists(st.tuples(st.integers(1, 2), st.integers(0, 95)), max_size=12))
def test_matches_a_brute_force_oracle_on_nested_ranges(raw_ranges, raw_launches) -> None:
    # push/pop ranges nest: keep a range only if it nests with (or is disjoint from) every one kept before
    kept: list[tuple] = []
    for tid, (s, e), name in raw_ranges:
        nests = all(rt != tid or e < rs or s > re_ or (rs <= s and e <= re_) or (s <= rs and re_ <= e)
                    for rt, rs, re_, _n in kept)
        if nests and not any(rt == tid and (rs, re_) == (s, e) for rt, rs, re_, _n in kept):
            kept.append((tid, s, e, name))
    launches = [(tid, t, "k") for tid, t in raw_launches]
    got = run(kept, launches)
    if not kept:
        assert got == set()
    else:
        assert got == oracle(kept, launches)


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 2), span, names), max_size=10),
       st.lists(st.tuples(st.integers(1, 2), st.integers(0, 95)), max_size=12))
def test_matches_the_oracle_on_ranges_that_overlap_without_nesting(raw_ranges, raw_launches) -> None:
    """nvtxRangeStart/End ranges: closing one in the middle of the open ones relabels those above it."""
    kept: list[tuple] = []
    for tid, (s, e), name in raw_ranges:
        if not any(rt == tid and (rs == s or re_ == e) for rt, rs, re_, _n in kept):  # an order the oracle can tell
            kept.append((tid, s, e, name))
    launches = [(tid, t, "k") for tid, t in raw_launches]
    got = run(kept, launches)
    assert got == (oracle(kept, launches) if kept else set())


def in_pieces(ranges: list[tuple], launches: list[tuple], pieces: int) -> tuple[set[tuple], list]:
    """run() with the segment sweep in pieces of time (forked workers, as for a big capture): (rows, the cuts)."""
    import tempfile

    from nvprof_wrap.timeline import nvtx

    saved = nvtx.MIN_SPLIT_RANGES, nvtx.cores, nvtx._time_cuts
    cut: list = []
    nvtx.MIN_SPLIT_RANGES, nvtx.cores = 1, lambda: pieces + 1  # one core for the busy time
    nvtx._time_cuts = lambda *a: cut.extend(saved[2](*a)) or cut
    try:
        with tempfile.TemporaryDirectory() as tmp:
            return run(ranges, launches, file=os.path.join(tmp, "c.sqlite")), cut
    finally:
        nvtx.MIN_SPLIT_RANGES, nvtx.cores, nvtx._time_cuts = saved


def test_a_range_ending_just_before_a_cut_closes_on_a_thread_with_nothing_after():
    """Thread 1's only range ends at 9, the cut is at 10 (thread 2's range starts then): its end (from 10 on, no
    range) must survive the cut, so the launch at 15 borrows thread 2's range instead of keeping 'aten::a'."""
    ranges = [(1, 0, 9, "aten::a"), (2, 10, 30, "aten::b")]
    launches = [(1, 5, "k"), (1, 15, "k")]
    got, cut = in_pieces(ranges, launches, 2)
    assert cut == [10]
    assert got == oracle(ranges, launches) == {("aten::a", "aten::a", "k", 1), ("aten::b", "aten::b", "k", 1)}


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 2), span, names), max_size=12),
       st.lists(st.tuples(st.integers(1, 2), st.integers(0, 95)), max_size=12), st.integers(2, 5))
def test_the_sweep_in_pieces_of_time_matches_the_oracle(raw_ranges, raw_launches, pieces) -> None:
    """Many ranges are swept in pieces of time by forked workers (one per core): pieces that cut through open
    ranges, ranges ending just before a cut, threads without a range in a piece — the one-process answer."""
    kept: list[tuple] = []
    for tid, (s, e), name in raw_ranges:
        if not any(rt == tid and (rs == s or re_ == e) for rt, rs, re_, _n in kept):
            kept.append((tid, s, e, name))
    launches = [(tid, t, "k") for tid, t in raw_launches]
    got, cut = in_pieces(kept, launches, pieces)
    assert got == (oracle(kept, launches) if kept else set())
    if len(kept) >= pieces:
        assert cut  # it did run in pieces


def test_the_lent_launches_share_is_of_the_kernels_they_were_counted_among() -> None:
    """borrowed_note's share: of the kernel time the attribution read. A Keras-on-JAX capture on the H200 said
    "632 kernel launches, 1379.3% of kernel time came from threads with no range open": the lent launches (XLA's
    autotuner, on its own threads) were counted among every kernel the attribution read, the share taken of those
    left once the warm-up after the first step was set apart (nsys_sqlite passes the time read, and says so)."""
    lent = {"launches": 632, "ns": 14_768_000}
    assert borrowed_note({}, 1) == ()
    plain, = borrowed_note(lent, 16_000_000)
    assert plain.startswith("632 kernel launches, 92.3% of kernel time came from threads with no range open")
    apart, = borrowed_note(lent, 16_000_000, with_warmup=True)
    assert apart.startswith("632 kernel launches, 92.3% of kernel time (the warm-up set apart included) came from")
    # the launches set apart count in no range any more (most of them, on a JAX capture: XLA's autotuning)
    assert plain.endswith("and count in the ranges open then on their process's main thread")
    assert apart.endswith("those not set apart as warm-up count in the ranges open then on their process's main "
                          "thread")
