"""What the CUPTI tracer costs per record on this CPU: the old path (cupti-python-like objects converted one by
one, SQLite inserts in the traced process) against the raw path (bulk parse of a buffer in CUPTI's real layout,
inserts in this process or in the writer process), side by side in one run. No GPU: buffers are written by the
test fake (tests/fakes/cupti) in the struct layouts of CUPTI 13.0 (Kernel10), as libcupti 13.0.85 writes them.

    python -m benchmarks tracer_record_cost [--quick]       # 5,000 launches; full: 30,000
    python -m benchmarks.tracer_record_cost [--launches 30000] [--rounds 3] [--json]     # printed, best of rounds

A launch is two records, as in a traced PyTorch job: the cudaLaunchKernel/cuLaunchKernelEx API record and the
kernel record. Per path, per launch:
  * wall µs to parse and write one buffer;
  * traced-process CPU µs: CPU time of the consuming thread (CUPTI's, in the tracer), an upper bound on the
    GIL time the job loses (SQLite's own step runs without the GIL). For the writer process this leaves out the
    inserts, which run in the other process, on another core.
Timings on a shared 2-core machine are noisy: compare the ratios of one run, not numbers across runs.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from benchmarks.suite.machine import ROOT
from benchmarks.suite.types import Case, Figure, Result, Role, RunArgs

NAME = "tracer_record_cost"
MEASURES = ("CPU time the traced process spends per kernel launch (its API and kernel records) on each path of the "
            "CUPTI tracer, on buffers in CUPTI 13.0's layout written by the test fake")
FLOOR = "the raw parse alone: a buffer parsed in bulk, nothing written (the traced process's least share)"
ANCHOR = "the old path: cupti-python-like record objects converted one by one, inserted in the traced process"
QUICK, FULL = 5_000, 30_000


def _fake() -> tuple[ModuleType, ModuleType]:
    """The test fake's records and raw layouts (tests/fakes/cupti), imported only where this benchmark runs: on
    sys.path it would shadow a real cupti package."""
    sys.path.insert(0, str(ROOT / "tests" / "fakes"))
    os.environ.setdefault("FAKE_CUPTI_VERSION", "13.0")
    from cupti import cupti as fake  # the test fake, found on the path above
    from cupti import rawlib

    return fake, rawlib


NAMES = [f"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_{i}_addIfEESt5arrayIPcLm3EEEEviT0_T1_"
         for i in range(40)]


def launch_records(n: int) -> list[object]:
    """n launches: API record + kernel record each, with cupti-python's attribute names."""
    fake, _ = _fake()
    out: list[object] = []
    for i in range(n):
        t = 1_000_000 + 10 * i
        out.append(fake.ActivityAPI(kind=5, cbid=211, correlation_id=i, start=t, end=t + 3, process_id=1,
                                    thread_id=77, return_value=0))
        out.append(fake.ActivityKernel11(
            kind=10, start=t + 5, end=t + 9, device_id=0, context_id=1, stream_id=7, correlation_id=i,
            name=NAMES[i % len(NAMES)], grid_x=64, grid_y=1, grid_z=1, block_x=128, block_y=1, block_z=1,
            registers_per_thread=32, static_shared_memory=0, dynamic_shared_memory=0, queued=0, submitted=0,
            completed=0, graph_id=0, graph_node_id=0, channel_id=1, channel_type=1))
    return out


def raw_buffer(records: list[object]) -> tuple[ctypes.Array[ctypes.c_uint64], int]:
    _, rawlib = _fake()
    buf = (ctypes.c_uint64 * (len(records) * 32 + 8))()
    used, strings = 0, rawlib.Strings()
    for r in records:
        used += rawlib.encode(r, ctypes.addressof(buf) + used, strings)
    return buf, used


Step = Callable[[], Any]


class Paths:
    """One consume(buffer) per path, each writing a fresh capture in a temporary folder."""

    def __init__(self, tmp: str, records: list[object], buf: ctypes.Array[ctypes.c_uint64], valid: int) -> None:
        self.tmp, self.records, self.buf, self.valid = tmp, records, buf, valid
        self.sizes = {10: 216, 5: 40}

    def writer(self, name: str) -> Any:
        from nvprof_wrap.tracer.capture_file import Writer

        w = Writer(os.path.join(self.tmp, name), {"format": "bench"})
        w.open()
        return w

    def old(self) -> tuple[Step, Step]:
        from nvprof_wrap.tracer.objects import ObjectConverter

        fake, _ = _fake()
        w, conv = self.writer("old"), ObjectConverter(fake.ActivityKind, print)
        return (lambda: w.write(conv.items(self.records))), (lambda: w.close({}))

    def raw_inline(self) -> tuple[Step, Step]:
        from nvprof_wrap.tracer import raw

        w, parser = self.writer("inline"), raw.Parser(None, self.sizes)
        return (lambda: w.write(parser.parse(ctypes.addressof(self.buf), self.valid)[0])), (lambda: w.close({}))

    def raw_process(self) -> tuple[Step, Step]:
        from nvprof_wrap.tracer import raw, sink

        here, parser = self.writer("process"), raw.Parser(None, self.sizes)
        here.release()
        out = sink.start(here.partial_path, here.final_path)
        return (lambda: out.write(parser.parse(ctypes.addressof(self.buf), self.valid)[0])), (lambda: out.close({}))


def alone(consume: Step, rounds: int) -> list[tuple[float, float]]:
    """(wall s, CPU s of this thread) of each round."""
    out = []
    for _ in range(rounds):
        t, c = time.perf_counter(), time.thread_time()
        consume()
        out.append((time.perf_counter() - t, time.thread_time() - c))
    return out


OLD = "objects + insert here (old)"


def measured(launches: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Each path's (wall µs, traced-process CPU µs) per launch, one pair per round; and the raw parse alone."""
    from nvprof_wrap.tracer import raw

    records = launch_records(launches)
    buf, valid = raw_buffer(records)
    got: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(tmp, records, buf, valid)
        for label, make in ((OLD, paths.old), ("raw + insert here", paths.raw_inline),
                            ("raw + writer process", paths.raw_process)):
            consume, close = make()
            got[label] = alone(consume, rounds)
            close()
        # The order of records in a buffer decides how much of the walk numpy does: API and kernel records
        # alternating (the worst case, above) or in runs of one kind (records of 1,000 launches at a time).
        runs = [r for lo in range(0, len(records), 2000) for k in (1, 0) for r in records[lo + k:lo + 2000:2]]
        run_buf, run_valid = raw_buffer(runs)
        for order, (b, v) in (("alternating", (buf, valid)), ("in runs of 1,000", (run_buf, run_valid))):
            parser = raw.Parser(None, paths.sizes)
            got[f"raw parse alone, records {order}"] = alone(
                lambda b=b, v=v, p=parser: p.parse(ctypes.addressof(b), v), rounds)  # type: ignore[misc]  # defaults bind the loop's values
    return {k: [(1e6 * w / launches, 1e6 * c / launches) for w, c in v] for k, v in got.items()}


def run(args: RunArgs) -> Result:
    """In a child process: the test fake goes on that process's path, not the suite's."""
    n = QUICK if args.quick else FULL
    out = subprocess.run([sys.executable, "-m", "benchmarks.tracer_record_cost", "--launches", str(n), "--rounds",
                          str(args.rounds), "--json"], cwd=ROOT, check=True, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    got: dict[str, list[list[float]]] = json.loads(out.stdout)
    cases = []
    for label, pairs in got.items():
        role: Role = "anchor" if label == OLD else "floor" if label.startswith("raw parse alone") else "measured"
        cases.append(Case(label, (Figure("wall per launch", role, "µs", tuple(round(w, 3) for w, _ in pairs)),
                                  Figure("traced-process CPU per launch", role, "µs",
                                         tuple(round(c, 3) for _, c in pairs)))))
    return args.result(tuple(cases), case_header=f"path ({n:,} launches, two records each)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--launches", type=int, default=FULL)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print each path's per-round figures as one JSON object")
    args = ap.parse_args(argv)
    got = measured(args.launches, args.rounds)
    if args.json:
        print(json.dumps(got))
        return 0
    print(f"{args.launches} launches ({2 * args.launches} records, CUPTI 13.0 layouts), "
          f"python {sys.version.split()[0]}, {os.cpu_count()} cores; best of {args.rounds} rounds")
    best = {k: (min(w for w, _ in v), min(c for _, c in v)) for k, v in got.items()}
    old_wall, old_cpu = best[OLD]
    print(f"{'path':30} {'wall µs/launch':>15} {'traced-process CPU µs/launch':>29} {'old / this (wall, CPU)':>24}")
    for label, (wall, cpu) in best.items():
        if label.startswith("raw parse alone"):
            print(f"{label}: {cpu:.2f} CPU µs/launch (the traced process's share besides pickling and os.write)")
        else:
            print(f"{label:30} {wall:15.2f} {cpu:29.2f} {old_wall / wall:11.1f}x {old_cpu / cpu:10.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
