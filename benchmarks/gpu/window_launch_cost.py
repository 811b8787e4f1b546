"""Issue 27: what the tracer costs per kernel launch inside a capture window, against CUPTI's own floor for the same
activity kinds, measured inside ONE process (the way benchmarks/gpu/cupti_kinds_cost.py measures the kinds).

    python3 benchmarks/gpu/window_launch_cost.py [--steps 800] [--rounds 7]      (GPU machine; prints a markdown table)

The process starts the tracer as a windowed job's process does (NVPROF_WRAP_CAPTURE set: subscribed, buffers
registered, every kind off), then times the launch-heavy training step of workloads/launch_rate.py (small-MLP steps,
every kernel tiny) in loops, rounds rotating the order:
  idle    — the tracer waiting for its window (CUPTI attached, no kind enabled): what a job pays outside the window;
  floor   — the window open (the tracer's kinds and launch-call records on) with every buffer handed back to CUPTI
            unread (cupti_trace._DISCARD): CUPTI's own cost for those kinds;
  tracer  — the window open, records parsed and written to the capture file: what `run --capture-steps` costs inside;
  stepwise — the tracer with its buffers walked record by record (raw.FAST_WALK off: the walk before issue 27's
            last change), to show what the candidate walk saves in the same process.
Prints the ratios per round too (the loops of a round ran side by side: the machine drifts between rounds).
Each loop opens the window (tracer.resume), runs, closes it (tracer.pause) and flushes, so the parsing and writing of
its records are inside its time. Kernel launches per loop: counted from the capture file afterwards (kernel rows of
one tracer loop). Prints per variant: median loop seconds, × idle, µs per launch over idle, the rounds; then tracer
over floor, the target being ≤ 1.3×.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=800)
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args(argv)
    out = tempfile.mkdtemp(prefix="window_ab-")
    # idle mode: subscribed from the start (attach mode, the default, would subscribe only when a window opens)
    os.environ.update(NVPROF_WRAP_CUPTI_DIR=out, NVPROF_WRAP_CAPTURE="steps:1000000:1000001",
                      NVPROF_WRAP_CAPTURE_BY="cupti", NVPROF_WRAP_CUPTI_WINDOW="idle")
    from nvprof_wrap.tracer import cupti_trace as ct
    from nvprof_wrap.tracer import raw

    ct.start()
    tracer = ct._STATE
    if tracer is None or tracer.window != "idle":
        print("the tracer did not start idle here")
        return 1
    import torch

    from workloads.launch_rate import launch_step

    step = launch_step()
    for _ in range(30):
        step()
    torch.cuda.synchronize()

    def loop(variant: str) -> float:
        if variant != "idle":
            ct._DISCARD = variant == "floor"
            raw.FAST_WALK = variant != "stepwise"
            assert tracer.resume() is None
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(a.steps):
            step()
        torch.cuda.synchronize()
        if variant != "idle":
            tracer.pause()
            tracer.cupti.activity_flush_all(1)
        took = time.perf_counter() - t
        ct._DISCARD = False
        return took

    names = ["idle", "floor", "tracer", "stepwise"]
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(a.rounds):
        for i in range(len(names)):
            name = names[(i + r) % len(names)]
            times[name].append(loop(name))
    tracer.finalize("window_ab")
    path = tracer.writer.final_path
    with sqlite3.connect(path) as conn:
        kernels = conn.execute("SELECT COUNT(*) FROM kernel").fetchone()[0]
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    launches = kernels // (2 * a.rounds)  # the tracer's loops (both walks) are the only ones whose records were written
    idle = statistics.median(times["idle"])
    print(f"{torch.cuda.get_device_name()}, {meta.get('binding', '?')}; {meta.get('records')}; api records: "
          f"{meta.get('api_records')}; {a.steps} steps per loop, {launches:,} kernel launches per loop, "
          f"{a.rounds} rounds\n")
    print("| variant | loop s, median | × idle | µs per launch over idle | rounds |")
    print("|---|---|---|---|---|")
    med = {}
    for name in names:
        m = med[name] = statistics.median(times[name])
        print(f"| {name} | {m:.3f} | {m / idle:.3f} | {(m - idle) / max(launches, 1) * 1e6:.2f} | "
              f"{', '.join(f'{x:.3f}' for x in times[name])} |")
    walked = tracer.parser.tables if tracer.parser is not None else None
    if walked is not None:
        print(f"\ncandidate walk: {walked.runs:,} runs taken whole, {walked.stepped:,} records stepped alone; "
              f"{tracer.parser.slow_walks} buffers walked by libcupti")
    floor, ours = med["floor"] - idle, med["tracer"] - idle
    print(f"\ntracer over idle / floor over idle: {ours / floor:.2f}x (per launch {ours / launches * 1e6:.2f} vs "
          f"{floor / launches * 1e6:.2f} µs); tracer / floor loop time {med['tracer'] / med['floor']:.3f}")
    step = med["stepwise"] - idle
    print(f"stepwise walk over idle / floor over idle: {step / floor:.2f}x (per launch {step / launches * 1e6:.2f} µs)")
    # The machine drifts by 10-30% between loops of one process: the loops of a round ran next to each other, so
    # ratios taken within a round, then their median, are what says more than the medians above.
    per_round = [((times["tracer"][r] - times["idle"][r]) / (times["floor"][r] - times["idle"][r]),
                  times["tracer"][r] / times["floor"][r], times["stepwise"][r] / times["tracer"][r])
                 for r in range(a.rounds) if times["floor"][r] > times["idle"][r]]
    if per_round:
        over, loops, walks = (statistics.median(x) for x in zip(*per_round))
        print(f"paired within rounds ({len(per_round)} of {a.rounds}: floor above idle), medians: tracer over idle / "
              f"floor over idle {over:.2f}x; tracer / floor loop time {loops:.3f}; stepwise / tracer loop time "
              f"{walks:.3f}")
    os.remove(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
