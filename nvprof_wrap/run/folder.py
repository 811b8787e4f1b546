"""A run folder as one typed object: ``Run(folder)`` says where each of the run's files is (its properties), reads
its manifest, tells whether its lock is held, and finds a distributed run's ranks (RUN/rank0, RUN/rank1, …: one
run). Every stage that reads or writes a run folder goes through it, so that no file name is spelled twice.

The functions below it find runs among paths: ``is_run`` (a folder with a manifest), ``run_of`` (the run a rank's
folder is of), ``rank_folders`` and ``runs_inside`` (the runs a folder holds).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from nvprof_wrap.run import names
from nvprof_wrap.run.lock import held
from nvprof_wrap.run.manifest import Manifest, read_manifest
from nvprof_wrap.system import tools


@dataclass(frozen=True)
class HistoryRow:
    """What the run history (store/history.py) keeps of a run folder besides its report: where it is, its name,
    and what its manifest says ran (empty without a manifest)."""

    folder: str  # resolved
    name: str
    started: float | None = None
    command: str = ""
    backend: str = ""
    exit_code: int | None = None


@dataclass(frozen=True)
class Run:
    """The run folder ``folder`` (it need not exist yet: `run` names its files before it writes them)."""

    folder: Path

    @property
    def manifest_file(self) -> Path:
        return self.folder / names.MANIFEST

    @property
    def manifest_tmp(self) -> Path:
        return self.folder / names.MANIFEST_TMP

    @property
    def lock_file(self) -> Path:
        return self.folder / names.LOCK

    @property
    def stdout_log(self) -> Path:
        return self.folder / names.STDOUT_LOG

    @property
    def stderr_log(self) -> Path:
        return self.folder / names.STDERR_LOG

    @property
    def logs(self) -> tuple[Path, Path]:
        """The job's stdout and stderr."""
        return self.stdout_log, self.stderr_log

    @property
    def metrics_file(self) -> Path:
        return self.folder / names.METRICS

    def numerics_files(self) -> list[Path]:
        """The numerics recorder's files (one per process), in name order."""
        try:
            return sorted(p for p in self.folder.glob(names.NUMERICS_GLOB) if names.NUMERICS_FILE.fullmatch(p.name))
        except OSError:
            return []

    @property
    def gpm_file(self) -> Path:
        return self.folder / names.GPM

    @property
    def windows_file(self) -> Path:
        return self.folder / names.WINDOWS

    @property
    def store_file(self) -> Path:
        return self.folder / names.STORE

    @property
    def xla_dump_dir(self) -> Path:
        """Where `run` has XLA dump what it compiled (--xla_dump_to)."""
        return self.folder / names.XLA_DUMP

    @property
    def verify_file(self) -> Path:
        return self.folder / names.VERIFY

    @property
    def report_html(self) -> Path:
        return self.folder / names.REPORT_HTML

    @property
    def ncu_output(self) -> Path:
        """Nsight Compute's -o in a verify run's folder (it adds .ncu-rep: ncu_report)."""
        return self.folder / names.NCU

    @property
    def ncu_report(self) -> Path:
        return self.folder / names.NCU_REPORT

    @property
    def ncu_csv(self) -> Path:
        return self.folder / names.NCU_CSV

    def nsys_output(self, rank: int | None) -> Path:
        """nsys --output for this run's job (nsys adds the extension)."""
        return self.folder / f"{names.capture_tag(rank)}{names.NSYS}"

    def nvprof_output(self, rank: int | None) -> Path:
        """nvprof -o for this run's job: one file per process (%p)."""
        return self.folder / f"{names.capture_tag(rank)}{names.NVPROF}"

    def rank(self, rank: int) -> Run:
        """The folder of one rank of a distributed job, inside this one."""
        return Run(self.folder / names.rank_folder(rank))

    def is_run(self) -> bool:
        """Whether the folder holds a run (a manifest)."""
        return is_run(self.folder)

    def manifest(self) -> Manifest:
        """Its manifest; BadInput when there is none, or it is not one `run` wrote (run/manifest.py)."""
        return read_manifest(self.manifest_file)

    def held(self) -> bool | None:
        """Whether a run still holds the folder's lock (run/lock.py held)."""
        return held(self.folder)

    def captures(self) -> list[str]:
        """The names of the files in the folder that are not the run's own: its captures, as a manifest lists
        them (SQLite's side files and an export's scratch files are neither)."""
        return sorted(p.name for p in self.folder.iterdir() if p.is_file() and not names.not_a_capture(p.name)
                      and not tools.is_export_scratch(p.name))

    def history_row(self) -> HistoryRow:
        """The run's columns of the run history, from its manifest where it has a readable one."""
        name = self.folder.name
        m = self.manifest() if self.manifest_file.is_file() else None  # BadInput: one that is not a run's
        if m is None:
            return HistoryRow(str(self.folder.resolve()), name)
        return HistoryRow(str(self.folder.resolve()), name, m.started, " ".join(m.command), m.backend, m.exit_code)


def is_run(p: Path) -> bool:
    """A folder that holds a run: one with a manifest."""
    try:
        return p.is_dir() and (p / names.MANIFEST).is_file()
    except OSError:  # an unreadable folder: reading it says so, naming the folder
        return False


def run_of(folder: Path) -> Path:
    """The run a run folder is of: RUN for RUN/rankN (a distributed job's ranks, one sub-folder each)."""
    return folder.parent if names.RANK_FOLDER.fullmatch(folder.name) else folder


def rank_folders(folder: Path) -> list[Path]:
    """The rank sub-folders of a distributed run given as RUN (RUN/rank0, RUN/rank1, … each a run folder)."""
    try:
        return sorted((p for p in folder.iterdir() if names.RANK_FOLDER.fullmatch(p.name) and is_run(p)),
                      key=lambda p: int(p.name[4:]))
    except OSError:
        return []


def runs_inside(folder: Path) -> list[Path]:
    """The runs below ``folder`` (not the folder itself), in a stable order; a run's own sub-folders are its own."""
    found: dict[Path, None] = {}
    for root, dirs, held_here in os.walk(folder, onerror=lambda _e: None):
        dirs.sort()
        here = Path(root)
        if here != folder and names.MANIFEST in held_here:
            found.setdefault(run_of(here), None)  # the folder itself, when it is a distributed run's
            dirs[:] = []  # what is inside a run is the run's
    return list(found)
