"""The tables of docs/performance.md, written from benchmarks/results/*.json: each generated block sits between

    <!-- benchmarks:table STEM -->
    <!-- benchmarks:end -->

and is the table of benchmarks/results/STEM.json (a benchmark's result; a result kept from another machine or an
earlier measurement under its own stem), with the machine and the command that measured it above it. Edit the JSON
(or measure again), then `python -m benchmarks docs`; tests/benchmarks checks the committed doc is what it gives.
"""
from __future__ import annotations

import re
import statistics
from pathlib import Path

from benchmarks.suite.machine import ROOT
from benchmarks.suite.types import Case, Figure, Result

DOC = ROOT / "docs" / "performance.md"
RESULTS = ROOT / "benchmarks" / "results"
UNKNOWN = "not recorded"
BLOCK = re.compile(r"(<!-- benchmarks:table (?P<stem>[\w.-]+) -->\n)(?P<body>.*?)(<!-- benchmarks:end -->)", re.DOTALL)


def results(folder: Path = RESULTS) -> dict[str, Result]:
    return {p.stem: Result.read(p) for p in sorted(folder.glob("*.json"))}


def generate(text: str, found: dict[str, Result]) -> str:
    def block(m: re.Match[str]) -> str:
        stem = m.group("stem")
        if stem not in found:
            raise KeyError(f"docs/performance.md names benchmarks/results/{stem}.json, which is not there")
        return m.group(1) + table(found[stem]) + m.group(4)

    return BLOCK.sub(block, text)


def table(r: Result) -> str:
    m = r.machine
    known = [f"{m.cores} cores ({m.cpu})", *(f"{k} {v}" for k, v in (("Python", m.python), ("nvprof-wrap", m.version),
                                                                    ("commit", m.commit)) if v != UNKNOWN)]
    where = ", ".join(known)
    lines = [f"*`{r.command}`{' (quick sizes)' if r.quick else ''} — {where}"
             + (f"; {m.note}" if m.note else "") + (f". {r.recorded}" if r.recorded else "") + ".*", ""]
    names = list(dict.fromkeys(f.name for c in r.cases for f in c.figures))
    ratios = {f.name: f.versus for c in r.cases for f in c.figures if f.versus}
    header = [r.extra.get("case_header", "case")]
    for n in names:
        header.append(n)
        if n in ratios:
            header.append(f"{n} / {ratios[n]}")
    noted = any(c.note for c in r.cases)
    if noted:
        header.append(r.extra.get("note_header", "note"))
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for c in r.cases:
        row = [c.label]
        for n in names:
            f = c.figure(n)
            row.append(cell(f) if f else "—")
            if n in ratios:
                row.append(ratio(c, f, paired=r.extra.get("paired") != "no") if f else "—")
        if noted:
            row.append(c.note)
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def number(v: float, unit: str) -> str:
    if unit in ("MB", "MiB", "launches"):
        return f"{v:,.0f}"
    if unit == "%":
        return f"{v:.1f}"
    if unit == "×":
        return f"{v:.2f}" if v < 10 else f"{v:.1f}"
    if abs(v) < 10:
        return f"{v:.2f}"
    return f"{v:.1f}" if abs(v) < 100 else f"{v:,.0f}"


def span(vs: tuple[float, ...] | list[float], unit: str) -> str:
    lo, hi = number(min(vs), unit), number(max(vs), unit)
    text = lo if lo == hi else f"{lo}–{hi}"
    return f"{text}{unit}" if unit in ("×", "%") else f"{text} {unit}"


def cell(f: Figure) -> str:
    if not f.values:
        return f.note or "—"
    text = span(f.values, f.unit)
    if len(f.values) >= 3 and f.unit == "s":
        text += f" (median {number(statistics.median(f.values), f.unit)})"
    return text + (f" ({f.note})" if f.note else "")


def ratio(c: Case, f: Figure, paired: bool = True) -> str:
    """Each repeat over its own floor where both have every repeat (rounds interleaved), else median over median."""
    base = c.figure(f.versus)
    if base is None or not base.values or not f.values:
        return "—"
    if paired and len(base.values) == len(f.values) and all(base.values):
        each = [a / b for a, b in zip(f.values, base.values)]
        text = span(each, "×")
        return text + (f" (median {number(statistics.median(each), '×')}×)" if len(each) >= 3 else "")
    med = statistics.median(base.values)
    return f"{number(statistics.median(f.values) / med, '×')}×" if med else "—"
