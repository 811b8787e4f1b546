"""The copy / wait / allocation calls' ids: the tracer's copy (tracer/host_calls.py) equals the readers'
(text/cuda_calls.py), every name's kind is what KIND_OF's patterns say, and both equal CUPTI's headers where this
machine has them (CUDA 13.0 generated them; ids never change)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from nvprof_wrap.text import cuda_calls
from nvprof_wrap.tracer import host_calls

HEADERS = Path("/usr/local/cuda/include")


def test_the_tracer_records_the_ids_the_readers_name():
    assert host_calls.RUNTIME_HOST_CBIDS == tuple(sorted(cuda_calls.RUNTIME_HOST_CBIDS))
    assert host_calls.DRIVER_HOST_CBIDS == tuple(sorted(cuda_calls.DRIVER_HOST_CBIDS))


def test_every_listed_call_is_of_the_kind_its_name_says():
    for table in (cuda_calls.RUNTIME_HOST_CBIDS, cuda_calls.DRIVER_HOST_CBIDS):
        assert all(cuda_calls.kind_of(name) == kind for name, kind in table.values())
    assert [cuda_calls.kind_of(n) for n in ("cudaLaunchKernel_v7000", "cuLaunchKernelEx", "cudaGraphLaunch_v10000",
                                             "cudaStreamSynchronize_v3020", "cudaMemcpyAsync", "cuMemAlloc_v2",
                                             "cudaEventRecord", "cudaFuncGetAttributes")] == \
        ["launch", "launch", "launch", "sync", "sync", "alloc", "other", "other"]


@pytest.mark.parametrize("header, prefix, table", [
    ("cupti_runtime_cbid.h", "CUPTI_RUNTIME_TRACE_CBID_", cuda_calls.RUNTIME_HOST_CBIDS),
    ("cupti_driver_cbid.h", "CUPTI_DRIVER_TRACE_CBID_", cuda_calls.DRIVER_HOST_CBIDS)])
def test_the_ids_are_cuptis(header, prefix, table):
    path = next((p for p in (HEADERS / header, *Path("/usr/local").glob(f"cuda-*/include/{header}")) if p.is_file()),
                None)
    if path is None:
        pytest.skip(f"no {header} on this machine (CUDA's headers)")
    ids = {name: int(v) for name, v in re.findall(prefix + r"(\w+)\s*=\s*(\d+)", path.read_text())}
    assert all(ids.get(name) == cbid for cbid, (name, _kind) in table.items())
    # and none is missing: every call of the header whose name is a copy, wait or allocation is listed
    assert {n for n in ids if cuda_calls.kind_of(n) in ("sync", "alloc")} == {name for name, _ in table.values()}
