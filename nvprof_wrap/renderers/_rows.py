"""Plain dict rows shared by the JSON, CSV and Markdown renderers (one shape, documented in docs/json.md)."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, replace

from nvprof_wrap.model import Classification, HealthVerdict
from nvprof_wrap.report import GroupRow, KernelRow, OpRow, PrecisionShare, Report, SplitRow, job_line
from nvprof_wrap.report.series import API_KINDS
from nvprof_wrap.system.limits import SKIPPED_SHOWN
from nvprof_wrap.text.names import numbered_family
from nvprof_wrap.text.sanitize import clean

SCHEMA = "nvprof-wrap.report/1"


def kernel(k: KernelRow) -> dict:
    return {"name": k.name, "launches": k.launches, "total_ns": k.total_ns, "mean_ns": round(k.mean_ns, 1),
            "share": round(k.share, 6), "tensor_core": k.tensor_core, "precision": k.precision, "family": k.family,
            "reason": k.reason, "evidence": k.evidence, "name_verdict": k.name_verdict,
            "counter_verdict": k.counter_verdict, "counter_detail": k.counter_detail, "flag": k.flag or None}


def shown_key(key: str) -> str:
    """A group's device or process id as tables show it: '-' where the capture records none."""
    return "-" if key == "None" else key


def group(g: GroupRow, key: str) -> dict:
    return {key: _int(g.key), "label": g.label, "launches": g.launches, "kernel_ns": g.kernel_ns,
            "tensor_core_ns": g.tc_ns, "tensor_core_share": round(g.tc_share, 6),
            "tensor_core_precisions": list(g.precisions),
            "busy_ns": g.busy_ns, "span_ns": g.span_ns,
            "idle_share": None if g.idle_share is None else round(g.idle_share, 6)}


def op(o) -> dict:
    return {"op": o.op, "kernels": o.kernels, "launches": o.launches, "total_ns": o.total_ns,
            "share": round(o.share, 6), "tensor_core_share": round(o.tc_share, 6),
            "precisions": [{"precision": p.precision, "share": round(p.share, 6)} for p in o.precisions],
            "hardware_tensor_pct": o.hw_tensor}


def classification(c: Classification) -> dict:
    d = asdict(c)
    d.pop("evidence")
    return d


# What each kind of GPU time is called in every renderer (report.SPLIT_KINDS).
SPLIT_LABELS = {"tensor_core": "tensor-core kernels", "cuda_core": "other kernels (CUDA cores)",
                "unknown": "kernels of unknown kind",
                "communication": "communication kernels (NCCL, DeepEP, NVSHMEM)",
                "memcpy": "memcpy", "memset": "memset"}


def split_label(s: SplitRow) -> str:
    return f"{SPLIT_LABELS[s.kind]} {s.direction}" if s.direction else SPLIT_LABELS[s.kind]


def mix_text(precisions: tuple[PrecisionShare, ...]) -> str:
    """'fp16 78.0% + fp32 22.0%'."""
    return " + ".join(f"{p.precision} {100 * p.share:.1f}%" for p in precisions)


def health(h: HealthVerdict | None) -> dict | None:
    return None if h is None else {"status": h.status, "findings": list(h.findings), "epochs": h.epochs,
                                   "unit": h.unit, "final": asdict(h.final) if h.final else None}


def report(r: Report) -> dict:
    v = r.verdict
    memcpy = {s.direction: {"count": s.count, "total_ns": s.total_ns, "share": round(s.share, 6)}
              for s in r.split if s.kind == "memcpy"}
    return {
        "schema": SCHEMA, "rules_version": r.rules_version,
        "tensor_cores_used": v.tensor_cores == "yes", "verdict": v.tensor_cores, "verdict_tone": r.tone,
        "message": v.message,
        "hints": list(r.hints),
        "tensor_core_time_fraction": round(v.tc_fraction, 6), "tensor_core_precisions": list(v.precisions),
        "kernel_time_ns": v.kernel_ns, "launches": v.launches, "distinct_kernels": v.kernels,
        "tensor_core_kernels": v.tc_kernels,
        "time_split": [{"category": split_label(s), "kind": s.kind, "direction": s.direction or None,
                        "total_ns": s.total_ns, "share": round(s.share, 6), "count": s.count} for s in r.split],
        "memcpy": memcpy,
        "devices": [group(g, "device_id") for g in r.devices],
        "processes": [group(g, "pid") for g in r.processes],
        "kernels": [kernel(k) for k in r.kernels],
        "disagreements": [kernel(k) for k in r.disagreements],
        "ops": [op(o) for o in r.ops],
        "scopes": [op(o) for o in r.scopes],
        "sources": [{"path": s.path, "format": s.format, "partial": s.partial, "notes": list(s.notes)}
                    for s in r.sources],
        "skipped": [{"path": p, "why": w} for p, w in r.skipped],
        "gpus": [{"device_id": g.device_id, "name": g.name, "compute_capability": g.cc,
                  "has_tensor_cores": g.has_tensor_cores} for g in r.gpus],
        "health": health(r.health),
        "scope": None if r.scope is None else {"kind": r.scope.kind, "start": r.scope.start, "end": r.scope.end,
                                               "option": r.scope.option, "description": scope_text(r.scope)},
        "capture": None if r.capture is None else asdict(r.capture) | {"problems": list(r.capture.problems)},
        "headline": list(r.headline),
        "job": job(r),
        "different_jobs": [{"command": g.command, "started_ns": g.started_ns, "label": g.label,
                            "captures": list(g.paths)} for g in r.different_jobs],
        "hardware": [hardware_row(h) for h in r.hardware],
        "hardware_checks": [asdict(c) for c in r.hardware_checks],
        "hardware_series": [asdict(p) for p in r.hardware_series],
        "series": [step_row(x) for x in r.series.rows] if r.series else [],
        "ranks": [rank_row(x) for x in r.ranks.rows] if r.ranks else [],
        "rank_spread": [asdict(s) for s in r.ranks.spread] if r.ranks else [],
        "rank_outliers": [asdict(o) for o in r.ranks.outliers] if r.ranks else [],
        "series_info": None if r.series is None else {
            "kind": r.series.kind, "source": r.series.source, "bucket_s": r.series.bucket_s, "host": r.series.host,
            "steps_per_row": r.series.folded, "notes": list(r.series.notes)},
    }


def rank_row(x) -> dict:
    """One rank, flat (a CSV row, a DataFrame row): docs/json.md "ranks"."""
    return {"rank": x.rank, "processes": x.processes, "launches": x.launches, "kernel_ns": x.kernel_ns,
            "tensor_core_ns": x.tc_ns, "tensor_core_share": round(x.tc_share, 6),
            "tensor_core_precisions": " + ".join(x.precisions),
            "precision_mix": " + ".join(f"{p} {100 * s:.1f}%" for p, s in x.mix),
            "communication_ns": x.comm_ns, "communication_share": round(x.comm_share, 6),
            "gpu_busy_ns": x.busy_ns, "span_ns": x.span_ns,
            "idle_share": None if x.idle_share is None else round(x.idle_share, 6),
            "steps": x.steps, "median_step_ns": x.step_ns}


def step_row(x) -> dict:
    """One step of the series, flat (a CSV row, a DataFrame row): docs/json.md "series"."""
    api = x.api_ns or {}
    return {"step": x.step, "start_s": round(x.start_s, 9), "duration_ns": x.duration_ns, "processes": x.processes,
            "launches": x.launches, "kernel_ns": x.kernel_ns, "tensor_core_ns": x.tc_ns,
            "tensor_core_share": round(x.tc_share, 6), "unknown_ns": x.unknown_ns, "copy_ns": x.copy_ns,
            "communication_ns": x.comm_ns, "exposed_communication_ns": x.exposed_comm_ns,
            "gpu_busy_ns": x.gpu_busy_ns, "gpu_idle_ns": x.idle_ns,
            **{f"api_{k}_ns": (api.get(k) if x.api_ns is not None else None) for k in API_KINDS},
            "outside_api_ns": x.outside_api_ns, "hw_tensor": x.hw_tensor}


def hardware_row(h) -> dict:
    return asdict(h) | {"names_tc_share": round(h.names_tc_share, 6), "message": hardware_text(h)}


def every(interval_ns: int) -> str:
    return f"{interval_ns / 1e6:g} ms" if interval_ns >= 1_000_000 else f"{interval_ns / 1e3:g} µs"


def hardware_text(h) -> str:
    """One device's hardware tensor-pipe activity beside the names' share, in words (every renderer's line)."""
    if h.tensor_busy is None:
        return (f"device {h.device_id}, {h.source} ({h.samples:,} samples of {every(h.interval_ns)}): no sample "
                "fell while kernels ran")
    sm = f"; SMs {h.sm_busy:.1f}% active" if h.sm_busy is not None else ""
    agree = "consistent with the names" if not h.disagreements else \
        f"{h.disagreements} kernel{'s' if h.disagreements != 1 else ''} where it contradicts the names (below)"
    short = "" if h.unsampled_share < 0.005 else (
        f". {100 * h.unsampled_share:.1f}% of its kernel time is in kernels that never filled a {every(h.interval_ns)} "
        "sample alone (shorter, or always beside others): the hardware does not tell those apart"
        + (" — a higher --gpu-metrics-frequency resolves shorter kernels" if h.source.startswith("nsys") else ""))
    return (f"device {h.device_id}, {h.source}: tensor pipes {h.tensor_busy:.1f}% active over the "
            f"{h.busy_samples:,} samples of {every(h.interval_ns)} taken while kernels ran{sm}; the names put "
            f"{100 * h.names_tc_share:.1f}% of its kernel time on tensor cores — {agree}{short}")


def job(r: Report) -> dict | None:
    """How the run's job ended (docs/json.md: "job"); None without a run manifest."""
    j = r.job
    if j is None:
        return None
    return {"status": j.status, "exit_code": j.exit_code, "signal": j.signal, "signal_number": j.signal_number,
            "forwarded_signal": j.forwarded, "steps": j.steps, "steps_source": j.steps_source, "rank": j.rank,
            "message": job_line(j, r.verdict)}


def _int(x: str) -> int | str | None:
    if x == "None":
        return None
    try:
        return int(x)
    except ValueError:
        return x


def skipped_summary(skipped: tuple[tuple[str, str], ...]) -> tuple[list[tuple[str, str]], str | None]:
    """The skipped files a terminal or a document lists one by one (the first SKIPPED_SHOWN), and one line for
    the rest by reason: 5,000 junk files are one line, not 5,000. JSON and CSV keep every entry."""
    shown, rest = list(skipped[:SKIPPED_SHOWN]), skipped[SKIPPED_SHOWN:]
    if not rest:
        return shown, None
    reasons = Counter(why for _, why in rest).most_common()
    parts = [f"{n:,} {why}" for why, n in reasons[:3]]
    if len(reasons) > 3:
        parts.append(f"{sum(n for _, n in reasons[3:]):,} for {len(reasons) - 3} other reasons")
    return shown, f"{len(skipped):,} files skipped in all; besides the above: " + "; ".join(parts)


# What each table's percentages are of: every percentage names its base (terminal captions, markdown notes, HTML).
BASES = {
    "split": "share: of GPU time (kernels, copies and sets)",
    "groups": "tensor core: of its kernel time · GPU idle: of first kernel start to last kernel end",
    "kernels": "% time: of all kernel time",
    "ops": "% time: of kernel time · tensor core: of the op's own kernel time",
}


def scope_text(scope) -> str | None:
    """The steady-state line of a report read through --window / --steps; None for whole captures."""
    if scope is None:
        return None
    what = (f"steps {int(scope.start)} to {int(scope.end) - 1}" if scope.kind == "steps" else
            f"{scope.start:g} s to {scope.end:g} s after the first GPU activity")
    return f"Steady state only: {what} ({scope.option}) — every time, share and idle figure is of what started in it."


def numbered_merged(rows) -> list:
    """Ops for the tables people read: ranges that differ only in a trailing number (step 0 … step 29, one per
    training step) become one row, ``step * (30 ranges)`` — thirty rows of one step would hide every other op.
    Launches and time add up, tensor-core share and precision mix are time-weighted, kernels is the most of any one
    range. JSON and CSV keep every range."""
    groups: dict[str, list] = {}
    for o in rows:
        family = numbered_family(o.op)
        groups.setdefault(family if family else "\0" + o.op, []).append(o)
    out = []
    for key, members in groups.items():
        if key.startswith("\0") or len(members) < 3:
            out += members
            continue
        ns = sum(o.total_ns for o in members)
        mix: dict[str, float] = {}
        for o in members:
            for p in o.precisions:
                mix[p.precision] = mix.get(p.precision, 0.0) + p.share * o.total_ns
        out.append(replace(members[0], op=f"{key} * ({len(members)} ranges)", kernels=max(o.kernels for o in members),
                           launches=sum(o.launches for o in members), total_ns=ns,
                           share=sum(o.share for o in members),
                           tc_share=sum(o.tc_share * o.total_ns for o in members) / ns if ns else 0.0,
                           precisions=tuple(PrecisionShare(p, x / ns if ns else 0.0) for p, x in
                                            sorted(mix.items(), key=lambda kv: -kv[1])),
                           hw_tensor=_weighted_hw(members)))
    return sorted(out, key=lambda o: -o.total_ns)


def numbered_merged_dicts(rows: list[dict]) -> list[dict]:
    """numbered_merged for ops in the JSON shape (op()): what a page made from the JSON alone shows (HTML)."""
    back = [OpRow(o["op"], o["kernels"], o["launches"], o["total_ns"], o["share"], o["tensor_core_share"],
                  tuple(PrecisionShare(p["precision"], p["share"]) for p in o["precisions"]),
                  o.get("hardware_tensor_pct")) for o in rows]
    return [op(o) for o in numbered_merged(back)]


def _weighted_hw(members) -> float | None:
    """Merged ranges' hardware tensor activity: time-weighted over the ranges that have it (None when none does, or
    those that do hold less than half the time)."""
    have = [o for o in members if o.hw_tensor is not None]
    ns = sum(o.total_ns for o in have)
    if not have or ns < 0.5 * sum(o.total_ns for o in members):
        return None
    return round(sum(o.hw_tensor * o.total_ns for o in have) / ns, 2) if ns else None



def one_after_another(reports, render_one, mark: str = "") -> str:
    """Several reports (report/kinds.py Reports) in a format with no one-document form: each under a line with
    its number, title and where it was read from (``mark`` starts that line: Markdown's "# ")."""
    n, parts = len(reports.items), []
    for i, item in enumerate(reports.items, 1):
        parts.append(("\n" if i > 1 else "") + mark + clean(f"[{i}/{n}] {item.title}  ({item.where})") + "\n\n")
        parts.append(render_one(item.report))
    return "".join(parts)
