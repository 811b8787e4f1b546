"""The Triton cache scan (classify/static.py) reads only regular .ptx files, bounded, and never hangs (issue 44): a
FIFO named x.ptx hung the report, a link to /dev/zero ended in MemoryError at 2.6 GB (exit 70); and
analyze(triton_cache=...) takes a folder or a list of them, anything else is one line."""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.classify import static
from nvprof_wrap.errors import BadInput
from tests._paths import RUNS

PTX = RUNS / "triton_ptx"
NAMES = {"triton_tem_fused_mm_0", "triton_poi_fused_add_relu_1"}
CAPTURE = RUNS / "gemm_nsys" / "nsys.sqlite"
UNKNOWN = RUNS / "hw_phases_nsys" / "hw_phases_nsys.sqlite.gz"  # Triton's matmul_kernel: its name says nothing


def scan_within(names, dirs, seconds=20.0):
    """static.scan in a thread: a FIFO it blocks on fails the test instead of hanging it."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(static.scan(names, dirs)), daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        for fifo in (p for d in dirs for p in Path(d).rglob("*") if p.is_fifo()):
            os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))  # lets the blocked open() return
        pytest.fail("the Triton cache scan blocked on a FIFO")
    return {v.name: v for v in out[0]}


def test_fifos_devices_and_links_in_the_cache_are_not_read(tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(PTX, cache / "abc")
    os.mkfifo(cache / "abc" / "fifo.ptx")
    (cache / "zero.ptx").symlink_to("/dev/zero")  # read whole: MemoryError
    (cache / "null.ptx").symlink_to("/dev/null")
    (cache / "outside.ptx").symlink_to(PTX / "triton_tem_fused_mm_0.ptx")  # a link is not followed either
    found = scan_within(NAMES, [cache])
    assert found["triton_tem_fused_mm_0"].tensor_core == "yes" and "1 compiled version" in \
        found["triton_tem_fused_mm_0"].detail
    assert found["triton_poi_fused_add_relu_1"].tensor_core == "no"


def test_a_linked_folder_is_not_walked_and_depth_is_bounded(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "loop").symlink_to(cache)  # followed, rglob walked this loop
    (cache / "elsewhere").symlink_to(PTX)
    deep = cache.joinpath(*["d"] * 3)
    deep.mkdir(parents=True)
    shutil.copy(PTX / "triton_tem_fused_mm_0.ptx", deep)
    assert scan_within(NAMES, [cache]).keys() == {"triton_tem_fused_mm_0"}
    monkeypatch.setattr(static, "MAX_PTX_DEPTH", 2)
    assert scan_within(NAMES, [cache]) == {}


def test_a_ptx_over_the_size_cap_and_the_file_count_are_bounded(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    shutil.copytree(PTX, cache)
    monkeypatch.setattr(static, "MAX_PTX_BYTES", 20_000)  # the mm kernel's PTX is 42 KB, the other 11 KB
    assert scan_within(NAMES, [cache]).keys() == {"triton_poi_fused_add_relu_1"}
    monkeypatch.setattr(static, "MAX_PTX_BYTES", 1 << 20)
    monkeypatch.setattr(static, "MAX_PTX_FILES", 1)  # the first in name order: triton_poi…
    assert scan_within(NAMES, [cache]).keys() == {"triton_poi_fused_add_relu_1"}


@pytest.mark.parametrize("value", ["{ptx}", "str-path", ["{ptx}"], ("{ptx}",)])
def test_triton_cache_takes_a_folder_or_a_list_of_them(tmp_path, monkeypatch, value):
    """A str was iterated as its characters: triton_cache="dir" scanned "d", "i", "r" (and "/")."""
    seen = []
    real = static.scan
    monkeypatch.setattr(static, "scan", lambda names, dirs=None: seen.append(dirs) or real(names, dirs))
    one = str(PTX)
    value = one if value == "str-path" else Path(one) if value == "{ptx}" else type(value)(one for _ in value)
    analyze(UNKNOWN, triton_cache=value)
    assert seen == [[PTX]]


@pytest.mark.parametrize("value", [123, b"/tmp", [123], ["ok", None], "", [""], {"a": 1}, iter(["x"])])
def test_anything_else_as_triton_cache_is_one_line(value):
    with pytest.raises(BadInput, match=r"^analyze\(\): triton_cache must be a folder \(str or Path\) or a list"):
        analyze(CAPTURE, triton_cache=value)
