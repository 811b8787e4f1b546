"""What hardware counters said against the name rules (``nvprof-wrap verify``): how many kernels the counters
measured, how many of those agree with the names, how many the names left unknown that the counters now decide, and
each kernel where they contradict each other. Pure: the report's kernel rows in, one typed record out; verify's
gate (``--fail-on-disagreement``) reads it."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from nvprof_wrap.report.fields import js

DECIDED = ("yes", "no")


class KernelRow(Protocol):
    """What the check reads of a report's kernel row (report/types.py KernelRow, which holds this record: a
    Protocol, so that neither module imports the other)."""

    @property
    def name(self) -> str: ...
    @property
    def total_ns(self) -> int: ...
    @property
    def share(self) -> float: ...
    @property
    def name_verdict(self) -> str: ...
    @property
    def counter_verdict(self) -> str | None: ...
    @property
    def counter_detail(self) -> str | None: ...


@dataclass(frozen=True)
class CounterDisagreement:
    """A kernel the name rules call yes or no whose counters say the other."""

    name: str
    name_verdict: str
    counter_verdict: str
    counter_detail: str | None  # what the counters measured ("0 MMA", "262k MMA …")
    total_ns: int
    share: float = field(metadata=js(digits=6))  # of kernel time


@dataclass(frozen=True)
class CounterCheck:
    """The counters against the names, over the kernels of one report (JSON "counter_check", docs/json.md)."""

    measured: int  # kernels with counters in the export
    agree: int  # measured, decided by the counters, and the same as the name's yes or no
    newly_decided: int  # the names said unknown; the counters decide yes or no
    undecided: int  # measured, but the counters decide nothing (no matrix-instruction count among them)
    not_measured: int  # kernels of the captures verified that the export holds no counters for
    disagreements: tuple[CounterDisagreement, ...]  # the names say one thing, the counters the other

    @property
    def contradicted(self) -> bool:
        return bool(self.disagreements)


def check(kernels: Iterable[KernelRow]) -> CounterCheck:
    """The check of a report's kernel rows (a row's ``counter_verdict`` is None where no counter measured it)."""
    measured = agree = newly = undecided = missing = 0
    against: list[CounterDisagreement] = []
    for k in kernels:
        if k.counter_verdict is None:
            missing += 1
            continue
        measured += 1
        if k.counter_verdict not in DECIDED:
            undecided += 1
        elif k.name_verdict not in DECIDED:
            newly += 1
        elif k.name_verdict == k.counter_verdict:
            agree += 1
        else:
            against.append(CounterDisagreement(k.name, k.name_verdict, k.counter_verdict, k.counter_detail,
                                               k.total_ns, k.share))
    return CounterCheck(measured, agree, newly, undecided, missing, tuple(against))
