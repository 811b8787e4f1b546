"""verify's summary of the counters against the name rules (report/counter_check.py), written once from the JSON form
for every format (renderers/_outline.py puts it under the verdict: it is what verify was run for)."""
from __future__ import annotations

from typing import Any

from nvprof_wrap.renderers._shapes import Lines, Shown
from nvprof_wrap.text.names import shorten
from nvprof_wrap.text.units import pct

TITLE = "Counters against the name rules"


def _kernels(n: int) -> str:
    return f"{n:,} kernel{'' if n == 1 else 's'}"


def lines(c: dict[str, Any] | None, wide: bool = False) -> tuple[str, ...]:
    if c is None:
        return ()
    against = c["disagreements"]
    of = c["measured"] + c["not_measured"]
    out = [f"measured by the counters: {_kernels(c['measured'])}"
           + (f" of {of:,} (the export holds none for the other {c['not_measured']:,})" if c["not_measured"] else ""),
           f"agree with the name rules: {c['agree']:,}",
           f"left unknown by the names, decided by the counters: {c['newly_decided']:,}"]
    if c["undecided"]:
        out.append(f"measured, but the counters decide nothing (no matrix-instruction count): {c['undecided']:,}")
    out.append(f"contradict the name rules: {len(against):,}" + (" (each below)" if against else ""))
    for d in against:
        name = d["name"] if wide else shorten(d["name"], 60)
        # an export without durations has no shares to give
        said = [x for x in (d["counter_detail"], f"{pct(d['share'])} of kernel time" if d["total_ns"] else "") if x]
        out.append(f"name said {d['name_verdict']}, counters {d['counter_verdict']}: {name}"
                   + (f" ({', '.join(said)})" if said else ""))
    out.extend(_rates(c.get("rates") or [], wide))
    return tuple(out)


def _rates(rates: list[dict[str, Any]], wide: bool) -> list[str]:
    """Each kernel's achieved TFLOP/s from the FLOPs the counters counted, beside the trace's."""
    if not rates:
        return []
    out = ["achieved, from the FLOPs the counters counted over each kernel's time under ncu"
           + (" (in brackets, where the trace gives FLOPs: its rate — its ops' FLOPs over the time of all their"
              " kernels, helpers such as layout transforms included):"
              if any(r["trace_tflops"] for r in rates) else ":")]
    for r in rates:
        name = r["name"] if wide else shorten(r["name"], 60)
        trace = f" (trace: {r['trace_tflops']:,.1f})" if r["trace_tflops"] else ""
        out.append(f"  {r['tflops']:,.1f} TFLOP/s {r['precision']}{trace}: {name}, {r['flops']:,.0f} FLOPs in "
                   f"{r['launches']:,} launch{'' if r['launches'] == 1 else 'es'}")
    return out


def content(s: Shown) -> Lines | None:
    found = lines(s.data.get("counter_check"), s.view.wide)
    return Lines(TITLE, found) if found else None
