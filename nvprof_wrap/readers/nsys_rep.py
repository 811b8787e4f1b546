"""``.nsys-rep`` (and the older ``.qdrep``): Nsight Systems' own binary format, readable only by
nsys itself. We export it to SQLite with ``nsys export`` and read that."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from nvprof_wrap.errors import BadInput, ToolMissing
from nvprof_wrap.model import Capture
from nvprof_wrap.readers import nsys_sqlite


def export_sqlite(path: Path, nsys: str, out: Path | None = None) -> Path:
    """Export to ``out`` (default: next to the report), unless an export newer than the report is there."""
    out = out or path.with_suffix(".sqlite")
    if out.exists() and out.stat().st_mtime >= path.stat().st_mtime:
        return out
    cmd = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(out), str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not out.exists():
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise BadInput(path, f"nsys export failed (exit {proc.returncode}): {last[0]}")
    return out


def _writable(folder: Path) -> bool:
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def read(path: Path) -> Capture:
    from nvprof_wrap.launch.backends import find_nsys  # the launcher owns where nsys is searched for

    nsys = find_nsys()
    if nsys is None:
        raise ToolMissing(f"{path}: an .nsys-rep file can only be read through Nsight Systems; install it, put "
                          "nsys on PATH or set NVPROF_WRAP_NSYS, or export it yourself: nsys export --type sqlite "
                          f"{path.name} and pass the .sqlite file")
    if _writable(path.parent):  # the export stays beside the report: the next read skips nsys
        capture = nsys_sqlite.read(export_sqlite(path, nsys))
    else:  # a read-only folder: exported to a temporary folder, removed once read
        with tempfile.TemporaryDirectory(prefix="nvprof-wrap-") as tmp:
            capture = nsys_sqlite.read(export_sqlite(path, nsys, Path(tmp) / (path.stem + ".sqlite")))
    return Capture(str(path), "nsys-rep", capture.kernels, capture.memops, capture.activity, capture.devices,
                   capture.processes, notes=capture.notes)
