"""Side-by-side precision experiments: one row per precision from its report, metrics and health. Pure."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from nvprof_wrap.launch.manifest import Manifest
from nvprof_wrap.model import HealthVerdict
from nvprof_wrap.report import Report
from nvprof_wrap.report.health import lines_of


@dataclass(frozen=True)
class ExperimentRow:
    precision: str
    exit_code: int
    wall_s: float
    steps: int | None
    wall_per_step_ms: float | None
    kernel_ns: int
    tc_share: float
    tc_precisions: str
    memcpy_share: float
    idle_share: float | None
    launches: int
    launches_per_step: float | None
    final_loss: float | None
    final_accuracy: float | None
    final_val_accuracy: float | None
    health: str
    findings: tuple[str, ...]
    folder: str


def read_metrics(path: Path) -> tuple[int | None, float | None]:
    """(train steps, seconds spent in epochs) from the workload's JSON lines, if it wrote them."""
    if not path.is_file():
        return None, None
    steps, secs = 0, 0.0
    for line in lines_of(path):  # streamed, each line bounded: the job wrote it
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict) and "epoch" in rec:
            try:
                steps += int(rec.get("steps") or 0)
                secs += float(rec.get("epoch_time_s") or 0.0)
            except (TypeError, ValueError, OverflowError):
                continue  # not numbers: the job wrote something else under these keys
    return (steps or None), (secs or None)


def row(precision: str, folder: Path, manifest: Manifest, report: Report, health: HealthVerdict) -> ExperimentRow:
    steps, epoch_s = read_metrics(folder / "metrics.jsonl")
    v = report.verdict
    memcpy = sum(s.share for s in report.split if s.kind == "memcpy")
    spans = [d for d in report.devices if d.span_ns]
    idle = (1 - sum(d.busy_ns or 0 for d in spans) / sum(d.span_ns for d in spans)) if spans else None
    final = health.final
    return ExperimentRow(
        precision, manifest.exit_code, manifest.wall_s, steps,
        1000 * epoch_s / steps if steps and epoch_s else None,
        v.kernel_ns, v.tc_fraction, " + ".join(v.precisions), memcpy, idle, v.launches,
        v.launches / steps if steps else None,
        getattr(final, "loss", None), getattr(final, "accuracy", None), getattr(final, "val_accuracy", None),
        health.status, tuple(health.findings), str(folder))
