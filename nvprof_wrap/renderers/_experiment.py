"""The side-by-side experiment table in each format: shared by the renderers (each one's render_experiment)."""
from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict

from rich.console import Console
from rich.table import Table

from nvprof_wrap.sanitize import deep, json_safe

HEAD = ("precision", "ms/step", "GPU kernels", "tensor-core share", "memcpy", "GPU idle",
        "launches/step", "loss", "acc", "val acc", "health")
_STYLE = {"healthy": "green", "collapsed": "bold red", "nan": "bold red", "diverged": "red", "unknown": "yellow",
          "failed": "bold red"}


def _health(r) -> str:
    """A workload that exited non-zero says so first: its numbers describe a run that did not finish."""
    return f"failed (exit {r.exit_code})" if r.exit_code else r.health


def _f(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def cells(r) -> list[str]:
    return [r.precision, _f(r.wall_per_step_ms, ".2f"),
            f"{r.kernel_ns / 1e6:.1f} ms", f"{100 * r.tc_share:.1f}%" + (f" ({r.tc_precisions})" if r.tc_precisions else ""),
            f"{100 * r.memcpy_share:.1f}%", "-" if r.idle_share is None else f"{100 * r.idle_share:.1f}%",
            _f(r.launches_per_step, ".1f"), _f(r.final_loss, ".4g"), _f(r.final_accuracy, ".4f"),
            _f(r.final_val_accuracy, ".4f"), _health(r)]


def as_json(rows: list) -> str:
    return json_safe(json.dumps([asdict(r) for r in rows], indent=2)) + "\n"


def as_csv(rows: list) -> str:
    rows = deep(rows)  # findings quote the job's own log lines
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(asdict(rows[0])) if rows else [], lineterminator="\n")
    w.writeheader()
    w.writerows({k: (" | ".join(v) if isinstance(v, tuple) else v) for k, v in asdict(r).items()} for r in rows)
    return buf.getvalue()


def as_markdown(rows: list) -> str:
    rows = deep(rows)
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |" for r in rows]
    notes = [f"- {r.precision}: {f}" for r in rows for f in r.findings]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def as_table(rows: list, width: int = 120, color: bool = False) -> str:
    rows = deep(rows)
    t = Table(title="Precision experiment", title_justify="left", show_edge=False, pad_edge=False)
    for h in HEAD:
        t.add_column(h, justify="left" if h in ("precision", "health") else "right", no_wrap=True)
    for r in rows:
        c = cells(r)
        t.add_row(*c[:-1], f"[{_STYLE.get('failed' if r.exit_code else r.health, '')}]{c[-1]}[/]")
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system="auto" if color else None, force_terminal=color,
                      no_color=not color)
    console.print(t)
    for r in rows:
        for f in r.findings:
            console.print(f"{r.precision}: {f}", markup=False, highlight=False)
    return buf.getvalue()
