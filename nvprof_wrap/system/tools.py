"""Where the external programs nvprof-wrap drives are (nsys, nvprof, ncu), what version they say they are, and the
one thing a reader needs one of them for: exporting an .nsys-rep to SQLite.

At the bottom of the package (it imports nothing from it but ``errors`` and ``lifeline``), so that readers and the
launcher both use it and neither imports the other. Each program is looked for in this order: the path given on the
command line
(``--nsys``, ``--ncu``), its ``$NVPROF_WRAP_*`` variable, PATH, then the folders NVIDIA's installers use (the
newest version folder wins).
"""
from __future__ import annotations

import fcntl
import functools
import glob
import os
import shutil
import sqlite3
import stat
import subprocess
import time
import urllib.parse
from pathlib import Path

from nvprof_wrap.errors import BadInput, CannotWrite
from nvprof_wrap.system import files, lifeline

NSYS_GLOBS = ("/opt/nvidia/nsight-systems/*/bin/nsys", "/opt/nvidia/nsight-systems-cli/*/bin/nsys",
              "/usr/local/cuda*/bin/nsys", "/usr/local/cuda*/nsight-systems*/bin/nsys",
              "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys")
NVPROF_GLOBS = ("/usr/local/cuda*/bin/nvprof",)
NCU_GLOBS = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda*/bin/ncu")

NSYS_VAR, NVPROF_VAR, NCU_VAR = "NVPROF_WRAP_NSYS", "NVPROF_WRAP_NVPROF", "NVPROF_WRAP_NCU"


def _find(env_var: str, exe: str, globs: tuple[str, ...], explicit: str | None = None) -> str | None:
    for cand in (explicit, os.environ.get(env_var), shutil.which(exe)):
        if cand and os.access(cand, os.X_OK):
            return cand
    for pattern in globs:
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]  # newest version folder sorts last
    return None


def find_nsys(explicit: str | None = None) -> str | None:
    return _find(NSYS_VAR, "nsys", NSYS_GLOBS, explicit)


def find_nvprof(explicit: str | None = None) -> str | None:
    return _find(NVPROF_VAR, "nvprof", NVPROF_GLOBS, explicit)


def find_ncu(explicit: str | None = None) -> str | None:
    return _find(NCU_VAR, "ncu", NCU_GLOBS, explicit)


def tool_version(exe: str) -> str:
    """The last line a program prints for --version ("unknown" when it prints nothing or cannot run)."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[-1].strip() if lines else "unknown"


@functools.lru_cache(maxsize=8)
def gpu_metrics_devices(nsys: str) -> tuple[str, ...]:
    """The lines of `nsys profile --gpu-metrics-devices=help` after its header (the GPUs this nsys can sample,
    then the keywords: all, cuda-visible, none); () when it cannot say (an older nsys, a failure)."""
    try:
        out = subprocess.run([nsys, "profile", "--gpu-metrics-devices=help"], capture_output=True, text=True,
                             timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    lines = (out.stdout or "").splitlines()
    if out.returncode != 0 or not lines or "gpu-metrics-devices" not in lines[0]:
        return ()
    return tuple(line.strip() for line in lines[1:] if line.strip())


# What an export in progress leaves beside its .nsys-rep (never captures; `run --force` removes them as ours): the
# lock that serialises exports of one report, and the temporary file an export is written to before it is renamed.
EXPORT_LOCK_SUFFIX = ".nvprof-wrap-export.lock"
EXPORT_TMP_MARK = ".nvprof-wrap-export-"


def export_lock(out: Path) -> Path:
    return out.with_name(f".{out.name}{EXPORT_LOCK_SUFFIX}")


def is_export_scratch(name: str) -> bool:
    """A lock or temporary file of an export (export_lock, _export_tmp), by its name."""
    return name.startswith(".") and (name.endswith(EXPORT_LOCK_SUFFIX) or EXPORT_TMP_MARK in name)


def _export_tmp(out: Path) -> Path:
    # ends in .sqlite: nsys adds the extension to an --output without it
    return out.with_name(f".{out.stem}{EXPORT_TMP_MARK}{os.getpid()}.sqlite")


def export_problem(out: Path, rep: Path | None = None) -> str | None:
    """Why ``out`` is not a complete SQLite export (of ``rep``, when given: not older than it), or None. What a
    full disk, a killed export or an export still being written leaves: no file, an empty one, one cut short (its
    header counts more pages than the file holds), one without the tables every nsys export has."""
    try:
        st = out.lstat()
        if not stat.S_ISREG(st.st_mode):  # a link or FIFO there is never followed, opened or replaced
            return "not a regular file"
        with open(out, "rb") as f:
            header = f.read(100)
    except FileNotFoundError:
        return "not exported yet"
    except OSError as e:
        return f"unreadable ({e.strerror})"
    if st.st_size == 0:
        return "empty (an export cut short: a full disk, or a killed nsys export)"
    if not header.startswith(b"SQLite format 3\x00") or len(header) < 100:
        return "not an SQLite file (an export cut short, or not an export)"
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(header[28:32], "big")
    if header[24:28] == header[92:96] and pages and st.st_size < pages * page:
        return f"cut short ({st.st_size:,} of {pages * page:,} bytes)"
    if rep is not None:
        try:
            if st.st_mtime < rep.stat().st_mtime:
                return f"older than {rep.name} (the report was written again since)"
        except OSError:
            pass
    try:
        # immutable: nothing is written beside the export (mode=ro alone made a -shm beside a WAL)
        conn = sqlite3.connect(f"file:{urllib.parse.quote(str(out.resolve()))}?mode=ro&immutable=1", uri=True)
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeDecodeError) as e:
        return f"not a readable SQLite database ({e})"
    if not names & {"StringIds", "TARGET_INFO_SESSION_START_TIME"}:
        return "missing the tables every Nsight Systems export has"
    return None


def replaceable_export(out: Path) -> bool:
    """Whether ``out`` may be replaced by a fresh export: absent, empty, or an SQLite file that is an nsys export
    (stale or cut short). Any other file of that name (a database of the user's) is left alone."""
    try:
        st = out.lstat()
        if not stat.S_ISREG(st.st_mode):
            return False
        if st.st_size == 0:
            return True
        with open(out, "rb") as f:
            if not f.read(16).startswith(b"SQLite format 3\x00"):
                return False
    except FileNotFoundError:
        return True
    except OSError:
        return False
    why = export_problem(out)
    return why is None or not why.startswith("missing the tables")


def nsys_export(path: Path, nsys: str, out: Path | None = None) -> Path:
    """``nsys export --type sqlite`` of an .nsys-rep into ``out`` (default: next to it), unless a complete export
    not older than the report is already there (export_problem).

    One export at a time per report: under an flock on a lock file beside ``out`` (export_lock), so that reports
    started together wait for the first one's export instead of reading it half-written. The export is written to
    a temporary name and renamed onto ``out`` only once complete and valid: whoever finds ``out`` finds a whole
    export, and an export that failed (a full disk) leaves nothing that hides the report. nsys dies with this
    process (PR_SET_PDEATHSIG): a report killed with SIGKILL leaves no export running."""
    out = out or path.with_suffix(".sqlite")
    if export_problem(out, path) is None:
        return out
    try:
        lock = files.open_fd(export_lock(out), os.O_RDWR | os.O_CREAT, what="export's lock")
    except OSError as e:
        raise CannotWrite(out, f"cannot export {path.name} beside it ({e.strerror})") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # waits for an export of the same report by another process
        if export_problem(out, path) is None:
            return out  # exported while we waited
        if not replaceable_export(out):
            raise BadInput(out, f"is not an Nsight Systems export of {path.name}: left untouched")
        for stale in out.parent.glob(f".{glob.escape(out.stem)}{EXPORT_TMP_MARK}*"):
            stale.unlink(missing_ok=True)  # a temporary of an export killed before it could remove it (ours)
        tmp = _export_tmp(out)
        try:
            _run_export(path, nsys, tmp)
            why = export_problem(tmp)
            if why:
                raise BadInput(path, f"nsys export wrote an unusable export: {why}")
            made = max(time.time(), path.stat().st_mtime)  # a report dated ahead (a skewed clock) is exported once
            os.utime(tmp, (made, made))
            files.replace(tmp, out, "export")
        finally:
            tmp.unlink(missing_ok=True)
        return out
    finally:
        os.close(lock)  # the lock file stays: removing it would let a waiting process lock a file no longer there


def _run_export(path: Path, nsys: str, out: Path) -> None:
    cmd = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(out), str(path)]
    parent = os.getpid()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                              preexec_fn=lambda: lifeline.die_with_parent(parent))
    except OSError as e:
        raise BadInput(path, f"nsys export could not start ({e.strerror or e})") from None
    if proc.returncode != 0 or not out.exists():
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise BadInput(path, f"nsys export failed (exit {proc.returncode}): {last[0]}")
