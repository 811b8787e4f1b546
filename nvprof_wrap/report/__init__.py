"""The report: store rows → one typed, frozen Report that every command and the Python API return.

- types.py: the records (Report, KernelRow, SplitRow, GroupRow, Verdict …); fields.py: how each is written in JSON
- build.py: the run store → Report, and the with_* steps the pipeline adds (job, capture window, hints, health)
- headline.py: the verdict sentence, the job / jobs / capture lines, the scope and hardware lines
- serialise.py: the Report's JSON (``Report.to_dict()``, ``--format json``) and its JSON Schema
- hints.py, gates.py, health.py, compare.py, experiment.py, jobs.py, ranks.py, series.py: what reads or adds to it

Everything a caller needs is importable from here (``from nvprof_wrap.report import Report, build``).
"""
from __future__ import annotations

from nvprof_wrap.report import headline, serialise
from nvprof_wrap.report.build import (
    build,
    with_capture,
    with_health,
    with_hints,
    with_jobs,
    with_scope,
    without_profiler,
)
from nvprof_wrap.report.headline import capture_line, job_line, jobs_line
from nvprof_wrap.report.ranks import RankOutlier, RankRow, Ranks, RankSpread
from nvprof_wrap.report.series import Series, StepRow
from nvprof_wrap.report.types import (
    DISPLAY,
    GOOD_SHARE,
    MEM_ORDER,
    SPLIT_KINDS,
    SPLIT_LABELS,
    CaptureScope,
    GpuRow,
    GroupRow,
    HardwareCheck,
    HardwarePoint,
    HardwareRow,
    JobEnd,
    JobGroup,
    KernelRow,
    OpRow,
    PrecisionShare,
    Report,
    RunInfo,
    Scope,
    Source,
    SplitRow,
    Verdict,
)

__all__ = ["DISPLAY", "GOOD_SHARE", "MEM_ORDER", "SPLIT_KINDS", "SPLIT_LABELS", "CaptureScope", "GpuRow", "GroupRow",
           "HardwareCheck", "HardwarePoint", "HardwareRow", "JobEnd", "JobGroup", "KernelRow", "OpRow",
           "PrecisionShare", "RankOutlier", "RankRow", "RankSpread", "Ranks", "Report", "RunInfo", "Scope", "Series",
           "Source", "SplitRow", "StepRow", "Verdict", "build", "capture_line", "headline", "job_line", "jobs_line",
           "serialise", "with_capture", "with_health", "with_hints", "with_jobs", "with_scope", "without_profiler"]
