# Fake nvprof's per-process hook: on exit, write this process's capture as nvprof does (%p = pid).
import atexit
import importlib.util
import os
import sqlite3
import sys
from pathlib import Path

# The shared fixtures, where the tests find them: tests/_paths.py, loaded by its path (the job's own sys.path is left
# as it is).
_spec = importlib.util.spec_from_file_location("_nvprof_wrap_tests_paths",
                                               Path(__file__).resolve().parents[2] / "_paths.py")
_paths = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_paths)
TEMPLATE = _paths.PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp"


def _write():
    out = os.environ["FAKE_NVPROF_OUT"].replace("%p", str(os.getpid()))
    src, dst = sqlite3.connect(f"file:{TEMPLATE}?mode=ro&immutable=1", uri=True), sqlite3.connect(out)
    src.backup(dst)
    dst.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET processId=?", (os.getpid(),))
    dst.commit()
    dst.close()
    print(f"==%d== Generated result file: {out}" % os.getpid(), file=sys.stderr)


if os.environ.get("FAKE_NVPROF_OUT"):
    print(f"==%d== NVPROF is profiling process %d, command: {' '.join(sys.argv)}" % (os.getpid(), os.getpid()),
          file=sys.stderr)
    atexit.register(_write)
    if os.environ.get("FAKE_NVPROF_ONLY"):
        del os.environ["FAKE_NVPROF_OUT"]
