"""Issue 17.1: what each CUPTI activity kind costs per kernel launch, measured inside ONE process.

    python3 benchmarks/gpu/cupti_kinds_cost.py [--steps 300] [--rounds 5]      (GPU machine; prints a markdown table)

Process-to-process noise on the shared GPU machine (rounds of one variant 1.6x apart) hid differences of a few µs
between CUPTI configurations (benchmarks/gpu/cupti_attributes_tune.sh). Here one process times the launch-heavy
training step of workloads/launch_rate.py (small-MLP steps, every kernel tiny) with CUPTI off and with each set of
kinds enabled in turn — enabled before its loop, disabled and flushed after it — rounds rotating the order. Every
buffer CUPTI fills goes back unread (as NVPROF_WRAP_CUPTI_DISCARD=1): the cost is CUPTI's own. Kernel launches per
loop: the kernel records CUPTI delivered in one counting loop before the rounds. Prints per variant: median loop
seconds, × off, µs per launch over off, the rounds.
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nvprof_wrap.tracer import ccupti, raw
from nvprof_wrap.tracer._util import _launch_cbids
from workloads.launch_rate import launch_step

K = ccupti.ActivityKind
VARIANTS: dict[str, tuple] = {
    "off": (),
    "kernel": (K.CONCURRENT_KERNEL,),
    "kernel+launch calls": (K.CONCURRENT_KERNEL, "api"),
    "kernel+memcpy+memset": (K.CONCURRENT_KERNEL, K.MEMCPY, K.MEMSET),
    "kernel+marker": (K.CONCURRENT_KERNEL, K.MARKER),
    "kernel+device": (K.CONCURRENT_KERNEL, K.DEVICE),
    "the tracer's (all)": (K.CONCURRENT_KERNEL, K.MEMCPY, K.MEMSET, K.DEVICE, K.MARKER, "api"),
}
KERNEL_RECORDS = [0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args(argv)
    import torch

    b = ccupti.load()
    b.subscribe(None, None)
    lib = getattr(b, ccupti.LIBRARY_ATTR)
    pool = raw.BufferPool()
    counting = [False]

    def requested(buffer, size, max_records):
        address = pool.take()
        buffer[0], size[0], max_records[0] = address or None, pool.size if address else 0, 0

    def completed(context, stream_id, address, size, valid):
        if address and counting[0]:
            rec = ctypes.c_void_p()
            while lib.cuptiActivityGetNextRecord(ctypes.c_void_p(address), valid, ctypes.byref(rec)) == 0:
                if ctypes.c_uint32.from_address(rec.value).value == int(K.CONCURRENT_KERNEL):
                    KERNEL_RECORDS[0] += 1
        if address:
            pool.give_back(address)

    callbacks = (raw.REQUESTED(requested), raw.COMPLETED(completed))
    lib.cuptiActivityGetNextRecord.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
    lib.cuptiActivityRegisterCallbacks.argtypes = [raw.REQUESTED, raw.COMPLETED]
    assert lib.cuptiActivityRegisterCallbacks(*callbacks) == 0
    cbids = ([(b.activity_enable_runtime_api, c) for c in _launch_cbids(b, "RuntimeApiTraceCbid", "cuda")]
             + [(b.activity_enable_driver_api, c) for c in _launch_cbids(b, "DriverApiTraceCbid", "cu")])
    step = launch_step()
    for _ in range(30):
        step()
    torch.cuda.synchronize()

    def switch(kinds: tuple, on: int) -> None:
        for k in kinds:
            if k == "api":
                for enable, c in cbids:
                    enable(c, on)
            else:
                (b.activity_enable if on else b.activity_disable)(k)

    def loop(kinds: tuple) -> float:
        switch(kinds, 1)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(a.steps):
            step()
        torch.cuda.synchronize()
        took = time.perf_counter() - t
        switch(kinds, 0)
        b.activity_flush_all(1)
        return took

    counting[0] = True
    loop((K.CONCURRENT_KERNEL,))
    b.activity_flush_all(1)
    counting[0] = False
    launches = KERNEL_RECORDS[0]
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for r in range(a.rounds):
        for i in range(len(names)):
            name = names[(i + r) % len(names)]
            times[name].append(loop(VARIANTS[name]))
    off = statistics.median(times["off"])
    print(f"{torch.cuda.get_device_name()}, CUPTI API {b.get_version()}, {a.steps} steps per loop, "
          f"{launches:,} kernel launches per loop ({launches / off:,.0f}/s with CUPTI off), {a.rounds} rounds\n")
    print("| CUPTI enabled (buffers discarded) | loop s, median | × off | µs per launch | rounds |")
    print("|---|---|---|---|---|")
    for name in names:
        m = statistics.median(times[name])
        print(f"| {name} | {m:.3f} | {m / off:.3f} | {(m - off) / launches * 1e6:.2f} | "
              f"{', '.join(f'{x:.3f}' for x in times[name])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
