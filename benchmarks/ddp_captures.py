"""Generate the nsys SQLite exports of a data-parallel job's ranks, in the real schema, with NCCL on its own stream.

    python -m benchmarks.ddp_captures OUT_DIR [--ranks 2] [--steps 6] [--slow-rank 1] [--slow-ms 2] [--how compute]
                                           [--last-bucket-ms 1.5]

Each rank runs, per `step N` (NVTX): a forward pass, a backward pass, two gradient all-reduce buckets on a second
stream — the first launched halfway through the backward pass (hidden under it), the second when it ends (exposed)
— then the optimizer. The ranks are synchronous as NCCL makes them: a collective ends only once every rank has
started it (a rank that arrives early waits inside its kernel). One rank can be slowed from step 1 on: its forward
pass takes --slow-ms longer (--how compute), or its GPU waits that long for its host before the step's first
kernel (--how host). Each rank's session starts at a different time (its export's times are from its own start),
so only captures aligned by TARGET_INFO_SESSION_START_TIME agree on when the collectives ran.

The schema and GPU rows are copied from a real H200 export (benchmarks/generate.NSYS_SCHEMA_FROM); kernel names are
real: a GEMM and an elementwise kernel of that capture, the all-reduce as NCCL 2.19+ names it
(ncclDevKernel_AllReduce_Sum_bf16_RING_LL, fixtures wild3/nsys-stats-table-vllm-*).
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

from benchmarks.generate import NSYS_SCHEMA_FROM, NSYS_TABLES, _copy_rows, _schema

GEMM = "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)"
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, "
               "std::array<char *, (unsigned long)1>>(int, T2, T3)")
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
MS = 1_000_000
FWD, BWD, OPT = 3 * MS, 4 * MS, MS * 3 // 10  # per step, on the compute stream
BUCKET1, BUCKET2 = MS, 3 * MS // 2  # the two all-reduces' own time
FIRST_SESSION_NS = 1_795_965_174_607_871_654  # rank 0's session start (Unix ns); rank r's starts r × SKEW later
SKEW = 123_456_789
COMPUTE_STREAM, NCCL_STREAM = 7, 20


def job(ranks: int, steps: int, slow_rank: int | None, slow_ns: int, how: str,
        last_bucket_ns: int = BUCKET2) -> list[dict[str, list[tuple]]]:
    """Per rank: its kernels (start, end, stream, name) and steps (n, start, end) on the common (Unix) clock."""
    out: list[dict[str, list[tuple]]] = [{"kernels": [], "steps": []} for _ in range(ranks)]
    at = FIRST_SESSION_NS + ranks * SKEW + 10 * MS  # every session has started
    for n in range(steps):
        slow = [slow_ns if r == slow_rank and n >= 1 else 0 for r in range(ranks)]
        begin = [at + (slow[r] if how == "host" else 0) for r in range(ranks)]
        fwd = [FWD + (slow[r] if how == "compute" else 0) for r in range(ranks)]
        start1 = [begin[r] + fwd[r] + BWD // 2 for r in range(ranks)]
        end1 = max(start1) + BUCKET1  # the ring completes once the last rank has joined
        start2 = [max(begin[r] + fwd[r] + BWD, end1) for r in range(ranks)]
        end2 = max(start2) + last_bucket_ns
        for r in range(ranks):
            k = out[r]["kernels"]
            t = begin[r]
            for piece in range(6):  # the forward pass: GEMMs and elementwise kernels back to back
                d = fwd[r] // 6
                k.append((t, t + d, COMPUTE_STREAM, GEMM if piece % 2 == 0 else ELEMENTWISE))
                t += d
            for _ in range(8):
                k.append((t, t + BWD // 8, COMPUTE_STREAM, GEMM))
                t += BWD // 8
            k.append((start1[r], end1, NCCL_STREAM, ALL_REDUCE))
            k.append((start2[r], end2, NCCL_STREAM, ALL_REDUCE))
            k.append((end2 + 50_000, end2 + 50_000 + OPT, COMPUTE_STREAM, ELEMENTWISE))  # waits for the gradients
        nxt = end2 + 50_000 + OPT + 150_000
        for r in range(ranks):
            out[r]["steps"].append((n, at, nxt))
        at = nxt
    return out


def write(out_dir: Path, ranks: int = 2, steps: int = 6, slow_rank: int | None = 1, slow_ns: int = 2 * MS,
          how: str = "compute", last_bucket_ns: int = BUCKET2) -> list[Path]:
    """rank{r}-nsys.sqlite per rank in out_dir (the rank from the file name, as `nsys -o rank%q{RANK}` names them)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    names = [GEMM, ELEMENTWISE, ALL_REDUCE]
    paths = []
    for r, rank in enumerate(job(ranks, steps, slow_rank, slow_ns, how, last_bucket_ns)):
        path = out_dir / f"rank{r}-nsys.sqlite"
        path.unlink(missing_ok=True)
        session = FIRST_SESSION_NS + r * SKEW
        pid = 4000 + r
        gpid, tid = pid << 24, (pid << 24) | pid
        conn = sqlite3.connect(path)
        for sql in _schema(NSYS_SCHEMA_FROM, NSYS_TABLES):
            conn.execute(sql)
        _copy_rows(conn, NSYS_SCHEMA_FROM, ("TARGET_INFO_GPU", "ENUM_CUDA_MEMCPY_OPER"))
        conn.executemany("INSERT INTO StringIds (id, value) VALUES (?, ?)", enumerate(names, 1))  # id 0: a lost name
        conn.execute("INSERT INTO PROCESSES (globalPid, pid, name) VALUES (?, ?, 'python3')", (gpid, pid))
        conn.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs, utcTime, localTime) VALUES (?, ?, ?)",
                     (session, "2026-11-29T15:12:54", "2026-11-29T15:12:54"))
        conn.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, "
            "globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
            "staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(s - session, e - session, 0, 1, stream, i + 1, gpid, names.index(name) + 1, names.index(name) + 1, 128,
              1, 1, 1, 256, 1, 1, 0, 0, 0, 0, i + 1) for i, (s, e, stream, name) in enumerate(rank["kernels"])])
        conn.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)",
                         [(s - session, e - session, f"step {n}", tid) for n, s, e in rank["steps"]])
        conn.commit()
        conn.close()
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--slow-rank", type=int, default=1, help="-1: none")
    p.add_argument("--slow-ms", type=float, default=2.0)
    p.add_argument("--how", choices=("compute", "host"), default="compute")
    p.add_argument("--last-bucket-ms", type=float, default=BUCKET2 / MS, help="the exposed all-reduce's own time")
    a = p.parse_args(argv)
    write(a.out, a.ranks, a.steps, None if a.slow_rank < 0 else a.slow_rank, int(a.slow_ms * MS), a.how,
          int(a.last_bucket_ms * MS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
