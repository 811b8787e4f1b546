"""A run folder whose XLA dump is packed (xla-dump.tar.xz: the HLO text of a step module is ~0.2-1.2 MB), copied with
the dump unpacked into its xla-dump/ as XLA wrote it there."""
from __future__ import annotations

import shutil
import tarfile
from pathlib import Path


def with_dump(folder: Path, tmp_path: Path) -> Path:
    out = shutil.copytree(folder, tmp_path / folder.name)
    with tarfile.open(out / "xla-dump.tar.xz") as tar:
        tar.extractall(out, filter="data")
    (out / "xla-dump.tar.xz").unlink()
    return out
