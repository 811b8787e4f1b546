"""The CI gates of a command line (--min-tensor-core-share, --expect-precision): evaluated by report/gates.py,
each shortfall one line on stderr and exit code 1."""
from __future__ import annotations

import argparse
from typing import Any

from nvprof_wrap.cli._write import say
from nvprof_wrap.report import Report


def gates(args: argparse.Namespace, report: Report) -> list[dict[str, Any]]:  # report/gates.py's JSON objects
    """Each gate given, with its threshold, the measured value and whether it passed (analysis/gates.py)."""
    from nvprof_wrap.report.gates import evaluate

    return evaluate(report, getattr(args, "min_tensor_core_share", None), getattr(args, "expect_precision", ()))


def gate(args: argparse.Namespace, report: Report, results: list[dict[str, Any]] | None = None) -> int:
    """0 when every gate given is met; else 1, after one line per shortfall on stderr."""
    found = [g["message"] for g in (gates(args, report) if results is None else results) if not g["passed"]]
    for line in found:
        say(f"nvprof-wrap: gate failed: {line}")
    return 1 if found else 0
