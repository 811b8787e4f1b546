"""Helpers shared by the renderers: a report's JSON rows (report/serialise.py, docs/json.md), what each table's
percentages are of, merged numbered ranges, skipped files in one line, several reports one after another."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import Any

from nvprof_wrap.model import Classification
from nvprof_wrap.report import KernelRow, OpRow, PrecisionShare, Report, SplitRow, serialise
from nvprof_wrap.report.kinds import Reports
from nvprof_wrap.system.limits import SKIPPED_SHOWN
from nvprof_wrap.text.names import middle, numbered_family
from nvprof_wrap.text.sanitize import clean

SCHEMA = serialise.SCHEMA


def kernel(k: KernelRow) -> dict[str, Any]:
    """A kernel as the report's JSON writes it (report/serialise.py): `kernels --format json` and CSV rows."""
    row: dict[str, Any] = serialise.to_json(k)
    return row


def shown_key(key: str) -> str:
    """A group's device or process id as tables show it: '-' where the capture records none."""
    return "-" if key == "None" else key


def op(o: OpRow) -> dict[str, Any]:
    row: dict[str, Any] = serialise.to_json(o)
    return row


def classification(c: Classification) -> dict[str, Any]:
    d = asdict(c)
    d.pop("evidence")
    return d


def split_label(s: SplitRow) -> str:
    return s.category


def mix_text(precisions: tuple[PrecisionShare, ...]) -> str:
    """'fp16 78.0% + fp32 22.0%'."""
    return " + ".join(f"{p.precision} {100 * p.share:.1f}%" for p in precisions)


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


def lone_scope(names: Sequence[str], kernels: int, launches: int, total: str, wide: bool) -> str | None:
    """The outer-ranges section's one line where that level is a single range (names: the scopes' names): it holds
    every kernel the ranges hold (a launch outside every range is a row of its own), so a table of that one row at
    100% says nothing, and the level below it is the framework ops table (each launch's innermost range) —
    repeated here it would say nothing new either (report/build.py drops a scope table equal to the ops table for the
    same reason). None where the level has several ranges: its table is drawn."""
    if len(names) != 1:
        return None
    name = names[0] if wide else middle(names[0], 80)
    return (f"one range holds every kernel: {name} ({kernels:,} kernel{'' if kernels == 1 else 's'}, "
            f"{launches:,} launches, {total}); the ranges inside it are the framework ops above (each launch's "
            "innermost range)")


def numbered_merged(rows: Sequence[OpRow]) -> list[OpRow]:
    """Ops for the tables people read: ranges that differ only in a trailing number (step 0 … step 29, one per
    training step) become one row, ``step * (30 ranges)`` — thirty rows of one step would hide every other op.
    Launches and time add up, tensor-core share and precision mix are time-weighted, kernels is the most of any one
    range. JSON and CSV keep every range."""
    groups: dict[str, list[Any]] = {}
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


def numbered_merged_dicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """numbered_merged for ops in the JSON shape (op()): what a page made from the JSON alone shows (HTML)."""
    back = [OpRow(o["op"], o["kernels"], o["launches"], o["total_ns"], o["share"], o["tensor_core_share"],
                  tuple(PrecisionShare(p["precision"], p["share"]) for p in o["precisions"]),
                  o.get("hardware_tensor_pct")) for o in rows]
    return [op(o) for o in numbered_merged(back)]


def _weighted_hw(members: list[OpRow]) -> float | None:
    """Merged ranges' hardware tensor activity: time-weighted over the ranges that have it (None when none does, or
    those that do hold less than half the time)."""
    have = [o for o in members if o.hw_tensor is not None]
    ns = sum(o.total_ns for o in have)
    if not have or ns < 0.5 * sum(o.total_ns for o in members):
        return None
    return round(sum((o.hw_tensor or 0.0) * o.total_ns for o in have) / ns, 2) if ns else None



def one_after_another(reports: Reports, render_one: Callable[[Report], str], mark: str = "") -> str:
    """Several reports (report/kinds.py Reports) in a format with no one-document form: each under a line with
    its number, title and where it was read from (``mark`` starts that line: Markdown's "# ")."""
    n, parts = len(reports.items), []
    for i, item in enumerate(reports.items, 1):
        parts.append(("\n" if i > 1 else "") + mark + clean(f"[{i}/{n}] {item.title}  ({item.where})") + "\n\n")
        parts.append(render_one(item.report))
    return "".join(parts)
