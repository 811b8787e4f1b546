"""The numerics verdict in the health section (``health.numerics``, docs/numerics.md), in words: one list of lines
made from its JSON form, which the terminal, Markdown and the page (drawn from the JSON) each draw their way."""
from __future__ import annotations

from typing import Any


def lines(n: dict[str, Any]) -> list[str]:
    """The verdict's lines: what was recorded and the status, the first bad tensor, the cause, each fix, the loss
    scale, the notes."""
    extra = [f"{n['damaged']:,} damaged lines skipped" if n["damaged"] else "",
             f"{n['dropped']:,} records dropped" if n["dropped"] else ""]
    policy = f", policy {n['policy']}" if n.get("policy") else ""
    head = (f"Numerics ({n['records']:,} records of {n['steps']:,} steps, {n['processes']:,} "
            f"process{'es' * (n['processes'] != 1)}{policy}" + "".join(f"; {x}" for x in extra if x) + "): ")
    out = [head + ("healthy, nothing flagged" if n["status"] == "healthy" else n["status"])]
    bad = n.get("first_bad")
    if bad:
        out.append(f"First bad: step {bad['step']}, {bad['layer']}, {bad['tensor']} {bad['kind']}")
    if n.get("cause"):
        out.append(f"Cause: {n['cause']}")
    out += [f"Fix: {f}" for f in n.get("fix") or ()]
    scale = n.get("loss_scale")
    if scale:
        out.append(f"Loss scale: {scale['text']}")
    out += [f"Note: {x}" for x in n.get("notes") or ()]
    return out
