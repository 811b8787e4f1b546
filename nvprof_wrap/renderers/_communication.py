"""The communication section (analyses/communication.py), written once from the JSON form for every format
(renderers/_outline.py): the collectives, their overlap with compute, and the ranks that arrived last."""
from __future__ import annotations

from typing import Any

from nvprof_wrap.renderers._shapes import Lines, Shown
from nvprof_wrap.text.units import duration, pct

TITLE = "Communication"
ROWS = 5  # collectives, and single late collectives, shown


def _what(c: dict[str, Any]) -> str:
    spelled = [c["collective"] or "communication kernels", c["dtype"],
               "/".join(x for x in (c["algorithm"], c["protocol"]) if x)]
    return " ".join(x for x in spelled if x)


def lines(c: dict[str, Any] | None) -> tuple[str, ...]:
    if not c:
        return ()
    out = [f"{duration(c['kernel_ns'])} of communication kernels, {pct(c['share'])} of kernel time: "
           + ", ".join(f"{_what(r)} {pct(r['share'])} ({r['launches']:,} launches)" for r in c["collectives"][:ROWS])]
    o = c.get("overlap")
    if o:
        unit = ("steady steps", "step") if o["kind"] == "steps" else ("time buckets with GPU work", "bucket")
        out.append(f"mean of {o['steps']} {unit[0]}, per process: {duration(o['comm_ns'])} in communication, "
                   f"{duration(o['exposed_ns'])} of it exposed ({pct(o['exposed_step_share'])} of the "
                   f"{duration(o['step_ns'])} {unit[1]}), {pct(o['hidden_share'])} hidden under compute on other "
                   "streams")
    for r in c.get("straggler_ranks") or ():
        out.append(f"rank {r['rank']} started {r['collectives']:,} collective(s) last, in {r['steps']:,} steady "
                   f"step(s): {duration(r['late_ns'])} after the first rank in all")
    late = sorted(c.get("stragglers") or (), key=lambda s: (-s["late_ns"], s["step"], s["nth"]))[:ROWS]
    for s in late:
        out.append(f"step {s['step']}, {s['collective'] or 'collective'} #{s['nth']}: rank {s['rank']} "
                   f"{duration(s['late_ns'])} after the first" + (f" — {s['cause']}" if s["cause"] else ""))
    return tuple(out)


def content(s: Shown) -> Lines | None:
    found = lines(s.data.get("communication"))
    return Lines(TITLE, found) if found else None
