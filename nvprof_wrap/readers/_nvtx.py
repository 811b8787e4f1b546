"""NVTX range names as frameworks write them, reduced to the op or layer they name."""
from __future__ import annotations

import heapq
import re

# torch.autograd.profiler.emit_nvtx appends ", seq = N", ", op_id = N", ", sizes = [...]" to each op.
_DECOR = re.compile(r",\s*(?:seq|op_id|sizes|input_op_ids)\s*=.*$")


def op_name(text: str | None) -> str:
    """'aten::addmm, seq = 12, op_id = 40' → 'aten::addmm'; no range → '(no NVTX range)'."""
    if not text:
        return "(no NVTX range)"
    return _DECOR.sub("", text).strip() or "(no NVTX range)"


LAYER_PREFIXES = ("keras:", "torch:")  # the layer / module ranges that --annotate adds


def attribute(conn, ranges_sql: str, launches_sql: str) -> list[tuple]:
    """Kernels attributed to the NVTX ranges open on the thread that launched them.

    ranges_sql yields (tid, start, end, name) of push/pop or start/end ranges; launches_sql yields
    (pid, dev, tid, t, key, dur) per kernel launch: process, device, the launching thread and the CPU time of
    the launch call (NULL when unknown: the launch counts as outside any range), a kernel name or name id.
    Returns (pid, dev, scope, op, key, launches, total_ns): op is the innermost range open at t, scope the
    innermost layer range that --annotate adds ("keras:…", "torch:…"), else the outermost range. Every launch
    is counted once, so summing over scope and op gives the kernel aggregates too. [] when there is no range.

    How: one sweep over the ranges (in thread and start order, holding only the ranges open at a time) cuts
    each thread's time line into segments with one (scope, op) label each; the segments go to a temp table
    clustered on (thread, start). Each launch then costs one index seek for the last segment starting at or
    before it, and SQL does the grouping: nothing is held per launch in Python.
    """
    conn.execute("DROP TABLE IF EXISTS temp.nvw_seg")
    conn.execute("CREATE TEMP TABLE nvw_seg(tid INTEGER, s INTEGER, lab INTEGER, PRIMARY KEY (tid, s)) WITHOUT ROWID")
    labels: dict[tuple[str, str], int] = {}
    ranges = conn.execute(f"SELECT tid, s, e, name FROM ({ranges_sql}) "
                          "WHERE e IS NOT NULL AND tid IS NOT NULL AND e >= s ORDER BY tid, s, e DESC")
    conn.executemany("INSERT INTO temp.nvw_seg VALUES (?,?,?)", _segments(ranges, labels))
    if not labels:
        return []
    names = {lab: pair for pair, lab in labels.items()}
    none = ("(no NVTX range)", "(no NVTX range)")
    # Grouping by upsert into a small keyed table: 0.4 s less than GROUP BY's sort of every launch at 1M.
    # NULLs become -1 / '' (key columns of a WITHOUT ROWID table cannot be NULL), and back below.
    conn.execute("DROP TABLE IF EXISTS temp.nvw_agg")
    conn.execute("""CREATE TEMP TABLE nvw_agg(pid, dev, lab, key, n INTEGER, tot INTEGER,
                    PRIMARY KEY (pid, dev, lab, key)) WITHOUT ROWID""")
    conn.execute(f"""
    INSERT INTO temp.nvw_agg
    WITH nvw_l AS ({launches_sql})
    SELECT IFNULL(l.pid, -1), IFNULL(l.dev, -1),
           IFNULL((SELECT lab FROM temp.nvw_seg g WHERE g.tid = l.tid AND g.s <= l.t ORDER BY g.s DESC LIMIT 1), -1),
           IFNULL(l.key, ''), 1, IFNULL(l.dur, 0)
    FROM nvw_l l WHERE true
    ON CONFLICT (pid, dev, lab, key) DO UPDATE SET n = n + 1, tot = tot + excluded.tot""")
    out: dict[tuple, list[int]] = {}
    for pid, dev, lab, key, n, tot in conn.execute("SELECT * FROM temp.nvw_agg"):
        agg = out.setdefault((None if pid == -1 else pid, None if dev == -1 else dev, *names.get(lab, none),
                              None if key == "" else key), [0, 0])
        agg[0] += n
        agg[1] += tot
    return [(*k, *v) for k, v in out.items()]


def _segments(ranges, labels: dict[tuple[str, str], int]):
    """(tid, start, label id or None) at each point where the (scope, op) label of a thread changes.
    ranges: (tid, s, e, name) sorted by tid, s, e DESC. Ranges are closed intervals: a range ending at e
    still holds at e; the next segment starts at e + 1 (timestamps are integer ns)."""
    pending: list | None = None  # the last boundary, held back in case another one falls on the same time
    last_label: object = object()
    tid_now = object()
    active: list[tuple[int, int, str]] = []  # open ranges (s, e, name), in start order
    ends: list[tuple[int, int]] = []  # heap of (e, seq) of the open ranges

    def boundary(tid, t: int):
        nonlocal pending, last_label
        label = _label(active, labels) if active else None
        if pending is not None and pending[0] == tid and pending[1] == t:
            pending[2] = label  # several changes at one time: the last one holds
        else:
            if pending is not None and pending[2] != last_label:
                last_label = pending[2]
                yield tuple(pending)
            pending = [tid, t, label]

    def close_until(tid, t: int | None):
        while ends and (t is None or ends[0][0] < t):
            e, seq = heapq.heappop(ends)
            active[:] = [r for r in active if r[3] != seq]
            yield from boundary(tid, e + 1)

    for seq, (tid, s, e, name) in enumerate(ranges):
        if tid != tid_now:
            yield from close_until(tid_now, None)
            tid_now, last_label = tid, object()
        yield from close_until(tid, s)
        active.append((s, e, op_name(name), seq))
        heapq.heappush(ends, (e, seq))
        yield from boundary(tid, s)
    yield from close_until(tid_now, None)
    if pending is not None and pending[2] != last_label:
        yield tuple(pending)


def _label(active: list[tuple], labels: dict[tuple[str, str], int]) -> int:
    op = active[-1][2]
    scope = next((r[2] for r in reversed(active) if r[2].startswith(LAYER_PREFIXES)), active[0][2])
    return labels.setdefault((scope, op), len(labels))
