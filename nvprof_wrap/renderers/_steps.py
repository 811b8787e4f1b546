"""The per-step series in words and in a table, for every text renderer: the steady step's breakdown (one line the
terminal, Markdown and HTML all print), a step-time sparkline, and one row per step (`report --per-step`)."""
from __future__ import annotations

from nvprof_wrap.report import Report
from nvprof_wrap.report.series import API_LABELS, Series, Steady, StepRow, steady
from nvprof_wrap.text.units import duration as _ns
from nvprof_wrap.text.units import pct as _pct
from nvprof_wrap.timeline.series import LEFT_OUT  # the readers' note where they left the series out

BARS = "▁▂▃▄▅▆▇█"
SPARK_MAX = 100  # characters of the sparkline: more steps are binned (max of each bin)


def what(series: Series) -> str:
    """'30 steps (step marks)', '60 buckets of 100 ms'."""
    n = len(series.rows)
    if series.kind == "buckets":
        return f"{n} time buckets of {_ns((series.bucket_s or 0) * 1e9)} (no steps marked)"
    per = f", {series.folded} steps per row" if series.folded > 1 else ""
    return f"{n} step{'s' if n != 1 else ''} ({series.source}{per})"



def none_line(report: Report) -> str:
    """What --per-step prints where the report has no rows to show: why, from the captures' notes."""
    notes = dict.fromkeys(n for src in report.sources for n in src.notes if LEFT_OUT in n)
    why = "; ".join(notes) if notes else "the captures give no timeline to cut into steps (a summary table, counters)"
    return f"One row per step: none — {why}"


def steady_line(series: Series | None) -> str | None:
    """The median step after the first, GPU and host: "Median step (steps 1-29): 17.8 ms — GPU busy 16.4 ms (92%),
    kernels 16.4 ms (9.5% on tensor cores); host: 5.1 ms in CUDA calls (launches 2.5 ms, copies and waits
    2.2 ms), 12.7 ms outside them"."""
    s = steady(series)
    if s is None or series is None:
        return None
    unit = "bucket" if series.kind == "buckets" else "step"
    span = f"{unit}s {s.first}-{s.last}" if s.first != s.last else f"{unit} {s.first}"
    n = processes(series)
    # several processes: the GPU's busy time and the host's are a process's (their mean), the work summed over them
    each, together, host = ("", "", "host") if n < 2 else (" a process;", f" the {n} processes'", "host, a process")
    gpu = (f"GPU busy {_ns(s.gpu_busy_ns)} ({_pct(1 - s.idle_share)}){each or ','}{together} kernels "
           f"{_ns(s.kernel_ns)} ({_pct(s.tc_ns / s.kernel_ns if s.kernel_ns else 0)} on tensor cores)")
    extra = [f"copies {_ns(s.copy_ns)}"] if s.copy_ns else []
    extra += [f"communication {_ns(s.comm_ns)}"] if s.comm_ns else []
    return f"Median {unit} ({span}): {_ns(s.duration_ns)} — {', '.join([gpu, *extra])}; {host}: {host_text(s)}"


def processes(series: Series) -> int:
    """The most processes any row of the series holds."""
    return max((r.processes for r in series.rows), default=1)


def processes_note(series: Series) -> str | None:
    """Under --per-step's table where its rows hold several processes: which columns are a process's, which their
    sum."""
    n = processes(series)
    return None if n < 2 else (f"{n} processes: GPU busy and the host's columns a process's (their mean); kernels, "
                               "copies and comm the processes' together")


def host_text(s: Steady) -> str:
    if s.api_ns is None:
        return "not known (no CUDA API records)"
    parts = [f"{API_LABELS[k]} {_ns(v)}" for k, v in s.api_ns.items() if v]
    calls = f" ({', '.join(parts)})" if parts else ""
    if s.outside_api_ns is None:
        return f"CUDA calls{calls}; time outside them not known (only launch calls recorded)"
    return f"{_ns(s.in_api_ns)} in CUDA calls{calls}, {_ns(s.outside_api_ns)} outside them"


def sparkline(rows: tuple[StepRow, ...], width: int = SPARK_MAX) -> str:
    """Step times as bars, low to high; binned (each bin's longest step) beyond width."""
    values = [r.duration_ns for r in rows]
    if not values:
        return ""
    per = -(-len(values) // width)
    values = [max(values[i:i + per]) for i in range(0, len(values), per)]
    lo, hi = min(values), max(values)
    if hi == lo:
        return BARS[0] * len(values)
    return "".join(BARS[min(len(BARS) - 1, int((v - lo) / (hi - lo) * len(BARS)))] for v in values)


COLUMNS = ("step", "time", "GPU busy", "kernels", "tensor core", "copies", "comm", "launch calls",
           "copies+waits", "allocs", "other calls", "outside CUDA")


def table_rows(series: Series) -> list[tuple[str, ...]]:
    """One row per step: COLUMNS, as text."""
    out = []
    for r in series.rows:
        api = r.api_ns or {}
        host = [_ns(api.get(k)) if r.api_ns is not None else "-" for k in ("launch", "sync", "alloc", "other")]
        out.append((str(r.step), _ns(r.duration_ns),
                    f"{_ns(r.gpu_busy_ns)} ({_pct(r.gpu_busy_ns / r.duration_ns if r.duration_ns else 0)})",
                    _ns(r.kernel_ns), _pct(r.tc_share) if r.kernel_ns else "-", _ns(r.copy_ns), _ns(r.comm_ns),
                    *host, _ns(r.outside_api_ns)))
    return out
