"""The run store's named queries: every SQL statement the evidence and report stages need lives here, so that
report.py and cli/ hold none. Aggregates are computed in SQL; Python gets a few rows per kernel name, device,
process or op — never per launch.

The per-(capture, device, name) verdicts are a temporary table (``temp.t_verdicts``) that pipeline/evidence.py
fills; the report's queries join it.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any, TypedDict, cast

# a step kernel's (capture, name id) as one integer (a capture's names are far fewer than 2^32, its id too)
_KEY = "({0}capture_id * 4294967296 + {0}name_id)"

# One row of a query, column name → SQLite value (int, float, str, bytes or None): what a SELECT gives is only known
# at run time, so its values are Any; the rows that stages other than the report read are typed records below.
Row = dict[str, Any]


class ClassificationRow(TypedDict):
    """A name-rule verdict cached for one rules version (table classifications)."""

    name: str
    rules_version: str
    tensor_core: str
    precision: str | None
    family: str
    reason: str
    rule: str | None


class HardwareKernelRow(TypedDict):
    """The hardware's tensor-pipe samples one kernel filled alone, on one GPU of one capture (table hw_kernels)."""

    capture_id: int
    device_id: int | None
    name: str
    source: str
    interval_ns: int
    samples: int
    tensor: float | None
    hmma: float | None
    imma: float | None
    dfma: float | None


class KernelGpuRow(TypedDict):
    """A distinct (capture, device, kernel name) with its GPU's compute capability (ma.mi) and name, where known."""

    capture_id: int
    device_id: int | None
    name: str
    ma: int | None
    mi: int | None
    gpu: str | None


class CaptureGpuRow(TypedDict):
    """A device as one capture states it (table devices)."""

    capture_id: int
    device_id: int
    name: str | None
    cc_major: int | None
    cc_minor: int | None


class CaptureJobRow(TypedDict):
    """What a capture says of its job (table captures), and its one process where it holds exactly one."""

    id: int
    path: str
    file: str
    started_ns: int | None
    ended_ns: int | None
    command: str | None
    ppid: int | None
    pid: int | None


class OpKernelRow(TypedDict):
    """One op (or scope) and kernel name: launches, time (None when no launch was timed) and the name's verdict."""

    op: str
    name: str
    launches: int
    ns: int | None
    tensor_core: str
    precision: str


class OpFlopsRow(TypedDict):
    """The FLOPs of the ops that launched one kernel name, in one capture (table op_flops; model.OpFlops): flops
    over total_ns is the rate the kernel achieved under those ops."""

    capture_id: int
    pid: int | None
    op: str
    name: str
    precision: str
    flops: float
    launches: int
    total_ns: int

from nvprof_wrap.run import steps

# Kernel time comes from timeline captures; the launches that counter tools (ncu, nvprof --metrics) replayed
# count only when nothing else was read.
COUNTER_ONLY_FORMATS = ("ncu-csv", "ncu-console", "nvprof-metrics")
_CO = "(" + ", ".join(f"'{f}'" for f in COUNTER_ONLY_FORMATS) + ")"
_TIMED = f"""(SELECT * FROM kernels WHERE capture_id IN (SELECT id FROM captures WHERE format NOT IN {_CO})
             OR NOT EXISTS (SELECT 1 FROM captures WHERE format NOT IN {_CO}))"""
_V = "temp.t_verdicts"
_XLA_FLOPS = "temp.t_op_flops"
_ON_K = "v.capture_id = k.capture_id AND v.device_id IS k.device_id AND v.name = k.name"
VERDICT_COLUMNS = ("tensor_core", "precision", "family", "reason", "rule", "evidence", "name_verdict",
                   "counter_verdict", "counter_detail", "flag")
_GROUP_KEYS = ("device_id", "pid")
_OP_COLUMNS = ("op", "scope")


class Queries:
    """Mixed into Store: ``rows(sql, params)`` is the one primitive they use."""

    conn: sqlite3.Connection  # Store's connection

    def rows(self, sql: str, params: Iterable[object] = ()) -> list[Row]:  # pragma: no cover - Store defines it
        raise NotImplementedError

    # -- evidence -------------------------------------------------------------------------------------
    def names_to_classify(self, rules_version: str) -> list[str]:
        return [r["name"] for r in self.rows(
            "SELECT DISTINCT name FROM kernels EXCEPT SELECT name FROM classifications WHERE rules_version = ?",
            [rules_version])]

    def classifications(self, rules_version: str) -> dict[str, ClassificationRow]:
        return {r["name"]: cast(ClassificationRow, r)
                for r in self.rows("SELECT * FROM classifications WHERE rules_version = ?", [rules_version])}

    def unknown_names(self, rules_version: str) -> set[str]:
        return {r["name"] for r in self.rows(
            "SELECT DISTINCT k.name FROM kernels k JOIN classifications c ON c.name = k.name "
            "AND c.rules_version = ? WHERE c.tensor_core = 'unknown'", [rules_version])}

    def counter_evidence(self) -> dict[str, tuple[str, str]]:
        """Per kernel name: yes if any launch executed matrix instructions, no if every launch said no."""
        return {r["name"]: (r["tc"], r["detail"]) for r in self.rows("""
            SELECT name, CASE WHEN SUM(tensor_core = 'yes') > 0 THEN 'yes'
                              WHEN SUM(tensor_core = 'no') = COUNT(*) THEN 'no' ELSE 'unknown' END AS tc,
                   MAX(detail) AS detail FROM counters GROUP BY name""")}

    def timeline_kernel_names(self) -> list[tuple[int, str]]:
        """(capture, name) of each distinct kernel of the captures that are no counter tool's (their kernels are
        the report's where any was read beside a counter tool's)."""
        return [(r["capture_id"], r["name"]) for r in self.rows(
            f"SELECT DISTINCT capture_id, name FROM kernels WHERE capture_id IN "
            f"(SELECT id FROM captures WHERE format NOT IN {_CO})")]

    def counted_kernel_names(self) -> dict[int, set[str]]:
        """{capture: its distinct kernel names} of the counter tools' captures (ncu, nvprof --metrics)."""
        out: dict[int, set[str]] = {}
        for r in self.rows(f"SELECT DISTINCT capture_id, name FROM kernels WHERE capture_id IN "
                           f"(SELECT id FROM captures WHERE format IN {_CO})"):
            out.setdefault(r["capture_id"], set()).add(r["name"])
        return out

    def top_kernel_names(self, n: int) -> list[str]:
        """The n kernel names with the most GPU time (verify measures those)."""
        return [r["name"] for r in self.rows(
            "SELECT name, SUM(total_ns) AS t FROM kernels GROUP BY name ORDER BY t DESC LIMIT ?", [n])]

    def has_counters(self) -> bool:
        return bool(self.rows("SELECT 1 FROM counters LIMIT 1"))

    def static_evidence(self) -> dict[str, tuple[str, str, str]]:
        """Per kernel name: compiled code's (tensor_core, detail, precision); precision '' where it cannot say."""
        return {r["name"]: (r["tensor_core"], r["detail"], r.get("precision") or "")
                for r in self.rows("SELECT * FROM static_evidence")}

    def hardware_evidence(self) -> dict[tuple[int, int | None, str], HardwareKernelRow]:
        """Per (capture, device, kernel name): the samples of the hardware's tensor-pipe activity it filled alone."""
        return {(r["capture_id"], r["device_id"], r["name"]): cast(HardwareKernelRow, r)
                for r in self.rows("SELECT * FROM hw_kernels")}

    def hardware_devices(self) -> list[Row]:
        """Per device and source: samples, busy samples and the sample-weighted mean activity over the busy ones."""
        return self.rows("""
            SELECT device_id, source, MIN(interval_ns) AS interval_ns, SUM(samples) AS samples,
                   SUM(busy_samples) AS busy_samples,
                   SUM(sm_busy * busy_samples) / NULLIF(SUM(busy_samples), 0) AS sm_busy,
                   SUM(tensor_busy * busy_samples) / NULLIF(SUM(busy_samples), 0) AS tensor_busy
            FROM hw_devices GROUP BY device_id, source ORDER BY device_id, source""")

    def hardware_kernels(self) -> list[Row]:
        """Per (device, kernel name, source), all captures together: samples filled alone (n), their mean activity."""
        return self.rows("""
            SELECT device_id, name, source, MIN(interval_ns) AS interval_ns, SUM(samples) AS n,
                   SUM(tensor * samples) / SUM(samples) AS tensor
            FROM hw_kernels GROUP BY device_id, name, source ORDER BY SUM(samples) DESC""")

    def hardware_coverage(self) -> dict[int, tuple[int, int]]:
        """Per device: (kernel time, kernel time of the names that filled at least one sample alone)."""
        return {r["device_id"]: (r["ns"] or 0, r["sampled"] or 0) for r in self.rows("""
            SELECT k.device_id, SUM(k.total_ns) AS ns,
                   SUM(CASE WHEN h.name IS NOT NULL THEN k.total_ns ELSE 0 END) AS sampled
            FROM kernels k LEFT JOIN (SELECT DISTINCT device_id, name FROM hw_kernels) h
                 ON h.device_id = k.device_id AND h.name = k.name
            WHERE k.device_id IN (SELECT device_id FROM hw_devices) GROUP BY k.device_id""")}

    def series_kinds(self) -> list[Row]:
        """Each capture's series: kind, what marked its steps, bucket length, which CUDA calls it recorded."""
        return self.rows("SELECT capture_id, kind, source, bucket_ns, host, folded, marked, program FROM series "
                         "ORDER BY capture_id")

    def step_rows(self, captures: list[int]) -> list[Row]:
        """Per step over the given captures' processes: sums of the GPU side, host times as means per process."""
        marks = ",".join(str(int(c)) for c in captures) or "NULL"
        return self.rows(f"""
            SELECT step, MIN(start_ns) AS start_ns, MAX(end_ns - start_ns) AS duration_ns, COUNT(*) AS processes,
                   SUM(launches) AS launches, SUM(kernel_ns) AS kernel_ns, SUM(copy_ns) AS copy_ns,
                   CAST(AVG(busy_ns) AS INTEGER) AS busy_ns,
                   CAST(AVG(busy_ns - compute_busy_ns) AS INTEGER) AS exposed_comm_ns,
                   CAST(AVG(api_launch_ns) AS INTEGER) AS launch, CAST(AVG(api_sync_ns) AS INTEGER) AS sync,
                   CAST(AVG(api_alloc_ns) AS INTEGER) AS alloc, CAST(AVG(api_other_ns) AS INTEGER) AS other,
                   CAST(AVG(api_union_ns) AS INTEGER) AS api_union_ns,
                   CAST(AVG(end_ns - start_ns) AS INTEGER) AS mean_duration_ns
            FROM steps WHERE capture_id IN ({marks}) GROUP BY step ORDER BY step""")

    def step_kernel_names(self, captures: list[int]) -> dict[tuple[int, int], str]:
        """(capture, name id) → name, of the captures' step kernels (step_kernels holds each row's name as its id)."""
        marks = ",".join(str(int(c)) for c in captures) or "NULL"
        return {(c, i): n for c, i, n in self.conn.execute(
            f"SELECT capture_id, name_id, name FROM step_kernel_names WHERE capture_id IN ({marks})")}

    def step_kernel_sums(self, flags: Iterable[tuple[int, int, int, int, int]]) -> dict[int, tuple[int, int, int]]:
        """Per step: the step kernels' time summed three ways, where each of their (capture, name id)'s flags says —
        flags: (capture, name id, a, b, c), each of a, b, c 0 or 1; only the captures flags names. Summed in SQL
        over the ids (60k rows at 1M launches: no row a Python tuple); in Python where a sum leaves int64."""
        conn = self.conn
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS t_step_flags (key INTEGER PRIMARY KEY, a INTEGER, b INTEGER, "
                     "c INTEGER)")  # key: _KEY's, a rowid (a composite key's lookups cost 1.5x as long)
        conn.execute("DELETE FROM temp.t_step_flags")
        conn.executemany("INSERT OR REPLACE INTO temp.t_step_flags VALUES (? * 4294967296 + ?, ?, ?, ?)", flags)
        joined = f"FROM step_kernels k JOIN temp.t_step_flags f ON f.key = {_KEY.format('k.')}"
        try:
            return {step: (a, b, c) for step, a, b, c in conn.execute(
                f"SELECT k.step, SUM(k.total_ns * f.a), SUM(k.total_ns * f.b), SUM(k.total_ns * f.c) {joined} "
                "GROUP BY k.step")}
        except sqlite3.OperationalError as e:
            if "overflow" not in str(e):
                raise
        sums: dict[int, list[int]] = {}
        for step, ns, a, b, c in conn.execute(f"SELECT k.step, k.total_ns, f.a, f.b, f.c {joined}"):
            acc = sums.setdefault(step, [0, 0, 0])
            acc[0] += ns * a
            acc[1] += ns * b
            acc[2] += ns * c
        return {step: (a, b, c) for step, (a, b, c) in sums.items()}

    def step_kernel_totals(self, captures: list[int], steps: Iterable[int]) -> dict[tuple[int, int], int]:
        """(capture, name id) → the step kernels' time in the given steps, summed (in Python where a sum leaves
        int64)."""
        marks = ",".join(str(int(c)) for c in captures) or "NULL"
        among = ",".join(str(int(s)) for s in steps) or "NULL"
        where = f"FROM step_kernels WHERE capture_id IN ({marks}) AND step IN ({among})"
        try:  # by one integer key: grouped by two, 1.4x as long
            return {divmod(key, 1 << 32): ns for key, ns in self.conn.execute(
                f"SELECT {_KEY.format('')} AS key, SUM(total_ns) {where} GROUP BY key")}
        except sqlite3.OperationalError as e:
            if "overflow" not in str(e):
                raise
        totals: dict[tuple[int, int], int] = {}
        for c, i, ns in self.conn.execute(f"SELECT capture_id, name_id, total_ns {where}"):
            totals[(c, i)] = totals.get((c, i), 0) + ns
        return totals

    def step_part_rows(self, captures: list[int]) -> list[Row]:
        """Per step and budget part (timeline/series_tables.PARTS): its time summed over the captures' processes."""
        marks = ",".join(str(int(c)) for c in captures) or "NULL"
        return self.rows(f"""SELECT step, part, SUM(ns) AS ns FROM step_parts WHERE capture_id IN ({marks})
                             GROUP BY step, part""")

    def step_hardware(self, captures: list[int]) -> dict[int, float]:
        """Per step: the mean tensor-pipe activity (%) of the hardware samples taken inside it (same capture)."""
        marks = ",".join(str(int(c)) for c in captures) or "NULL"
        return {r["step"]: r["tensor"] for r in self.rows(f"""
            SELECT s.step, AVG(h.tensor) AS tensor FROM steps s
            JOIN hw_series h ON h.capture_id = s.capture_id AND h.t_ns >= s.start_ns AND h.t_ns < s.end_ns
            WHERE s.capture_id IN ({marks}) GROUP BY s.step""")}

    def hardware_series(self) -> list[Row]:
        return self.rows("SELECT device_id, t_ns, dt_ns, sm, tensor FROM hw_series ORDER BY device_id, t_ns")

    def kernel_gpus(self) -> list[KernelGpuRow]:
        """Each distinct (capture, device, kernel name) with its GPU's compute capability and name. A kernel whose
        capture does not say which device ran it (console summaries) is of the capture's GPU when every device
        the capture names is the same model (a dual-GPU Tesla K80's devices 0 and 1)."""
        return cast(list[KernelGpuRow], self.rows("""
            SELECT k.capture_id, k.device_id, k.name, MAX(d.cc_major) AS ma, MAX(d.cc_minor) AS mi,
                   MAX(d.name) AS gpu
            FROM (SELECT DISTINCT capture_id, device_id, name FROM kernels) k
            LEFT JOIN devices d ON d.capture_id = k.capture_id AND (d.device_id = k.device_id OR (
                k.device_id IS NULL AND k.capture_id IN (
                    SELECT capture_id FROM devices GROUP BY capture_id HAVING COUNT(DISTINCT
                        COALESCE(name, '?') || '/' || COALESCE(cc_major, '?') || '.' || COALESCE(cc_minor, '?')) = 1)))
            GROUP BY k.capture_id, k.device_id, k.name"""))

    def write_verdicts(self, rows: list[tuple[object, ...]]) -> None:
        """(capture_id, device_id, name, *VERDICT_COLUMNS) rows into temp.t_verdicts (replaced)."""
        db = self.conn
        db.execute("DROP TABLE IF EXISTS temp.t_verdicts")
        # typed as the kernels table: an untyped column would not use its index against kernels (an O(ranks²) join)
        db.execute(f"CREATE TEMP TABLE t_verdicts (capture_id INTEGER, device_id INTEGER, name TEXT, "
                   f"{', '.join(VERDICT_COLUMNS)})")
        db.executemany(f"INSERT INTO temp.t_verdicts VALUES ({', '.join('?' * (3 + len(VERDICT_COLUMNS)))})", rows)
        db.execute("CREATE INDEX temp.t_verdicts_key ON t_verdicts (capture_id, name, device_id)")

    def has_verdicts(self) -> bool:
        return bool(self.rows("SELECT 1 FROM sqlite_temp_master WHERE name = 't_verdicts'"))

    # -- the report -------------------------------------------------------------------------------------
    def timed_kernel_ns(self) -> int:
        return int(self.rows(f"SELECT COALESCE(SUM(total_ns), 0) AS t FROM {_TIMED}")[0]["t"])

    def untimed_kernels(self) -> int:
        return int(self.rows(f"SELECT COUNT(*) AS n FROM {_TIMED} WHERE total_ns IS NULL")[0]["n"])

    def kernel_rows(self) -> list[Row]:
        """One row per kernel name (and verdict): launches, time and the ranked verdict, most time first."""
        return self.rows(f"""
            SELECT k.name, SUM(k.launches) AS launches, COALESCE(SUM(k.total_ns), 0) AS total_ns,
                   v.tensor_core, v.precision, v.family, v.reason, v.evidence, v.name_verdict,
                   v.counter_verdict, v.counter_detail, v.rule, MAX(v.flag) AS flag
            FROM {_TIMED} k JOIN {_V} v ON {_ON_K}
            GROUP BY k.name, v.tensor_core, v.reason ORDER BY total_ns DESC, launches DESC, k.name""")

    def memop_totals(self) -> list[Row]:
        return self.rows("SELECT kind, direction, SUM(total_ns) AS ns, SUM(count) AS n FROM memops "
                         "GROUP BY kind, direction")

    def group_rows(self, key: str) -> list[Row]:
        """Per device or per process (key 'device_id' or 'pid'): launches, kernel and tensor-core time."""
        assert key in _GROUP_KEYS
        return self.rows(f"""
            SELECT k.{key} AS g, SUM(k.launches) AS launches, COALESCE(SUM(k.total_ns), 0) AS ns,
                   COALESCE(SUM(CASE WHEN v.tensor_core = 'yes' THEN k.total_ns END), 0) AS tc_ns
            FROM {_TIMED} k JOIN {_V} v ON {_ON_K} GROUP BY k.{key} ORDER BY k.{key}""")

    def group_precisions(self, key: str) -> dict[int | None, list[str]]:
        """Per group (a device or process id): the tensor-core precisions, the one with the most time first."""
        assert key in _GROUP_KEYS
        out: dict[int | None, list[str]] = {}
        for r in self.rows(f"""
                SELECT k.{key} AS g, v.precision AS p, SUM(k.total_ns) AS ns FROM {_TIMED} k JOIN {_V} v ON {_ON_K}
                WHERE v.tensor_core = 'yes' AND v.precision != '' GROUP BY 1, 2 ORDER BY 1, 3 DESC, 2"""):
            out.setdefault(r["g"], []).append(r["p"])
        return out

    def group_activity(self, key: str) -> dict[int | None, Row]:
        """Per group: busy time and span, summed per capture (captures of different processes have different
        clocks and lifetimes)."""
        assert key in _GROUP_KEYS
        return {r["g"]: r for r in self.rows(f"""
            SELECT g, SUM(busy) AS busy, SUM(span) AS span FROM
              (SELECT capture_id, {key} AS g, SUM(busy_ns) AS busy, MAX(last_ns) - MIN(first_ns) AS span
               FROM activity GROUP BY capture_id, {key}) GROUP BY g""")}

    # -- per rank -----------------------------------------------------------------------------------------
    # A process's rank is its launcher's (RANK, SLURM_PROCID, …: the capture, the run's manifest, or the capture's
    # file name, pipeline/ingest.py); a rank is all of its processes' captures. Processes of no rank are left out.
    _RANKED = "temp.t_ranked"

    def index_ranks(self) -> None:
        """temp.t_ranked: (capture, pid) → rank, keyed — the rank queries join it per kernel row (as a subquery
        it was scanned per row: 2.3 s a query at 256 ranks). Made afresh: the store may have taken captures since."""
        db = self.conn
        db.execute("DROP TABLE IF EXISTS temp.t_ranked")
        db.execute("CREATE TEMP TABLE t_ranked (capture_id INTEGER, pid INTEGER, rank INTEGER, "
                   "PRIMARY KEY (capture_id, pid))")
        db.execute("INSERT INTO temp.t_ranked SELECT capture_id, pid, MAX(rank) FROM processes "
                   "WHERE rank IS NOT NULL AND pid IS NOT NULL GROUP BY 1, 2")

    def rank_rows(self, communication: Iterable[str]) -> list[Row]:
        """Per rank: processes, launches, kernel, tensor-core and communication time (families ``communication``)."""
        fams = list(communication)
        marks = ",".join("?" * len(fams)) or "NULL"
        return self.rows(f"""
            SELECT r.rank, COUNT(DISTINCT r.capture_id || '/' || r.pid) AS processes, SUM(k.launches) AS launches,
                   COALESCE(SUM(k.total_ns), 0) AS ns,
                   COALESCE(SUM(CASE WHEN v.tensor_core = 'yes' THEN k.total_ns END), 0) AS tc_ns,
                   COALESCE(SUM(CASE WHEN v.family IN ({marks}) THEN k.total_ns END), 0) AS comm_ns
            FROM {_TIMED} k JOIN {_V} v ON {_ON_K}
            JOIN {self._RANKED} r ON r.capture_id = k.capture_id AND r.pid = k.pid
            GROUP BY r.rank ORDER BY r.rank""", fams)

    def rank_collective_rows(self) -> list[Row]:
        """Per rank, step and nth communication kernel of the step: its start on a clock common to the captures
        (nsys's times are from its session's start: plus that start in Unix time; other formats' as recorded)."""
        return self.rows(f"""
            SELECT r.rank, c.step, c.nth, c.name,
                   c.start_ns + CASE WHEN cap.format LIKE 'nsys%' THEN COALESCE(cap.started_ns, 0) ELSE 0 END AS at_ns
            FROM step_collectives c JOIN captures cap ON cap.id = c.capture_id
            JOIN {self._RANKED} r ON r.capture_id = c.capture_id AND r.pid = c.pid
            ORDER BY r.rank, c.step, c.nth""")

    def rank_step_own(self) -> list[Row]:
        """Per rank and step: its GPU's compute-busy time (busy without communication kernels) and idle time."""
        return self.rows(f"""
            SELECT r.rank, s.step, SUM(s.compute_busy_ns) AS compute_ns,
                   SUM(MAX(s.end_ns - s.start_ns - s.busy_ns, 0)) AS idle_ns
            FROM steps s JOIN {self._RANKED} r ON r.capture_id = s.capture_id AND r.pid = s.pid
            GROUP BY r.rank, s.step""")

    def rank_precisions(self) -> list[Row]:
        """Per rank, precision and tensor-core verdict: kernel time, the most first."""
        return self.rows(f"""
            SELECT r.rank, COALESCE(NULLIF(v.precision, ''), 'unstated') AS precision, v.tensor_core,
                   COALESCE(SUM(k.total_ns), 0) AS ns
            FROM {_TIMED} k JOIN {_V} v ON {_ON_K}
            JOIN {self._RANKED} r ON r.capture_id = k.capture_id AND r.pid = k.pid
            GROUP BY 1, 2, 3 ORDER BY 1, 4 DESC, 2""")

    def rank_activity(self) -> dict[int, Row]:
        """Per rank: GPU busy time and span, summed over its processes' captures (each has its own clock)."""
        return {r["rank"]: r for r in self.rows(f"""
            SELECT r.rank, SUM(a.busy) AS busy, SUM(a.span) AS span FROM
              (SELECT capture_id, pid, SUM(busy_ns) AS busy, MAX(last_ns) - MIN(first_ns) AS span
               FROM activity GROUP BY capture_id, pid) a
            JOIN {self._RANKED} r ON r.capture_id = a.capture_id AND r.pid = a.pid GROUP BY r.rank""")}

    def rank_step_times(self) -> list[Row]:
        """Per rank and step: its wall time (of a steps series; time buckets are not steps), rank by rank."""
        return self.rows(f"""
            SELECT r.rank, s.end_ns - s.start_ns AS ns FROM steps s
            JOIN series c ON c.capture_id = s.capture_id AND c.kind = 'steps' AND c.folded = 1
            JOIN {self._RANKED} r ON r.capture_id = s.capture_id AND r.pid = s.pid ORDER BY r.rank""")

    def rank_top_kernel(self, rank: int, tensor_core: str, other_than: Iterable[str] = ()) -> Row | None:
        """The rank's kernel with the most time among those of the given verdict, of no family in other_than."""
        fams = list(other_than)
        marks = ",".join("?" * len(fams)) or "NULL"
        rows = self.rows(f"""
            SELECT k.name, v.precision, v.family, SUM(k.total_ns) AS ns FROM {_TIMED} k JOIN {_V} v ON {_ON_K}
            JOIN {self._RANKED} r ON r.capture_id = k.capture_id AND r.pid = k.pid
            WHERE r.rank = ? AND v.tensor_core = ? AND v.family NOT IN ({marks})
            GROUP BY k.name ORDER BY ns DESC LIMIT 1""", [rank, tensor_core, *fams])
        return rows[0] if rows else None

    def devices(self) -> list[Row]:
        """Per device id, its name and compute capability as one capture states them — the first that names it,
        else the first that states one —, never a name of one capture beside another's capability (an nvprof
        capture's V100 and an ncu export's 9.0 made a 'Tesla V100 (sm_90)' of device 0)."""
        out: dict[int, Row] = {}
        for r in self.rows("SELECT device_id AS g, name, cc_major AS ma, cc_minor AS mi FROM devices "
                           "ORDER BY device_id, name IS NULL, cc_major IS NULL, capture_id"):
            out.setdefault(r["g"], r)
        return list(out.values())

    def capture_gpus(self) -> list[CaptureGpuRow]:
        """Each capture's devices as it states them (report/jobs.py: two captures that name one device id as two
        GPUs are of two machines)."""
        return cast(list[CaptureGpuRow], self.rows(
            "SELECT capture_id, device_id, name, cc_major, cc_minor FROM devices ORDER BY capture_id, device_id"))

    def processes(self) -> list[Row]:
        return self.rows("SELECT pid AS g, MAX(name) AS name, MAX(rank) AS rank FROM processes GROUP BY pid")

    def op_kernels(self, column: str) -> list[OpKernelRow]:
        """Per op (column 'op') or scope (column 'scope') and kernel name: launches, time and verdict (of one device:
        the verdict is the name's: of the ops row's capture and name, the lowest device's). SQL groups the ops
        rows; the verdicts (one per distinct name) are joined here by dictionary: in SQL each ops row cost an index
        seek on the long name (0.15 s per call for 6,134 ops rows of a 100k-kernel torch.profiler trace, 0.01 s so)."""
        assert column in _OP_COLUMNS
        verdicts: dict[tuple[int, str], tuple[str, str]] = {}
        for v in self.rows(f"SELECT capture_id, name, tensor_core, precision FROM {_V} "
                           "ORDER BY capture_id, name, device_id"):
            verdicts.setdefault((v["capture_id"], v["name"]), (v["tensor_core"], v["precision"]))
        out: dict[tuple[str, str], OpKernelRow] = {}
        # streamed from the cursor, a tuple at a time: one row per (op, name, capture) is 113k rows at 256 ranks
        for op, name, capture_id, launches, ns in self.conn.execute(
                f"SELECT {column}, name, capture_id, SUM(launches), SUM(total_ns) FROM ops "
                f"GROUP BY {column}, name, capture_id"):
            verdict = verdicts.get((capture_id, name))
            if verdict is None:  # as the inner join: an ops row whose name has no verdict is left out
                continue
            row = out.get((op, name))
            if row is None:
                out[(op, name)] = {"op": op, "name": name, "launches": launches, "ns": ns,
                                   "tensor_core": verdict[0], "precision": verdict[1]}
            else:
                row["launches"] += launches
                row["ns"] = ns if row["ns"] is None else row["ns"] + (ns or 0)
        return list(out.values())

    def op_flops_rows(self) -> list[OpFlopsRow]:
        """Every op_flops row, by capture, op, precision and kernel name: FLOPs per kernel name from the shapes a
        torch.profiler trace recorded (readers/_kineto_flops.py), and from XLA's dump (temp.t_op_flops:
        write_xla_flops); [] when no capture holds them."""
        cols = "capture_id, pid, op, name, precision, flops, launches, total_ns"
        xla = f" UNION ALL SELECT {cols} FROM {_XLA_FLOPS}" if self.rows(
            "SELECT 1 FROM sqlite_temp_master WHERE name = 't_op_flops'") else ""
        return cast(list[OpFlopsRow], self.rows(
            f"SELECT {cols} FROM op_flops{xla} ORDER BY capture_id, op, precision, name"))

    def launches_by_process(self) -> list[tuple[int, int | None, str, int, int]]:
        """(capture id, pid, kernel name, launches, ns) of every kernel name each process launched."""
        return cast(list[tuple[int, int | None, str, int, int]], self.conn.execute(
            f"SELECT capture_id, pid, name, SUM(launches), COALESCE(SUM(total_ns), 0) FROM {_TIMED} "
            "GROUP BY capture_id, pid, name").fetchall())

    def launches_in_xla_ranges(self) -> list[tuple[int, int | None, str, str, int, int]]:
        """(capture id, pid, XLA's execution range, kernel name, launches, ns) of the launches inside one."""
        return cast(list[tuple[int, int | None, str, str, int, int]], self.conn.execute(
            "SELECT capture_id, pid, CASE WHEN scope LIKE ? THEN scope ELSE op END, name, SUM(launches), "
            "COALESCE(SUM(total_ns), 0) FROM ops WHERE scope LIKE ? OR op LIKE ? GROUP BY 1, 2, 3, 4",
            [steps.XLA_MODULE_PREFIX + "%"] * 3).fetchall())

    def launches_in_xla_thunks(self) -> list[tuple[int, int | None, str, str, str, int, int]]:
        """(capture id, pid, XLA's execution range, the thunk's range inside it, kernel name, launches, ns) of the
        launches XLA ran outside CUDA graphs (classify/xla_flops.py per_thunk)."""
        return cast(list[tuple[int, int | None, str, str, str, int, int]], self.conn.execute(
            "SELECT capture_id, pid, scope, op, name, SUM(launches), COALESCE(SUM(total_ns), 0) FROM ops "
            "WHERE scope LIKE ? AND op LIKE 'Thunk:#%' GROUP BY 1, 2, 3, 4, 5",
            [steps.XLA_MODULE_PREFIX + "%"]).fetchall())

    def launches_in_xla_graphs(self) -> list[tuple[int, int | None, str, int, int, int | None, str, int, int]]:
        """(capture id, pid, XLA's execution range, graph, slot, nested node, kernel name, launches, ns) of the
        kernels XLA ran in CUDA graphs (table graph_nodes; classify/xla_flops.py per_graph_node)."""
        return cast(list[tuple[int, int | None, str, int, int, int | None, str, int, int]], self.conn.execute(
            "SELECT capture_id, pid, module, graph, slot, child, name, SUM(launches), COALESCE(SUM(total_ns), 0) "
            "FROM graph_nodes GROUP BY 1, 2, 3, 4, 5, 6, 7").fetchall())

    def write_xla_flops(self, rows: list[tuple[object, ...]]) -> None:
        """(capture_id, pid, op, name, precision, flops, launches, total_ns) rows of FLOPs from XLA's dump into
        temp.t_op_flops (replaced): derived per report from the dumps it is given, never kept in the store."""
        db = self.conn
        db.execute(f"DROP TABLE IF EXISTS {_XLA_FLOPS}")
        db.execute("CREATE TEMP TABLE t_op_flops (capture_id INTEGER, pid INTEGER, op TEXT, name TEXT, "
                   "precision TEXT, flops FLOAT, launches INTEGER, total_ns INTEGER)")
        db.executemany(f"INSERT INTO {_XLA_FLOPS} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def warmup_rows(self) -> list[Row]:
        """The warm-up left out of every capture (table warmup; readers/_xla_warmup.py), per program and kernel name:
        program, name, launches, total_ns, most time first; [] when none was."""
        if not self.rows("SELECT 1 FROM warmup LIMIT 1"):  # nearly every store: no warm-up to aggregate
            return []
        return self.rows("SELECT program, name, SUM(launches) AS launches, SUM(COALESCE(total_ns, 0)) AS total_ns "
                         "FROM warmup GROUP BY program, name ORDER BY total_ns DESC, name")

    def sources(self) -> list[Row]:
        """Each capture's id, path, format, partial flag and notes."""
        return self.rows("SELECT c.id, c.path, c.format, c.partial, c.notes FROM captures c ORDER BY c.id")

    def capture_jobs(self) -> list[CaptureJobRow]:
        """Per capture, what it says of its job: file, start and end (UTC ns), command, parent pid, and its process
        (pid, when it holds exactly one)."""
        return cast(list[CaptureJobRow], self.rows("""
            SELECT c.id, c.path, c.file, c.started_ns, c.ended_ns, c.command, c.ppid,
                   CASE WHEN COUNT(DISTINCT p.pid) = 1 THEN MIN(p.pid) END AS pid
            FROM captures c LEFT JOIN processes p ON p.capture_id = c.id GROUP BY c.id ORDER BY c.id"""))

    def steps_marked(self) -> int:
        """How many training steps the captures mark: distinct NVTX ranges 'step N' / 'ProfilerStep#N' that
        kernels ran in (timeline/window.py), as the innermost or the outermost range; else the 'optimizer step N'
        ranges `run` marks (tracer/annotate.py), the same order timeline/window.py prefers them in; 0 when none."""
        own, optimizer = steps.glob_sql("s", steps.OWN), steps.glob_sql("s", steps.OPTIMIZER)
        r = self.rows(f"""SELECT SUM({own}) AS own, SUM({optimizer}) AS opt
                          FROM (SELECT op AS s FROM ops UNION SELECT scope FROM ops)""")[0]
        return int((r["own"] or 0) or (r["opt"] or 0))
