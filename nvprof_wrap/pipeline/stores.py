"""Where a command keeps the aggregates it reads, and what it remembers: the store policy every command shares
(a --store FILE; else a run folder's own run.sqlite; else memory), a run folder's report through its own store, and
the run history's row of a report. The commands call these; none opens a store itself."""
from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from nvprof_wrap.errors import NvprofWrapError
from nvprof_wrap.pipeline.compose import analyze
from nvprof_wrap.report import Report
from nvprof_wrap.run import Run
from nvprof_wrap.store import Store

if TYPE_CHECKING:  # imported where used: not every command loads them
    from nvprof_wrap.report.compare import Comparison
    from nvprof_wrap.store.history import HistoryRow

Warn = Callable[[str], None]


def report_on(paths: list[Path], *, warn: Warn, store: Path | None = None, triton_cache: Iterable[Path] | None = None,
              progress: Callable[[Path], None] | None = None, window: tuple[float, float] | None = None,
              steps: tuple[int, int] | None = None, dask: str | None = None, workers: int | None = None,
              warmup: bool = False, sum_jobs: bool = False, xla_dump: Iterable[Path] | None = None) -> Report:
    """analyze() of ``paths`` with its aggregates kept where open_store says; warnings go to ``warn``."""
    st = open_store(store, paths, window is not None or steps is not None, warn)
    try:
        return analyze(*paths, store=st, triton_cache=triton_cache, progress=progress, window=window, steps=steps,
                       dask=dask, workers=workers, warmup=warmup, sum_jobs=sum_jobs,
                       xla_dump=list(xla_dump) if xla_dump else None)
    finally:
        st.close()


def report_run(folder: Path, *, warn: Warn, health: bool = True,
               progress: Callable[[Path], None] | None = None) -> Report:
    """The report of a run folder that a command just filled, kept in the folder's own run store."""
    store = checked(Store(Run(folder).store_file, mirror=folder), warn)
    try:
        return analyze(folder, store=store, health=health, progress=progress)
    finally:
        store.close()


def open_store(store: Path | None, paths: list[Path], windowed: bool, warn: Warn) -> Store:
    """--store FILE; else a run folder's own run store (which then holds exactly the folder's captures) when it
    can be written; else one in memory. A --window / --steps report keeps its aggregates in memory, unless --store
    says otherwise: a run folder's store holds the whole captures."""
    if store:
        return checked(Store(store), warn)
    if windowed:
        return Store()
    if len(paths) == 1 and os.path.isfile(Run(paths[0]).manifest_file) and os.access(paths[0], os.W_OK) \
            and not bundled(paths[0]):
        own = Run(paths[0]).store_file
        if not os.path.exists(own) or os.access(own, os.W_OK):
            return checked(Store(own, mirror=paths[0]), warn)
        warn(f"nvprof-wrap: warning: {own} is read-only: reading the captures in memory instead")
    return Store()


def bundled(path: Path) -> bool:
    """Inside the installed package (the bundled samples): never written to, whatever its permissions say."""
    package = Path(__file__).resolve().parents[1]
    try:
        return Path(path).resolve().is_relative_to(package)
    except OSError:
        return False


def checked(store: Store, warn: Warn) -> Store:
    """Say so when a damaged run store had to be set aside and rebuilt from the captures."""
    if store.rebuilt_from is not None:
        warn(f"nvprof-wrap: warning: {store.path} was damaged; kept it as {store.rebuilt_from} and rebuilt it "
             "from the captures")
    return store


def remember(folder: Path, report: Report, warn: Warn) -> None:
    """Remember a run folder's report in the run history (store/history.py); never fails the command. Not a
    folder of the bundled samples."""
    from nvprof_wrap.store import history

    if bundled(folder):
        return
    try:
        history.record(Run(folder).history_row(), report)
    except (OSError, NvprofWrapError, sqlite3.Error) as e:
        warn(f"nvprof-wrap: warning: the run history was not updated ({e})")


def history_path() -> Path | None:
    """The run history's file (None when NVPROF_WRAP_HISTORY=off)."""
    from nvprof_wrap.store import history

    return history.path()


def recorded_runs(limit: int | None, problems: list[str]) -> list[HistoryRow]:
    """The run history's rows, newest first; rows that cannot be read are named in ``problems`` and left out."""
    from nvprof_wrap.store import history

    return history.runs(limit, problems)


def resolve_run(name: str) -> Path:
    """A capture, a run folder, or a recorded run's name (the run history) as the path to read."""
    from nvprof_wrap.store import history

    return history.resolve(name)


def compare_runs(before: Path, after: Path, *, progress: Callable[[Path], None] | None = None,
                 window: tuple[float, float] | None = None, steps: tuple[int, int] | None = None,
                 warmup: bool = False) -> tuple[Comparison, Report]:
    """(the Comparison, AFTER's report) of two captures or run folders, read with the same window or steps."""
    from nvprof_wrap.report.compare import compare

    reports = (analyze(before, progress=progress, window=window, steps=steps, warmup=warmup),
               analyze(after, progress=progress, window=window, steps=steps, warmup=warmup))
    return compare(*reports, labels=(before.name, after.name),
                   folders=(before if before.is_dir() else None, after if after.is_dir() else None)), reports[1]


def window_never_opened(folder: Path) -> str | None:
    """Why a windowed run's folder holds no capture, when its window never opened (report/jobs.py never_opened)."""
    from nvprof_wrap.report import jobs

    return jobs.never_opened(jobs.capture_scope(jobs.manifests([folder])))
