"""The side-by-side experiment table in each format: shared by the renderers (each one's render_experiment)."""
from __future__ import annotations

import csv
import io
from dataclasses import asdict

from rich.console import Console
from rich.text import Text

from nvprof_wrap.renderers._fit import Col
from nvprof_wrap.renderers._fit import table as fitted
from nvprof_wrap.report.experiment import ExperimentRow, where_the_time_went
from nvprof_wrap.text.sanitize import csv_cell, deep

HEAD = ("precision", "ms/step", "step (median)", "outside CUDA", "in CUDA calls", "GPU busy", "GPU kernels",
        "tensor-core share", "memcpy", "GPU idle", "launches/step", "loss", "acc", "val acc", "health")
_STYLE = {"healthy": "green", "collapsed": "bold red", "nan": "bold red", "diverged": "red", "no-learning": "red",
          "unknown": "yellow", "failed": "bold red"}


def _health(r: ExperimentRow) -> str:
    """A workload that exited non-zero says so first: its numbers describe a run that did not finish."""
    if r.exit_code:
        return f"failed (exit {r.exit_code})"
    return f"{r.health} ← {r.cause}" if r.cause else r.health  # the numerics' root, where they name one


def _f(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f} ms"


def cells(r: ExperimentRow) -> list[str]:
    return [r.precision, _f(r.wall_per_step_ms, ".2f"), _ms(r.step_ms), _ms(r.step_outside_cuda_ms),
            _ms(r.step_in_cuda_ms), _ms(r.step_gpu_busy_ms),
            f"{r.kernel_ns / 1e6:.1f} ms",
            f"{100 * r.tc_share:.1f}%" + (f" ({r.tc_precisions})" if r.tc_precisions else ""),
            f"{100 * r.memcpy_share:.1f}%", "-" if r.idle_share is None else f"{100 * r.idle_share:.1f}%",
            _f(r.launches_per_step, ".1f"), _f(r.final_loss, ".4g"), _f(r.final_accuracy, ".4f"),
            _f(r.final_val_accuracy, ".4f"), _health(r)]


def as_csv(rows: list[ExperimentRow]) -> str:
    rows = deep(rows)  # findings quote the job's own log lines
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(asdict(rows[0])) if rows else [], lineterminator="\n")
    w.writeheader()
    w.writerows({k: csv_cell(" | ".join(v) if isinstance(v, tuple) else v) for k, v in asdict(r).items()}
                for r in rows)
    return buf.getvalue()


def as_markdown(rows: list[ExperimentRow]) -> str:
    rows = deep(rows)
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |" for r in rows]
    notes = [f"- {r.precision}: {f}" for r in rows for f in r.findings] + [f"- {x}" for x in where_the_time_went(rows)]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def as_table(rows: list[ExperimentRow], width: int = 120, color: bool = False) -> str:
    rows = deep(rows)
    cols = [Col("precision", justify="left"), Col("ms/step"), Col("step (median)", short="step"),
            Col("outside CUDA", short="outside"), Col("in CUDA calls", short="in CUDA", drop=4),
            Col("GPU busy", short="busy", drop=5), Col("GPU kernels", short="kernels"),
            Col("tensor-core share", short="TC share", cut=6), Col("memcpy"), Col("GPU idle", short="idle"),
            Col("launches/step", short="launch/step", drop=3), Col("loss"), Col("acc", drop=1),
            Col("val acc", drop=2), Col("health", justify="left", cut=48)]
    t = fitted(cols, [[*cells(r)[:-1], Text(cells(r)[-1], style=_STYLE.get("failed" if r.exit_code else r.health, ""))]
                      for r in rows], width, title="Precision experiment", title_justify="left")
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system="auto" if color else None, force_terminal=color,
                      no_color=not color)
    console.print(t)
    for r in rows:
        for f in r.findings:
            console.print(f"{r.precision}: {f}", markup=False, highlight=False)
    for line in where_the_time_went(rows):
        console.print(line, markup=False, highlight=False)
    return buf.getvalue()
