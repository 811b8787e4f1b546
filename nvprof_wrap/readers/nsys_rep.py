"""``.nsys-rep`` (and the older ``.qdrep``): Nsight Systems' own binary format, readable only by
nsys itself. We export it to SQLite with ``nsys export`` and read that."""
from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from nvprof_wrap.errors import ToolMissing
from nvprof_wrap.model import Capture
from nvprof_wrap.readers import nsys_sqlite
from nvprof_wrap.readers._head import Head
from nvprof_wrap.system import tempdirs, tools
from nvprof_wrap.timeline.window import Window


def _writable(folder: Path) -> bool:
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


FORMAT = "nsys-rep"


def sniff(head: Head) -> bool:
    # Nsight Systems reports are a proprietary binary format: the extension is the only handle on it.
    return head.binary and head.path.suffix in (".nsys-rep", ".qdrep")


def read(path: Path, window: Window | None = None) -> Capture:
    nsys = tools.find_nsys()
    if nsys is None:
        why = tools.export_problem(path.with_suffix(".sqlite"), path)
        export = "" if why in (None, "not exported yet") else f" (its export {path.stem}.sqlite is {why})"
        raise ToolMissing(f"{path}: an .nsys-rep file can only be read through Nsight Systems{export}; install it, "
                          "put nsys on PATH or set NVPROF_WRAP_NSYS, or export it yourself: nsys export --type sqlite "
                          f"{path.name} and pass the .sqlite file")
    beside = path.with_suffix(".sqlite")
    if _writable(path.parent) and tools.replaceable_export(beside):
        # the export stays beside the report (the next read skips nsys): written whole or not at all, one export
        # at a time (tools.nsys_export); an empty, cut-short or stale one there is exported again
        capture = nsys_sqlite.read(tools.nsys_export(path, nsys, beside), window)
    else:  # a read-only folder, or a file of that name that is no export: exported to a temporary folder
        with tempdirs.folder("export") as tmp:
            capture = nsys_sqlite.read(tools.nsys_export(path, nsys, Path(tmp) / (path.stem + ".sqlite")), window)
    return replace(capture, path=str(path), format=FORMAT)  # every field of the export survives (ops, counters…)
