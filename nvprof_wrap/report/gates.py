"""CI gates: does a report meet what a pipeline expects of it? Pure: a report in, the shortfalls out (empty: pass).

    --min-tensor-core-share F    at least this fraction of GPU kernel time on tensor cores (0 ≤ F ≤ 1)
    --expect-precision P,Q       tensor-core kernels in each of these precisions (fp16, bf16, tf32, fp8, fp4, …)
"""
from __future__ import annotations

from typing import Any

from nvprof_wrap.report import Report


def shortfalls(report: Report, min_share: float | None = None, expect: tuple[str, ...] = ()) -> list[str]:
    return [g["message"] for g in evaluate(report, min_share, expect) if not g["passed"]]


def evaluate(report: Report, min_share: float | None = None, expect: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """One dict per gate given (docs/json.md, "gates"): `gate` (its option), `threshold`, `measured`, `passed`, and
    `message`, the line a missed gate prints (null when it passed)."""
    v = report.verdict
    out = []
    if min_share is not None:
        measured = round(v.tc_fraction, 6) if v.kernel_ns else None
        message = None
        if not v.kernel_ns:
            message = f"tensor-core share not measurable: {v.message}"
        elif v.tc_fraction < min_share:
            message = (f"tensor-core share {100 * v.tc_fraction:.1f}% of GPU kernel time is below the required "
                       f"{100 * min_share:.1f}%")
        out.append({"gate": "--min-tensor-core-share", "threshold": min_share, "measured": measured,
                    "passed": message is None, "message": message})
    if expect:
        have = set(v.precisions)
        missing = [p for p in expect if p not in have]
        message = None
        if missing:
            # "fp16/bf16" (names that do not tell which half) proves neither: a gate never passes on a guess
            why = (" — fp16/bf16 kernels do not say which half; capture with ncu or the cupti backend to tell"
                   if "fp16/bf16" in have and set(missing) & {"fp16", "bf16"} else "")
            message = (f"no tensor-core kernel in {', '.join(missing)} (tensor-core precisions seen: "
                       f"{' + '.join(v.precisions) or 'none'}){why}")
        out.append({"gate": "--expect-precision", "threshold": list(expect), "measured": list(v.precisions),
                    "passed": not missing, "missing": missing, "message": message})
    return out
