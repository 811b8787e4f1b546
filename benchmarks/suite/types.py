"""The records of the suite: what a benchmark measures (Figure, Case), where (Machine), and the whole Result.

A figure is one quantity measured in one case, with every repeat kept (so a reader sees the spread, and `compare`
can take medians); its role says whether it is what the benchmark measures, the floor it is held against (the least
any tool could spend on the same question) or the anchor (what another tool spends). A measured figure names the
figure it is a ratio of in `versus`.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from benchmarks.suite.machine import Machine, describe

Role = Literal["measured", "floor", "anchor"]
ROLES: tuple[Role, ...] = ("measured", "floor", "anchor")


@dataclass(frozen=True)
class Figure:
    name: str
    role: Role
    unit: str  # "s", "MB", "µs", "×"
    values: tuple[float, ...]  # one per repeat; empty when it was not measured (note says why)
    versus: str = ""  # the name of the figure (floor or anchor) this one is shown as a ratio of
    note: str = ""

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None


@dataclass(frozen=True)
class Case:
    label: str
    figures: tuple[Figure, ...]
    note: str = ""

    def figure(self, name: str) -> Figure | None:
        return next((f for f in self.figures if f.name == name), None)


@dataclass(frozen=True)
class Result:
    benchmark: str
    measures: str
    floor: str
    anchor: str
    quick: bool
    command: str
    machine: Machine
    cases: tuple[Case, ...]
    recorded: str = ""  # for figures carried over from a log or a doc, where they were first written down
    extra: dict[str, str] = field(default_factory=dict)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return path

    @staticmethod
    def read(path: Path) -> Result:
        return from_dict(json.loads(path.read_text(encoding="utf-8")))


def from_dict(d: dict[str, Any]) -> Result:
    cases = tuple(Case(label=c["label"], note=c.get("note", ""),
                       figures=tuple(Figure(name=f["name"], role=f["role"], unit=f["unit"],
                                            values=tuple(float(v) for v in f["values"]), versus=f.get("versus", ""),
                                            note=f.get("note", "")) for f in c["figures"]))
                  for c in d["cases"])
    return Result(benchmark=d["benchmark"], measures=d["measures"], floor=d["floor"], anchor=d["anchor"],
                  quick=bool(d["quick"]), command=d["command"], machine=Machine(**d["machine"]), cases=cases,
                  recorded=d.get("recorded", ""), extra=dict(d.get("extra", {})))


@dataclass(frozen=True)
class RunArgs:
    bench: Benchmark  # the module being run: its NAME, MEASURES, FLOOR and ANCHOR go into the result
    quick: bool
    work_dir: Path  # where generated captures go (reused between runs of one size)
    rounds: int  # repeats of each measurement, interleaved
    command: str  # the command line that ran it, as written into the result
    note: str = ""  # the machine's note (its load), from --note

    def result(self, cases: tuple[Case, ...], **extra: str) -> Result:
        b = self.bench
        return Result(benchmark=b.NAME, measures=b.MEASURES, floor=b.FLOOR, anchor=b.ANCHOR,
                      quick=self.quick, command=self.command, machine=describe(self.note), cases=cases,
                      extra=dict(extra))


class Unavailable(Exception):
    """The benchmark cannot run on this machine (no GPU, a tool missing): `all` skips it and says why."""


class Benchmark(Protocol):
    """What every module of the suite is: its module-level names and its run()."""

    NAME: str
    MEASURES: str
    FLOOR: str
    ANCHOR: str

    def run(self, args: RunArgs) -> Result: ...
