"""The per-step series of the H200 nanoGPT runs (tests/data/h200_runs/gpt_*_nsys, 'step N' NVTX ranges) as the
readers measure it (timeline/series.py): the chart tests draw what a user's report holds. The series itself is
checked against the captures' own rows in tests/timeline/test_series.py."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from nvprof_wrap import analyze
from nvprof_wrap.report.series import Series
from tests._paths import RUNS


def unpacked(run: str, folder: Path) -> Path:
    out = folder / f"{run}.sqlite"
    if not out.exists():
        with gzip.open(RUNS / run / "nsys.sqlite.gz") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return out


def real_series(run: str, folder: Path) -> Series:
    """The run's series, one row per 'step N' range (from its start to the next one's; the last: to its end)."""
    series = analyze(unpacked(run, folder)).series
    assert series is not None and series.kind == "steps", run
    return series
