"""Two results of one benchmark side by side: every figure's median in each, the ratio new / old, and a flag on any
measured time more than 5% slower — the bar "performance within 5%" of a change that should change nothing.

Where both results have a floor, each time is also shown over its floor (`/ floor`): on a loaded machine the floor
slows with the report, so that ratio moves less than the raw time; `--by-floor` flags on it instead.
"""
from __future__ import annotations

from dataclasses import dataclass

from benchmarks.suite.types import Case, Figure, Result

BAR = 1.05


@dataclass(frozen=True)
class Row:
    case: str
    figure: str
    unit: str
    old: float | None
    new: float | None
    ratio: float | None  # new / old
    by_floor: float | None  # (new / its floor) / (old / its floor)
    slower: bool


def _over_floor(case: Case, f: Figure) -> float | None:
    floor = case.figure(f.versus) if f.versus else None
    if floor is None or not floor.median or f.median is None:
        return None
    return f.median / floor.median


def rows(old: Result, new: Result, by_floor: bool = False) -> list[Row]:
    out: list[Row] = []
    olds = {c.label: c for c in old.cases}
    for case in new.cases:
        before = olds.get(case.label)
        for f in case.figures:
            was = before.figure(f.name) if before else None
            a, b = (was.median if was else None), f.median
            ratio = b / a if a and b is not None else None
            rel = None
            if was is not None and before is not None:
                x, y = _over_floor(before, was), _over_floor(case, f)
                rel = y / x if x and y is not None else None
            judged = rel if by_floor else ratio
            slower = f.role == "measured" and f.unit == "s" and judged is not None and judged > BAR
            out.append(Row(case.label, f.name, f.unit, a, b, ratio, rel, slower))
    return out


def render(old: Result, new: Result, by_floor: bool = False) -> tuple[str, int]:
    """The table, and how many figures are slower than the bar."""
    found = rows(old, new, by_floor)
    lines = [(f"{old.benchmark}: old {old.machine.commit} ({old.machine.cores} cores{', quick' if old.quick else ''})"
             f" -> new {new.machine.commit} ({new.machine.cores} cores{', quick' if new.quick else ''})")]
    if old.benchmark != new.benchmark:
        lines.append(f"warning: different benchmarks ({old.benchmark} vs {new.benchmark})")
    width = max((len(f"{r.case} | {r.figure}") for r in found), default=10)
    lines.append(f"{'case | figure':<{width}}  {'old':>10}  {'new':>10}  {'new/old':>8}  {'/ floor':>8}")
    for r in found:
        flag = f"  SLOWER than {BAR:.2f}x" if r.slower else ""
        lines.append(f"{r.case + ' | ' + r.figure:<{width}}  {_num(r.old, r.unit):>10}  {_num(r.new, r.unit):>10}  "
                     f"{_ratio(r.ratio):>8}  {_ratio(r.by_floor):>8}{flag}")
    slower = sum(r.slower for r in found)
    lines.append(f"{slower} figure(s) more than {100 * (BAR - 1):.0f}% slower"
                 + (" (by their floors)" if by_floor else ""))
    return "\n".join(lines), slower


def _num(v: float | None, unit: str) -> str:
    return "—" if v is None else f"{v:.3g} {unit}"


def _ratio(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}x"
