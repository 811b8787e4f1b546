"""The scale benchmark: nvprof-wrap against the floor (a raw sqlite3 GROUP BY of kernel time by name) and
against Holistic Trace Analysis' kernel breakdown on the equal Kineto JSON, side by side in one run.

    python -m benchmarks.scale [--sizes 100000,1000000,5000000] [--hta-max 1000000] [--dir /tmp/nvw-scale]
    python -m benchmarks.scale --torch 100000,300000 [--sizes ''] [--rounds 2] [--hta-python VENV/bin/python]

--sizes: Nsight Systems captures with NVTX ranges (floor: the GROUP BY) and lean Kineto traces (the earliest benchmark's
shape). --torch: traces as torch.profiler writes them (benchmarks.generate torch: CPU ops, runtime calls and flow
events, ~1.6 KB per kernel; floor: an ijson stream summing kernel time by name), with HTA beside them. Each
measurement is a fresh process (wall time, and peak memory (PSS) of its process tree by psutil polling), rounds
interleaved. Captures are generated once per size by benchmarks.generate and reused. Prints one line per
measurement round: times, ratios and peak memory.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLOOR_NSYS = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
              "rows = c.execute('SELECT s.value, g.n, g.t FROM (SELECT demangledName AS nid, COUNT(*) AS n, "
              "SUM(\"end\" - start) AS t FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY demangledName) g "
              "JOIN StringIds s ON s.id = g.nid').fetchall(); print(len(rows))")
# The floor any per-op attribution must pay (docs/performance.md, "Attribution floor"): FLOOR_NSYS's GROUP BY over
# the kernels, each joined to its launch call by correlation id — one scan of the launch-call table (SQLite indexes
# it once, automatically) and one seek per kernel. benchmarks/native/corr_join.c is the same work compiled.
FLOOR_ATTRIBUTION = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                     "rows = c.execute('SELECT s.value, g.n, g.t, g.calls FROM (SELECT k.demangledName AS nid, "
                     "COUNT(*) AS n, SUM(k.\"end\" - k.start) AS t, COUNT(r.start) AS calls "
                     "FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                     "ON r.correlationId = k.correlationId GROUP BY k.demangledName) g "
                     "JOIN StringIds s ON s.id = g.nid').fetchall(); print(len(rows))")
STREAM_JSON = ("import gzip, ijson, sys, collections; agg = collections.Counter(); "
               "[agg.update({e['name']: e.get('dur', 0)}) for e in "
               "ijson.items((gzip.open if sys.argv[1].endswith('.gz') else open)(sys.argv[1], 'rb'), "
               "'traceEvents.item', use_float=True) if e.get('cat') == 'kernel']; print(len(agg))")
HTA = ("import sys, os; from hta.trace_analysis import TraceAnalysis; d = sys.argv[1]; "
       "a = TraceAnalysis(trace_dir=d); k = a.get_gpu_kernel_breakdown(visualize=False); print(len(k[1]))")


SAMPLE_S = 0.25


def measure(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak memory in MB) of one fresh process and its children: `report` forks workers for big
    captures (system/fork.py), so the memory of the whole process tree is summed, sampled with
    psutil — as PSS (each shared page split between the processes sharing it; RSS would count the pages a forked
    child shares with its parent once per process), or RSS where the system has no PSS. Every SAMPLE_S: reading
    PSS (/proc/PID/smaps) is not free — sampled every 20 ms on 2 cores it slowed a 6 s report to 11 s."""
    import psutil

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               NO_COLOR="1")
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        p = psutil.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        peak = 0
        while p.poll() is None:
            try:
                peak = max(peak, sum(_memory(q) for q in (p, *p.children(recursive=True))))
            except psutil.Error:
                pass
            time.sleep(SAMPLE_S)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{cmd[:4]} failed: {err.read().decode(errors='replace')[-500:]}")
    return wall, peak / 2**20


def _memory(proc) -> int:
    try:
        return proc.memory_full_info().pss
    except (AttributeError, OSError):
        return proc.memory_info().rss


def ensure(kind: str, n: int, path: Path) -> Path:
    if not path.exists():
        subprocess.run([sys.executable, "-m", "benchmarks.generate", kind, str(n), str(path)], cwd=ROOT, check=True)
    return path


def run_torch(sizes: list[int], hta_max: int, folder: Path, rounds: int, hta_python: str) -> list[dict]:
    """Realistic torch.profiler traces: the ijson floor, report, and HTA, interleaved."""
    folder.mkdir(parents=True, exist_ok=True)
    report = [sys.executable, "-m", "nvprof_wrap", "report", "--format", "json"]
    rows = []
    for n in sizes:
        js_dir = folder / f"torch_{n}"
        js_dir.mkdir(exist_ok=True)
        js = ensure("torch", n, js_dir / "rank0.pt.trace.json")
        for r in range(rounds):
            stream = measure([sys.executable, "-c", STREAM_JSON, str(js)])
            ours = measure([*report, str(js)])
            hta = measure([hta_python, "-c", HTA, str(js_dir)]) if n <= hta_max else None
            rows.append({"n": n, "round": r, "mb": js.stat().st_size / 2**20, "json_stream": stream, "report": ours,
                         "hta": hta})
            print(_torch_line(rows[-1]), flush=True)
    return rows


def _torch_line(r: dict) -> str:
    s, o, h = r["json_stream"], r["report"], r["hta"]
    hta = f"HTA {h[0]:6.1f} s {h[1]:6.0f} MB = {h[0] / o[0]:4.1f}x report" if h else "(HTA not run)"
    return (f"torch {r['n']:>9,} ({r['mb']:.0f} MB) round {r['round']} | ijson floor {s[0]:6.2f} s {s[1]:4.0f} MB | "
            f"report {o[0]:6.2f} s {o[1]:4.0f} MB = {o[0] / s[0]:4.2f}x floor | {hta}")


def run(sizes: list[int], hta_max: int, folder: Path) -> list[dict]:
    folder.mkdir(parents=True, exist_ok=True)
    report = [sys.executable, "-m", "nvprof_wrap", "report", "--format", "json"]
    rows = []
    for n in sizes:
        db = ensure("nsys", n, folder / f"nsys_{n}.sqlite")
        js_dir = folder / f"kineto_{n}"
        js_dir.mkdir(exist_ok=True)
        js = ensure("kineto", n, js_dir / "rank0.trace.json")
        floor = measure([sys.executable, "-c", FLOOR_NSYS, str(db)])
        ours = measure([*report, str(db)])
        stream = measure([sys.executable, "-c", STREAM_JSON, str(js)])
        ours_js = measure([*report, str(js)])
        hta = measure([sys.executable, "-c", HTA, str(js_dir)]) if n <= hta_max else None
        rows.append({"n": n, "floor": floor, "report": ours, "json_stream": stream, "report_json": ours_js,
                     "hta": hta})
        print(_line(rows[-1]), flush=True)
    return rows


def _line(r: dict) -> str:
    f, o, s, j, h = r["floor"], r["report"], r["json_stream"], r["report_json"], r["hta"]
    hta = f"{h[0]:7.1f} s {h[1]:6.0f} MB  HTA/report {h[0] / j[0]:5.1f}x" if h else "(HTA not run)"
    return (f"{r['n']:>9,} | sqlite floor {f[0]:6.2f} s {f[1]:5.0f} MB | report {o[0]:6.2f} s {o[1]:5.0f} MB "
            f"= {o[0] / f[0]:4.2f}x floor | JSON: ijson floor {s[0]:6.2f} s, report {j[0]:6.2f} s "
            f"{j[1]:5.0f} MB | {hta}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="100000,1000000,5000000")
    p.add_argument("--hta-max", type=int, default=1_000_000, help="largest N to give HTA (it needs ~6 GB at 1M)")
    p.add_argument("--dir", type=Path, default=Path("/tmp/nvw-scale"))
    p.add_argument("--torch", default="", help="sizes (kernels) of realistic torch.profiler traces (default: none)")
    p.add_argument("--rounds", type=int, default=1, help="rounds of the torch.profiler measurements (default 1)")
    p.add_argument("--hta-python", default=sys.executable,
                   help="a Python with HolisticTraceAnalysis installed (default: this one)")
    a = p.parse_args(argv)
    if a.sizes:
        run([int(x) for x in a.sizes.split(",")], a.hta_max, a.dir)
    if a.torch:
        run_torch([int(x) for x in a.torch.split(",")], a.hta_max, a.dir, a.rounds, a.hta_python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
