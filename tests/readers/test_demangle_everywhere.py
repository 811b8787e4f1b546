"""Mangled kernel names are demangled by every reader: Nsight Systems exports of TensorFlow jobs carry mangled text in
demangledName, and CUDA 11+ names anonymous namespaces _GLOBAL__N__<hash>_<len>_<file>."""
from __future__ import annotations

import shutil
import sqlite3

from nvprof_wrap import readers
from nvprof_wrap.classify import classify
from nvprof_wrap.text.demangle import demangle
from tests._paths import ROOT

SAMPLE = ROOT / "nvprof_wrap" / "samples" / "torch_ops" / "nsys_torch_ops.sqlite"  # the real H200 capture, bundled


def test_cuda11_anonymous_namespaces_demangle():
    """A real name from the H200 capture: the PyTorch RNG kernel in DistributionNormal.cu's anonymous namespace."""
    conn = sqlite3.connect(f"file:{SAMPLE}?mode=ro&immutable=1", uri=True)
    (mangled,) = conn.execute("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                              "JOIN StringIds s ON s.id = k.mangledName "
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


def test_pyprof_csv_names_pyprof_could_not_demangle(tmp_path):
    """apex.pyprof demangles and shortens names; one its demangler left alone reaches the CSV mangled (the header
    and cells as in josiahdavis/profiling-lm's lm.csv, the name from the H200 capture)."""
    conn = sqlite3.connect(f"file:{SAMPLE}?mode=ro&immutable=1", uri=True)
    (mangled,) = conn.execute("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                              "JOIN StringIds s ON s.id = k.mangledName "
                              "WHERE s.value LIKE '%GLOBAL__N__%DistributionNormal%' LIMIT 1").fetchone()
    conn.close()
    path = tmp_path / "net.csv"
    path.write_text('"Kernel","Module","Op","Direction","Sil(ns)","TC","FLOPs","Bytes","Device","Stream","Block","Grid"\n'
                    f'"{mangled}","torch","normal_","fprop","6624","-","0","1125600","0","7","256,1,1","640,1,1"\n'
                    '"volta_sgemm_32x128_tn","torch.nn.functional","linear","fprop","3168","-","140000.0","1120000",'
                    '"0","7","256,1,1","274,1,1"\n')
    names = {k.name for k in readers.read(path).kernels}
    assert "volta_sgemm_32x128_tn" in names and not any(n.startswith("_Z") for n in names)
    assert any("(anonymous namespace)::distribution_elementwise_grid_stride_kernel" in n for n in names)
