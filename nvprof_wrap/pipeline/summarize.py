"""Captures → their summaries (readers/summary.py): the per-capture step of a report, kept as files.

Where reading every rank's capture on one machine takes too long and there is no Dask cluster, each task of a job
array summarises its own captures (`nvprof-wrap summarize CAPTURE -o DIR`), and one `nvprof-wrap report DIR` merges
the summaries: the report the captures themselves give (docs/ranks.md).
"""
from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from nvprof_wrap.errors import BadInput, CannotWrite, ToolMissing
from nvprof_wrap.pipeline import reading
from nvprof_wrap.pipeline.ingest import _pending
from nvprof_wrap.readers import summary
from nvprof_wrap.report import jobs
from nvprof_wrap.store import Store
from nvprof_wrap.system import fork as _fork
from nvprof_wrap.timeline import series as step_series
from nvprof_wrap.timeline.window import make


def summarize(paths: list[Path], out: Path, *, window: tuple[float, float] | None = None,
              steps: tuple[int, int] | None = None, workers: int | None = None,
              progress: Callable[[Path], None] | None = None) -> tuple[list[Path], list[tuple[str, str]]]:
    """(summaries written into out, captures skipped with why). A capture named explicitly that cannot be read is
    refused (BadInput); one found in a folder is skipped. Nothing but the summaries is written, each beside and
    renamed over (summary.write); a file of that name that is not a summary is never replaced."""
    # a windowed nsys run's captures are summarised as its report reads them: cut where its window ended
    win = make(window, steps, jobs.capture_cut(jobs.capture_scope(jobs.manifests(paths))))
    skipped: list[tuple[str, str]] = []
    todo = _pending(Store(), paths, skipped, {}, win)
    names = _names([t[0] for t in todo])
    _folder(out)
    targets = [out / n for n in names]
    for t in targets:
        _replaceable(t)
    written = []
    results = reading.locally([t[0] for t in todo], win, workers or min(len(todo), _fork.cores()), progress)
    for result, (path, explicit, identity, _st), target in zip(results, todo, targets):
        if isinstance(result, (BadInput, ToolMissing)):
            if explicit:
                raise result
            skipped.append((str(path), getattr(result, "why", str(result))))
            continue
        assert identity is not None  # fingerprinted here (_pending's hash_here)
        kept = replace(result, notes=tuple(map(step_series.as_summarized, result.notes)))  # what a summary can say
        try:
            summary.write(kept, identity, win.key if win is not None else None, target)
        except OSError as e:
            raise CannotWrite(target, f"cannot write the summary ({e.strerror})") from None
        written.append(target)
    if not written and todo:
        raise BadInput(skipped[0][0] if skipped else paths[0], f"no capture could be summarised ({skipped[0][1]})"
                       if skipped else "no capture could be summarised")
    return written, skipped


def _names(paths: list[Path]) -> list[str]:
    """One summary name per capture: its file name, with its folder's where two captures share a name
    (RUN/rank0/nsys.sqlite, RUN/rank1/nsys.sqlite)."""
    base = [p.name for p in paths]
    out = []
    for p, b in zip(paths, base):
        name = f"{p.parent.name}-{b}" if base.count(b) > 1 else b
        out.append(name + summary.SUFFIX)
    seen: dict[str, int] = {}
    for i, n in enumerate(out):
        seen[n] = seen.get(n, 0) + 1
        if seen[n] > 1:
            out[i] = n.removesuffix(summary.SUFFIX) + f"-{seen[n]}" + summary.SUFFIX
    return out


def _folder(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise BadInput(out, "-o must be a folder for the summaries; this is a file") from None
    except OSError as e:
        raise CannotWrite(out, f"cannot make the folder ({e.strerror})") from None


def _replaceable(target: Path) -> None:
    """Only a summary of ours (a regular file that is one) is replaced; anything else there stays untouched."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise CannotWrite(target, "exists and is not a regular file (a link, FIFO or device): not replaced")
    try:
        from nvprof_wrap.readers import detect

        ours = detect(target) == summary.FORMAT
    except BadInput:
        ours = False
    if not ours:
        raise CannotWrite(target, "exists and is not an nvprof-wrap summary: not replaced")
