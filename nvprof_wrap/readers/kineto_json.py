"""PyTorch profiler / Kineto Chrome-trace JSON (``.json`` or ``.json.gz``), read in one streamed pass.

GPU events carry ``cat`` kernel / gpu_memcpy / gpu_memset (older traces: Kernel / Memcpy / Memset),
``dur`` and ``ts`` in microseconds, and the device in ``args.device`` (``pid`` is the device for
GPU rows). One pass over the events (readers/_trace_events.py) writes four small-row tables to a temporary
on-disk SQLite file — kernels (correlation, device, name id, start, end), copies and sets, the runtime and driver
calls (correlation, thread, time) and the CPU op / annotation ranges — and SQL does the rest: aggregates per
(device, name), the busy-time union, the ops that launched each kernel, and a window (--window / --steps).
Nothing is held per event in Python.
"""
from __future__ import annotations

import functools
import gzip
import json
import math
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import ijson

from nvprof_wrap.classify.engine import classify_meanwhile
from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Activity, Capture, Gpu, KernelAgg, MemAgg, OpAgg, Process, StepSeries, merge_kernels
from nvprof_wrap.readers._bounded import Mended, open_json
from nvprof_wrap.readers._head import Head
from nvprof_wrap.readers._kineto_flops import op_flops
from nvprof_wrap.readers._kineto_rows import CALL_KINDS, Rows, scan, temp_folder
from nvprof_wrap.readers._no_kernels import LAUNCH_NAME, refuse_launches
from nvprof_wrap.readers._vendor import ROCM_KEYS, refuse_other_vendor, rocm_capture
from nvprof_wrap.run.steps import could_mark_a_step
from nvprof_wrap.system.fork import BIG
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline import series as step_series
from nvprof_wrap.timeline.busy import BusyTime
from nvprof_wrap.timeline.nvtx import attribute, borrowed_note
from nvprof_wrap.timeline.series_tables import MEMSET_PART, copy_part_sql
from nvprof_wrap.timeline.sql import EVERYTHING, connect_ro, in_window, window_bounds
from nvprof_wrap.timeline.window import Window, step_bounds

_HEADER_KEYS = ("deviceProperties", "distributedInfo", *ROCM_KEYS)


def _header(path: Path, tail: bytes, finite: bool = False) -> dict[str, Any]:
    """deviceProperties and distributedInfo: usually written before traceEvents, so one short parse
    that stops at traceEvents finds them; otherwise in the last 256 KiB of the stream (``tail``). Values as JSON
    has them."""
    found: dict[str, Any] = {}
    with open_json(path, finite=finite) as f:
        builders: dict[str, ijson.ObjectBuilder] = {}
        for prefix, event, value in ijson.parse(f, use_float=True):
            top = prefix.split(".", 1)[0]
            if top in ("traceEvents", "item"):  # the events (an array form's are its items): no header after them
                break
            if top in _HEADER_KEYS:
                b = builders.setdefault(top, ijson.ObjectBuilder())
                b.event(event, value)
        found = {k: b.value for k, b in builders.items()}
    missing = [k for k in _HEADER_KEYS if k not in found]
    if missing:
        found.update(_tail_keys(tail, missing))
    return found


def _tail_keys(tail: bytes, keys: list[str]) -> dict[str, Any]:
    """Keys written after traceEvents (inference_rank_1 puts distributedInfo last): looked for in the last
    256 KiB of the stream, which the events' pass kept, instead of parsing the whole trace a second time."""
    text, out = tail.decode("utf-8", errors="replace"), dict[str, Any]()
    decoder = json.JSONDecoder()
    for key in keys:
        at = text.rfind(f'"{key}"')
        colon = text.find(":", at + len(key) + 2) if at >= 0 else -1
        if colon < 0:
            continue
        try:
            out[key] = decoder.raw_decode(text, colon + 1 + (len(text[colon + 1:]) - len(text[colon + 1:].lstrip())))[0]
        except ValueError:
            continue
    return out


def _devices(props: object) -> tuple[Gpu, ...]:
    """The GPUs of deviceProperties (a JSON list of objects; anything else names none). A number that is none (a
    computeMajor of "eight") is refused naming its field: it had come out as "expected a number, found str"."""
    out = []
    for i, p in enumerate(props if isinstance(props, list) else []):
        if not isinstance(p, dict):
            continue
        for key in ("id", "computeMajor", "computeMinor", "numSms"):
            v = p.get(key)
            if v is not None and (type(v) not in (int, float) or abs(v) > 1 << 31 or not math.isfinite(v)):
                raise BadInput(None, f"deviceProperties[{i}].{key} is {json.dumps(v)[:40]}, not a number")
        out.append(Gpu(int(p.get("id", i)), p.get("name"), p.get("computeMajor"), p.get("computeMinor"),
                       p.get("numSms")))
    return tuple(out)


FORMAT = "kineto-json"


def sniff(head: Head) -> bool:
    return bool(head.json_start) and (b"traceEvents" in head.raw or head.json_start == b"[")


def read(path: Path, window: Window | None = None) -> Capture:
    folder = temp_folder()
    try:
        try:
            rows, header, cut = _scanned(path, folder)
        except (ijson.JSONError, OSError, EOFError, ValueError, TypeError) as e:
            raise BadInput(path, f"not a readable Kineto/Chrome trace JSON ({_why(e)})") from None
        try:
            refuse_other_vendor(path, header)
            if not rows.names and rows.on_gpu:
                with open_json(path) as f:
                    if why := rocm_capture(f.read(65536)):  # rocprof --hip-trace: its own event shape
                        raise BadInput(path, why)
                raise BadInput(path, f"Chrome trace with {rows.on_gpu} events on GPU processes but none a kernel this "
                                     "reader knows (no 'cat' kernel / Kernel): not a PyTorch profiler trace")
            return _capture(path, rows, header, cut, window)
        finally:
            rows.db.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _why(e: BaseException) -> str:
    """What stopped the parser, said plainly: the JSON parser's message as text on one line (it came as the repr of
    bytes: "b'lexical error: invalid bytes in UTF8 string.\\n …'"), a gzip stream followed by bytes that are none."""
    if isinstance(e, gzip.BadGzipFile) and "Not a gzipped file" in str(e):
        return f"bytes after the end of its gzip stream that are no gzip data (junk appended to the file?): {e}"
    said = e.args[0] if e.args else ""
    text = said.decode("utf-8", errors="replace") if isinstance(said, bytes) else str(e)
    text = " ".join(text.split())
    if "invalid bytes in UTF8 string" in text:
        return f"a string holds bytes that are no UTF-8 text (saved in another encoding?): {text[:160]}"
    return f"{type(e).__name__}: {text[:240]}"


def _scanned(path: Path, folder: Path) -> tuple[Rows, dict[str, Any], Mended]:
    """_kineto_rows.scan's, with the header read; where the parser stops, read once more with non-finite numbers as
    null (Kineto's bare inf and nan: readers/_bounded.py) — the first error stands if that finds none or fails too."""
    try:
        rows, header, cut, tail = scan(path, folder)
    except BadInput:
        raise
    except (ijson.JSONError, ValueError) as first:
        again = folder / "finite"
        again.mkdir()
        try:
            rows, header, cut, tail = scan(path, again, finite=True)
        except (ijson.JSONError, ValueError):
            raise first from None
        if not cut.non_finite:
            rows.db.close()
            raise first from None
        return rows, header if rows.hashed else _header(path, tail, finite=True), cut
    return rows, header if rows.hashed else _header(path, tail), cut


def _capture(path: Path, rows: Rows, header: dict[str, Any], cut: Mended, window: Window | None) -> Capture:
    pid, db = rows.host_pid, rows.db
    span = _span(rows, window) if window else EVERYTHING
    names = {i: name for name, i in rows.names.items()}
    # The series in a forked worker (on 2 cores too, where the rows are too few for the workers below): this process
    # meanwhile aggregates, attributes and classifies the kernel names (the report's evidence then finds them
    # classified), where it would otherwise measure the series, then classify, with the other core idle.
    ahead = step_series.Ahead(rows.path, lambda: int(db.execute("SELECT COUNT(*) FROM kl").fetchone()[0]),
                              functools.partial(_steps_alone, rows, names, span),
                              lambda n, meanwhile: _steps(rows, db, names, n, span, meanwhile),
                              from_launches=step_series.AHEAD_LAUNCHES)
    # The busy-time union side by side with the rest (a forked worker for a big trace, as for SQLite captures).
    try:
        busy_time = BusyTime(db, rows.path, [("kl", "0", "dev", "1"), ("mem", "0", "dev", "0")], span)
    except BaseException:
        ahead.abandon()
        raise
    try:
        kernels = merge_kernels(KernelAgg(pid, dev, demangle(names[nid]), n, tot, mn, mx) for dev, nid, n, tot, mn, mx
                                in db.execute(f"SELECT dev, nid, COUNT(*), SUM(dur), MIN(dur), MAX(dur) FROM kl "
                                              f"WHERE {in_window(span)} GROUP BY dev, nid"))
        memops = tuple(MemAgg(pid, dev, kind, d, n, tot, nbytes) for dev, kind, d, n, tot, nbytes in db.execute(
            f"SELECT dev, kind, dir, COUNT(*), COALESCE(SUM(dur), 0), SUM(bytes) FROM mem WHERE {in_window(span)} "
            "GROUP BY dev, kind, dir"))
        lent: dict[str, int] = {}  # attribute's launches lent to the main thread (borrowed_note)
        ops = _ops(rows, pid, names, span, lent) if rows.ranges else ()
        range_names = {i: name for name, i in rows.range_names.items()}
        flops = op_flops(db, pid, lambda nid: demangle(names.get(nid) or "<unnamed kernel>"), range_names.__getitem__,
                         span)
        activity = tuple(Activity(pid, dev, a, b, busy) for _, dev, a, b, busy in busy_time.result())
        if not kernels and window is None:  # (a window without kernels: readers.read says so)
            refuse_launches(path, sum(rows.api.values()),
                            sum(n for name, n in rows.api.items() if LAUNCH_NAME.match(name)),
                            sum(m.count for m in memops),
                            "a trace exported before CUPTI flushed its buffers loses them")
    except BaseException:
        busy_time.abandon()
        ahead.abandon()
        raise
    dist = header.get("distributedInfo") or {}
    rank = dist.get("rank") if isinstance(dist, dict) else None
    notes = rows.kernel_time.notes() + rows.mem_time.notes() + \
        cut.notes() + \
        borrowed_note(lent, sum(k.total_ns or 0 for k in kernels))
    series, series_notes = ahead.result(sum(k.launches for k in kernels),
                                        meanwhile=lambda: classify_meanwhile(k.name for k in kernels))
    return Capture(str(path), "kineto-json", kernels, memops, activity, _devices(header.get("deviceProperties")),
                   (Process(pid, None, rank),) if pid is not None else (), ops=ops, notes=notes + series_notes,
                   series=series, op_flops=flops)


def _steps_alone(rows: Rows, names: dict[int, str], span: tuple[int, int],
                 launches: int) -> tuple[StepSeries | None, tuple[str, ...]]:
    """_steps on a connection of its own (step_series.Ahead's forked worker: the reader's is not to be used there)."""
    db = connect_ro(rows.path)
    try:
        return _steps(rows, db, names, launches, span)
    finally:
        db.close()


def _steps(rows: Rows, db: sqlite3.Connection, names: dict[int, str], launches: int, span: tuple[int, int],
           meanwhile: step_series.Meanwhile = None) -> tuple[StepSeries | None, tuple[str, ...]]:
    """(the per-step series, notes): timeline/series.py over the trace's tables (its ProfilerStep#N ranges; every
    CUDA runtime and driver call the trace holds, with its kind from the scan) in db, rows' file."""
    if not launches:
        return None, ()
    if why := step_series.too_big(launches):
        return None, (why,)
    p = "NULL" if rows.host_pid is None else str(int(rows.host_pid))
    db.execute("CREATE TEMP TABLE IF NOT EXISTS _nvw_rnames(id INTEGER PRIMARY KEY, name TEXT)")
    db.executemany("INSERT OR REPLACE INTO _nvw_rnames VALUES (?, ?)",
                   [(i, n) for n, i in rows.range_names.items() if could_mark_a_step(n)])
    # rt.kind: the call's kind as its index in CALL_KINDS already (an integer keeps the series' numpy read fast)
    db.execute('CREATE TEMP VIEW IF NOT EXISTS _nvw_calls AS SELECT corr, tid, t AS start, "end", kind FROM rt')
    ranges = "SELECT r.tid AS tid, r.s AS s, r.e AS e, n.name AS name FROM rng r JOIN _nvw_rnames n ON n.id = r.name"
    api = [step_series.ApiTable("_nvw_calls", p, "kind", lambda _conn, keys: {k: CALL_KINDS[k] for k in keys})] \
        if rows.api else []
    copy = copy_part_sql("dir", {d: d for d in ("HtoD", "DtoH", "DtoD", "PtoP")})
    tables = [step_series.GpuTable("kl", p, "nid"),
              step_series.GpuTable("mem", p, part=f"(CASE WHEN kind = 'memset' THEN {MEMSET_PART} ELSE {copy} END)")]
    series = step_series.measure(db, tables, api, ranges,
                             "all" if api else "none",
                             lambda keys: {k: demangle(names.get(k) or "<unnamed kernel>") for k in keys}, span,
                             launches, meanwhile=meanwhile)
    return series, ()


def _span(agg: Rows, window: Window) -> tuple[int, int]:
    """[lo, hi) of a window: from the first GPU activity, or from the step ranges (ProfilerStep#N, 'step N')."""
    if window.seconds is not None:
        return window_bounds(agg.db, window, ["kl", "mem"], None)
    if window.steps is None:  # a capture window's cut alone: it is nsys's (readers.CUT), this trace is read whole
        return EVERYTHING
    steps = {i: n for n, i in agg.range_names.items() if could_mark_a_step(n)}
    ids = ",".join(map(str, steps))
    return step_bounds(window.steps, ((steps[nid], tid, s, e) for tid, s, e, nid in
                                              agg.db.execute(f"SELECT tid, s, e, name FROM rng WHERE name IN ({ids})")))


def _ops(agg: Rows, pid: int | None, names: dict[int, str], span: tuple[int, int],
         lent: dict[str, int]) -> tuple[OpAgg, ...]:
    """Which ops launched which kernels. Each kernel's correlation id leads to the runtime or driver call that
    launched it (thread, CPU time); the op ranges open on that thread at that time are the op and its scope — the
    same attribution as for NVTX ranges (timeline/nvtx.py). Threads are keyed by pid and tid."""
    range_names = {i: name for name, i in agg.range_names.items()}
    launches = f"""SELECT {pid if pid is not None else 'NULL'} AS pid, k.dev AS dev, r.tid AS tid, r.t AS t,
                          k.nid AS key, k.dur AS dur
                   FROM kl k LEFT JOIN rt r ON r.corr = k.corr {{rslice}} WHERE {in_window(span, "k")} {{slice}}"""
    # Big traces: the segment sweep per group of threads and the launches per slice, side by side (timeline/nvtx.py)
    big = agg.path.stat().st_size >= BIG
    rows = attribute(agg.db, "SELECT tid, s, e, name FROM rng", launches, names=range_names.__getitem__, borrowed=lent,
                     reopen=(lambda: connect_ro(agg.path)) if big else None, kernel_table="kl" if big else None,
                     correlation="corr")
    return tuple(OpAgg(p, scope, op, demangle(names.get(nid) or "<unnamed kernel>"), n, tot)
                 for p, _dev, scope, op, nid, n, tot in rows)
