"""A real Nsight Systems export with its kernels replicated to N: the scale of a long run with the names, durations,
gaps, GPU metrics and NVTX ranges of a real one.

    python3 -m benchmarks.replicate SRC.sqlite[.gz] OUT.sqlite N

Every table is copied as it is; the kernel rows are then copied again and again, each copy shifted in time by the
kernels' whole span (so copies follow each other, as steps of a training loop do) and in correlation id past every
id of the capture — so only the original kernels have a launch call in CUPTI_ACTIVITY_KIND_RUNTIME, as in a capture
whose API trace was cut short or whose launches went through an untraced path. The last copy is cut to make N
kernels in all. Used on tests/data/h200_runs/hw_phases_nsys (8,683 kernels, 54,000 GPU-metrics samples, 6 NVTX
phases): docs/performance.md, "Attribution floor".
"""
from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
from pathlib import Path

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"


def replicate(src: Path, out: Path, n: int) -> int:
    """Writes OUT; returns its number of kernels."""
    out.unlink(missing_ok=True)
    if src.suffix == ".gz":
        import gzip

        with gzip.open(src, "rb") as f, open(out, "wb") as g:
            shutil.copyfileobj(f, g, 1 << 20)
    else:
        shutil.copyfile(src, out)
    conn = sqlite3.connect(out)
    try:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({KERNEL})")]
        have, lo, hi, corr = conn.execute(f'SELECT COUNT(*), MIN(start), MAX("end"), MAX(correlationId) '
                                          f"FROM {KERNEL}").fetchone()
        span, step = hi - lo + 1, corr + 1
        shifted = ", ".join({"start": "start + :dt", "end": '"end" + :dt', "correlationId": "correlationId + :dc"}
                            .get(c, f'"{c}"') for c in cols)
        names = ", ".join(f'"{c}"' for c in cols)
        base = have
        for copy in range(1, -(-n // base) if base else 1):
            take = min(base, n - have)  # the original rows come first in rowid order: copies of them only
            conn.execute(f"INSERT INTO {KERNEL} ({names}) SELECT {shifted} FROM {KERNEL} ORDER BY rowid LIMIT :take",
                         {"dt": span * copy, "dc": step * copy, "take": take})
            have += take
        conn.commit()
        return have
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("src", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("n", type=int)
    a = p.parse_args(argv)
    print(replicate(a.src, a.out, a.n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
