"""Nsight Systems SQLite export (``nsys export --type sqlite``), schemas of nsys 2023 to 2026.

Kernel names come from ``demangledName`` through ``StringIds`` — never ``shortName``, which is just
"Kernel" for every CUTLASS 2.x kernel. ``globalPid`` packs the pid in bits 24..47.
"""
from __future__ import annotations

import functools
import math
import re
import sqlite3
from pathlib import Path
from typing import Any

from nvprof_wrap.classify.engine import WARMUP_FAMILIES, classify, classify_meanwhile
from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import (
    LOST_NAME_KERNEL,
    Activity,
    Capture,
    Gpu,
    KernelAgg,
    MemAgg,
    OpAgg,
    Process,
    StepSeries,
    WarmupAgg,
    add_ns,
    merge_kernels,
    merge_memops,
)
from nvprof_wrap.readers import _nsys_graphs as graph_launches
from nvprof_wrap.readers import _nvtx_flops, _xla_graphs, _xla_warmup
from nvprof_wrap.readers._durations import SOUND, note, on, sql_duration
from nvprof_wrap.readers._head import Head
from nvprof_wrap.readers._no_kernels import refuse_launches
from nvprof_wrap.system.fork import BIG, Forked
from nvprof_wrap.text.cuda_calls import kind_of
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline import hw_sources, recover
from nvprof_wrap.timeline import native as native_passes
from nvprof_wrap.timeline import series as step_series
from nvprof_wrap.timeline.busy import BusyTime
from nvprof_wrap.timeline.gpu_metrics import kernel_names
from nvprof_wrap.timeline.nvtx import attribute, borrowed_note
from nvprof_wrap.timeline.series_tables import MEMSET_PART, copy_part_sql
from nvprof_wrap.timeline.sql import (
    EVERYTHING,
    MEMCPY_DIRECTION,
    columns,
    cut,
    in_window,
    opened,
    reopened,
    tables,
    uri_of,
    window_bounds,
)
from nvprof_wrap.timeline.window import Window

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"


def _pid_expr(cols: set[str]) -> str:
    return "((globalPid >> 24) & 16777215)" if "globalPid" in cols else "NULL"


def kernel_name_column(conn: sqlite3.Connection) -> str:
    cols = columns(conn, KERNEL)
    name_col = next((c for c in ("demangledName", "mangledName", "shortName") if c in cols), None)
    if name_col is None:
        raise BadInput(None, f"{KERNEL} has no name column")
    return name_col


def _kernels(conn: sqlite3.Connection, dur: str, where: str = "true") -> tuple[KernelAgg, ...]:
    cols = columns(conn, KERNEL)
    name_col = kernel_name_column(conn)
    # Group by the raw globalPid (the pid is extracted from the few groups afterwards) and keep only COUNT and
    # SUM: per-launch expressions and MIN/MAX made this scan 1.7x slower than a plain GROUP BY at 1M launches.
    gpid = "globalPid" if "globalPid" in cols else "NULL"
    sql = f"""
    SELECT {_pid_expr(cols).replace("globalPid", "g.gp")}, g.dev,
           CASE WHEN g.nid = 0 THEN '{LOST_NAME_KERNEL}' ELSE COALESCE({cut("s.value")}, '<unnamed kernel>') END, g.n,
           g.tot
    FROM (SELECT {name_col} AS nid, {gpid} AS gp, deviceId AS dev, COUNT(*) AS n, SUM({dur}) AS tot
          FROM {KERNEL} WHERE {where} GROUP BY {name_col}, {gpid}, deviceId) g
    LEFT JOIN StringIds s ON s.id = g.nid"""
    # demangledName holds mangled text in some exports (TensorFlow's kernels): demangled here, once per name.
    return merge_kernels(KernelAgg(p, d, demangle(n), c, t) for p, d, n, c, t in conn.execute(sql))


def _memops_alone(path: Path, have: set[str], where: str) -> tuple[tuple[MemAgg, ...], tuple[str, ...]]:
    with opened(path, "Nsight Systems") as conn:
        return _memops(conn, have, where)


def _memops(conn: sqlite3.Connection, have: set[str],
            where: str = "true") -> tuple[tuple[MemAgg, ...], tuple[str, ...]]:
    out: list[MemAgg] = []
    notes: list[str] = []
    if MEMCPY in have:
        pid = _pid_expr(columns(conn, MEMCPY))
        dur, note = sql_duration(conn, MEMCPY, "memcpy")
        notes += [note] if note else []
        for p, dev, kind, n, tot, nbytes in conn.execute(
                f"SELECT {pid}, deviceId, copyKind, COUNT(*), COALESCE(SUM({dur}), 0), SUM(bytes) FROM {MEMCPY} "
                f"WHERE {where} GROUP BY 1,2,3"):
            out.append(MemAgg(p, dev, "memcpy", MEMCPY_DIRECTION.get(kind, "other"), n, tot, nbytes))
    if MEMSET in have:
        pid = _pid_expr(columns(conn, MEMSET))
        dur, note = sql_duration(conn, MEMSET, "memset")
        notes += [note] if note else []
        for p, dev, n, tot, nbytes in conn.execute(
                f"SELECT {pid}, deviceId, COUNT(*), COALESCE(SUM({dur}), 0), SUM(bytes) FROM {MEMSET} WHERE {where} "
                "GROUP BY 1,2"):
            out.append(MemAgg(p, dev, "memset", "", n, tot, nbytes))
    return merge_memops(out), tuple(notes)


def _busy_sources(conn: sqlite3.Connection, have: set[str],
                  graphs: str | None = None) -> list[tuple[str, str, str, str]]:
    """graphs: the graph launches without kernels (readers/_nsys_graphs.py), busy as kernels are."""
    return [(t, "globalPid" if "globalPid" in columns(conn, t) else "NULL", "deviceId", "1" if t == KERNEL else "0")
            for t in (KERNEL, MEMCPY, MEMSET) if t in have] + \
        ([(graphs, "globalPid", "deviceId", "1")] if graphs else [])


# At most this many kernels (by rowid) for the attribution to take their busy time too: it holds 16 bytes a kernel
# until its slice ends, and the reading process all of them until the merge (64 MB here), where the busy time's own
# pass holds a bounded window; a day-long job's 20M launches keep that pass.
FUSED_MAX_LAUNCHES = 4_000_000


def _fusable(conn: sqlite3.Connection, have: set[str]) -> bool:
    """Whether the compiled attribution will read every kernel (_ops' conditions for it), so that it takes their
    busy-time intervals too (BusyTime's fused). Where it then does not (no range in the NVTX table, a value it
    declines), the busy time reads the kernels itself after all: right either way."""
    if not native_passes.available() or not {"NVTX_EVENTS", RUNTIME} <= have or \
            not {"demangledName", "globalPid", "correlationId"} <= columns(conn, KERNEL):
        return False
    lo, hi = conn.execute(f"SELECT (SELECT MIN(rowid) FROM {KERNEL}), (SELECT MAX(rowid) FROM {KERNEL})").fetchone()
    return lo is not None and hi - lo < FUSED_MAX_LAUNCHES


def _activity(rows: list[tuple[int | None, int | None, int, int, int]]) -> tuple[Activity, ...]:
    """BusyTime's rows (globalPid, device, first, last, busy ns) as Activity records."""
    return tuple(Activity(_process(gp), dev, first, last, busy) for gp, dev, first, last, busy in rows)


def _process(gp: object) -> int | None:
    """The process of a globalPid, as the SQL's (globalPid >> 24) & 16777215 takes it: a float's whole part (a
    hand-edited export's globalPid + 0.5 had ended the report with "unsupported operand type(s) for >>: 'float'");
    None for what is no number."""
    if type(gp) is float and math.isfinite(gp):
        gp = int(gp)
    return (gp >> 24) & 0xFFFFFF if type(gp) is int else None


def _devices(conn: sqlite3.Connection, have: set[str]) -> tuple[Gpu, ...]:
    if "TARGET_INFO_GPU" not in have:
        return ()
    cols = columns(conn, "TARGET_INFO_GPU")
    dev = "cuDevice" if "cuDevice" in cols else "id"  # cuDevice is the CUDA ordinal that kernels' deviceId uses
    pick = [(cut(c) if c == "name" else c) if c in cols else "NULL"
            for c in ("name", "computeMajor", "computeMinor", "smCount")]
    rows = conn.execute(f"SELECT {dev}, {', '.join(pick)} FROM TARGET_INFO_GPU")
    return tuple(Gpu(*row) for row in rows)


def _processes(conn: sqlite3.Connection, have: set[str], pids: set[int]) -> tuple[Process, ...]:
    names: dict[int, str] = {}
    if "PROCESSES" in have:
        names = {pid: name for pid, name in conn.execute(f"SELECT pid, {cut('name')} FROM PROCESSES")}
    return tuple(Process(pid, names.get(pid)) for pid in sorted(pids))


def nvtx_ranges_sql(conn: sqlite3.Connection, have: set[str]) -> str | None:
    """(tid, s, e, name) of the push/pop and start/end NVTX ranges; None without an NVTX table."""
    if "NVTX_EVENTS" not in have:
        return None
    # Registered strings (nvtxDomainRegisterString) are in StringIds through textId, in exports that have it.
    text, join = (cut("COALESCE(n.text, s.value)"), "LEFT JOIN StringIds s ON s.id = n.textId") \
        if "textId" in columns(conn, "NVTX_EVENTS") else (cut("n.text"), "")
    return f"""SELECT n.globalTid AS tid, n.start AS s, n."end" AS e, {text} AS name
               FROM NVTX_EVENTS n {join} WHERE n.eventType IN (59, 60)"""


def _ops(conn: sqlite3.Connection, have: set[str], path: Path, dur: str, where: str, lent: dict[str, Any],
         kept: dict[str, Any] | None = None,
         lanes: dict[str, Any] | None = None) -> tuple[tuple[KernelAgg, ...], tuple[OpAgg, ...]] | None:
    """kernel.correlationId → the runtime API call (thread, CPU time) → the enclosing NVTX ranges.
    One pass gives the kernel aggregates too (every launch counted once, launches without a runtime record
    outside any range), so a capture with NVTX ranges is scanned once, not twice. None without ranges. kept: the
    kernels' columns the per-step series reads, kept by the compiled pass as it reads them; lanes: their busy-time
    islands, taken by it too (nvtx.attribute; for a whole capture: no window cuts them)."""
    if not {"NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME"} <= have:
        return None
    kcols = columns(conn, KERNEL)
    if not {"demangledName", "globalPid", "correlationId"} <= kcols:
        return None
    ranges = nvtx_ranges_sql(conn, have)
    if ranges is None:  # no NVTX table: checked above, never taken
        return None
    launches = f"""SELECT (k.globalPid >> 24) & 16777215 AS pid, k.deviceId AS dev, r.globalTid AS tid, r.start AS t,
                         k.demangledName AS key, {dur} AS dur
                  FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
                    ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24) {{rslice}}
                  WHERE {where} {{slice}}"""
    # The same, for the compiled pass: launch calls (correlation id, join key, tid, t, process), kernels
    # (correlation id, join key, pid, dev, key, dur).
    kernels_of = f"""SELECT k.correlationId, k.globalPid >> 24, (k.globalPid >> 24) & 16777215, k.deviceId,
                         k.demangledName, {{dur}} FROM {KERNEL} k WHERE {where} {{{{slice}}}}"""
    native = (uri_of(path),
              f"""SELECT r.correlationId, r.globalTid >> 24, r.globalTid, r.start, (r.globalTid >> 24) & 16777215
                  FROM {RUNTIME} r WHERE true {{rslice}}""",
              kernels_of.format(dur=dur))
    # the compiled pass keeps the kernels' columns the series reads: their times in place of the duration (SOUND's)
    keeping = None if kept is None or dur != on(SOUND, "k") else (kept, kernels_of.format(dur='k.start, k."end"'))
    # ... and the busy time's intervals: start, end and its group (_busy_sources' for the kernel table)
    fusing = None if lanes is None or dur != on(SOUND, "k") else \
        (lanes, kernels_of.format(dur='k.start, k."end", k.globalPid'))
    # a globalTid holds its process id: each process has its own main thread
    rows = attribute(conn, ranges, launches, reopen=functools.partial(reopened, path), kernel_table=KERNEL,
                     process_of_tid="((tid >> 24) & 16777215)", borrowed=lent, native=native, kept=keeping,
                     look_for=_nvtx_flops.SIZES, lanes=fusing)
    if not rows:
        return None
    # each distinct key once: a capture with step marks has a row per (step, op, kernel) — 160k rows of 1,496 names
    # at 1M launches in 200 steps, where a KernelAgg a row and their merge took 0.47 s
    keys = {r[4] for r in rows}
    ids = ",".join(str(int(k)) for k in keys if k is not None)
    names = dict(conn.execute(f"SELECT id, {cut('value')} FROM StringIds WHERE id IN ({ids})"))
    if 0 in names:  # nsys' own first string, never a kernel's name: the name was lost (model.LOST_NAME_KERNEL)
        names[0] = LOST_NAME_KERNEL
    label = {k: demangle(names.get(k) or "<unnamed kernel>") for k in keys}
    ops = tuple(OpAgg(pid, scope, op, label[key], n, tot) for pid, _dev, scope, op, key, n, tot in rows)
    by_key: dict[tuple[Any, Any, Any], list[Any]] = {}
    for pid, dev, _scope, _op, key, n, tot in rows:
        agg = by_key.get((pid, dev, key))
        if agg is None:
            by_key[(pid, dev, key)] = [n, tot]
        else:
            agg[0] += n
            agg[1] = add_ns(agg[1], tot)
    kernels = merge_kernels(KernelAgg(pid, dev, label[key], n, tot) for (pid, dev, key), (n, tot) in by_key.items())
    return kernels, ops


RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
# Runtime / driver calls that launch kernels (cudaLaunchKernel_v7000, cuLaunchKernelEx, cudaGraphLaunch_v10000, …)
_LAUNCH_CALL = "(s.value LIKE 'cu%Launch%Kernel%' OR s.value LIKE 'cudaGraphLaunch%' OR s.value LIKE 'cuGraphLaunch%')"


def _launch_calls(conn: sqlite3.Connection, have: set[str]) -> tuple[int, int]:
    """(CUDA API calls, kernel launch calls) the capture recorded on the host side."""
    if RUNTIME not in have or "nameId" not in columns(conn, RUNTIME):
        return 0, 0
    calls, launches = conn.execute(f"""SELECT COUNT(*), COALESCE(SUM({_LAUNCH_CALL}), 0)
                                      FROM {RUNTIME} r LEFT JOIN StringIds s ON s.id = r.nameId""").fetchone()
    return calls, launches


def _no_kernels(path: Path, conn: sqlite3.Connection, have: set[str], copies: int = 0) -> None:
    """Launch calls without kernel records: the GPU side was not traced (or lost). Never a silent empty report."""
    calls, launches = _launch_calls(conn, have)
    refuse_launches(path, calls, launches, copies,
                    "nsys profile --trace=cuda; a job killed before nsys finished loses it")


_VERSION = re.compile(r"_v\d+$")  # cudaMalloc_v3020 → cudaMalloc


def _without_kernel_table(conn: sqlite3.Connection, have: set[str]) -> str:
    """What an export without a kernel table (and without launch calls) holds, in one line."""
    calls, _ = _launch_calls(conn, have)
    if not calls:
        return ("Nsight Systems export without a CUPTI_ACTIVITY_KIND_KERNEL table (was CUDA tracing on? nsys profile "
                "--trace=cuda)")
    return _traced_no_kernel(conn, have, calls)


def _traced_no_kernel(conn: sqlite3.Connection, have: set[str], calls: int) -> str:
    """CUDA API calls (none a launch) but no kernel: CUDA was traced and the job launched no kernel while it was
    profiled (copies and sets said with them) — whether or not nsys wrote an empty kernel table. Never "was CUDA
    traced?": its own rows say it was."""
    names = conn.execute(f"SELECT {cut('s.value')}, COUNT(*) FROM {RUNTIME} r LEFT JOIN StringIds s ON s.id = r.nameId "
                         "GROUP BY 1 ORDER BY 2 DESC, 1").fetchall()
    top = ", ".join(_VERSION.sub("", n or "?") + (f" ×{c:,}" if c > 1 else "") for n, c in names[:3]) + \
        (", …" if len(names) > 3 else "")
    gpu_rows = conn.execute(f"SELECT {cut('name')} FROM TARGET_INFO_GPU").fetchall() \
        if "TARGET_INFO_GPU" in have and "name" in columns(conn, "TARGET_INFO_GPU") else []
    gpu = gpu_rows[0][0] if len(gpu_rows) == 1 and gpu_rows[0][0] else "the GPU"
    found = [f"{n:,} {one if n == 1 else many}" for table, one, many in ((MEMCPY, "copy", "copies"),
                                                                          (MEMSET, "memset", "memsets"))
             if table in have and (n := conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])]
    on_gpu = f"{gpu} recorded {' and '.join(found)} but no kernel" if found else f"{gpu} recorded nothing"
    return (f"no kernel ran while the job was profiled: CUDA was traced ({calls:,} CUDA API calls, none a kernel "
            f"launch: {top}) and {on_gpu}")


FORMAT = "nsys-sqlite"


def sniff(head: Head) -> bool:
    return bool(head.sqlite_tables & {"StringIds", "TARGET_INFO_SESSION_START_TIME"})


def session_span(conn: sqlite3.Connection, have: set[str]) -> tuple[int | None, int | None]:
    """When the profiling session started and ended (UTC ns since the epoch), where the export says: the start in
    TARGET_INFO_SESSION_START_TIME, the length in ANALYSIS_DETAILS."""
    try:
        row = conn.execute("SELECT MIN(utcEpochNs) FROM TARGET_INFO_SESSION_START_TIME").fetchone() \
            if "TARGET_INFO_SESSION_START_TIME" in have else None
        start = row[0] if row and isinstance(row[0], int) and row[0] > 0 else None
        row = conn.execute("SELECT MAX(duration) FROM ANALYSIS_DETAILS").fetchone() \
            if start is not None and "ANALYSIS_DETAILS" in have else None
    except sqlite3.Error:  # an export of another layout: which job it is of stays unknown
        return None, None
    length = row[0] if row and isinstance(row[0], int) and row[0] >= 0 else None
    return start, None if start is None or length is None else start + length


_LAUNCHED = re.compile(r"PROCESS_(\d+):(COMMAND|ARGUMENT_(\d+))")


def session_command(conn: sqlite3.Connection, have: set[str]) -> str | None:
    """The command line nsys launched ('python3 train.py --precision fp32'), from META_DATA_CAPTURE's PROCESS_0:COMMAND
    and PROCESS_0:ARGUMENT_<i> rows; None where the export has none (an attached session, an older layout). Captures
    of different jobs given together are told apart by it (report/jobs.py)."""
    if "META_DATA_CAPTURE" not in have:
        return None
    try:
        rows = conn.execute("SELECT name, value FROM META_DATA_CAPTURE WHERE name LIKE 'PROCESS_0:%'").fetchall()
    except sqlite3.Error:
        return None
    command, args = None, []
    for name, value in rows:
        m = _LAUNCHED.fullmatch(str(name))
        if m is None or value is None:
            continue
        if m.group(2) == "COMMAND":
            command = Path(str(value)).name
        else:
            args.append((int(m.group(3)), str(value)))
    return " ".join([command, *(a for _, a in sorted(args))]) if command else None


def _steps(conn: sqlite3.Connection, have: set[str], launches: int, span: tuple[int, int], graphs: str | None = None,
           kept: step_series.Given | None = None,
           meanwhile: step_series.Meanwhile = None) -> tuple[StepSeries | None, tuple[str, ...]]:
    """(the per-step series, notes): timeline/series.py over the kernel, copy and set tables and the runtime calls.
    kept: the kernel table's (pid, start, end, demangledName) columns the attribution kept (_ops), in pieces
    (timeline/series_tables.Given)."""
    if not launches:
        return None, ()
    if why := step_series.too_big(launches):
        return None, (why,)
    part = {MEMCPY: copy_part_sql("copyKind", MEMCPY_DIRECTION), MEMSET: MEMSET_PART}
    gpu = [step_series.GpuTable(t, _pid_expr(columns(conn, t)), kernel_name_column(conn) if t == KERNEL else None,
                                part.get(t, MEMSET_PART))
           for t in (KERNEL, MEMCPY, MEMSET) if t in have]
    if graphs:  # graph launches without kernels: kernels named GRAPH_NAME (their key GRAPH_KEY)
        gpu.append(step_series.GpuTable(graphs, _pid_expr({"globalPid"}), kernel_name_column(conn)))
    api = [step_series.ApiTable(RUNTIME, "((globalTid >> 24) & 16777215)", "nameId", _call_kinds)] \
        if RUNTIME in have and {"nameId", "globalTid"} <= columns(conn, RUNTIME) else []
    given = {KERNEL: kept} if kept is not None and kernel_name_column(conn) == "demangledName" and \
        gpu and gpu[0].pid == _pid_expr({"globalPid"}) else None  # the attribution's columns are the series'
    series = step_series.measure(conn, gpu, api, nvtx_ranges_sql(conn, have), "all" if api else "none",
                                 functools.partial(_names, conn), span, launches, given, meanwhile)
    return series, ()


def _steps_alone(path: Path, have: set[str], span: tuple[int, int], graphs: str | None,
                 launches: int) -> tuple[StepSeries | None, tuple[str, ...]]:
    """_steps on a connection of its own (step_series.Ahead's forked worker)."""
    with opened(path, "Nsight Systems") as conn:
        return _steps(conn, have, launches, span, graphs)


def _names(conn: sqlite3.Connection, keys: list[Any]) -> dict[Any, str]:
    """Kernel names of name keys (StringIds ids), the graph launches' GRAPH_KEY among them."""
    names = kernel_names(conn, [k for k in keys if k != graph_launches.GRAPH_KEY])
    return {**names, graph_launches.GRAPH_KEY: graph_launches.GRAPH_NAME} if graph_launches.GRAPH_KEY in keys \
        else names


def _call_kinds(conn: sqlite3.Connection, keys: list[Any]) -> dict[Any, str]:
    """The text/cuda_calls kind of each runtime call's nameId (the capture's SQL values)."""
    ids = ",".join(str(int(k)) for k in keys if isinstance(k, int)) or "NULL"
    rows = conn.execute(f"SELECT id, {cut('value')} FROM StringIds WHERE id IN ({ids})")
    return {i: kind_of(name) for i, name in rows}


def read(path: Path, window: Window | None = None) -> Capture:
    try:
        # writes pending beside it (a journal, a WAL): read as SQLite would recover them
        with recover.readable(path), opened(path, "Nsight Systems") as conn:
            return _read(conn, path, window)
    except BadInput as e:
        raise BadInput(path, e.why) from None

def _read(conn: sqlite3.Connection, path: Path, window: Window | None) -> Capture:
    have = tables(conn)
    if KERNEL not in have:
        _no_kernels(path, conn, have)
        raise BadInput(path, _without_kernel_table(conn, have))
    graphs = graph_launches.uncovered(conn, have, KERNEL, kernel_name_column(conn))
    gpu_tables = [t for t in (KERNEL, MEMCPY, MEMSET) if t in have] + ([graphs] if graphs else [])
    span = window_bounds(conn, window, gpu_tables, nvtx_ranges_sql(conn, have)) if window else EVERYTHING
    warmup: tuple[WarmupAgg, ...] = ()
    program = None
    if span == EVERYTHING and (window is None or not window.warmup):  # no window asked: a JAX job's warm-up apart
        span, warmup, program = _warmup(conn, have, graphs)
    whole = span == EVERYTHING
    fused = whole and _fusable(conn, have)  # the attribution takes the kernels' busy time as it reads them
    busy_time = BusyTime(conn, path, _busy_sources(conn, have, graphs), span,  # side by side with the rest
                         fused=KERNEL if fused else None)
    # the attribution keeps the kernel columns the series reads, where the series is measured here, after it
    kept: dict[str, Any] = {}
    try:  # the busy time's workers are ended if the series' cannot start
        ahead = step_series.Ahead(path, lambda: int(conn.execute(f"SELECT COUNT(*) FROM {KERNEL}").fetchone()[0]),
                                  functools.partial(_steps_alone, path, have, span, graphs),  # the series too
                                  lambda n, meanwhile: _steps(conn, have, n, span, graphs, kept.get("kernels"),
                                                              meanwhile),
                                  from_launches=step_series.AHEAD_LAUNCHES)
    except BaseException:
        busy_time.abandon()
        raise
    copies: Forked | None = None
    try:
        keep = ahead.work is None and span == EVERYTHING and step_series.numpy_here(
            lambda: int(conn.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {KERNEL}").fetchone()[0]))
        # Fused, the busy time's child soon has nothing left to read, and the sweep of the ranges holds this process:
        # the copies' aggregates are read beside it (0.05-0.06 s at 2M launches on 2 cores).
        copies = Forked(_memops_alone, path, have, in_window(span),
                        inline=not fused or path.stat().st_size < BIG)
        # attribute's launches lent to main threads, kernels without a duration, whether a range holds shapes
        lent: dict[str, Any] = {}
        lanes: dict[str, Any] = {}  # the kernels' busy-time islands, where fused
        # SOUND gives what sql_duration's choice gives: PLAIN's values where every duration is usable.
        attributed = _ops(conn, have, path, on(SOUND, "k"), in_window(span, "k"), lent, kept if keep else None,
                          lanes if fused else None)
        busy_time.given(lanes.get("kernels"))
        memops, mem_notes = copies.result()
        if attributed is not None and whole and "no_duration" in lent:
            # the compiled pass counted them while reading every kernel: no scan of its own (1.8 s at 5M)
            kernel_note = note(lent["no_duration"], "kernel", clock=True) if lent["no_duration"] else None
        else:
            dur, kernel_note = sql_duration(conn, KERNEL, "kernel")
        kernels, ops = attributed if attributed is not None else (_kernels(conn, dur, in_window(span)), ())
        attributed_ns = sum(k.total_ns or 0 for k in kernels)  # what attribute's lent is a part of (borrowed_note)
        if graphs:
            kernels = merge_kernels(kernels + graph_launches.aggregates(conn, graphs, SOUND, in_window(span)))
        # --annotate torch's shapes: not looked for again where the compiled attribution's names hold none
        flops = _nvtx_flops.nsys(conn, have, nvtx_ranges_sql(conn, have), on(SOUND, "k"), span) \
            if _nvtx_flops.may_hold_shapes(lent.get("found")) else ()
        # where in XLA's CUDA graphs each kernel ran: with the dump, a cuBLAS kernel's custom call (its FLOPs)
        graph_nodes = _xla_graphs.nodes(conn, have, nvtx_ranges_sql(conn, have), kernel_name_column(conn), SOUND,
                                        in_window(span))
        set_apart: tuple[WarmupAgg, ...] = ()
        if program is not None:  # compiling and autotuning after the first step (a later jit call) apart too
            kernels, ops, set_apart = _xla_warmup.split(kernels, ops, program, _autotuner)
            warmup += set_apart
    except BaseException:
        busy_time.abandon()
        ahead.abandon()
        if copies is not None:
            copies.cancel()
        raise
    try:  # the series' worker is ended on any error before its result
        busy = _activity(busy_time.result())
        if not kernels and window is None:  # (a window without kernels: readers.read says so)
            _no_kernels(path, conn, have, sum(m.count for m in memops))
            if calls := _launch_calls(conn, have)[0]:
                raise BadInput(path, _traced_no_kernel(conn, have, calls))
        pids = {k.pid for k in kernels if k.pid is not None} | {m.pid for m in memops if m.pid is not None}
        gpus = _devices(conn, have)
        lost = f"{'an empty' if 'TARGET_INFO_GPU' in have else 'no'} TARGET_INFO_GPU table: GPU models unknown"
        notes = (() if gpus else (lost,)) + \
            ((kernel_note,) if kernel_note else ()) + mem_notes + \
            borrowed_note(lent, attributed_ns, with_warmup=bool(set_apart)) + \
            ((graph_launches.note(kernels),) if any(k.name == graph_launches.GRAPH_NAME for k in kernels)
             else ()) + \
            _lost_names_note(kernels)
        started, ended = session_span(conn, have)
        hw_dev, hw_k, hw_s, hw_notes = hw_sources.of(
            conn, have, path, KERNEL, "deviceId", kernel_name_column(conn), started, None if whole else span,
            lambda keys: kernel_names(conn, keys))
    except BaseException:
        ahead.abandon()
        raise
    # the kernel names classified while the series' worker runs (the report's evidence then finds them classified)
    series, series_notes = ahead.result(sum(k.launches for k in kernels),
                                        meanwhile=lambda: classify_meanwhile(k.name for k in kernels))
    return Capture(str(path), "nsys-sqlite", kernels, memops, busy, gpus,
                   _processes(conn, have, pids), ops=ops, notes=notes + hw_notes + series_notes,
                   started_ns=started, ended_ns=ended, command=session_command(conn, have), hw_devices=hw_dev,
                   hw_kernels=hw_k, hw_series=hw_s, series=series, warmup=warmup, op_flops=flops,
                   graph_nodes=graph_nodes)


def _warmup(conn: sqlite3.Connection, have: set[str],
            graphs: str | None) -> tuple[tuple[int, int], tuple[WarmupAgg, ...], str | None]:
    """(the span to read, the kernels left out, the JAX program whose first execution ends the warm-up): from that
    execution (readers/_xla_warmup.py) when kernels ran before it and after it; else the whole capture."""
    found = _xla_warmup.first_execution(conn, have, nvtx_ranges_sql(conn, have))
    if found is None:
        return EVERYTHING, (), None
    program, lo = found
    later = [f"SELECT 1 FROM {t} WHERE start >= {lo}" for t in [KERNEL, *([graphs] if graphs else [])]]
    # the cheap look first: without kernels after the first execution nothing is left out, and the warm-up's
    # aggregation (a GROUP BY over every launch before it) is not needed
    if conn.execute(f"SELECT 1 WHERE EXISTS ({' UNION ALL '.join(later)})").fetchone() is None:
        return EVERYTHING, (), program
    before = _kernels(conn, SOUND, f"start < {lo}") + \
        (graph_launches.aggregates(conn, graphs, SOUND, f"start < {lo}") if graphs else ())
    if not before:
        return EVERYTHING, (), program
    return (lo, EVERYTHING[1]), tuple(WarmupAgg(k.pid, k.device_id, k.name, k.launches, k.total_ns, program)
                                      for k in merge_kernels(before)), program


def _lost_names_note(kernels: tuple[KernelAgg, ...]) -> tuple[str, ...]:
    lost = [k for k in kernels if k.name == LOST_NAME_KERNEL]
    if not lost:
        return ()
    ns, every = sum(k.total_ns or 0 for k in lost), sum(k.total_ns or 0 for k in kernels) or 1
    return ((f"{sum(k.launches for k in lost):,} kernel launches ({ns / every:.1%} of kernel time) have no name in the "
            "export (StringIds id 0, nsys' own first string): nsys lost them while importing — its errors are in the "
            "run's log; counted as one kernel of unknown kind"),)


@functools.lru_cache(maxsize=4096)
def _autotuner(name: str) -> bool:
    """Whether a kernel is XLA's autotuner's own (rules.toml: a family marked warmup)."""
    return classify(name).family in WARMUP_FAMILIES
