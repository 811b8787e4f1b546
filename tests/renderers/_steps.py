"""A Series measured from a real capture, for the chart tests until the readers' series (readers/_series.py) lands:
the 'step N' NVTX ranges of the H200 nanoGPT runs (tests/data/h200_runs/gpt_*_nsys), with each step's kernels
(verdicts from the name rules), copies, busy union and CUDA runtime calls, from the capture's own tables."""
from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

from nvprof_wrap.classify.engine import classify
from nvprof_wrap.report.series import Series, StepRow
from tests._paths import RUNS

API_KIND = (("cudaLaunch", "launch"), ("cuLaunch", "launch"), ("cudaStreamSynchronize", "sync"),
            ("cudaDeviceSynchronize", "sync"), ("cudaEventSynchronize", "sync"), ("cudaMemcpy", "sync"),
            ("cudaMalloc", "alloc"), ("cudaFree", "alloc"), ("cuda", "other"))


def unpacked(run: str, folder: Path) -> Path:
    out = folder / f"{run}.sqlite"
    if not out.exists():
        with gzip.open(RUNS / run / "nsys.sqlite.gz") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return out


def _busy(intervals: list[tuple[int, int]], lo: int, hi: int) -> int:
    total, end = 0, lo
    for a, b in sorted((max(a, lo), min(b, hi)) for a, b in intervals if b > lo and a < hi):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def _api_kind(name: str) -> str | None:
    return next((kind for prefix, kind in API_KIND if name.startswith(prefix)), None)


def _query(conn: sqlite3.Connection) -> tuple[list, list, list, list]:
    steps = conn.execute("SELECT CAST(substr(text, 6) AS INTEGER), start, end FROM NVTX_EVENTS "
                         "WHERE text GLOB 'step [0-9]*' ORDER BY start").fetchall()
    kernels = conn.execute("SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                           "JOIN StringIds s ON s.id = k.demangledName").fetchall()
    copies = conn.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL "
                          "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET").fetchall()
    api = conn.execute("SELECT r.start, r.end, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                       "JOIN StringIds s ON s.id = r.nameId").fetchall()
    return steps, kernels, copies, api


def real_series(run: str, folder: Path) -> Series:
    """One StepRow per 'step N' range of the run's capture: from its start to the next one's (the last: its end)."""
    conn = sqlite3.connect(unpacked(run, folder))
    steps, kernels, copies, api = _query(conn)
    conn.close()
    verdicts = {name: classify(name).tensor_core for name in {k[2] for k in kernels}}
    rows = []
    for i, (step, start, end) in enumerate(steps):
        hi = steps[i + 1][1] if i + 1 < len(steps) else end
        ks = [(a, b, name) for a, b, name in kernels if start <= a < hi]
        time = lambda want, ks=ks: sum(b - a for a, b, name in ks if verdicts[name] == want)
        calls = {"launch": 0, "sync": 0, "alloc": 0, "other": 0}
        for a, b, name in api:
            kind = _api_kind(name)
            if kind and start <= a < hi:
                calls[kind] += min(b, hi) - a
        rows.append(StepRow(step, (start - steps[0][1]) / 1e9, hi - start, 1, len(ks),
                            sum(b - a for a, b, _ in ks), time("yes"), time("unknown"),
                            sum(b - a for a, b in copies if start <= a < hi),
                            sum(b - a for a, b, name in ks if "nccl" in name.lower()),
                            _busy([(a, b) for a, b, _ in ks] + copies, start, hi),
                            calls, max(hi - start - sum(calls.values()), 0)))
    return Series("steps", "step marks", None, tuple(rows), "runtime API records")
