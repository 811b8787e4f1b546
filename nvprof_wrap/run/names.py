"""The names of a run folder's files: the one place they are spelled (tests/run/test_run_folder.py checks that no
other module of the package spells one; the code that runs inside the job's processes keeps its own copy of the
two it writes, tracer/window.py FILE and tracer/capture_file.py's capture names, checked equal to these there).

A run folder (``nvprof-wrap run -o DIR``) holds the run's own files (OWN: the manifest, the logs, the lock, the run
store, the samples and records taken beside the job) and the captures the profiler wrote, named per backend
(CAPTURE_NAMES). A distributed job's ranks each have a folder of their own inside it (RUN/rank0, RUN/rank1, …) and
their captures carry the rank (rank3-nsys.nsys-rep), so that ranks writing into one folder never collide.
"""
from __future__ import annotations

import re
from pathlib import Path

MANIFEST = "manifest.json"  # run/manifest.py: what ran, how it ended
MANIFEST_TMP = MANIFEST + ".tmp"  # the manifest being written, renamed over it once whole
LOCK = ".nvprof-wrap.lock"  # run/lock.py: held while the run and its job write into the folder
STDOUT_LOG = "stdout.log"  # the job's output (launch/job.py)
STDERR_LOG = "stderr.log"
LOGS = (STDOUT_LOG, STDERR_LOG)
METRICS = "metrics.jsonl"  # what the bundled workloads write ($NVPROF_WRAP_METRICS; report/health.py reads it)
# The numerics recorder's files, found by report/numerics.py (NUMERICS, NUMERICS_FILE below: one per process).
NUMERICS_GLOB = "numerics-*.jsonl"
GPM = "gpm.jsonl"  # NVML GPM samples taken beside the job (launch/gpm.py)
WINDOWS = "windows.jsonl"  # what the job's processes say of their capture window (tracer/window.py writes it)
STORE = "run.sqlite"  # the run store a report of the folder keeps its aggregates in (store/)
VERIFY = "verify.json"  # a verify run's record of what ran under Nsight Compute (launch/verify.py)
REPORT_HTML = "report.html"  # `run --html`: the report as one page
NCU = "ncu"  # a verify run's Nsight Compute output, without the extension ncu adds (.ncu-rep)
NCU_REPORT = NCU + ".ncu-rep"
NCU_CSV = NCU + ".csv"
# XLA's own dumps of what it compiled (`run` adds --xla_dump_to=RUN/xla-dump to the job's XLA_FLAGS; a report reads
# them for the kernels XLA generated: classify/xla_hlo.py). A sub-folder: never read as captures.
XLA_DUMP = "xla-dump"

# SQLite's files beside a database (a store's, a capture's export): never captures, part of their database.
SQLITE_SIDES = ("-journal", "-wal", "-shm")
# A damaged run store moved aside (store/__init__.py) gets this and the time after its name.
SET_ASIDE = ".corrupt-"
SET_ASIDE_STORE = re.compile(re.escape(STORE + SET_ASIDE) + r"\d{8}-\d{6}")

# The run's own files, in words (an output never replaces one: cli/_write.py).
OWN: dict[str, str] = {
    MANIFEST: "the manifest", MANIFEST_TMP: "the manifest", STORE: "the run store", STDOUT_LOG: "a log",
    STDERR_LOG: "a log", METRICS: "the metrics", GPM: "the GPM samples", WINDOWS: "the capture window's record",
    LOCK: "the lock file", VERIFY: "the record of the verify run"}
# What `run` (and `report`, into its run store) writes into a run folder besides the captures: what `run --force`
# may remove (run/lock.py written). Not report.html (`--force` refuses a folder holding one) nor a verify record.
WRITTEN: frozenset[str] = frozenset({*(n for n in OWN if n != VERIFY), *(STORE + s for s in SQLITE_SIDES)})
# Files a run folder holds that are not captures: skipped silently when a folder is read (readers), never listed
# as captures in the manifest (launch/runner.py). A verify record is not skipped (it is read and named as no capture).
NOT_CAPTURES: frozenset[str] = frozenset({*(n for n in OWN if n not in (MANIFEST_TMP, VERIFY)), REPORT_HTML})

# A distributed job's ranks: one sub-folder each (RUN/rankN), and a prefix on each rank's capture names.
RANK_FOLDER = re.compile(r"rank\d+")


def rank_folder(rank: int) -> str:
    return f"rank{rank}"


def capture_tag(rank: int | None) -> str:
    """The prefix of a rank's capture names ("" without a rank)."""
    return f"{rank_folder(rank)}-" if rank is not None else ""


# What the numerics recorder (`run --numerics`, tracer/numerics.py) writes: one file per process of the job. The run's
# own, never a capture; `run --force` removes them with the rest of the run.
NUMERICS = "numerics-{pid}.jsonl"
NUMERICS_FILE = re.compile(r"numerics-\d+\.jsonl")


def not_a_capture(name: str) -> bool:
    """A file of a run folder that is the run's own, not a capture (NOT_CAPTURES, SQLite's side files, numerics)."""
    return name in NOT_CAPTURES or name.endswith(SQLITE_SIDES) or NUMERICS_FILE.fullmatch(name) is not None


# The captures each backend's job writes, by the name the backend gives them (launch/nsys.py, launch/nvprof.py; the
# CUPTI tracer names its own: tracer/capture_file.py), with what the run adds (an .nsys-rep's SQLite export).
NSYS = "nsys"  # nsys --output, without the extension nsys adds
NVPROF = "profile%p.nvvp"  # nvprof -o, one file per process (%p: its pid)
CUPTI = "cupti-{host}-{pid}"  # one file per process, .sqlite (.sqlite.partial until it ends)
NSYS_REPORTS = (".nsys-rep", ".qdrep")  # Nsight Systems' own reports (.qdrep: before 2021.4)
EXPORT = ".sqlite"  # an .nsys-rep's export beside it
# What each backend's job writes before the run's end lists it (a wrapper killed mid-run lists nothing).
CAPTURE_NAMES: dict[str, re.Pattern[str]] = {
    "nsys": re.compile(r"(rank\d+-)?nsys(\.nsys-rep|\.qdrep|\.sqlite|\.qdstrm)"),
    "cupti": re.compile(r"cupti-[^/]+-\d+(-\d+)?\.sqlite(\.partial)?"),
    "nvprof": re.compile(r"(rank\d+-)?profile\d+\.nvvp"),
}


def export_of(report: str) -> str:
    """The name of an .nsys-rep's SQLite export beside it."""
    return str(Path(report).with_suffix(EXPORT))


def plain_name(name: object) -> bool:
    """A name a manifest may list: one file inside the folder, never a path out of it."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name
