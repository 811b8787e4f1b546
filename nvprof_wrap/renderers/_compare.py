"""A Comparison and the run history as rows: shared by the renderers (each one's render_compare / render_runs)."""
from __future__ import annotations

import time
from dataclasses import asdict
from datetime import datetime
from typing import Any

from nvprof_wrap.report.compare import Comparison, DeltaRow, Side
from nvprof_wrap.store.history import HistoryRow

TABLES = (("families", "kernel family"), ("precisions", "precision"), ("ops", "op / range"),
          ("split", "kind of GPU time"), ("budget", "part of the mean step"))
HEAD = ("{what}", "before", "after", "Δ time", "before %", "after %", "TC before", "TC after")
# what each table's percentages are of: every percentage names its base
BASE = {"families": "GPU kernel time", "precisions": "GPU kernel time", "ops": "kernel time in ops",
        "split": "GPU time", "budget": "mean step (time budget)"}


def title(key: str, what: str) -> str:
    return f"By {what} (%: of each run's {BASE[key]}; TC: of the row's time)"


def as_dict(c: Comparison) -> dict[str, Any]:
    def side(s: Side) -> dict[str, Any]:
        return asdict(s) | {"precisions": list(s.precisions)}

    def rows(rs: tuple[DeltaRow, ...]) -> list[dict[str, Any]]:
        return [asdict(r) | {"delta_ns": r.delta_ns} for r in rs]

    return {"schema": "nvprof-wrap.compare/1", "before": side(c.before), "after": side(c.after),
            "tensor_core_share_delta": round(c.tc_share_delta, 6), "speedup": c.speedup,
            "findings": list(c.findings), **{key: rows(getattr(c, key)) for key, _ in TABLES},
            "speedup_ceiling": asdict(c.ceiling) if c.ceiling else None}


def _ms(ns: int) -> str:
    return f"{ns / 1e6:,.2f} ms"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def cells(r: DeltaRow) -> list[str]:
    sign = "+" if r.delta_ns >= 0 else "−"
    return [r.key, _ms(r.before_ns), _ms(r.after_ns), f"{sign}{abs(r.delta_ns) / 1e6:,.2f} ms",
            _pct(r.before_share), _pct(r.after_share), _pct(r.before_tc_share), _pct(r.after_tc_share)]


def headline(c: Comparison) -> list[str]:
    """Lines: what each side is, then the findings."""
    def s(x: Side) -> str:
        return (f"{x.label}: tensor cores {x.verdict}, {_pct(x.tc_share)} of kernel time"
                + (f" ({' + '.join(x.precisions)})" if x.precisions else "")
                + (f", {x.step_ms:.2f} ms/step" if x.step_ms else ""))

    return [s(c.before), s(c.after)]


RUN_HEAD = ("name", "recorded", "command", "backend", "exit", "TC?", "TC share", "TC precisions", "health")


def run_cells(r: HistoryRow) -> list[str]:
    """A history row (store/history.py's runs()): a scope other than the whole run follows the name."""
    scope = r.get("scope") or "whole"
    precisions = r["precisions"] if isinstance(r["precisions"], str) else " + ".join(r["precisions"])
    return [r["name"] + ("" if scope == "whole" else f" [{scope}]"), _local(r["recorded_at"]), r["command"] or "-",
            r["backend"] or "-", "-" if r["exit_code"] is None else str(r["exit_code"]), r["verdict"],
            _pct(r["tensor_core_share"]), precisions or "-", r["health"] or "-"]


def _local(when: Any) -> str:  # a history row's: ISO text, Unix seconds (older rows), or none
    """An ISO 8601 time (or the Unix seconds of older rows) as local time to the minute."""
    try:
        t = float(when) if not isinstance(when, str) or when.replace(".", "", 1).isdigit() else \
            datetime.fromisoformat(when).timestamp()
    except (TypeError, ValueError, OverflowError):
        return str(when or "-")
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))
