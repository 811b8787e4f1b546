"""FLOPs per kernel name from the op shapes ``nvprof-wrap run --annotate torch`` records in NVTX range names
(torch.autograd.profiler.emit_nvtx(record_shapes=True): 'aten::addmm, seq = 12, op_id = 40, sizes = [[3072],
[64, 768], [768, 3072], [], []]'), for the SQLite captures that keep NVTX ranges and launch calls (Nsight Systems'
export, the CUPTI tracer's).

The shapes go through classify/flops.py's rules, and the ops to their kernels through readers/_kineto_flops.py's
SQL (innermost op with FLOPs on the launching thread, an op's FLOPs split among its kernels by time), the path a
torch.profiler trace takes: this module only fills its three tables (fop, kl, rt) as TEMP objects of the capture's
connection. One Python pass over the ranges whose name holds counted shapes (a signature worked out once however
often it recurs); launches never reach Python: views over the capture's own tables.

What the NVTX text lacks, the FLOPs lack: it has no dtype (the precision is the kernel name's, classify/engine.py)
and no scalar arguments (a convolution's stride and padding, attention's is_causal), so convolutions and fused
attention get none here — only the matrix products (mm, addmm, bmm, baddbmm, _scaled_mm, …: linear and matmul are
counted in the mm / addmm they call). A backward op counts where its own range carries its shapes: the aten::mm
inside MmBackward0 does, the autograd node's range (no sizes) does not.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

from nvprof_wrap.classify import flops as shapes
from nvprof_wrap.classify.engine import classify
from nvprof_wrap.model import OpFlops
from nvprof_wrap.readers import _kineto_flops
from nvprof_wrap.text.demangle import demangle

SIZES = ", sizes = "  # torch's getNvtxStr (torch/csrc/profiler/util.cpp): name, seq, op_id, sizes, input_op_ids
MAX_SIZES_CHARS = 4096  # a counted op's shapes fit in far less: longer text is not shapes
# kernel name's precision (classify/engine.py) → the op precision achieved.py has peaks for; others stay unknown
_PRECISION = {"bf16": "bf16", "fp16": "fp16", "fp32": "fp32", "tf32": "fp32", "fp64": "fp64", "fp8": "fp8",
              "fp4": "fp4", "int8": "int8"}
Kernels = tuple[str, str]  # (launches: pid, corr, nid, dur, start; calls: pid, corr, tid, t) as SQL SELECTs


def sizes_of(text: str) -> tuple[str, list[object]] | None:
    """(op, its inputs' sizes) from an emit_nvtx range name, or None when it carries no sizes of a counted op."""
    op = text.split(",", 1)[0].strip()
    at = text.find(SIZES)
    if op not in shapes.OPS or at < 0:
        return None
    rest = text[at + len(SIZES):at + len(SIZES) + MAX_SIZES_CHARS + 1]
    depth = 0
    for i, ch in enumerate(rest):  # the list ends at its matching bracket (", input_op_ids = [...]" may follow)
        depth += (ch == "[") - (ch == "]")
        if depth == 0:
            break
    else:
        return None
    try:
        dims = json.loads(rest[:i + 1])
    except ValueError:
        return None
    return (op, dims) if isinstance(dims, list) else None


def may_hold_shapes(found: bool | None) -> bool:
    """Whether ranges may give FLOPs, from whether the compiled NVTX attribution found SIZES in the name of any range
    it swept (timeline/nvtx.attribute's look_for and borrowed "found"; None: it did not look): only closed ranges
    count (_kineto_flops' leaves: a thread, an end at or after the start), and it sweeps every one of them, so where
    none holds SIZES the scan of every range's text for it is not made (0.07 s of 250k ranges)."""
    return found is not False


def _fop_rows(conn: sqlite3.Connection, ranges_sql: str, ids: dict[str, int]) -> Iterator[tuple[object, ...]]:
    """(tid, s, e, op id, flops, '') of the ranges whose shapes give FLOPs, streamed."""
    known: dict[str, int | None] = {}
    ops = ",".join(f"'{op}'" for op in sorted(shapes.OPS))  # names from our own table: no quoting needed
    sql = f"""SELECT tid, s, e, name FROM ({ranges_sql})
              WHERE instr(name, '{SIZES}') > 0 AND substr(name, 1, instr(name, ',') - 1) IN ({ops})"""
    for tid, s, e, name in conn.execute(sql):
        if tid is None or s is None or e is None or not isinstance(name, str):
            continue
        key = name[name.find(SIZES):] + "|" + name.split(",", 1)[0]  # seq and op_id differ per call: not the key
        if key not in known:
            if len(known) >= _kineto_flops.MAX_SIGNATURES:
                known.clear()
            found = sizes_of(name)
            known[key] = shapes.flops_of(*found) if found is not None else None
        flops = known[key]
        if flops:
            op = name.split(",", 1)[0].strip()
            yield tid, s, e, ids.setdefault(op, len(ids)), flops, ""


def _per_process(conn: sqlite3.Connection, ranges_sql: str, kernels: Kernels, pids_sql: str,
                 kernel_name: Callable[[Any], str], span: tuple[int, int]) -> tuple[OpFlops, ...]:
    """Per process, op and kernel name: the FLOPs of the shaped ops that launched it, its launches and time under
    them (model.OpFlops); () without such ranges. ranges_sql: (tid, s, e, name); kernels: the launches' and launch
    calls' SELECTs (a pid column each: processes' correlation ids overlap); pids_sql: the processes of fop's
    threads; kernel_name: a nid's name."""
    ids: dict[str, int] = {}
    try:
        conn.execute("CREATE TEMP TABLE fop(tid INTEGER, s INTEGER, e INTEGER, name INTEGER, flops INTEGER, "
                     "prec TEXT)")
        conn.executemany("INSERT INTO temp.fop VALUES (?, ?, ?, ?, ?, ?)", _fop_rows(conn, ranges_sql, ids))
        if not ids:
            return ()
        names = {i: op for op, i in ids.items()}
        out: list[OpFlops] = []
        for (pid,) in conn.execute(pids_sql).fetchall():
            keep = "true" if pid is None else f"pid = {int(pid)}"
            conn.execute(f"CREATE TEMP VIEW kl AS SELECT corr, nid, dur, start FROM ({kernels[0]}) WHERE {keep}")
            conn.execute(f"CREATE TEMP VIEW rt AS SELECT corr, tid, t FROM ({kernels[1]}) WHERE {keep} "
                         "AND tid IN (SELECT DISTINCT tid FROM temp.fop)")
            try:
                found = _kineto_flops.op_flops(conn, pid, kernel_name, names.__getitem__, span)
            finally:
                conn.execute("DROP VIEW IF EXISTS temp.kl")
                conn.execute("DROP VIEW IF EXISTS temp.rt")
            out += (OpFlops(r.pid, r.op, r.name, _PRECISION.get(classify(r.name).precision, "unknown"), r.flops,
                            r.launches, r.total_ns) for r in found)
        return tuple(out)
    finally:
        conn.execute("DROP TABLE IF EXISTS temp.fop")


def nsys(conn: sqlite3.Connection, have: set[str], ranges_sql: str | None, dur: str,
         span: tuple[int, int]) -> tuple[OpFlops, ...]:
    """op_flops of an Nsight Systems export (readers/nsys_sqlite.py): the pid is in bits 24..47 of globalPid /
    globalTid; dur: the kernels' duration expression over alias k."""
    if ranges_sql is None or not {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "StringIds"} <= have:
        return ()
    launches = f"""SELECT (k.globalPid >> 24) & 16777215 AS pid, k.correlationId AS corr, k.demangledName AS nid,
                          {dur} AS dur, k.start AS start FROM CUPTI_ACTIVITY_KIND_KERNEL k"""
    calls = """SELECT (r.globalTid >> 24) & 16777215 AS pid, r.correlationId AS corr, r.globalTid AS tid,
                      r.start AS t FROM CUPTI_ACTIVITY_KIND_RUNTIME r"""
    tids = "SELECT DISTINCT (tid >> 24) & 16777215 FROM temp.fop"

    def name(nid: int) -> str:
        row = conn.execute("SELECT value FROM StringIds WHERE id = ?", (nid,)).fetchone()
        return demangle(row[0]) if row and row[0] else "<unnamed kernel>"
    return _per_process(conn, ranges_sql, (launches, calls), tids, name, span)


def cupti(conn: sqlite3.Connection, have: set[str], ranges_sql: str, pid: int | None, dur: str,
          span: tuple[int, int]) -> tuple[OpFlops, ...]:
    """op_flops of the CUPTI tracer's capture (readers/cupti_sqlite.py): one process; launch calls in its runtime
    and driver tables (cuBLAS launches through the driver); dur: the kernels' duration expression over alias k."""
    api = [t for t in ("runtime", "driver") if t in have]
    if "nvtx" not in have or not api:
        return ()
    launches = f"SELECT NULL AS pid, k.correlation_id AS corr, k.name AS nid, {dur} AS dur, k.start AS start " \
               "FROM kernel k"
    calls = " UNION ALL ".join(f"SELECT NULL AS pid, correlation_id AS corr, tid, start AS t FROM {t}" for t in api)
    found = _per_process(conn, ranges_sql, (launches, calls), "SELECT NULL", _demangled, span)
    return tuple(OpFlops(pid, r.op, r.name, r.precision, r.flops, r.launches, r.total_ns) for r in found)


def _demangled(name: object) -> str:
    return demangle(name) if isinstance(name, str) and name else "<unnamed kernel>"
