"""Paths → run store: read each capture once, skip what is already in, collect what had to be skipped."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from nvprof_wrap import readers
from nvprof_wrap.errors import BadInput, ToolMissing
from nvprof_wrap.store import Store, file_identity

Progress = Callable[[Path], None]


def ingest(store: Store, paths: list[Path], progress: Progress | None = None) -> tuple[tuple[str, str], ...]:
    """Ingest every capture under ``paths``.

    A file named explicitly must be readable (BadInput otherwise); a file found inside a folder
    that cannot be read is skipped and returned as (path, why), so the good ones still report.
    """
    skipped: list[tuple[str, str]] = []
    for path, explicit in readers.expand(paths):
        if explicit and not path.exists():
            raise BadInput(path, "no such file or directory")
        try:
            st = path.stat()
        except OSError as e:
            if explicit:
                raise BadInput(path, f"cannot read ({e.strerror})") from None
            skipped.append((str(path), e.strerror or "cannot read"))
            continue
        try:
            identity = file_identity(path, st.st_size)
        except OSError as e:
            if explicit:
                raise BadInput(path, f"cannot read ({e.strerror})") from None
            skipped.append((str(path), e.strerror or "cannot read"))
            continue
        if store.has(identity):
            continue
        if progress:
            progress(path)
        try:
            capture = readers.read(path)
        except (BadInput, ToolMissing) as e:
            if explicit:
                raise
            skipped.append((str(path), getattr(e, "why", str(e))))
            continue
        store.ingest(capture, identity, st.st_size, st.st_mtime_ns)
    for p in paths:
        _ranks_from_manifest(store, p)
    return tuple(skipped)


def _ranks_from_manifest(store: Store, folder: Path) -> None:
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        return
    try:
        procs = json.loads(manifest.read_text()).get("processes", [])
    except (OSError, ValueError):
        return
    ranks = {p["pid"]: p["rank"] for p in procs if isinstance(p, dict) and p.get("rank") is not None}
    if ranks:
        store.set_ranks(ranks)


def attach_static(store: Store, dirs: list[Path] | None = None) -> int:
    """Look up compiled code (Triton cache PTX) for kernels the name rules leave unknown; returns how many."""
    from nvprof_wrap import static_evidence

    store.classify_pending()
    names = store.unknown_names()
    if not names:
        return 0
    verdicts = static_evidence.scan(names, dirs)
    store.add_static(verdicts)
    return len(verdicts)
