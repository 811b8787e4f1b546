"""Trim an nsys SQLite export to a window of consecutive steps, for a test fixture under 2 MB.

    python benchmarks/trim_steps.py SRC.sqlite DST.sqlite.gz A:B [--with-warmup] [--without TABLE]...

keeps steps A..B-1 as the project's own timeline finds them (nvprof_wrap.timeline.window.spans: the job's 'step N'
marks, else the 'optimizer step N' ranges `nvprof-wrap run` adds): every row of an activity table (kernels, copies,
sets, CUDA calls, synchronisations, NVTX ranges, profiler overhead: the tables with a `start` column) whose start lies
in [start of step A, end of step B-1), GPU_METRICS samples taken in it, and the CUDA events whose call was kept.
Nothing is added and no kept row is changed; every other table (StringIds, TARGET_INFO_*, PROCESSES, ThreadNames,
DIAGNOSTIC_EVENT …) is kept whole. Step A is there to be the warm-up a report leaves out (report/series.py
steady_rows): the CUDA calls that began before the window are gone from it, not from the steps after it. Then VACUUM
and gzip -9 (mtime 0, so the same capture gives the same bytes).

--with-warmup keeps everything before step A as well (a JAX job's compilation and autotuning: what the report leaves
out as warm-up); --without TABLE empties a table (GPU_METRICS: the hardware samples, where a fixture does not need
them).

tests/data/h200_runs/jax_mnist_nsys: jax's examples/mnist_classifier.py under `nvprof-wrap run --backend nsys`
(benchmarks/gpu/jax_captures.sh, nsys' default graph trace), steps 0..7 with the warm-up, without GPU_METRICS:

    python3 benchmarks/trim_steps.py runs/jax_mnist/nsys.sqlite $T/jax_mnist_nsys/nsys.sqlite.gz 0:8 \
        --with-warmup --without GPU_METRICS

tests/data/h200_runs/*_steps_nsys: the run folders of benchmarks/gpu/precision_public_scripts.sh on the H200 (issue 41;
its reports are benchmarks/results/precision_public_scripts), each folder's manifest.json, gpm.jsonl, stdout.log and
stderr.log copied as they are, its nsys.sqlite trimmed (run.sqlite and nsys.nsys-rep left out):

    export PYTHONPATH=.; T=tests/data/h200_runs
    python3 benchmarks/trim_steps.py runs/timm_fp32/nsys.sqlite $T/timm_fp32_steps_nsys/nsys.sqlite.gz 19:27
    python3 benchmarks/trim_steps.py runs/timm_amp/nsys.sqlite $T/timm_amp_steps_nsys/nsys.sqlite.gz 19:27
    python3 benchmarks/trim_steps.py runs/lightning_bf16/nsys.sqlite \\
        $T/lightning_bf16_steps_nsys/nsys.sqlite.gz 29:41
"""
from __future__ import annotations

import gzip
import os
import shutil
import sqlite3
import sys
import tempfile

from nvprof_wrap.timeline import window

TIMESTAMPED = ("GPU_METRICS",)  # sampled, not ranges: a `timestamp` column instead of `start`


def step_span(conn: sqlite3.Connection, first: int, end: int) -> tuple[int, int]:
    """[start of step ``first``, end of step ``end``-1) in the capture's clock, as the timeline counts steps."""
    ranges = conn.execute("SELECT COALESCE(n.text, s.value), n.globalTid, n.start, n.end FROM NVTX_EVENTS n "
                          "LEFT JOIN StringIds s ON s.id = n.textId").fetchall()
    source, spans = window.spans(ranges)
    found = {n: (s, e) for n, s, e in spans}
    missing = [n for n in range(first, end) if n not in found]
    if source is None or missing:
        sys.exit(f"steps {first}..{end - 1}: not all marked in this capture (found {source}: {sorted(found)})")
    print(f"steps {first}..{end - 1} marked by {source}")
    return found[first][0], found[end - 1][1]


def trim(conn: sqlite3.Connection, lo: int, hi: int) -> None:
    tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for t in tables:
        cols = {r[1] for r in conn.execute(f"PRAGMA table_info([{t}])")}
        col = "start" if "start" in cols else "timestamp" if t in TIMESTAMPED else None
        if col is not None:
            gone = conn.execute(f"DELETE FROM [{t}] WHERE NOT ({col} >= ? AND {col} < ?)", (lo, hi)).rowcount
            print(f"{t}: {gone} rows outside the steps deleted")
    if "CUPTI_ACTIVITY_KIND_CUDA_EVENT" in tables:  # no time of its own: it goes with its call
        conn.execute("DELETE FROM CUPTI_ACTIVITY_KIND_CUDA_EVENT WHERE correlationId IS NULL OR correlationId NOT IN "
                     "(SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IS NOT NULL)")


def main(src: str, dst: str, steps: str, *options: str) -> None:
    first, end = window.parse(steps, "steps", integer=True)
    warmup = "--with-warmup" in options
    empty = [options[i + 1] for i, o in enumerate(options[:-1]) if o == "--without"]
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "trimmed.sqlite")
        shutil.copy(src, work)
        conn = sqlite3.connect(work)
        lo, hi = step_span(conn, first, end)
        trim(conn, -(1 << 62) if warmup else lo, hi)
        for t in empty:
            conn.execute(f"DELETE FROM [{t}]")
        conn.commit()
        conn.execute("VACUUM")
        conn.close()
        with open(work, "rb") as f, open(dst, "wb") as out:
            out.write(gzip.compress(f.read(), compresslevel=9, mtime=0))
    print(dst, os.path.getsize(dst))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
