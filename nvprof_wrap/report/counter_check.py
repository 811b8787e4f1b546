"""What hardware counters said against the name rules (``nvprof-wrap verify``): how many kernels the counters
measured, how many of those agree with the names, how many the names left unknown that the counters now decide, and
each kernel where they contradict each other; and each measured kernel's achieved TFLOP/s from the FLOPs the
counters counted (classify/counter_flops.py) beside the trace's, where the trace gives one. Pure: the report's kernel
rows in, one typed record out; verify's gate (``--fail-on-disagreement``) reads it."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from nvprof_wrap.report.fields import js

DECIDED = ("yes", "no")
RATES_SHOWN = 20


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
class CounterRate:
    """One kernel name's FLOPs as the counters counted them, over its time under Nsight Compute (its clocks left
    alone, one launch at a time), beside the rate the trace's FLOPs give it (op shapes, XLA's dump; None: none)."""

    name: str
    precision: str  # the source type that holds most of its FLOPs (tensor path), else fp32 / fp64 (CUDA cores)
    flops: float
    launches: int
    seconds: float = field(metadata=js(digits=9))
    tflops: float
    trace_tflops: float | None


@dataclass(frozen=True)
class CounterCheck:
    """The counters against the names, over the kernels of one report (JSON "counter_check", docs/json.md)."""

    measured: int  # kernels with counters in the export
    agree: int  # measured, decided by the counters, and the same as the name's yes or no
    newly_decided: int  # the names said unknown; the counters decide yes or no
    undecided: int  # measured, but the counters decide nothing (no matrix-instruction count among them)
    not_measured: int  # kernels of the captures verified that the export holds no counters for
    disagreements: tuple[CounterDisagreement, ...]  # the names say one thing, the counters the other
    # the measured kernels with the most counted FLOPs, each with its rate; absent where the export has no FLOP
    # counter (an export made before verify asked for them)
    rates: tuple[CounterRate, ...] | None = field(default=None, metadata=js(absent_none=True))

    @property
    def contradicted(self) -> bool:
        return bool(self.disagreements)


def rates(counted: Iterable[tuple[str, str, float, int, int]], trace: dict[str, float],
          top: int = RATES_SHOWN) -> tuple[CounterRate, ...]:
    """counted: (kernel name, precision, FLOPs, launches, ns under ncu) per name (rows of a name add up, the
    precision of the most FLOPs kept); trace: a kernel name's TFLOP/s from the trace's FLOPs. The ``top`` by
    FLOPs."""
    acc: dict[str, tuple[dict[str, float], int, int]] = {}
    for name, precision, flops, launches, ns in counted:
        by, n, t = acc.get(name, ({}, 0, 0))
        by[precision] = by.get(precision, 0.0) + flops
        acc[name] = (by, n + launches, t + ns)
    out = [CounterRate(name, max(sorted(by), key=lambda p: by[p]), round(sum(by.values())), n, round(t / 1e9, 9),
                       round(sum(by.values()) / t / 1e3, 2), trace.get(name))
           for name, (by, n, t) in acc.items() if t > 0 and sum(by.values()) > 0]
    return tuple(sorted(out, key=lambda r: (-r.flops, r.name))[:top])


def check(kernels: Iterable[KernelRow], counted: tuple[CounterRate, ...] = ()) -> CounterCheck:
    """The check of a report's kernel rows (a row's ``counter_verdict`` is None where no counter measured it), with
    the counters' rates (``rates``)."""
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
    return CounterCheck(measured, agree, newly, undecided, missing, tuple(against), counted or None)
