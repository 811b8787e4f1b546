"""The compiled helper of the Nsight Systems reader (timeline/_cattr.c through timeline/native.py) against the Python
and SQL path it stands in for, which stays the fallback: the same Capture, to the order of its rows, from every real
Nsight Systems export here and in the fixtures, and from generated captures made to reach every branch (slices in
forked workers, several processes and devices, launches without launch calls, correlation ids used twice, a window,
a value it declines); the same attribution as the SQL's, and as the brute-force oracle's, on random ranges."""
from __future__ import annotations

import gzip
import os
import shutil
import sqlite3
import sysconfig
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import generate, replicate
from nvprof_wrap import readers
from nvprof_wrap.readers import nsys_sqlite
from nvprof_wrap.system.fork import Forked, can_fork, in_waves
from nvprof_wrap.system.limits import MAX_DURATION_NS
from nvprof_wrap.timeline import busy, native, nvtx, series_np
from nvprof_wrap.timeline import series as step_series
from nvprof_wrap.timeline.busy import busy_part
from nvprof_wrap.timeline.sql import EVERYTHING, uri_of
from nvprof_wrap.timeline.window import make
from tests._paths import FIXTURES, H100_RUNS, ROOT, RUNS
from tests.timeline.test_nvtx import oracle

built = pytest.mark.skipif(native._cattr is None, reason="the compiled helper is not built here (no C compiler or "
                           "Python headers when it was installed; python3 setup.py build_ext --inplace builds it)")


def test_the_helper_is_built_where_it_can_be() -> None:
    """CI installs with a C compiler and Python's headers: there the helper must have been built (setup.py marks it
    optional, so a failed build would otherwise pass unnoticed, every test below skipped)."""
    headers = Path(sysconfig.get_paths()["include"], "Python.h").is_file()
    if not (headers and (shutil.which("cc") or shutil.which("gcc"))):
        pytest.skip("no C compiler or no Python headers here: the SQL path runs")
    assert native._cattr is not None, "pip install -e . (or python3 setup.py build_ext --inplace) builds it"


class Spy:
    """Counts the compiled calls, so that a test knows the compiled path ran and did not decline."""

    def __init__(self, monkeypatch) -> None:
        self.calls: dict[str, int] = {}
        for name in ("sweep", "attribute", "busy_all", "busy_islands", "busy_runs"):
            inner = getattr(native, name)
            monkeypatch.setattr(native, name, self._counting(name, inner))

    def _counting(self, name, inner):
        def call(*a, **k):
            got = inner(*a, **k)
            self.calls[name] = self.calls.get(name, 0) + (got is not None)
            return got
        return call


def both(monkeypatch, path: Path, window=None):
    """(the capture read by the SQL and Python path, the same by the compiled one, the compiled calls that ran)."""
    monkeypatch.setenv("NVPROF_WRAP_NATIVE", "off")
    plain = readers.read(path, window)
    monkeypatch.setenv("NVPROF_WRAP_NATIVE", "on")
    spy = Spy(monkeypatch)
    return plain, readers.read(path, window), spy.calls


def _exports() -> list[Path]:
    own = [*RUNS.glob("*/*.sqlite*"), *H100_RUNS.glob("*/*.sqlite*"),
           *(ROOT / "nvprof_wrap" / "samples").glob("*/nsys*.sqlite")]
    shared = [*(FIXTURES / "h200").glob("nsys*.sqlite"), *(FIXTURES / "wild").glob("nsys-*.sqlite")]
    # not a run folder's own store (run.sqlite: nvprof-wrap's aggregates, no export) nor SQLite's side files
    return sorted(p for p in own + shared if "cupti" not in p.name and not p.name.startswith("run.sqlite")
                  and not p.name.endswith((".partial", "-wal", "-shm", "-journal")))


@built
@pytest.mark.parametrize("path", _exports(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_real_export_reads_the_same(monkeypatch, path) -> None:
    try:
        plain, compiled, calls = both(monkeypatch, path)
    except readers.BadInput:  # refused (no kernels, say): the same refusal either way
        monkeypatch.setenv("NVPROF_WRAP_NATIVE", "on")
        with pytest.raises(readers.BadInput):
            readers.read(path)
        return
    assert compiled == plain
    if plain.ops:
        assert calls.get("attribute"), "the compiled attribution did not run"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, Path]:
    """Small captures in the real schema that reach the branches: 2 processes on 2 devices; kernels replicated past
    their launch calls (benchmarks.replicate); correlation ids used twice; a launch call's time that is not an integer
    (the compiled pass declines it); kernels that end before they start (counted, without their time, and noted)."""
    folder = tmp_path_factory.mktemp("native")
    out = {"two": folder / "two.sqlite", "replicated": folder / "replicated.sqlite"}
    generate.nsys(20_000, out["two"], processes=2, devices=2, seed=3)
    replicate.replicate(RUNS / "gpt_fp32_nsys" / "nsys.sqlite.gz", out["replicated"], 30_000)
    for name, edit in (("twice", "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = correlationId / 2"),
                       ("real", "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start + 0.5 WHERE rowid = 7"),
                       ("unusable", 'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 5 WHERE rowid % 997 = 0'),
                       # correlation ids out of the kernels' rowid order: most of each slice's kernels fall outside
                       # the ids at its ends (nvtx._estimated), and are matched after their calls are read too
                       ("shuffled",
                        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = correlationId * 7919 % 40009"),
                       # what the kernels' columns kept for the series cannot hold (nsys_sqlite._ops, kept)
                       ("kernel_real", 'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = "end" + 0.5 WHERE rowid = 7'),
                       ("no_pid", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL WHERE rowid = 9"),
                       # the longest usable duration, and 1 ns longer (without its time: the compiled keeping
                       # pass works it out as readers/_durations.SOUND does)
                       ("longest", (f'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start + {MAX_DURATION_NS} '
                                    "+ rowid % 2 WHERE rowid % 1009 = 0")),
                       # a kernel's times past 2^62 ns: the compiled busy time declines them (Python decides)
                       ("far", (f'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + {1 << 62}, "end" = "end" '
                                f"+ {1 << 62} WHERE rowid = 11"))):
        out[name] = folder / f"{name}.sqlite"
        shutil.copy(out["two"], out[name])
        with sqlite3.connect(out[name]) as conn:
            conn.execute(edit)
    return out


# The busy time of a whole capture, fused: the compiled attribution's islands of the kernels and busy_islands' of the
# copies (a second busy_islands: the kernels', where the attribution handed none over), merged by busy_runs; or, where
# those decline a value, busy_all and Python. (busy_islands, busy_runs, busy_all) calls that answered, by capture.
FUSED = {"real": (2, 1, 0), "kernel_real": (1, 0, 0), "no_pid": (1, 1, 0), "far": (1, 0, 0)}


@built
@pytest.mark.parametrize("name", ["two", "replicated", "twice", "real", "unusable", "shuffled", "kernel_real",
                                  "no_pid", "longest", "far"])
@pytest.mark.parametrize("windowed", [False, True])
def test_generated_captures_read_the_same_in_slices(monkeypatch, generated, name, windowed) -> None:
    """Sliced as a big capture is: one slice per core, the others in forked workers (the busy time here, where
    the calls can be counted). The window: seconds from the first GPU activity (the real GPT run's first kernel
    comes 4.4 s after its first copy). Whole, the attribution takes the kernels' busy time too (FUSED)."""
    monkeypatch.setattr(nvtx, "MIN_SLICED_LAUNCHES", 1000)
    monkeypatch.setattr(nvtx, "cores", lambda: 3)
    win = make((4.5, 6.5) if name == "replicated" else (0.02, 0.1), None) if windowed else None
    plain, compiled, calls = both(monkeypatch, generated[name], win)
    assert compiled == plain
    assert plain.ops and plain.activity
    assert (name in ("unusable", "longest")) == any("without a usable time" in n for n in plain.notes)
    assert calls.get("sweep")
    busy = tuple(calls.get(f, 0) for f in ("busy_islands", "busy_runs", "busy_all"))
    assert busy == ((0, 0, 1) if windowed else FUSED.get(name, (1, 1, 0)))
    # declined where a value is not an integer (a kernel's end: outside the window): the SQL decided
    assert bool(calls.get("attribute")) == (name != "real" and (name != "kernel_real" or windowed))


@built
@pytest.mark.parametrize("name", ["two", "replicated", "unusable", "shuffled", "longest", "kernel_real",
                                  "no_pid"])
@pytest.mark.parametrize("sliced", [True, False])
def test_the_series_reads_the_kernels_the_attribution_kept(monkeypatch, generated, name, sliced) -> None:
    """The compiled attribution's slices keep their kernels' (pid, start, end, key) as they read them (the forked
    ones send them back in shared memory), and the per-step series measures from them (series_np._given),
    reading no kernel itself: the same capture — series, kernels, ops, notes — as with the series measured in
    SQL and nothing kept. Where a kernel's end is not an integer the keeping pass declines and the pass without
    it decides (the SQL, here); where a kernel has no process the slice's columns are given up and the series
    reads that slice itself. Not sliced (a capture under MIN_SLICED_LAUNCHES): the whole table kept."""
    monkeypatch.setattr(nvtx, "MIN_SLICED_LAUNCHES", 1000 if sliced else 10**9)
    monkeypatch.setattr(nvtx, "cores", lambda: 3)
    monkeypatch.setattr(step_series, "REFERENCE", True)
    reference = readers.read(generated[name])
    monkeypatch.setattr(step_series, "REFERENCE", False)
    given, keeping = [], []
    real_given, real_attribute = series_np._given, native.attribute
    monkeypatch.setattr(series_np, "_given", lambda *a: given.append(
        [(rowids is not None, cols is not None) for rowids, cols in a[2]]) or real_given(*a))
    monkeypatch.setattr(native, "attribute", lambda *a, **k: keeping.append(len(a) > 6) or real_attribute(*a, **k))
    kept = readers.read(generated[name])
    assert kept == reference and kept.series is not None and kept.series.steps and kept.ops
    assert any(keeping)  # the keeping pass was asked for
    # three slices (3 cores): each kept its columns — the two forked ones sent them back beside their answers, in
    # shared memory — but the one holding the kernel without a process (the first), which the series reads again
    pieces = [(True, name != "no_pid"), (True, True), (True, True)] if sliced else [(False, name != "no_pid")]
    assert given == ([] if name == "kernel_real" else [pieces])
    if name == "kernel_real":  # this process's slice (the forked ones alike): declined with the times, asked
        assert keeping == [True, False]  # again without them, declined there too — the SQL decided


@built
@pytest.mark.parametrize("forks", [True, False])
def test_more_slices_than_cores_run_in_waves_and_read_the_same(monkeypatch, generated, forks) -> None:
    """A capture past MAX_SLICE_LAUNCHES a slice per core is cut into more slices than cores, run in waves of one
    per core (or one by one where nothing forks): the same capture as read in one slice, by both passes."""
    monkeypatch.setattr(nvtx, "MIN_SLICED_LAUNCHES", 10**9)
    whole = both(monkeypatch, generated["two"])
    assert whole[0] == whole[1]
    monkeypatch.setattr(nvtx, "MIN_SLICED_LAUNCHES", 1000)
    monkeypatch.setattr(nvtx, "MAX_SLICE_LAUNCHES", 3000)
    monkeypatch.setattr(nvtx, "cores", lambda: 2)
    monkeypatch.setattr(nvtx, "can_fork", lambda: forks)
    made: list[list[dict[str, str]]] = []
    inner = nvtx._slices
    monkeypatch.setattr(nvtx, "_slices", lambda *a: made.append(inner(*a)) or made[-1])
    plain, compiled, calls = both(monkeypatch, generated["two"])
    with sqlite3.connect(generated["two"]) as conn:
        kernels = conn.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    width = 2 if forks else 1
    assert [len(m) for m in made] == [-(-kernels // (3000 * width)) * width] * 2  # whole waves, both passes
    assert all(len(m) > 2 for m in made)
    assert compiled == plain
    assert calls.get("attribute")
    for field in ("kernels", "ops"):  # the same rows; their order follows the slices (as with one per core)
        assert sorted(map(repr, getattr(plain, field))) == sorted(map(repr, getattr(whole[0], field)))
    assert plain.kernels and plain.ops


def test_waves_run_no_more_than_their_width_at_once(tmp_path) -> None:
    """in_waves: every item's result in order, at most `width` of them running at any moment."""
    log = tmp_path / "log"

    def work(i: int) -> int:
        with open(log, "a") as f:
            f.write(f"start {i} {time.monotonic()}\n")
        time.sleep(0.05)
        with open(log, "a") as f:
            f.write(f"end {i} {time.monotonic()}\n")
        return i * i

    got = in_waves(work, lambda i: Forked(work, i), list(range(7)), 3)
    assert got == [i * i for i in range(7)]
    events = sorted((float(t), kind) for kind, _i, t in (line.split() for line in log.read_text().splitlines()))
    running, most = 0, 0
    for _t, kind in events:
        running += 1 if kind == "start" else -1
        most = max(most, running)
    assert len(events) == 14 and most <= 3
    if can_fork():
        assert most == 3  # side by side where forking is possible


@built
@pytest.mark.parametrize("max_late", [0, 10, native.MAX_LATE])
def test_kernels_outside_the_estimated_correlation_ids_are_matched(monkeypatch, generated, max_late) -> None:
    """A slice's calls are read for the correlation ids at its ends only: the kernels outside them are held and
    matched after a second read of their calls, or (more of them than MAX_LATE) the slice is read again with the
    exact ids. Each way, the attribution the SQL gives, and every kernel counted once."""
    monkeypatch.setattr(nvtx, "MIN_SLICED_LAUNCHES", 1000)
    monkeypatch.setattr(nvtx, "cores", lambda: 3)
    monkeypatch.setattr(native, "MAX_LATE", max_late)
    monkeypatch.setattr(nvtx, "PROBE_ROWS", 1)  # the ids of a slice's first and last kernels: most fall outside
    estimates: list[tuple[int, int] | None] = []  # this process's slice (the others run in forked workers)
    inner = nvtx._estimated
    monkeypatch.setattr(nvtx, "_estimated", lambda conn, where: estimates.append(inner(conn, where)) or estimates[-1])
    plain, compiled, calls = both(monkeypatch, generated["shuffled"])
    assert compiled == plain and calls.get("attribute")
    lo, hi = estimates[0] or (0, 0)
    assert 0 < hi - lo < 40_000  # the estimate ran, narrower than the slice's ids'
    with sqlite3.connect(generated["shuffled"]) as conn:
        kernels = conn.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert sum(k.launches for k in compiled.kernels) == kernels


@built
@pytest.mark.parametrize("window", [None, (0.02, 0.1)])
def test_busy_time_in_windows_of_time_reads_the_same(monkeypatch, generated, window) -> None:
    """On 4 cores and more, a big capture's busy time is cut into windows of time, each merged in a forked child
    (where the attribution does not take the kernels': not fused here)."""
    monkeypatch.setattr(busy, "BIG", 0)
    monkeypatch.setattr(busy, "cores", lambda: 4)
    monkeypatch.setattr(nsys_sqlite, "_fusable", lambda *a: False)
    plans: list[int] = []
    monkeypatch.setattr(busy, "busy_plan", lambda *a, inner=busy.busy_plan: plans.append(len(inner(*a))) or inner(*a))
    plain, compiled, _ = both(monkeypatch, generated["two"], make(window, None) if window else None)
    assert compiled == plain
    assert plans == ([2, 2] if can_fork() else [])  # two windows, each pass


@built
@pytest.mark.parametrize("most", [0, 19_999, 20_000])
def test_past_the_fused_limit_the_busy_time_reads_the_kernels_itself(monkeypatch, generated, most) -> None:
    """Fused only up to FUSED_MAX_LAUNCHES kernels (the islands held until the merge: 16 bytes each): past it the
    busy time's own pass reads them in its bounded window, as before. The same capture either way."""
    monkeypatch.setattr(nsys_sqlite, "FUSED_MAX_LAUNCHES", most)
    plain, compiled, calls = both(monkeypatch, generated["two"])  # 20,000 launches
    assert compiled == plain
    fused = most > 19_999
    assert (calls.get("busy_runs", 0), calls.get("busy_all", 0)) == ((1, 0) if fused else (0, 1))


@built
@pytest.mark.parametrize("name", ["two", "real", "no_pid"])
def test_the_fused_busy_time_reads_the_same_in_forked_children(monkeypatch, generated, name) -> None:
    """A big capture, fused: the copies' islands and aggregates read in forked children beside the sweep (and the
    kernels', where the attribution declined the capture), merged here — the capture the SQL and Python read."""
    monkeypatch.setattr(busy, "BIG", 0)
    monkeypatch.setattr(nsys_sqlite, "BIG", 0)
    monkeypatch.setattr(nvtx, "MIN_SLICED_LAUNCHES", 1000)
    monkeypatch.setattr(nvtx, "cores", lambda: 3)
    children: list[object] = []
    monkeypatch.setattr(nsys_sqlite, "Forked", lambda fn, *a, inline=False: children.append((fn, inline)) or
                        Forked(fn, *a, inline=inline))
    plain, compiled, calls = both(monkeypatch, generated[name])
    assert compiled == plain and plain.activity and plain.memops
    # the copies' aggregates beside the sweep: in a child where fused (the compiled pass), here where not
    assert children == [(nsys_sqlite._memops_alone, True), (nsys_sqlite._memops_alone, False)]
    assert calls.get("busy_runs") == 1  # the merge, here (busy_islands ran in the children: not counted here)


def _tables(file: str, ranges: list[tuple], launches: list[tuple]) -> None:
    """ranges (tid, s, e, name); launches (tid, t) as kernel k(corr, key, dur) and, where tid is known, its launch
    call c(corr, tid, t)."""
    conn = sqlite3.connect(file)
    conn.execute("CREATE TABLE r(tid, s, e, name)")
    conn.execute("CREATE TABLE c(corr, tid, t)")
    conn.execute("CREATE TABLE k(corr, key, dur)")
    conn.executemany("INSERT INTO r VALUES (?,?,?,?)", ranges)
    conn.executemany("INSERT INTO c VALUES (?,?,?)", [(i, tid, t) for i, (tid, t) in enumerate(launches) if tid])
    conn.executemany("INSERT INTO k VALUES (?,?,?)", [(i, 7, 10) for i in range(len(launches))])
    conn.commit()
    conn.close()


def attributed(file: str, compiled: bool) -> list[tuple]:
    conn = sqlite3.connect(file)
    try:
        lent: dict = {}
        args = (conn, "SELECT tid, s, e, name FROM r",
                ("SELECT 1 AS pid, 0 AS dev, r.tid AS tid, r.t AS t, k.key AS key, k.dur AS dur "
                 "FROM k LEFT JOIN c r ON r.corr = k.corr {rslice} WHERE true {slice}"))
        native = (uri_of(Path(file)), "SELECT r.corr, 0, r.tid, r.t, 0 FROM c r WHERE true {rslice}",
                  "SELECT k.corr, 0, 1, 0, k.key, k.dur FROM k WHERE true {slice}") if compiled else None
        kwargs = {"reopen": lambda: sqlite3.connect(file), "kernel_table": "k", "correlation": "corr",
                  "native": native}
        rows = nvtx.attribute(*args, borrowed=lent, **kwargs)
        lent.pop("no_duration", None)  # counted by the compiled pass only (what spares the reader a scan)
        if compiled:  # whether a closed range's name (nvtx._CLOSED) holds the text looked for, where any is closed
            for text in LOOKED_FOR:
                again: dict = {}
                nvtx.attribute(*args, borrowed=again, look_for=text, **kwargs)
                closed = conn.execute("SELECT COUNT(*), COALESCE(MAX(instr(name, ?) > 0), 0) FROM r WHERE e IS NOT "
                                      "NULL AND tid IS NOT NULL AND e >= s", (text,)).fetchone()
                assert again.get("found") == (bool(closed[1]) if closed[0] else None)
            assert "found" not in lent  # nothing looked for, nothing said
        return [*rows, lent]
    finally:
        conn.close()


names = st.sampled_from(["keras:a", "keras:b", "torch:m", "aten::mm", "aten::add", "step", "ProfilerStep#1"])
LOOKED_FOR = ("aten::", "keras:b", "step")  # the attribution says whether a swept name holds each
span = st.tuples(st.integers(0, 60), st.integers(0, 30)).map(lambda p: (p[0], p[0] + p[1]))


@built
@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), span, names), max_size=10),
       st.lists(st.tuples(st.sampled_from([None, 1, 2, 3]), st.integers(0, 95)), max_size=14))
def test_the_compiled_attribution_is_the_sqls_and_the_oracles(tmp_path_factory, raw_ranges, raw_launches) -> None:
    """Ranges that nest or overlap without nesting, on three threads; launches on threads with and without ranges
    open (borrowing the main thread's), and without a launch call."""
    kept: list[tuple] = []
    for tid, (s, e), name in raw_ranges:
        if not any(rt == tid and (rs == s or re_ == e) for rt, rs, re_, _n in kept):  # an order the oracle can tell
            kept.append((tid, s, e, name))
    file = str(tmp_path_factory.mktemp("fuzz") / "c.sqlite")
    _tables(file, kept, raw_launches)
    compiled = attributed(file, True)
    assert compiled == attributed(file, False)
    got = {(scope, op, key, n) for _p, _d, scope, op, key, n, _t in compiled[:-1]}
    assert got == (oracle(kept, [(tid, t, 7) for tid, t in raw_launches]) if kept else set())


def _plain(path: Path, folder: Path) -> Path:
    """path itself, or its gzipped capture unpacked into folder."""
    if path.suffix != ".gz":
        return path
    out = folder / path.stem
    with gzip.open(path) as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


@built
@pytest.mark.parametrize("path", _exports(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_busy_time_in_a_bounded_window_is_the_whole_sorts(tmp_path, path) -> None:
    """The union merged holding a few intervals per group and device (as a 20M-launch capture is, in BUSY_HOLD)
    against the same holding every one of them, on every real export; none comes out of order by more than
    BUSY_HOLD rows (else every big capture would read its tables twice)."""
    file = _plain(path, tmp_path)
    with sqlite3.connect(f"file:{file}?mode=ro", uri=True) as conn:
        have = nsys_sqlite.tables(conn)
        if nsys_sqlite.KERNEL not in have:
            pytest.skip("no kernel table: no busy time to measure")
        sqls = busy._cut_sqls(nsys_sqlite._busy_sources(conn, have, None), EVERYTHING)
    whole = native.busy_held(uri_of(file), sqls, 0)
    assert whole is not None and whole[0] and not whole[1]
    for hold in (1, 2, 64, native.BUSY_HOLD):
        got = native.busy_held(uri_of(file), sqls, hold)
        assert got is not None
        assert sorted(got[0], key=repr) == sorted(whole[0], key=repr), hold
    assert not got[1]


@built
def test_a_row_before_the_windows_watermark_reads_every_interval_again(tmp_path) -> None:
    """Kernels listed latest first overrun a window of 2 at the third row: the pass starts again holding them all
    (restarted), with the SQL's answer; listed in start order, the same window is enough."""
    file = tmp_path / "c.sqlite"
    rows = [(1, 0, s, s + 15) for s in range(10, 210, 10)]
    with sqlite3.connect(file) as conn:
        for table, listed in (("k", rows[::-1]), ("s", rows)):
            conn.execute(f'CREATE TABLE {table}(g, d, start INTEGER, "end" INTEGER)')
            conn.executemany(f"INSERT INTO {table} VALUES (?,?,?,?)", listed)
    with sqlite3.connect(file) as conn:
        for table, restarted in (("k", True), ("s", False)):
            sqls = busy._cut_sqls([(table, "g", "d", "1")], EVERYTHING)
            assert native.busy_held(uri_of(file), sqls, 2) == (busy_part(conn, [(table, "g", "d", "1")], EVERYTHING),
                                                              restarted)
            assert busy_part(conn, [(table, "g", "d", "1")], EVERYTHING) == [(1, 0, (205, 10, 215, 10, 0, 215, 0))]
