"""Mangled kernel names are demangled by every reader: Nsight Systems exports of TensorFlow jobs carry mangled text in
demangledName, and CUDA 11+ names anonymous namespaces _GLOBAL__N__<hash>_<len>_<file>."""
from __future__ import annotations

import shutil
import sqlite3

from nvprof_wrap import readers
from nvprof_wrap.classify import classify
from nvprof_wrap.demangle import demangle
from tests.conftest import ROOT

SAMPLE = ROOT / "nvprof_wrap" / "samples" / "torch_ops" / "nsys_torch_ops.sqlite"  # the real H200 capture, bundled


def test_cuda11_anonymous_namespaces_demangle():
    """A real name from the H200 capture: the PyTorch RNG kernel in DistributionNormal.cu's anonymous namespace."""
    conn = sqlite3.connect(f"file:{SAMPLE}?mode=ro&immutable=1", uri=True)
    (mangled,) = conn.execute("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.mangledName "
                              "WHERE s.value LIKE '%GLOBAL__N__%DistributionNormal%' LIMIT 1").fetchone()
    conn.close()
    name = demangle(mangled)
    assert mangled.startswith("_ZN2at6native54_GLOBAL__N__") and name.startswith(
        "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4,")
    assert classify(name).tensor_core == "no"


def test_nsys_export_whose_demangled_names_are_mangled(tmp_path):
    """What TensorFlow jobs' exports look like: demangledName pointing at mangled text. The reader demangles it."""
    copy = tmp_path / "tf_like.sqlite"
    shutil.copy(SAMPLE, copy)
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = mangledName")
    names = {k.name for k in readers.read(copy).kernels}
    original = {k.name for k in readers.read(SAMPLE).kernels}
    assert not any(n.startswith("_Z") for n in names)
    assert any("(anonymous namespace)::distribution_elementwise_grid_stride_kernel" in n for n in names)
    assert {n for n in names if n.startswith("nvjet_")} == {n for n in original if n.startswith("nvjet_")}
