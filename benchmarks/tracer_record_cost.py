"""What the CUPTI tracer costs per record on this CPU: the old path (cupti-python-like objects converted one by
one, SQLite inserts in the traced process) against the raw path (bulk parse of a buffer in CUPTI's real layout,
inserts in this process or in the writer process), side by side in one run. No GPU: buffers are written by the
test fake (tests/fakes/cupti) in the struct layouts of CUPTI 13.0 (Kernel10), as libcupti 13.0.85 writes them.

    PYTHONPATH=. python3 benchmarks/tracer_records.py [--launches 30000] [--rounds 3]

A launch is two records, as in a traced PyTorch job: the cudaLaunchKernel/cuLaunchKernelEx API record and the
kernel record. Per path, best of --rounds, per launch:
  * wall µs to parse and write one buffer;
  * traced-process CPU µs: CPU time of the consuming thread (CUPTI's, in the tracer), an upper bound on the
    GIL time the job loses (SQLite's own step runs without the GIL). For the writer process this leaves out the
    inserts, which run in the other process, on another core.
Timings on a shared 2-core machine are noisy: compare the ratios of one run, not numbers across runs.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fakes"))
os.environ.setdefault("FAKE_CUPTI_VERSION", "13.0")

from cupti import cupti as fake  # the test fake: records and raw layouts
from cupti import rawlib

from nvprof_wrap.tracer import raw, sink
from nvprof_wrap.tracer.capture_file import Writer
from nvprof_wrap.tracer.objects import ObjectConverter

NAMES = [f"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_{i}_addIfEESt5arrayIPcLm3EEEEviT0_T1_"
         for i in range(40)]


def launch_records(n: int) -> list[object]:
    """n launches: API record + kernel record each, with cupti-python's attribute names."""
    out = []
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


def raw_buffer(records: list[object]) -> tuple[ctypes.Array, int]:
    buf = (ctypes.c_uint64 * (len(records) * 32 + 8))()
    used, strings = 0, rawlib.Strings()
    for r in records:
        used += rawlib.encode(r, ctypes.addressof(buf) + used, strings)
    return buf, used


class Paths:
    """One consume(buffer) per path, each writing a fresh capture in a temporary folder."""

    def __init__(self, tmp: str, records: list[object], buf: ctypes.Array, valid: int) -> None:
        self.tmp, self.records, self.buf, self.valid = tmp, records, buf, valid
        self.sizes = {10: 216, 5: 40}

    def writer(self, name: str) -> Writer:
        w = Writer(os.path.join(self.tmp, name), {"format": "bench"})
        w.open()
        return w

    def old(self) -> tuple[callable, callable]:
        w, conv = self.writer("old"), ObjectConverter(fake.ActivityKind, print)
        return (lambda: w.write(conv.items(self.records))), (lambda: w.close({}))

    def raw_inline(self) -> tuple[callable, callable]:
        w, parser = self.writer("inline"), raw.Parser(None, self.sizes)
        return (lambda: w.write(parser.parse(ctypes.addressof(self.buf), self.valid)[0])), (lambda: w.close({}))

    def raw_process(self) -> tuple[callable, callable]:
        here, parser = self.writer("process"), raw.Parser(None, self.sizes)
        here.release()
        out = sink.start(here.partial_path, here.final_path)
        return (lambda: out.write(parser.parse(ctypes.addressof(self.buf), self.valid)[0])), (lambda: out.close({}))


def alone(consume: callable, rounds: int) -> tuple[float, float]:
    """(wall s, CPU s of this thread), best of rounds."""
    best_wall = best_cpu = float("inf")
    for _ in range(rounds):
        t, c = time.perf_counter(), time.thread_time()
        consume()
        best_cpu = min(best_cpu, time.thread_time() - c)
        best_wall = min(best_wall, time.perf_counter() - t)
    return best_wall, best_cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=30000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    records = launch_records(args.launches)
    buf, valid = raw_buffer(records)
    print(f"{args.launches} launches ({len(records)} records, {valid / 2**20:.1f} MiB raw, CUPTI 13.0 layouts), "
          f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(tmp, records, buf, valid)
        rows = []
        for label, make in (("objects + insert here (old)", paths.old), ("raw + insert here", paths.raw_inline),
                            ("raw + writer process", paths.raw_process)):
            consume, close = make()
            wall, cpu = alone(consume, args.rounds)
            close()
            rows.append((label, 1e6 * wall / args.launches, 1e6 * cpu / args.launches))
        old_wall, old_cpu = rows[0][1], rows[0][2]
        print(f"{'path':30} {'wall µs/launch':>15} {'traced-process CPU µs/launch':>29} {'old / this (wall, CPU)':>24}")
        for label, wall, cpu in rows:
            print(f"{label:30} {wall:15.2f} {cpu:29.2f} {old_wall / wall:11.1f}x {old_cpu / cpu:10.1f}x")
        # The order of records in a buffer decides how much of the walk numpy does: API and kernel records
        # alternating (the worst case, above) or in runs of one kind (records of 1,000 launches at a time).
        runs = [r for lo in range(0, len(records), 2000) for k in (1, 0) for r in records[lo + k:lo + 2000:2]]
        run_buf, run_valid = raw_buffer(runs)
        for order, (b, v) in (("alternating", (buf, valid)), ("in runs of 1,000", (run_buf, run_valid))):
            parser = raw.Parser(None, paths.sizes)
            _, parse_cpu = alone(lambda b=b, v=v, p=parser: p.parse(ctypes.addressof(b), v), args.rounds)
            print(f"raw parse alone, records {order}: {1e6 * parse_cpu / args.launches:.2f} CPU µs/launch "
                  "(the traced process's share besides pickling and os.write)")


if __name__ == "__main__":
    main()
