# Fake nvprof's per-process hook: on exit, write this process's capture as nvprof does (%p = pid).
import atexit
import os
import sqlite3
import sys
from pathlib import Path

# The shared fixtures, where the tests find them too ($NVPROF_WRAP_FIXTURES, else ../shared/fixtures).
FIXTURES = Path(os.environ.get("NVPROF_WRAP_FIXTURES") or Path(__file__).resolve().parents[4] / "shared" / "fixtures")
TEMPLATE = FIXTURES / "public" / "m-goldstein__GPU_ML__timeline.nvvp"


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
