"""The one pipeline: paths → read → run store → evidence → report → hints → training health.

``analyze(*paths, **options) -> Report`` is what every command and the Python API call; nothing else composes these
stages.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from nvprof_wrap import renderers  # noqa: F401 - registers Report's display methods (str, to_dict, HTML)
from nvprof_wrap import report as report_mod
from nvprof_wrap.errors import BadInput, NvprofWrapError
from nvprof_wrap.pipeline import arguments, evidence
from nvprof_wrap.pipeline.ingest import ingest
from nvprof_wrap.readers import copies_only
from nvprof_wrap.report import jobs
from nvprof_wrap.report.health import HealthVerdict
from nvprof_wrap.report.hints import hints
from nvprof_wrap.run import Run, is_run, run_of, runs_inside
from nvprof_wrap.run.manifest import Manifest
from nvprof_wrap.store import Store
from nvprof_wrap.text.names import shorten


def analyze(*paths: str | Path, store: Store | str | Path | None = None,
            triton_cache: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None, health: bool = True,
            progress: Callable[[Path], None] | None = None, window: tuple[float, float] | None = None,
            steps: tuple[int, int] | None = None, dask: str | None = None,
            workers: int | None = None, warmup: bool = False, sum_jobs: bool = False,
            xla_dump: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None) -> report_mod.Report:
    """The report of captures, run folders or folders of captures (read as one run). Refused (BadInput): two runs,
    a folder holding several, a folder without a capture, and captures of different jobs unless ``sum_jobs`` (their
    own contents tell the jobs apart: report/jobs.py; summed, the report says so). The report says how a run's job
    ended (its manifest).

    store: a run store (a path, or an open Store) to keep the aggregates in; in memory when None.
    triton_cache: a folder, or folders, of compiled Triton kernels for kernels the names leave unknown (default: the
    usual cache).
    xla_dump: a folder, or folders, of XLA's dumps (--xla_dump_to) whose optimized HLO decides the kernels XLA
    generated (gemm_fusion_dot_3 …) and gives their FLOPs (achieved TFLOP/s); a run folder's own xla-dump/ and the
    folder its job's XLA_FLAGS named are read without it.
    health: add the training health of a run folder (its metrics.jsonl or Keras log lines).
    window: (start_s, end_s) — only what the GPU did then, in seconds from each capture's first GPU activity;
    steps: (A, B) — only steps A..B-1 (NVTX 'step N', torch.profiler's ProfilerStep#N, Keras batches with --annotate
    keras). docs/performance.md#steady-state says what a window keeps.
    dask: the address of a Dask scheduler to read the captures on (its workers must see them at the same paths;
    docs/ranks.md); workers: local processes reading captures side by side (1: one by one here; None: one per core).
    Either way the report is the same.
    warmup: count a JAX job's warm-up (what its GPU ran before the first execution of the program it runs most),
    which a whole Nsight Systems capture leaves out and the report shows apart (readers/_xla_warmup.py).
    """
    if not paths:
        raise BadInput(None, "analyze() needs at least one capture or run folder")
    window, steps = arguments.span(window, "window", False), arguments.span(steps, "steps", True)
    workers, dask, progress = arguments.workers(workers), arguments.address(dask), arguments.callback(progress)
    health, warmup = arguments.flag(health, "health"), arguments.flag(warmup, "warmup")
    folders = [_path_arg(p, "a capture or run folder") for p in paths]
    if store is not None and not isinstance(store, Store):
        store = _path_arg(store, "store")
    triton = _folders_arg(triton_cache, "triton_cache")
    xla = _folders_arg(xla_dump, "xla_dump") or []
    _one_run(folders)
    own = not isinstance(store, Store)
    st = Store(Path(store)) if isinstance(store, (str, Path)) else (store or Store())
    try:
        runs = jobs.manifests(folders)
        capture = jobs.capture_scope(runs)
        try:
            skipped = ingest(st, folders, progress, workers, window=window, steps=steps, dask=dask, warmup=warmup,
                             cut=jobs.capture_cut(capture))
        except BadInput as e:  # no capture yet, or one being written: a run still running says so first
            running = jobs.in_progress(folders)
            never = jobs.never_opened(capture)
            if running is not None or never is not None:
                raise BadInput(e.path, f"{running or never}: {e.why}") from None
            if not jobs.profiler_free(runs):
                raise
            skipped = ()  # `run --backend none`: no capture by design; the report says so and gives the health
        dumps = evidence.prepare(st, triton, [*xla, *_xla_dumps(runs)])
        rep = report_mod.with_scope(report_mod.build(st, skipped), window, steps)
        if dumps is not None:
            rep = dataclasses.replace(rep, xla_modules=dumps.modules,
                                      xla_without_thunks=dumps.without_thunks or None)
        if window is None and steps is None:
            _never_a_silent_nothing(rep, folders)
        # a window's steps are not the job's: a capture window's record counts the job's own
        marked = st.steps_marked() if window is None and steps is None and capture is None else 0
        if capture is not None and capture.job_steps:
            marked = capture.job_steps
        gpus, captured = st.capture_gpus(), st.capture_jobs()
        groups = jobs.different_jobs(captured, folders, runs, gpus)
        if groups and not arguments.flag(sum_jobs, "sum_jobs"):
            on = {g.label: said for g in groups if (said := jobs.gpus_said(g, captured, gpus))}
            # one path given (its captures beside those a --store held already): the error names it
            raise BadInput(folders[0] if len(folders) == 1 else None, jobs.not_summed(groups, folders, on))
        rep = report_mod.with_jobs(rep, jobs.job_end(runs, marked or None), groups)
        rep = report_mod.with_capture(rep, capture)
        rep = dataclasses.replace(rep, run_info=jobs.run_info(folders, runs, captured))
        if jobs.profiler_free(runs):
            rep = report_mod.without_profiler(rep)
    finally:
        if own:
            st.close()
    rep = report_mod.with_hints(rep, hints(rep))
    if health:
        rep = report_mod.with_health(rep, _health(folders))
    return rep


def _path_arg(value: object, what: str) -> Path:
    """A path argument of the API, or one line saying what is wrong with it: a number or None is not a path, and ''
    would be the current folder (Path('') is '.'), which nobody means."""
    if isinstance(value, bytes) or not isinstance(value, (str, Path)):
        raise NvprofWrapError(f"analyze(): {what} must be a path (str or Path), got {type(value).__name__} "
                              f"{str(value)[:60]!r}")
    if not str(value).strip():
        raise NvprofWrapError(f"analyze(): {what} is an empty path" + (" (give '.' for the current folder)"
                                                                         if what != "store" else ""))
    return Path(value)


def _xla_dumps(runs: list[tuple[Path, Manifest]]) -> list[Path]:
    """The XLA dump folders of a run: its own xla-dump/ (launch/xla.py), and the one its job's XLA_FLAGS named."""
    out = [Run(folder).xla_dump_dir for folder, _ in runs if Run(folder).xla_dump_dir.is_dir()]
    return out + [Path(m.xla_dump) for _, m in runs if m.xla_dump]


def _folders_arg(value: object, what: str) -> list[Path] | None:
    """triton_cache (xla_dump) as a list of folders: one path (str or os.PathLike) or a list, tuple or set of them.
    A str was iterated as its characters (triton_cache="dir" scanned "d", "i", "r" and "/"), an int was a
    TypeError."""
    if value is None:
        return None
    many = [value] if isinstance(value, (str, os.PathLike)) else value
    if not isinstance(many, (list, tuple, set, frozenset)) or not all(
            isinstance(d, (str, os.PathLike)) and not isinstance(os.fspath(d), bytes) and str(os.fspath(d)).strip()
            for d in many):
        raise BadInput(None, f"analyze(): {what} must be a folder (str or Path) or a list of them, got "
                             f"{type(value).__name__} {str(value)[:60]!r}")
    return [Path(d) for d in many]


def _never_a_silent_nothing(rep: report_mod.Report, paths: list[Path]) -> None:
    """Copies and sets on the GPU but no kernel in any capture: an error saying so, not "No GPU kernels were
    recorded" (readers refuse launch calls without kernels themselves). A capture with neither still says that."""
    copies = sum(row.count for row in rep.split if row.kind in ("memcpy", "memset"))
    if rep.verdict.tensor_cores != "no-kernels" or not copies:
        return
    if {s.format for s in rep.sources} == {"nsys-stats-memops"}:
        raise BadInput(paths[0], f"an nsys stats table of copies ({copies:,} copy/set events) holds no kernel: "
                                 "report it with the cuda_gpu_kern_sum table")
    raise copies_only(paths[0], copies, f" in {len(rep.sources)} captures" if len(rep.sources) > 1 else "")


def _one_run(paths: list[Path]) -> None:
    """Two runs are not one: summing a fp32 run and a bf16 run gives a verdict true of neither. Refuse, loudly —
    also a folder that holds several run folders (never summed silently).

    Ranks of one job (RUN/rank0, RUN/rank1, …) are one run."""
    runs = []
    for p in paths:
        if is_run(p):
            runs.append(p)
        elif _is_dir(p):
            inside = runs_inside(p)
            if len(inside) > 1:
                names = ", ".join(shorten(q.relative_to(p).as_posix(), 40) for q in inside[:3]) + \
                    (", …" if len(inside) > 3 else "")
                raise BadInput(p, f"holds {len(inside)} runs ({names}): a report is of one run — name one of them "
                                  "(a folder inside), or set them side by side with `nvprof-wrap compare RUN RUN`")
            runs += inside
    if len({run_of(p.resolve()) for p in runs}) < 2:
        return
    raise BadInput(runs[1], f"{len(runs)} run folders given ({', '.join(str(p) for p in runs[:3])}"
                            f"{', …' if len(runs) > 3 else ''}): a report is of one run; to set runs side by side use "
                            f"`nvprof-wrap compare {runs[0]} {runs[1]}`")


def _is_dir(p: Path) -> bool:
    try:
        return p.is_dir()
    except OSError:
        return False


def _health(paths: list[Path]) -> HealthVerdict | None:
    """Training health of the one run folder among ``paths`` (None when there is no such folder or no metrics)."""
    from nvprof_wrap.report.health import health_from_run
    from nvprof_wrap.report.numerics import with_numerics

    folders = [p for p in paths if is_run(p)]
    if len(folders) != 1:
        return None
    folder = folders[0]
    run = Run(folder)
    h = with_numerics(health_from_run(run.metrics_file, None, log_paths=run.logs), folder)
    return h if h.epochs or h.numerics else None
