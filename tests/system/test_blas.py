"""numpy loads with one BLAS thread in the report's process (system/blas.py): a pip-installed numpy's OpenBLAS
starts a thread per core, which spin a while and took 2 s of CPU on a 16-core host, for passes that multiply no
matrix; the variable that says so does not stay behind for the processes `run` starts, and a user's own choice
stands. Each case in a fresh interpreter (numpy loads once per process)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._paths import ROOT

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="threads counted in Linux's /proc")

_COUNT = ("import json, os, sys; {imports}; "
          "print(json.dumps([len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS')]))")


def _threads_after(imports: str, **env: str) -> tuple[int, str | None]:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", _COUNT.format(imports=imports)], env={**clean, **env}, cwd=ROOT,
                         capture_output=True, text=True, check=True)
    threads, variable = json.loads(out.stdout)
    return threads, variable


def test_the_reports_numpy_starts_no_blas_threads_and_leaves_no_variable() -> None:
    plain, _ = _threads_after("import numpy")
    if plain == 1:
        pytest.skip("this numpy's BLAS starts no thread when it loads (one core, or not OpenBLAS)")
    assert _threads_after("import nvprof_wrap.timeline.series_np") == (1, None)
    assert _threads_after("from nvprof_wrap.text.names import _collapse_vectorised; _collapse_vectorised('a<b>', 0)"
                          ) == (1, None)


def test_a_users_own_blas_threads_stand() -> None:
    assert _threads_after("import nvprof_wrap.timeline.series_np", OPENBLAS_NUM_THREADS="2")[1] == "2"
    assert _threads_after("import numpy; import nvprof_wrap.timeline.series_np")[1] is None
