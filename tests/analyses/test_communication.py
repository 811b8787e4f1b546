"""analyses/communication.py on two generated ranks of a data-parallel job (benchmarks/ddp_captures.py: the real
Nsight Systems schema, NCCL all-reduces on a second stream, each rank's session started at another time), and on
its pure functions. The expected numbers follow from the generator's timeline: per step a 3 ms forward pass, a 4 ms
backward pass, a 1 ms all-reduce launched halfway through it and a 1.5 ms one when it ends, a 0.3 ms optimizer."""
from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import ddp_captures as ddp
from nvprof_wrap.analyses import communication as comm
from nvprof_wrap.pipeline import analyze
from nvprof_wrap.report import Report, serialise

MS = 1_000_000


def _report(tmp_path: Path, **kw: object) -> Report:
    ddp.write(tmp_path, **kw)  # type: ignore[arg-type]  # the generator's keyword arguments, as the tests vary them
    return analyze(str(tmp_path))


def test_no_straggler_overlap_and_collectives(tmp_path: Path) -> None:
    r = _report(tmp_path, slow_rank=None)
    c = r.communication
    assert c is not None
    (row,) = c.collectives
    assert (row.collective, row.dtype, row.algorithm, row.protocol) == ("AllReduce", "bf16", "ring", "LL")
    assert row.launches == 2 * 2 * 6 and row.share == 1.0
    assert c.kernel_ns == 2 * 6 * (MS + 3 * MS // 2)
    # all kernels: 7.3 ms of compute and 2.5 ms of all-reduce a step on each rank
    assert c.share == pytest.approx(2.5 / 9.8, abs=1e-6)
    o = c.overlap
    assert o is not None and o.steps == 5
    # the first bucket (1 ms) hidden under the backward pass, the second (1.5 ms) exposed
    assert (o.comm_ns, o.exposed_ns, o.step_ns) == (int(2.5 * MS), int(1.5 * MS), 9 * MS)
    assert o.hidden_share == pytest.approx(0.4) and o.exposed_step_share == pytest.approx(1.5 / 9, abs=1e-6)
    assert c.stragglers == () and c.straggler_ranks == ()
    # exposed communication 17% of the step: the line, but no bucket or precision advice
    (line,) = [h for h in r.hints if "communication (NCCL" in h]
    assert "no bucket or precision change advised" in line and "bucket_cap_mb" not in line


def test_exposed_communication_dominating_gets_the_advice(tmp_path: Path) -> None:
    r = _report(tmp_path, slow_rank=None, last_bucket_ns=4 * MS)
    o = r.communication.overlap if r.communication else None
    assert o is not None and o.exposed_ns == 4 * MS and o.exposed_step_share >= comm.EXPOSED_DOMINATES
    (line,) = [h for h in r.hints if "communication (NCCL" in h]
    assert "bucket_cap_mb" in line


@pytest.mark.parametrize(("how", "cause"), [("compute", "its compute"), ("host", "its GPU idle")])
def test_slowed_rank_named_with_its_cause(tmp_path: Path, how: str, cause: str) -> None:
    r = _report(tmp_path, slow_rank=1, slow_ns=2 * MS, how=how)
    c = r.communication
    assert c is not None
    # steps 1-5 (rank 1 is slowed from step 1 on), both all-reduces of each; the sessions started 123 ms apart,
    # so only clocks aligned by each export's session start give 2 ms (first bucket) and 1 ms (second)
    assert [(s.step, s.nth, s.rank, s.late_ns) for s in c.stragglers] == \
        [(n, k, 1, (2 - k) * MS) for n in range(1, 6) for k in (0, 1)]
    assert all(s.collective == "AllReduce" and s.cause.startswith(cause) for s in c.stragglers)
    assert c.straggler_ranks == (comm.StragglerRank(1, 10, 15 * MS, 5),)
    # the fast rank waits inside its collectives: more communication time on rank 0 than on the straggler
    assert r.ranks is not None
    shares = {row.rank: row.comm_share for row in r.ranks.rows}
    assert shares[0] > shares[1]
    lines = [h for h in r.hints if h.startswith("rank 1 started 10 collective(s) last, in 5 steady step(s)")]
    assert len(lines) == 1 and cause in lines[0]
    # the exposed time is the wait for rank 1: the advice is about that rank, not buckets
    (line,) = [h for h in r.hints if "communication (NCCL" in h]
    assert "waiting for rank 1" in line and "bucket_cap_mb" not in line
    data = serialise.to_dict(r)
    assert data["communication"]["straggler_ranks"] == [{"rank": 1, "collectives": 10, "late_ns": 15 * MS,
                                                          "steps": 5}]


def test_stragglers_pure() -> None:
    a = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    starts = {0: {1: [(100, a), (5 * MS, a)], 2: [(0, a)]},
              1: {1: [(3 * MS, a), (5 * MS + 10_000, a)]},  # step 2 missing on rank 1: not matched
              2: {1: [(200, a)], 2: [(0, a)]}}  # one collective in step 1: only the first is matched
    own = {(1, 1): (9 * MS, 0), (0, 1): (6 * MS, 0), (2, 1): (6 * MS, 0)}
    (s,) = comm.stragglers(starts, own)
    assert (s.step, s.nth, s.rank, s.late_ns) == (1, 0, 1, 3 * MS - 100)
    assert s.cause.startswith("its compute") and "9.00 ms vs 6.00 ms" in s.cause
    assert comm.stragglers({0: starts[0]}) == ()


def test_no_communication_no_section(tmp_path: Path) -> None:
    r = analyze(str(Path(__file__).parents[2] / "nvprof_wrap" / "samples" / "torch_ops" / "nsys_torch_ops.sqlite"))
    assert r.communication is None and "communication" not in serialise.to_dict(r)


def test_real_ddp_capture_of_two_h200_ranks(tmp_path: Path) -> None:
    """tests/data/h200_runs/ddp_nsys: torchrun of workloads/ddp_reuters.py on 2 H200s under nsys (one export,
    both ranks). It marks no steps: time buckets, whose nth collective is no rank's same one — no stragglers."""
    import shutil

    src = Path(__file__).parents[1] / "data" / "h200_runs" / "ddp_nsys"
    shutil.copytree(src, tmp_path / "ddp_nsys")  # the run folder's store is rewritten when read
    r = analyze(str(tmp_path / "ddp_nsys"))
    c = r.communication
    assert c is not None and c.share == pytest.approx(0.899, abs=0.001)
    got = {(x.collective, x.dtype, x.algorithm, x.protocol): x.launches for x in c.collectives}
    assert got == {("AllReduce", "fp32", "ring", "LL"): 94, ("Broadcast", "", "ring", "LL"): 8,
                   ("AllGather", "", "ring", "LL"): 2}
    assert c.overlap is not None and c.overlap.kind == "buckets"
    assert c.stragglers == () and c.straggler_ranks == ()


def test_summaries_give_the_same_communication(tmp_path: Path) -> None:
    """A Slurm array's per-rank summaries (readers/summary.py) keep each step's collective starts: the stragglers
    read from them equal those read from the captures."""
    from nvprof_wrap.cli import main

    paths = ddp.write(tmp_path / "caps", slow_rank=1)
    assert main(["summarize", *map(str, paths), "-o", str(tmp_path / "sums")]) == 0
    direct, merged = analyze(str(tmp_path / "caps")), analyze(str(tmp_path / "sums"))
    assert merged.communication == direct.communication and direct.communication is not None
    assert direct.communication.straggler_ranks[0].rank == 1


def test_expert_parallel_exchange_hidden_under_compute_gets_no_gradient_advice() -> None:
    """A DeepSeek training step on an H800 (a public Kineto trace of one ProfilerStep): 46% of its kernel time is
    DeepEP's dispatch and combine, on a stream of its own under the GEMMs. The line said "NCCL kernels" and gave
    DDP's bucket advice, having no steady steps to measure the overlap with; it now names DeepEP, measures the one
    step (2.19 ms of 104 ms exposed), and advises nothing. The collectives are DeepEP's, not "communication
    kernels"."""
    from tests._paths import fixture_file

    r = analyze(str(fixture_file("wild/kineto-deepseek-train-h800.json")))
    (line,) = [h for h in r.hints if "of GPU time is communication" in h]
    assert "(DeepEP kernels)" in line and "NCCL" not in line and "bucket_cap_mb" not in line
    assert "2.19 ms exposed" in line and "no change advised" in line
    c = r.communication
    assert c is not None
    assert [(x.collective, x.dtype, x.launches) for x in c.collectives] == [
        ("EP combine", "bf16", 8), ("EP notify", "", 16), ("EP dispatch", "", 8), ("EP layout", "", 4)]
