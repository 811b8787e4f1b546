"""Store rows → Report. Pure: no printing, no files; every number comes from an SQL aggregate."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from nvprof_wrap.analysis.hints import hints
from nvprof_wrap.classify import RULES_VERSION, classify
from nvprof_wrap.classify.rank import decide, gpu_facts
from nvprof_wrap.errors import BadInput
from nvprof_wrap.names import shorten
from nvprof_wrap.store import Store

MEM_ORDER = ("HtoD", "DtoH", "DtoD", "PtoP", "HtoH", "other")

# Kernel time comes from timeline captures; the launches that counter tools (ncu, nvprof --metrics) replayed
# count only when nothing else was read.
_COUNTER_ONLY = "('ncu-csv', 'ncu-console', 'nvprof-metrics')"
_TIMED = f"""(SELECT * FROM kernels WHERE capture_id IN (SELECT id FROM captures WHERE format NOT IN {_COUNTER_ONLY})
             OR NOT EXISTS (SELECT 1 FROM captures WHERE format NOT IN {_COUNTER_ONLY}))"""


@dataclass(frozen=True)
class KernelRow:
    name: str
    launches: int
    total_ns: int
    mean_ns: float
    share: float
    tensor_core: str
    precision: str
    family: str
    reason: str
    evidence: str
    name_verdict: str
    counter_verdict: str | None = None
    counter_detail: str | None = None
    name_rule: str = ""
    flag: str = ""  # the name claims what its GPU cannot run (classify/rank.py)

    @property
    def short(self) -> str:
        return shorten(self.name, 48)


@dataclass(frozen=True)
class SplitRow:
    category: str
    total_ns: int
    share: float
    count: int


@dataclass(frozen=True)
class GroupRow:
    """Per device or per process: where kernel time went and how busy the GPU was."""

    key: str
    label: str
    launches: int
    kernel_ns: int
    tc_ns: int
    tc_share: float
    precisions: str
    busy_ns: int | None
    span_ns: int | None
    idle_share: float | None


@dataclass(frozen=True)
class OpRow:
    """Kernels attributed to one framework op / layer (an NVTX range) and what ran on tensor cores."""

    op: str
    kernels: int
    launches: int
    total_ns: int
    share: float
    tc_share: float
    precisions: str  # of all its kernels, by time, e.g. "fp16 78% + fp32 22%"


@dataclass(frozen=True)
class Verdict:
    tensor_cores: str  # "yes" | "no" | "unknown" | "no-kernels"
    message: str
    tc_kernels: int
    kernels: int
    launches: int
    kernel_ns: int
    tc_ns: int
    unknown_ns: int
    tc_fraction: float
    precisions: tuple[str, ...]


@dataclass(frozen=True)
class Source:
    path: str
    format: str
    partial: bool
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Report:
    verdict: Verdict
    split: tuple[SplitRow, ...]
    devices: tuple[GroupRow, ...]
    processes: tuple[GroupRow, ...]
    kernels: tuple[KernelRow, ...]
    sources: tuple[Source, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    disagreements: tuple[KernelRow, ...] = ()
    ops: tuple[OpRow, ...] = ()
    scopes: tuple[OpRow, ...] = ()
    hints: tuple[str, ...] = ()
    rules_version: str = RULES_VERSION
    extra: dict = field(default_factory=dict)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if x >= 0.001 or x == 0 else "<0.1%"


def _kernels(store: Store, total: int) -> tuple[KernelRow, ...]:
    rows = store.rows(f"""
        SELECT k.name, SUM(k.launches) AS launches, COALESCE(SUM(k.total_ns), 0) AS total_ns,
               v.tensor_core, v.precision, v.family, v.reason, v.evidence, v.name_verdict,
               v.counter_verdict, v.counter_detail, v.rule, MAX(v.flag) AS flag
        FROM {_TIMED} k JOIN {_V} v ON {_ON_K}
        GROUP BY k.name, v.tensor_core, v.reason ORDER BY total_ns DESC, launches DESC, k.name""")
    return tuple(KernelRow(r["name"], r["launches"], r["total_ns"], r["total_ns"] / max(r["launches"], 1),
                           r["total_ns"] / total if total else 0.0, r["tensor_core"], r["precision"] or "",
                           r["family"], r["reason"], r["evidence"], r["name_verdict"], r["counter_verdict"],
                           r["counter_detail"], r["rule"] or "", r["flag"] or "") for r in rows)


def _split(store: Store, kernels: tuple[KernelRow, ...]) -> tuple[SplitRow, ...]:
    by_tc = {"yes": [0, 0], "no": [0, 0], "unknown": [0, 0], "comm": [0, 0]}
    for k in kernels:
        key = "comm" if k.family == "nccl" else k.tensor_core
        by_tc[key][0] += k.total_ns
        by_tc[key][1] += k.launches
    mem = store.rows("""SELECT kind, direction, SUM(total_ns) AS ns, SUM(count) AS n FROM memops
                        GROUP BY kind, direction""")
    rows = [("tensor-core kernels", *by_tc["yes"]), ("other kernels (CUDA cores)", *by_tc["no"]),
            ("kernels of unknown kind", *by_tc["unknown"]), ("communication kernels (NCCL)", *by_tc["comm"])]
    for d in MEM_ORDER:
        rows += [(f"memcpy {d}", m["ns"], m["n"]) for m in mem if m["kind"] == "memcpy" and m["direction"] == d]
    rows += [("memset", m["ns"], m["n"]) for m in mem if m["kind"] == "memset"]
    total = sum(r[1] for r in rows) or 1
    return tuple(SplitRow(c, ns, ns / total, n) for c, ns, n in rows if n)


def _groups(store: Store, key: str) -> tuple[GroupRow, ...]:
    """key: 'device_id' or 'pid'."""
    kern = store.rows(f"""
        SELECT k.{key} AS g, SUM(k.launches) AS launches, COALESCE(SUM(k.total_ns), 0) AS ns,
               COALESCE(SUM(CASE WHEN v.tensor_core = 'yes' THEN k.total_ns END), 0) AS tc_ns
        FROM {_TIMED} k JOIN {_V} v ON {_ON_K} GROUP BY k.{key} ORDER BY k.{key}""")
    # tensor-core precisions of each group, the one with the most time first
    prec: dict = {}
    for r in store.rows(f"""
            SELECT k.{key} AS g, v.precision AS p, SUM(k.total_ns) AS ns FROM {_TIMED} k JOIN {_V} v ON {_ON_K}
            WHERE v.tensor_core = 'yes' AND v.precision != '' GROUP BY 1, 2 ORDER BY 1, 3 DESC, 2"""):
        prec.setdefault(r["g"], []).append(r["p"])
    # Spans are summed per capture: captures of different processes have different clocks and lifetimes.
    act = {r["g"]: r for r in store.rows(f"""
        SELECT g, SUM(busy) AS busy, SUM(span) AS span FROM
          (SELECT capture_id, {key} AS g, SUM(busy_ns) AS busy, MAX(last_ns) - MIN(first_ns) AS span
           FROM activity GROUP BY capture_id, {key}) GROUP BY g""")}
    labels = _labels(store, key)
    out = []
    for r in kern:
        a = act.get(r["g"])
        busy, span = (min(a["busy"], a["span"]), a["span"]) if a and a["span"] else (None, None)
        out.append(GroupRow(str(r["g"]), labels.get(r["g"], ""), r["launches"], r["ns"], r["tc_ns"],
                            r["tc_ns"] / r["ns"] if r["ns"] else 0.0, ",".join(prec.get(r["g"], ())),
                            busy, span, 1 - busy / span if span else None))
    return tuple(out)


def _labels(store: Store, key: str) -> dict:
    if key == "device_id":
        rows = store.rows("""SELECT device_id AS g, MAX(name) AS name, MAX(cc_major) AS ma, MAX(cc_minor) AS mi
                             FROM devices GROUP BY device_id""")
        return {r["g"]: f"{r['name'] or 'GPU'}" + (f" (sm_{r['ma']}{r['mi'] or 0})" if r["ma"] is not None else "")
                for r in rows}
    rows = store.rows("SELECT pid AS g, MAX(name) AS name, MAX(rank) AS rank FROM processes GROUP BY pid")
    return {r["g"]: " ".join(x for x in ((r["name"] or "")[:40], f"rank {r['rank']}" if r["rank"] is not None else "") if x)
            for r in rows}


_UNTIMED = ("kernel time was not captured (the export has no duration), so no time shares: "
            "add gpu__time_duration.sum or the SpeedOfLight section, or read a timeline capture beside it")


def _untimed(v: Verdict) -> Verdict:
    """The verdict of kernels whose capture recorded launches but no durations: counts, never '0.0% of time'."""
    if v.tensor_cores == "yes":
        msg = (f"Tensor cores used: yes — {v.tc_kernels} of {v.kernels} kernels, "
               f"{' + '.join(v.precisions) or 'precision unstated'}; {_UNTIMED}")
    elif v.tensor_cores == "no":
        msg = f"Tensor cores used: no — none of the {v.kernels} kernels is a tensor-core kernel; {_UNTIMED}"
    elif v.tensor_cores == "unknown":
        n = v.kernels - v.tc_kernels
        msg = (f"Tensor cores used: not seen — no kernel is known to use them, but some of the {n} kernels carry no "
               f"evidence in their names; {_UNTIMED}")
    else:
        return v
    return Verdict(v.tensor_cores, msg, v.tc_kernels, v.kernels, v.launches, 0, 0, 0, 0.0, v.precisions)


def _verdict(kernels: tuple[KernelRow, ...]) -> Verdict:
    total = sum(k.total_ns for k in kernels)
    tc = [k for k in kernels if k.tensor_core == "yes"]
    tc_ns, unk_ns = sum(k.total_ns for k in tc), sum(k.total_ns for k in kernels if k.tensor_core == "unknown")
    prec: dict[str, int] = {}
    for k in tc:
        prec[k.precision or "unstated"] = prec.get(k.precision or "unstated", 0) + k.total_ns
    precisions = tuple(sorted(prec, key=lambda p: -prec[p]))
    frac = tc_ns / total if total else 0.0
    launches = sum(k.launches for k in kernels)
    if not kernels:
        status, msg = "no-kernels", ("No GPU kernels were recorded. Did the job run on the GPU? (Check that the "
                                     "framework sees a GPU, and that the profiler traced CUDA.)")
    elif tc:
        status, msg = "yes", (f"Tensor cores used: yes — {len(tc)} of {len(kernels)} kernels, {_pct(frac)} of GPU "
                              f"kernel time, {' + '.join(precisions)}")
    elif unk_ns or any(k.tensor_core == "unknown" for k in kernels):
        n = sum(k.tensor_core == "unknown" for k in kernels)
        status, msg = "unknown", (f"Tensor cores used: not seen — no kernel is known to use them, but {n} "
                                  f"{'kernel' if n == 1 else 'kernels'} "
                                  f"({_pct(unk_ns / total if total else 0)} of kernel time) carry no evidence in their "
                                  "names; nvprof-wrap verify measures them with counters")
    else:
        status, msg = "no", (f"Tensor cores used: no — none of the {len(kernels)} kernels is a tensor-core kernel; "
                             f"kernel time by precision: {_mix(kernels, total)}")
    return Verdict(status, msg, len(tc), len(kernels), launches, total, tc_ns, unk_ns, frac, precisions)


def _mix(kernels: tuple[KernelRow, ...], total: int) -> str:
    by: dict[str, int] = {}
    for k in kernels:
        by[k.precision or "unstated"] = by.get(k.precision or "unstated", 0) + k.total_ns
    top = sorted(by.items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"{p} {_pct(ns / total if total else 0)}" for p, ns in top)


_V = "temp.t_verdicts"
_ON_K = "v.capture_id = k.capture_id AND v.device_id IS k.device_id AND v.name = k.name"
_VERDICT_COLS = ("tensor_core", "precision", "family", "reason", "rule", "evidence", "name_verdict",
                 "counter_verdict", "counter_detail", "flag")


def _verdicts(store: Store) -> None:
    """temp.t_verdicts: one row per (capture, device, kernel name), every kind of evidence ranked by
    classify.rank.decide — computed once per distinct (name, GPU generation), never per launch."""
    store.classify_pending()
    names = {r["name"]: r for r in store.rows(
        "SELECT * FROM classifications WHERE rules_version = ?", [RULES_VERSION])}
    counters = {r["name"]: (r["tc"], r["detail"]) for r in store.rows("""
        SELECT name, CASE WHEN SUM(tensor_core = 'yes') > 0 THEN 'yes'
                          WHEN SUM(tensor_core = 'no') = COUNT(*) THEN 'no' ELSE 'unknown' END AS tc,
               MAX(detail) AS detail FROM counters GROUP BY name""")}
    static = {r["name"]: (r["tensor_core"], r["detail"]) for r in store.rows("SELECT * FROM static_evidence")}
    rows = store.rows("""
        SELECT k.capture_id, k.device_id, k.name, MAX(d.cc_major) AS ma, MAX(d.cc_minor) AS mi, MAX(d.name) AS gpu
        FROM (SELECT DISTINCT capture_id, device_id, name FROM kernels) k
        LEFT JOIN devices d ON d.capture_id = k.capture_id AND d.device_id = k.device_id
        GROUP BY k.capture_id, k.device_id, k.name""")
    cache: dict[tuple, tuple] = {}
    out = []
    for r in rows:
        cc = r["ma"] + (r["mi"] or 0) / 10 if r["ma"] is not None else None
        key = (r["name"], cc, r["gpu"])
        if key not in cache:
            n = names.get(r["name"])
            c = classify(r["name"]) if n is None else _classification(n)
            v = decide(c, cc, counters.get(r["name"]), static.get(r["name"]), r["gpu"])
            cache[key] = tuple(getattr(v, col) for col in _VERDICT_COLS)
        out.append((r["capture_id"], r["device_id"], r["name"], *cache[key]))
    db = store.db.conn
    db.execute("DROP TABLE IF EXISTS temp.t_verdicts")
    db.execute(f"CREATE TEMP TABLE t_verdicts (capture_id, device_id, name, {', '.join(_VERDICT_COLS)})")
    db.executemany(f"INSERT INTO temp.t_verdicts VALUES ({', '.join('?' * (3 + len(_VERDICT_COLS)))})", out)
    db.execute("CREATE INDEX temp.t_verdicts_key ON t_verdicts (capture_id, name, device_id)")


def _classification(row: dict):
    from nvprof_wrap.model import Classification

    return Classification(row["name"], row["tensor_core"], row["precision"] or "", row["family"], row["reason"],
                          row["rule"] or "")


def build(store: Store, skipped: tuple[tuple[str, str], ...] = ()) -> Report:
    damage = store.damage()
    if damage:
        raise BadInput(store.path, damage)
    _verdicts(store)
    total = store.rows(f"SELECT COALESCE(SUM(total_ns), 0) AS t FROM {_TIMED}")[0]["t"]
    kernels = _kernels(store, total)
    sources = tuple(Source(r["path"], r["format"], bool(r["partial"]), tuple(_json_list(r["notes"])))
                    for r in store.rows("SELECT path, format, partial, notes FROM captures ORDER BY id"))
    disagreements = tuple(k for k in kernels if k.evidence in ("counters", "compiled code") and k.name_verdict != "unknown"
                          and k.tensor_core != k.name_verdict)
    ops, scopes = _ops(store, "op"), _ops(store, "scope")
    if [o.op for o in ops] == [o.op for o in scopes]:
        scopes = ()  # one level of ranges only: the scope table would repeat the op table
    split, devices = _split(store, kernels), _groups(store, "device_id")
    device_cc = {}
    for r in store.rows("SELECT device_id AS d, MAX(name) AS name, MAX(cc_major) AS ma, MAX(cc_minor) AS mi "
                        "FROM devices GROUP BY 1"):
        cc, _ = gpu_facts(r["ma"] + (r["mi"] or 0) / 10 if r["ma"] is not None else None, r["name"])
        device_cc[r["d"]] = (r["name"], cc)
    verdict = _verdict(kernels)
    untimed = store.rows(f"SELECT COUNT(*) AS n FROM {_TIMED} WHERE total_ns IS NULL")[0]["n"]
    if untimed and not total:
        verdict = _untimed(verdict)
    return Report(verdict, split, devices, _groups(store, "pid"), kernels, sources, skipped, disagreements,
                  ops, scopes, hints(kernels, split, devices, device_cc))


def _ops(store: Store, column: str) -> tuple[OpRow, ...]:
    rows = store.rows(f"""
        SELECT o.{column} AS op, o.name, SUM(o.launches) AS launches, SUM(o.total_ns) AS ns, v.tensor_core, v.precision
        FROM ops o JOIN (SELECT * FROM {_V} GROUP BY capture_id, name) v
             ON v.capture_id = o.capture_id AND v.name = o.name GROUP BY o.{column}, o.name""")
    by: dict[str, dict] = {}
    for r in rows:
        g = by.setdefault(r["op"], {"kernels": 0, "launches": 0, "ns": 0, "tc": 0, "prec": {}})
        g["kernels"] += 1
        g["launches"] += r["launches"]
        g["ns"] += r["ns"] or 0
        g["tc"] += (r["ns"] or 0) if r["tensor_core"] == "yes" else 0
        p = r["precision"] or "unstated"
        g["prec"][p] = g["prec"].get(p, 0) + (r["ns"] or 0)
    total = sum(g["ns"] for g in by.values()) or 1
    out = [OpRow(op, g["kernels"], g["launches"], g["ns"], g["ns"] / total, g["tc"] / g["ns"] if g["ns"] else 0.0,
                 " + ".join(f"{p} {_pct(ns / g['ns'] if g['ns'] else 0)}" for p, ns in
                            sorted(g["prec"].items(), key=lambda kv: -kv[1])))
           for op, g in by.items()]
    return tuple(sorted(out, key=lambda o: -o.total_ns))


def _json_list(text: str | None) -> list[str]:
    try:
        v = json.loads(text or "[]")
        return [str(x) for x in v] if isinstance(v, list) else []
    except ValueError:
        return []
