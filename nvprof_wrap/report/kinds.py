"""The kinds of thing a renderer turns into text, besides a Report and a Comparison (report/compare.py): each is
one typed value, so that a renderer is one method, ``render(subject, options)``, that dispatches on the kind
(renderers/__init__.py). A new kind is a class here, listed in KINDS, and a case in each renderer; the contract test
(tests/whole/test_contracts.py) renders every kind in every format."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nvprof_wrap.model import Classification
from nvprof_wrap.report import KernelRow, Report
from nvprof_wrap.report.compare import Comparison
from nvprof_wrap.report.experiment import ExperimentRow
from nvprof_wrap.store.history import HistoryRow


@dataclass(frozen=True)
class Kernels:
    """`kernels`: kernel rows, already filtered, sorted and cut by the command."""
    rows: tuple[KernelRow, ...]


@dataclass(frozen=True)
class Classifications:
    """`classify`: the verdict of each kernel name given."""
    items: tuple[Classification, ...]


@dataclass(frozen=True)
class Experiment:
    """`experiment`: one row per precision, side by side."""
    rows: tuple[ExperimentRow, ...]


@dataclass(frozen=True)
class Doctor:
    """`doctor`: what this machine has (GPUs, profilers, packages, the probe's verdict), as cli/doctor.py finds it."""
    facts: dict[str, Any]


@dataclass(frozen=True)
class Runs:
    """`runs`: the run history's rows (store/history.py runs()), newest first."""
    rows: tuple[HistoryRow, ...]


@dataclass(frozen=True)
class Named:
    """One report of several: its key (JSON's), its title (a page's heading) and where it was read from."""
    key: str
    title: str
    where: str
    report: Report


@dataclass(frozen=True)
class Reports:
    """Several reports in one document (`demo`). A format with no one-document form (the table, CSV, Markdown)
    writes them one after another, each under a line with its title and where it was read from."""
    items: tuple[Named, ...]


KINDS = (Report, Comparison, Kernels, Classifications, Experiment, Doctor, Runs, Reports)
__all__ = ["KINDS", "Classifications", "Doctor", "Experiment", "Kernels", "Named", "Reports", "Runs"]
