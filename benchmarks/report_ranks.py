"""`report` on a folder of rank captures of one data-parallel job (generated in torch.profiler's layout, outliers
planted): one capture at a time, on a local process pool and on a Dask LocalCluster, interleaved in each round; the
reports must be equal and name the planted ranks, and only them.

    python -m benchmarks report_ranks [--quick]      # 16 ranks of 1,000 kernels; full: 256 ranks of 2,000 (43 MB)
    python -m benchmarks.report_ranks generate OUT_DIR [--ranks 256] [--kernels 2000]
    python -m benchmarks.report_ranks bench OUT_DIR [--workers N] [--rounds 1] [--modes serial,pool,dask]

Every rank runs the same step program (the same kernels in the same order, as data-parallel ranks do; names are
real ones from the fixtures: bf16 tensor-core GEMMs, CUDA-core elementwise kernels, an NCCL all-reduce every
ALLREDUCE_EVERY kernels) with its own timing jitter; each trace carries torch.profiler's `distributedInfo`
({"backend": "nccl", "rank": r, "world_size": n}) and a ProfilerStep#N range every STEP_KERNELS kernels. Planted
(PLANTS): a rank whose GEMMs fell back to fp32 SIMT kernels, a straggler whose GPU waits on its host, a rank with
slow collectives, a rank that ran fp16 where the others ran bf16. Sizes are real traces' scaled down (a real
rank's trace is 100s of MB; --kernels sets the size: 2,000 kernels ~ 0.3 MB gzipped). `bench` prints each mode's
time and the merging process's own peak RSS beside its workers' (benchmarks/gpu/ranks_reading.sh runs it).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.generate import _CPU_OP, _HEADER, _KERNEL, _LAUNCH, _OPS, _step, real_names
from benchmarks.suite.measure import Measured, measure, python, values
from benchmarks.suite.types import Case, Figure, Result, RunArgs

NAME = "report_ranks"
MEASURES = ("report time and peak memory on a folder of generated rank captures (torch.profiler traces, outliers "
            "planted), on a local process pool and on a Dask LocalCluster")
FLOOR = "the same report reading one capture at a time (--jobs 1 --dask none)"
ANCHOR = "none: no other tool names the outlying ranks of these traces"
QUICK = (16, 1000)  # ranks, kernels per rank
FULL = (256, 2000)

STEP_KERNELS = 500
ALLREDUCE_EVERY = 100
# rank → what is planted in it (ranks past the job's size are not planted); the quick size plants within its ranks
PLANTS = {37: "fp32 gemms", 101: "straggler", 150: "fp16", 200: "slow collectives"}
QUICK_PLANTS = {3: "fp32 gemms", 7: "straggler", 11: "slow collectives", 13: "fp16"}


def _program(seed: int = 0) -> tuple[list[tuple[str, str, float]], dict[str, str], dict[str, str]]:
    """The step program: (name, kind, mean µs) per kernel; and the fp32 / fp16 stand-ins of each bf16 GEMM."""
    from nvprof_wrap.classify import classify

    rng = random.Random(seed)
    names = real_names()
    verdicts = {n: classify(n) for n in names}
    bf16 = sorted(n for n, v in verdicts.items() if v.tensor_core == "yes" and v.precision == "bf16")[:8]
    fp16 = sorted(n for n, v in verdicts.items() if v.tensor_core == "yes" and v.precision == "fp16")[:8]
    sgemm = sorted(n for n, v in verdicts.items() if v.tensor_core == "no" and "sgemm" in n.lower()
                   and "fp16" not in n.lower())[:4]
    plain = sorted(n for n, v in verdicts.items() if v.tensor_core == "no" and v.family == "aten")[:30]
    nccl = next(n for n in sorted(names) if verdicts[n].family == "nccl" and "AllReduce" in n)
    if not (bf16 and fp16 and sgemm and plain):
        raise SystemExit("the fixtures' names lack bf16/fp16 GEMMs, SIMT sgemms or aten kernels")
    prog: list[tuple[str, str, float]] = []
    for i in range(STEP_KERNELS):
        if i % ALLREDUCE_EVERY == ALLREDUCE_EVERY - 1:
            prog.append((nccl, "nccl", 600.0))
        elif i % 3 == 0:
            prog.append((bf16[rng.randrange(len(bf16))], "gemm", rng.uniform(80, 240)))
        else:
            prog.append((plain[rng.randrange(len(plain))], "plain", rng.uniform(4, 40)))
    return prog, {b: sgemm[i % len(sgemm)] for i, b in enumerate(bf16)}, {b: fp16[i] for i, b in enumerate(bf16)}


def write_rank(out: Path, rank: int, world: int, kernels: int, program: list[tuple[str, str, float]],
               to_fp32: dict[str, str], to_fp16: dict[str, str],
               plant: str | None = None) -> None:
    rng = random.Random(1000 + rank)
    head = _HEADER.replace('  "traceEvents": [',
                           f'  "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {world}}},\n'
                           '  "traceEvents": [')
    names = {n: json.dumps(n) for n in {p[0] for p in program} | set(to_fp32.values()) | set(to_fp16.values())}
    with gzip.open(out, "wt", compresslevel=6) as f:
        f.write(head)
        ts, step_at = 5_201_672_287_889.719, None
        parts: list[str] = []
        for corr in range(kernels):
            if corr % STEP_KERNELS == 0:
                parts += _step(step_at, ts, corr // STEP_KERNELS - 1)
                step_at = ts
            name, kind, mean = program[corr % STEP_KERNELS]
            dur = mean * rng.uniform(0.95, 1.05)
            if kind == "gemm" and plant == "fp32 gemms":
                name, dur = to_fp32[name], dur * 3
            elif kind == "gemm" and plant == "fp16":
                name = to_fp16[name]
            elif kind == "nccl" and plant == "slow collectives":
                dur *= 6
            tid, ext = 11372, corr + 1
            parts.append(_CPU_OP.format(cat="cpu_op", name=_OPS[corr % len(_OPS)], tid=tid, ts=ts, dur=10.0,
                                        ext=ext, seq=corr, idx=ext))
            parts.append(_LAUNCH.format(ts=ts + 0.5, ext=ext, corr=corr, tid=tid))
            parts.append(_KERNEL.format(name=names[name], ts=ts + 8, dur=dur, ext=ext, corr=corr))
            ts += max(12.0, dur + 9) + (rng.uniform(100, 160) if plant == "straggler" else 0.0)
            if len(parts) > 3000:
                f.write("".join(parts))
                parts = []
        f.write("".join(parts) + "".join(_step(step_at, ts, (kernels - 1) // STEP_KERNELS)))
        f.write(f"""
  {{
    "name": "Record Window End", "ph": "i", "s": "g",
    "pid": "", "tid": "", "ts": {ts:.3f}
  }}
  ],
  "traceName": "rank{rank}.pt.trace.json"
}}
""")


def generate(folder: Path, ranks: int = 256, kernels: int = 2000, plants: dict[int, str] | None = None) -> list[Path]:
    """ranks traces in folder, named as torch.profiler's tensorboard_trace_handler names them (host_pid.ts):
    the rank is in the trace (distributedInfo), not in the name. plants: rank → what is planted (PLANTS)."""
    plants = PLANTS if plants is None else plants
    folder.mkdir(parents=True, exist_ok=True)
    program, to_fp32, to_fp16 = _program()
    out = []
    for r in range(ranks):
        p = folder / f"node{r // 8:03d}_{40000 + r}.1790857026000.pt.trace.json.gz"
        write_rank(p, r, ranks, kernels, program, to_fp32, to_fp16, plants.get(r))
        out.append(p)
    return out


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    """(wall s, peak RSS of the reading process MB, peak RSS of it and its children together MB, stdout)."""
    import tempfile

    import psutil

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:  # a pipe would fill and block it
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, text=True)
        ps, main_peak, tree_peak = psutil.Process(proc.pid), 0, 0
        while proc.poll() is None:
            try:
                own = ps.memory_info().rss
                kids = sum(c.memory_info().rss for c in ps.children(recursive=True))
                main_peak, tree_peak = max(main_peak, own), max(tree_peak, own + kids)
            except psutil.Error:
                pass
            time.sleep(0.05)
        wall = time.perf_counter() - t
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {err.read()[-2000:]}")
        return wall, main_peak / 2**20, tree_peak / 2**20, out.read()


def bench(folder: Path, workers: int, rounds: int, modes: list[str], save: Path | None = None,
          expect: Path | None = None) -> int:
    """Each mode once per round, interleaved; the JSON reports must be equal (to each other, and to the report in
    ``expect``, saved by an earlier run with ``save``)."""
    env = dict(os.environ, NO_COLOR="1")
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    report = [sys.executable, "-m", "nvprof_wrap", "report", str(folder), "--format", "json"]
    cluster = None
    if "dask" in modes:
        from distributed import LocalCluster

        t = time.perf_counter()
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        print(f"LocalCluster: {workers} workers started in {time.perf_counter() - t:.1f} s (not counted below)")
    cmds = {"serial": [*report, "--jobs", "1", "--dask", "none"],
            "pool": [*report, "--jobs", str(workers), "--dask", "none"],
            "dask": [*report, "--dask", cluster.scheduler_address] if cluster else []}
    times: dict[str, list[tuple[float, float, float]]] = {m: [] for m in modes}
    outputs: dict[str, str] = {}
    try:
        for _ in range(rounds):
            for m in modes:
                wall, main_mb, tree_mb, out = _timed(cmds[m], env)
                times[m].append((wall, main_mb, tree_mb))
                outputs.setdefault(m, out)
                print(f"  {m:6s} {wall:7.1f} s   merge process peak RSS {main_mb:6.0f} MB   "
                      f"with its local workers {tree_mb:6.0f} MB", flush=True)
    finally:
        if cluster is not None:
            cluster.close()
    files = len(list(folder.glob("*.json.gz")))
    print(f"{files} rank captures, {workers} workers, {rounds} round(s); medians:")
    for m in modes:
        print(f"  {m:6s} {statistics.median(t[0] for t in times[m]):7.1f} s   "
              f"merge peak {statistics.median(t[1] for t in times[m]):6.0f} MB")
    first = json.loads(outputs[modes[0]])
    same = all(json.loads(o) == first for o in outputs.values())
    if save:
        save.write_text(outputs[modes[0]])
    if expect:
        same = same and json.loads(expect.read_text()) == first
        print("equal to the saved report:", json.loads(expect.read_text()) == first)
    print("reports identical across modes:", same)
    outl = first.get("rank_outliers", [])
    print(f"outliers named ({len(outl)}):")
    for o in outl:
        print("  ", o["message"][:160])
    planted = {r for r in PLANTS if r < files}
    found = {o["rank"] for o in outl}
    print(f"planted {sorted(planted)}; found {sorted(found)}; missed {sorted(planted - found)}; "
          f"unplanted named {sorted(found - planted)}")
    return 0 if same and planted <= found and not (found - planted) else 1


def run(args: RunArgs) -> Result:
    ranks, kernels = QUICK if args.quick else FULL
    plants = QUICK_PLANTS if args.quick else PLANTS
    folder = args.work_dir / f"ranks_{ranks}x{kernels}"
    if len(list(folder.glob("*.json.gz"))) != ranks:
        generate(folder, ranks, kernels, plants)
    workers = len(os.sched_getaffinity(0))
    report = python("-m", "nvprof_wrap", "report", str(folder), "--format", "json")
    cmds = {"one at a time": [*report, "--jobs", "1", "--dask", "none"],
            f"local pool, {workers} processes": [*report, "--jobs", str(workers), "--dask", "none"]}
    cluster, why = _cluster(workers)
    if cluster is not None:
        cmds[f"Dask LocalCluster, {workers} workers"] = [*report, "--dask", cluster.scheduler_address]
    got: dict[str, list[Measured]] = {m: [] for m in cmds}
    try:
        for _ in range(args.rounds):
            for m, cmd in cmds.items():
                got[m].append(measure(cmd, env={"DASK_SCHEDULER_ADDRESS": ""}, keep_stdout=True))
    finally:
        if cluster is not None:
            cluster.close()
    reports = [json.loads(ms[0].stdout) for ms in got.values()]
    if any(r != reports[0] for r in reports):
        raise RuntimeError("the modes' reports differ")
    found = {o["rank"] for o in reports[0].get("rank_outliers", [])}
    if found != set(plants):
        raise RuntimeError(f"planted ranks {sorted(plants)}, named {sorted(found)}")
    size = sum(p.stat().st_size for p in folder.glob("*.json.gz")) / 1e6
    figures: list[Figure] = []
    for m, ms in got.items():
        secs, mbs = values(ms)
        floor = m == "one at a time"
        figures.append(Figure(m, "floor" if floor else "measured", "s", secs, versus="" if floor else "one at a time"))
        dask = m.startswith("Dask")  # its workers are the cluster's processes, not the report's children
        figures.append(Figure(f"{m}, peak memory", "floor" if floor else "measured", "MB", mbs,
                              note="the report's process alone" if dask else ""))
    if cluster is None:
        figures.append(Figure("Dask LocalCluster", "measured", "s", (), note=why))
    label = f"{ranks} ranks of {kernels:,} kernels, {size:.0f} MB gzipped"
    note = f"reports equal; ranks {', '.join(map(str, sorted(plants)))} planted and named, no other"
    return args.result((Case(label, tuple(figures), note=note),))


def _cluster(workers: int) -> tuple[Any, str]:
    """A LocalCluster of one single-threaded worker process per core, started before the timings (not counted)."""
    try:
        from distributed import LocalCluster
    except ImportError:
        return None, "dask.distributed not installed"
    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None), ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    g = sub.add_parser("generate")
    g.add_argument("out", type=Path)
    g.add_argument("--ranks", type=int, default=256)
    g.add_argument("--kernels", type=int, default=2000)
    b = sub.add_parser("bench")
    b.add_argument("folder", type=Path)
    b.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    b.add_argument("--rounds", type=int, default=1)
    b.add_argument("--modes", default="serial,pool,dask")
    b.add_argument("--save", type=Path, help="write the first mode's JSON report here")
    b.add_argument("--expect", type=Path, help="a JSON report (--save) every mode's must equal")
    a = p.parse_args(argv)
    if a.what == "generate":
        t = time.perf_counter()
        paths = generate(a.out, a.ranks, a.kernels)
        size = sum(q.stat().st_size for q in paths)
        print(f"{len(paths)} rank captures, {size / 2**20:.1f} MB, in {time.perf_counter() - t:.1f} s")
        return 0
    return bench(a.folder, a.workers, a.rounds, a.modes.split(","), a.save, a.expect)


if __name__ == "__main__":
    sys.exit(main())
