"""Generate big captures in the real schemas, for the scale benchmark.

    python -m benchmarks.generate nsys   N OUT.sqlite   [--processes P] [--devices D]
    python -m benchmarks.generate nvprof N OUT.nvvp
    python -m benchmarks.generate kineto N OUT.json
    python -m benchmarks.generate torch  N OUT.json   [--ops-per-kernel 1.5]

The schema is copied from real captures (the CREATE TABLE statements of the H200 Nsight Systems export and of
the TITAN V nvprof file in ../shared/fixtures), never written by hand. Kernel names are the distinct names of
the real fixtures (a few hundred, C++ names of realistic length, ~100-4900 characters), drawn with a skewed
(Zipf-like) frequency as in training loops; every launch also gets its CUDA runtime API record, 1 in 20 a memcpy,
and NVTX ranges cover the launches as `emit_nvtx` would.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sqlite3
import sys
from pathlib import Path

# The shared fixtures; NVPROF_WRAP_FIXTURES points elsewhere (e.g. a copy on a machine without ../shared). Without
# them (the GPU machine), the repository's own real captures give the names, and its sample the Nsight schema.
ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("NVPROF_WRAP_FIXTURES") or ROOT.parent / "shared" / "fixtures")
OWN_CAPTURES = (ROOT / "nvprof_wrap" / "samples", ROOT / "tests" / "data" / "h200_runs")
NSYS_SCHEMA_FROM = FIXTURES / "h200" / "nsys_torch_ops.sqlite" if FIXTURES.is_dir() else \
    ROOT / "nvprof_wrap" / "samples" / "torch_ops" / "nsys_torch_ops.sqlite"
NVPROF_SCHEMA_FROM = FIXTURES / "public" / "m-goldstein__GPU_ML__timeline.nvvp"
NSYS_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
               "CUPTI_ACTIVITY_KIND_MEMSET", "StringIds", "TARGET_INFO_GPU", "PROCESSES", "NVTX_EVENTS",
               "TARGET_INFO_SESSION_START_TIME", "ENUM_CUDA_MEMCPY_OPER")
NVPROF_TABLES = ("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
                 "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_DEVICE",
                 "StringTable", "Version")
BATCH = 50_000


def real_names() -> list[str]:
    """Distinct kernel names of the real captures in the fixtures (demangled; 546 of them), else of the
    repository's own captures."""
    sys.path.insert(0, str(ROOT))
    from nvprof_wrap import readers

    names: set[str] = set()
    for path, _ in readers.expand([FIXTURES] if FIXTURES.is_dir() else list(OWN_CAPTURES)):
        try:
            names |= {k.name for k in readers.read(path).kernels}
        except Exception:  # noqa: BLE001, S112 - non-captures in the fixture folder
            continue
    return sorted(names)


def _schema(src: Path, tables: tuple[str, ...]) -> list[str]:
    conn = sqlite3.connect(f"file:{src}?mode=ro&immutable=1", uri=True)
    try:
        return [sql for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type='table'")
                if name in tables]
    finally:
        conn.close()


def _zipf_picker(n: int, rng: random.Random):
    weights = [1.0 / (i + 1) ** 1.1 for i in range(n)]
    return lambda k: rng.choices(range(n), weights=weights, k=k)


def _copy_rows(dst: sqlite3.Connection, src: Path, tables: tuple[str, ...]) -> None:
    """Rows copied verbatim from the real capture the schema came from (GPU facts, enums, version)."""
    dst.execute("ATTACH ? AS src", (f"file:{src}?mode=ro&immutable=1",))
    for table in tables:
        dst.execute(f"INSERT INTO {table} SELECT * FROM src.{table}")
    dst.commit()
    dst.execute("DETACH src")


def nsys(n: int, out: Path, processes: int = 1, devices: int = 1, seed: int = 0) -> None:
    rng = random.Random(seed)
    names = real_names()
    out.unlink(missing_ok=True)
    conn = sqlite3.connect(out)
    for sql in _schema(NSYS_SCHEMA_FROM, NSYS_TABLES):
        conn.execute(sql)
    conn.executemany("INSERT INTO StringIds (id, value) VALUES (?, ?)", enumerate(names))
    range_ids = {t: len(names) + i for i, t in enumerate(("aten::mm", "aten::add", "aten::copy_", "optimizer"))}
    conn.executemany("INSERT INTO StringIds (id, value) VALUES (?, ?)", [(i, t) for t, i in range_ids.items()])
    _copy_rows(conn, NSYS_SCHEMA_FROM, ("TARGET_INFO_GPU", "ENUM_CUDA_MEMCPY_OPER"))
    pick = _zipf_picker(len(names), rng)
    pids = [1000 + p for p in range(processes)]
    conn.executemany("INSERT INTO PROCESSES (globalPid, pid, name) VALUES (?, ?, 'python3')",
                     [(p << 24, p) for p in pids])
    t, done, corr = 1_000_000_000, 0, 0
    while done < n:
        k = min(BATCH, n - done)
        idx = pick(k)
        kern, rt, mem, nvtx = [], [], [], []
        for j in range(k):
            corr += 1
            pid = pids[corr % processes]
            gpid, tid = pid << 24, (pid << 24) | 1
            dur = rng.randint(2_000, 400_000)
            name = idx[j]
            kern.append((t + 5_000, t + 5_000 + dur, corr % devices, 1, 7, corr, gpid, name, name, 128, 1, 1, 1,
                         256, 1, 1, 0, 0, 0, 0, corr))
            rt.append((t, t + 3_000, 1, tid, corr, 0, 0))
            if corr % 20 == 0:
                mem.append((t + 1_000, t + 4_000, corr % devices, 1, 7, corr, gpid, 1 << 20, 1, 0, 0))
            if corr % 8 == 0:  # push/pop ranges on one thread nest: each ends before the next begins
                nvtx.append((t - 100, t + 8 * 9_000 - 200, 59, range_ids[("aten::mm", "aten::add", "aten::copy_",
                                                                    "optimizer")[corr % 4]], tid))
            t += 9_000
        conn.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, "
            "globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
            "staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", kern)
        conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, "
                         "nameId, returnValue) VALUES (?,?,?,?,?,?,?)", rt)
        conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
                         "correlationId, globalPid, bytes, copyKind, srcKind, dstKind) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                         mem)
        conn.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid) VALUES (?,?,?,?,?)", nvtx)
        conn.commit()
        done += k
    conn.close()


def nvprof(n: int, out: Path, seed: int = 0) -> None:
    rng = random.Random(seed)
    names = real_names()
    out.unlink(missing_ok=True)
    conn = sqlite3.connect(out)
    for sql in _schema(NVPROF_SCHEMA_FROM, NVPROF_TABLES):
        conn.execute(sql)
    _copy_rows(conn, NVPROF_SCHEMA_FROM, ("CUPTI_ACTIVITY_KIND_DEVICE", "Version"))
    base = 100  # StringTable ids of the names; 2 is the device name in the copied DEVICE row
    conn.execute("INSERT INTO StringTable (_id_, value) VALUES (2, 'TITAN V')")
    conn.executemany("INSERT INTO StringTable (_id_, value) VALUES (?, ?)",
                     [(base + i, s) for i, s in enumerate(names)])
    pick = _zipf_picker(len(names), rng)
    t, done, corr = 1_000_000_000, 0, 0
    conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (cbid, start, end, processId, threadId, correlationId, "
                 "returnValue) VALUES (211, 0, 1, 4242, 1, 0, 0)")
    # Every other column as in a real launch of the template capture.
    src = sqlite3.connect(f"file:{NVPROF_SCHEMA_FROM}?mode=ro&immutable=1", uri=True)
    cur = src.execute("SELECT * FROM CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL LIMIT 1")
    cols = [d[0] for d in cur.description]
    template = dict(zip(cols, cur.fetchone()))
    src.close()
    cols = [c for c in cols if c != "_id_"]
    sql = (f"INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ({', '.join(cols)}) "
           f"VALUES ({', '.join('?' * len(cols))})")
    while done < n:
        k = min(BATCH, n - done)
        rows = []
        for i in pick(k):
            corr += 1
            dur = rng.randint(2_000, 400_000)
            row = dict(template, start=t, end=t + dur, completed=t + dur, correlationId=corr, gridId=corr,
                       name=base + i)
            rows.append(tuple(row[c] for c in cols))
            t += dur + 500
        conn.executemany(sql, rows)
        conn.commit()
        done += k
    conn.close()


def kineto(n: int, out: Path, seed: int = 0) -> None:
    """A lean PyTorch-profiler-style trace: N kernel events plus their runtime calls, one line each (the shape
    of the earliest scale benchmark; `torch` below is the realistic one)."""
    rng = random.Random(seed)
    names = real_names()
    pick = _zipf_picker(len(names), rng)
    opener = gzip.open if out.suffix == ".gz" else open
    with opener(out, "wt") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9, '
                '"computeMinor": 0, "numSms": 132}], "traceEvents": [\n')
        ts, first = 1_000_000.0, True
        for done in range(0, n, BATCH):
            parts = []
            for corr, i in enumerate(pick(min(BATCH, n - done)), start=done):
                dur = rng.randint(2, 400)
                parts.append(json.dumps({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242,
                                         "tid": 4242, "ts": ts, "dur": 3, "args": {"correlation": corr}}))
                parts.append(json.dumps({"ph": "X", "cat": "kernel", "name": names[i], "pid": 0, "tid": 7,
                                         "ts": ts + 5, "dur": dur, "args": {"device": 0, "stream": 7,
                                                                             "correlation": corr}}))
                ts += dur + 1
            f.write(("" if first else ",\n") + ",\n".join(parts))
            first = False
        f.write("\n]}\n")


# torch.profiler's own layout (Kineto's ChromeTraceLogger), copied from a real trace of a GPT training step on an
# H200 (tests/data/h200_runs/kineto_gpt_bf16): one event per block, fields in its order, numbers as it prints them.
_HEADER = """
  {
    "schemaVersion": 1,
    "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    , "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472
    }
    ],
      "cuda_driver_version": 13000,
      "cuda_runtime_version": 13000,
      "cupti_version": 130001,
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1790857026000000000,
  "traceEvents": ["""
_CPU_OP = """
  {{
    "ph": "X", "cat": "{cat}", "name": "{name}", "pid": 11372, "tid": {tid},
    "ts": {ts:.3f}, "dur": {dur:.3f},
    "args": {{
      "External id": {ext},"Record function id": 0, "Sequence number": {seq}, "Fwd thread id": 0, "Ev Idx": {idx}
    }}
  }},"""
_LAUNCH = """
  {{
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 11372, "tid": {tid},
    "ts": {ts:.3f}, "dur": 4.112,
    "args": {{
      "External id": {ext},      "cbid": 211, "correlation": {corr}
    }}
  }},
  {{
    "ph": "s", "id": {corr}, "pid": 11372, "tid": {tid}, "ts": {ts:.3f},
    "cat": "ac2g", "name": "ac2g"
  }},"""
_KERNEL = """
  {{
    "ph": "X", "cat": "kernel", "name": {name}, "pid": 0, "tid": 7,
    "ts": {ts:.3f}, "dur": {dur:.3f},
    "args": {{
      "External id": {ext},      "queued": 0, "device": 0, "context": 1,      \
"stream": 7, "correlation": {corr},      \
"registers per thread": 32,      "shared memory": 0,      \
"blocks per SM": 31.030304,      "warps per SM": 124.121216,      \
"grid": [4096, 1, 1],      "block": [128, 1, 1],      "est. achieved occupancy %": 100
    }}
  }},
  {{
    "ph": "f", "id": {corr}, "pid": 0, "tid": 7, "ts": {ts:.3f},
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  }},"""
_OPS = ("aten::linear", "aten::addmm", "aten::mm", "aten::add", "aten::mul", "aten::copy_", "aten::native_layer_norm",
        "aten::_scaled_dot_product_flash_attention", "aten::gelu", "aten::view", "aten::t", "aten::empty")
STEP_KERNELS = 1000  # a ProfilerStep#N range around each this many kernels
BACKWARD = 0.55  # the share of a step's kernels that the autograd thread launches (the real trace: 57%)


def _step(start: float | None, end: float, step: int) -> list[str]:
    """torch.profiler's range around one step (written when the step ends, as Kineto does)."""
    if start is None:
        return []
    return [_CPU_OP.format(cat="user_annotation", name=f"ProfilerStep#{step}", tid=11372, ts=start,
                           dur=end - start - 1, ext=0, seq=0, idx=0)]


def torch_trace(n: int, out: Path, ops_per_kernel: float = 1.5, seed: int = 0) -> None:
    """A trace as torch.profiler writes it (Kineto's layout, see _HEADER): N kernels, each launched by a
    cudaLaunchKernel inside a stack of CPU ops (ops_per_kernel on average: 1.5 gives the ~1.6 KB per kernel of
    the issue-17 measurement, 8 the real GPT trace's 3.6 KB), with its ac2g flow events, and a ProfilerStep#N
    range around every 1,000 kernels, of which the last 55% are launched from the autograd thread as in the real
    trace. Kernel names are the fixtures' real names (Zipf-distributed)."""
    rng = random.Random(seed)
    names = [json.dumps(x) for x in real_names()]
    pick = _zipf_picker(len(names), rng)
    opener = gzip.open if out.suffix == ".gz" else open
    with opener(out, "wt") as f:
        f.write(_HEADER)
        ts, ext, owed, step_at = 5_201_672_287_889.719, 0, 0.0, None
        for done in range(0, n, BATCH):
            parts: list[str] = []
            for corr, i in enumerate(pick(min(BATCH, n - done)), start=done):
                if corr % STEP_KERNELS == 0:
                    parts += _step(step_at, ts, corr // STEP_KERNELS - 1)
                    step_at = ts
                owed += ops_per_kernel
                depth = max(1, int(owed))
                owed -= depth
                dur = rng.randint(2_000, 400_000) / 1000
                tid = 11397 if corr % STEP_KERNELS >= STEP_KERNELS * (1 - BACKWARD) else 11372  # backward: autograd
                for level in range(depth):  # nested: each encloses the launch
                    ext += 1
                    parts.append(_CPU_OP.format(cat="cpu_op", name=_OPS[(corr + level) % len(_OPS)], tid=tid,
                                                ts=ts + level / 2, dur=10.0 - level, ext=ext, seq=corr, idx=ext))
                parts.append(_LAUNCH.format(ts=ts + depth / 2, ext=ext, corr=corr, tid=tid))
                parts.append(_KERNEL.format(name=names[i], ts=ts + 8, dur=dur, ext=ext, corr=corr))
                ts += max(12.0, dur + 9)  # the GPU keeps up: one kernel at a time, as on one stream
            f.write("".join(parts))
        f.write("".join(_step(step_at, ts, (n - 1) // STEP_KERNELS)))
        f.write(f"""
  {{
    "name": "Record Window End", "ph": "i", "s": "g",
    "pid": "", "tid": "", "ts": {ts:.3f}
  }}
  ],
  "traceName": "generated.pt.trace.json"
}}
""")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("format", choices=("nsys", "nvprof", "kineto", "torch"))
    p.add_argument("n", type=int)
    p.add_argument("out", type=Path)
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--ops-per-kernel", type=float, default=1.5, help="torch: CPU ops per kernel on average")
    p.add_argument("--seed", type=int, default=0, help="different seeds give different captures (e.g. one per rank)")
    a = p.parse_args(argv)
    if a.format == "nsys":
        nsys(a.n, a.out, a.processes, a.devices, a.seed)
    elif a.format == "nvprof":
        nvprof(a.n, a.out, seed=a.seed)
    elif a.format == "torch":
        torch_trace(a.n, a.out, a.ops_per_kernel, a.seed)
    else:
        kineto(a.n, a.out, seed=a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
