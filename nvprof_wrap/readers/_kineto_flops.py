"""FLOPs per kernel name of a torch.profiler trace, from the ops that launched it (readers/kineto_json.py): the scan
(readers/_kineto_rows.py) writes the CPU ops with FLOPs (Signatures, from classify/flops.py) to table fop; SQL does
the rest, streaming.

Each op's FLOPs are counted once, where the kernels are launched:
- only the innermost op with FLOPs counts. An op that holds another op with FLOPs on its thread (aten::conv2d →
  aten::convolution → aten::cudnn_convolution; autocast's outer aten::bmm in fp32 around the inner one in fp16) is
  dropped: the inner one launched the kernels. A kernel launched inside a dropped op but outside its inner one gets
  no FLOPs.
- a launch belongs to the op open on its thread at the launch call (the kernel's correlation id leads to the
  call); kernels whose launch call was not recorded, or made outside any op with FLOPs, get none.
- an op that launched several kernels (a GEMM and its split-K reduction) splits its FLOPs among them in proportion
  to their time: the op's FLOPs over its kernels' time is then each kernel's rate, and no time an op spent on the
  GPU is left out of the rate's denominator; a kernel without a duration gets a share only when none of the op's
  kernels has one (then by count).
With a window (--window / --steps) the kernels that started in it count, each with its share of its op's FLOPs.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable

from nvprof_wrap.classify import flops as shapes
from nvprof_wrap.model import OpFlops
from nvprof_wrap.timeline.sql import in_window

FLOP_OPS = shapes.OPS  # the CPU ops whose arguments the scan reads for their FLOPs
MAX_OP_INPUTS = 64  # no op of these has more inputs
MAX_SIGNATURES = 8192


class Signatures:
    """(FLOPs, precision) of the scan's matrix ops, worked out once per distinct signature (name, shapes, types,
    scalar arguments): a few hundred per trace, however many calls."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, ...], tuple[int, str] | None] = {}

    def of(self, name: str, args: object) -> tuple[int, str] | None:
        """An op call's (FLOPs, precision) from its event's args, or None: a recorded "flops" argument (a positive
        number, as older traces have) wins over the shapes."""
        if type(args) is not dict:
            return None
        given, parts = args.get("flops"), [args.get(k) for k in ("Input Dims", "Input type", "Concrete Inputs")]
        if any(type(p) is list and len(p) > MAX_OP_INPUTS for p in parts):
            return None
        try:
            key = (name, repr(given), *map(repr, parts))
        except RecursionError:  # lists nested beyond what repr walks: not shapes
            return None
        if key in self.known:
            return self.known[key]
        if len(self.known) >= MAX_SIGNATURES:  # hostile variety: forget, never grow without bound
            self.known.clear()
        found = self.known[key] = _count(name, given, *parts)
        return found


def _count(name: str, given: object, dims: object, types: object, concrete: object) -> tuple[int, str] | None:
    found = shapes.count(name, dims, types, concrete)
    if isinstance(given, (int, float)) and not isinstance(given, bool) and 0 < given <= shapes.MAX_FLOPS:
        return int(given), found[1] if found is not None else shapes.precision_of(types)
    return found if found is not None and found[0] > 0 else None

# The ops with FLOPs that hold no other op with FLOPs on their thread. Ordered by (start, end descending) an op's
# next one starts inside it exactly when it holds one (ranges on a thread nest); a range that only overlaps the next
# (a damaged trace) keeps both, and each launch still goes to one op.
_LEAVES = """CREATE TEMP TABLE _nvw_fleaf AS
    SELECT id, tid, s, e, name, flops, prec FROM (
        SELECT rowid AS id, tid, s, e, name, flops, prec,
               LEAD(s) OVER w AS next_s, LEAD(e) OVER w AS next_e
        FROM fop WHERE tid IS NOT NULL AND e >= s WINDOW w AS (PARTITION BY tid ORDER BY s, e DESC, rowid))
    WHERE NOT (next_s IS NOT NULL AND (next_s < e OR next_s = s) AND next_e <= e)"""
# Each launch to the last leaf starting at or before its call on its thread, kept when the call is inside it.
_LAUNCHES = """CREATE TEMP TABLE _nvw_flaunch AS
    SELECT l.id AS op, k.nid AS nid, k.dur AS dur, k.start AS start
    FROM kl k JOIN rt r ON r.corr = k.corr
         JOIN _nvw_fleaf l ON l.id = (SELECT f.id FROM _nvw_fleaf f WHERE f.tid = r.tid AND f.s <= r.t
                                      ORDER BY f.s DESC LIMIT 1)
    WHERE r.t IS NOT NULL AND r.t <= l.e"""
_ROWS = """WITH per AS (SELECT op, COALESCE(SUM(dur), 0) AS ns, COUNT(*) AS n FROM _nvw_flaunch GROUP BY op)
    SELECT o.name, o.prec, a.nid,
           SUM(o.flops * (CASE WHEN per.ns > 0 THEN COALESCE(a.dur, 0) * 1.0 / per.ns ELSE 1.0 / per.n END)),
           COUNT(*), COALESCE(SUM(a.dur), 0)
    FROM _nvw_flaunch a JOIN per ON per.op = a.op JOIN _nvw_fleaf o ON o.id = a.op
    WHERE {where} GROUP BY o.name, o.prec, a.nid"""


def op_flops(db: sqlite3.Connection, pid: int | None, kernel_name: Callable[[int], str],
             op_name: Callable[[int], str], span: tuple[int, int]) -> tuple[OpFlops, ...]:
    """Per (op, kernel name, precision): the FLOPs of the ops that launched the kernel, its launches and time under
    them. kernel_name / op_name: a name id's (demangled) name. () when no op with FLOPs launched a kernel."""
    if db.execute("SELECT 1 FROM fop LIMIT 1").fetchone() is None:
        return ()
    try:
        db.execute(_LEAVES)
        db.execute("CREATE INDEX _nvw_fleaf_at ON _nvw_fleaf(tid, s)")
        db.execute(_LAUNCHES)
        merged: dict[tuple[str, str, str], list[float]] = {}  # names that demangle to one are one row
        for op, prec, nid, flops, n, ns in db.execute(_ROWS.format(where=in_window(span, "a"))):
            row = merged.setdefault((op_name(op), kernel_name(nid), prec), [0.0, 0, 0])
            row[0] += flops or 0.0
            row[1] += n
            row[2] += ns
    finally:
        db.execute("DROP TABLE IF EXISTS _nvw_flaunch")
        db.execute("DROP TABLE IF EXISTS _nvw_fleaf")
    return tuple(OpFlops(pid, op, name, prec, flops, int(n), int(ns))
                 for (op, name, prec), (flops, n, ns) in sorted(merged.items()) if flops > 0)
