"""The fuzzing of tests/readers/test_fuzz.py over the formats of issue 13, from files that need no shared fixtures: a
damaged XSpace, TensorBoard trace JSON, ncu CSV after program output or console log gives a report or one line
and exit 2 — never a traceback, never a half-ingested store."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nvprof_wrap.readers import _xplane_schema
from nvprof_wrap.store import Store
from tests import xspace_build as xb
from tests._paths import DATA
from tests.readers.test_fuzz import FUZZ, check_outcome

CONSOLE = DATA / "console"
SEEDS = {
    "xplane": lambda: xb.xspace(xb.h200_jax_step(), _xplane_schema.own()),
    "tf-trace-json": lambda: xb.trace_json(xb.h200_jax_step()),
    "ncu-csv-after-output": lambda: (CONSOLE / "xplacer_ncu_bfs_graph4096.log").read_bytes()[:20000],
    "nvprof-summary": lambda: (CONSOLE / "xplacer_nvprof_summary_bfs.log").read_bytes(),
    "nvprof-gpu-trace": lambda: (CONSOLE / "xplacer_nvprof_gpu_trace_bfs.log").read_bytes(),
}


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "template.sqlite"
    Store(path).close()
    return path


@pytest.mark.parametrize("fmt", sorted(SEEDS))
@FUZZ
@given(data=st.data())
def test_truncated_and_bit_flipped(fmt, data, tmp_path_factory, capsys, empty_store):
    raw = SEEDS[fmt]()
    cut = data.draw(st.integers(0, len(raw)), label="truncate at")
    blob = bytearray(raw[:cut] if data.draw(st.booleans(), label="truncate") else raw)
    for _ in range(data.draw(st.integers(0, 8), label="flips")):
        if blob:
            i = data.draw(st.integers(0, len(blob) - 1))
            blob[i] ^= data.draw(st.integers(1, 255))
    path = tmp_path_factory.mktemp("fuzz") / f"capture-{fmt}"
    path.write_bytes(bytes(blob))
    check_outcome(capsys, path, empty_store)
