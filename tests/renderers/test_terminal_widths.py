"""The terminal report at 80 and 120 columns on real captures (the samples and the H200 runs with step marks): no
line wider than the terminal; every kernel row keeps its verdict, its precision and the evidence that decided it
(the whole reason, or its deciding part: "'ffma' in the name", "counters: 8.4M MMA"); every --per-step row keeps its
step and whole numbers (a number is never cut to "67.6 …")."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.renderers import Options, render
from nvprof_wrap.renderers._sections_table import deciding
from nvprof_wrap.report import KernelRow, Report
from tests._paths import ROOT, RUNS

SAMPLES = ROOT / "nvprof_wrap" / "samples"
CAPTURES = [*sorted(p for p in SAMPLES.iterdir() if p.is_dir()), *sorted(RUNS.glob("*_steps_nsys"))]
MARK = {"yes": "✓", "no": "✗", "unknown": "?"}
NUMBER = re.compile(r"^(-|\d[\d,.]*( (ns|µs|ms|s|min|h))?|\d[\d.]*%|[\d.]+ (ns|µs|ms|s) \([\d.]+%\))$")


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    return {p.name: analyze(p) for p in CAPTURES}


def _table_rows(text: str, title: str) -> list[list[str]]:
    """The body rows of the table under the line starting with ``title``: cells split at the column rules."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 3:]:  # title, header, rule
        if "│" not in line:
            break
        rows.append([c.strip() for c in line.split("│")])
    return rows


def _why_shown(cell: str, k: KernelRow) -> bool:
    """The cell is the whole reason, or the deciding part of it — whole where it is a measurement's figure, else
    cut no shorter than 12 characters."""
    whole = k.reason if k.evidence == "name" else None
    part = deciding(k)
    if cell == whole or cell == part:
        return True
    if not cell.endswith("…"):
        return cell in (k.reason, k.counter_detail) or cell.endswith(k.counter_detail or "\0")
    kept = cell[:-1]
    return part.startswith(kept) and len(kept) >= min(12, len(part)) and k.evidence == "name"


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_kernel_rows_keep_verdict_precision_and_what_decided(reports, capture: Path, width: int) -> None:
    report = reports[capture.name]
    text = render("table", report, Options(width=width, limit=15))
    assert max(len(line) for line in text.splitlines()) <= width
    rows = _table_rows(text, "Top ")
    shown = report.kernels[:15]
    assert len(rows) == len(shown)
    for row, k in zip(rows, shown):
        assert MARK[k.tensor_core] in row, (row, k.name)
        assert (k.precision or "-") in row, (row, k.name)
        assert _why_shown(row[-1], k), (row[-1], k.reason, k.counter_detail)


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("capture", sorted(RUNS.glob("*_steps_nsys")), ids=lambda p: p.name)
def test_per_step_rows_keep_their_step_and_whole_numbers(reports, capture: Path, width: int) -> None:
    report = reports[capture.name]
    assert report.series is not None and len(report.series.rows) > 1
    text = render("table", report, Options(width=width, per_step=True))
    assert max(len(line) for line in text.splitlines()) <= width
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("step "))
    header = [c.strip() for c in lines[head].split("┃")]
    assert header[:5] == ["step", "time", "busy" if width < 120 else header[2], "kernels", header[4]]
    rows = [[c.strip() for c in line.split("│")] for line in lines[head + 2:head + 2 + len(report.series.rows)]]
    assert [r[0] for r in rows] == [str(s.step) for s in report.series.rows]
    for r in rows:
        assert len(r) == len(header)
        assert not [c for c in r[1:] if "…" in c or not NUMBER.match(c)], r
    if width == 120:  # every column at 120: short headers, nothing dropped
        assert len(header) == 12
