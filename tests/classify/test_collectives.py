"""classify/collectives.py: the collective, reduction, type, algorithm and protocol NCCL spells in its kernel names
(names from public captures and NCCL's generated sources; collectives.toml cites each)."""
from __future__ import annotations

import pytest

from nvprof_wrap.classify import classify
from nvprof_wrap.classify.collectives import Collective, parse

CASES = [
    # NCCL >= 2.19, as nsys and torch.profiler record them
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     Collective("AllReduce", "Sum", "bf16", "ring", "LL")),
    ("ncclDevKernel_AllGather_RING_LL", Collective("AllGather", "", "", "ring", "LL")),
    ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
     Collective("ReduceScatter", "Sum", "fp32", "ring", "LL")),
    ("ncclDevKernel_AllReduce_Sum_f32_NVLS_TREE_SIMPLE", Collective("AllReduce", "Sum", "fp32", "NVLS tree", "Simple")),
    ("ncclDevKernel_AllReduce_MinMax_bf16_COLLNET_DIRECT_SIMPLE",
     Collective("AllReduce", "MinMax", "bf16", "CollNet direct", "Simple")),
    ("ncclDevKernel_Broadcast_RING_LL128", Collective("Broadcast", "", "", "ring", "LL128")),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", Collective("SendRecv")),
    ("ncclDevKernel_Generic", Collective("Generic")),
    # NCCL 2.x before it
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", Collective("AllReduce", "Sum", "fp32", "ring", "LL")),
    ("ncclKernel_AllReduce_RING_LL_Sum_half(ncclDevComm*, unsigned long, ncclWork*)",
     Collective("AllReduce", "Sum", "fp16", "ring", "LL")),
    ("ncclKernel_AllReduce_RING_LL_Sum_bfloat16", Collective("AllReduce", "Sum", "bf16", "ring", "LL")),
    # NCCL 2.x's non-reducing collectives carry a placeholder reduction and type: not theirs
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
     Collective("SendRecv", "", "", "ring", "Simple")),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
     Collective("Broadcast", "", "", "ring", "LL")),
    ("ncclAllReduceRingLLKernel_sum_f32", Collective("AllReduce", "Sum", "fp32", "ring", "LL")),
    # DeepEP's expert-parallel exchange (wild/kineto-deepseek-train-h800.json, SGLang's traces)
    ("void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*, float*, bool const*)",
     Collective("EP combine", dtype="bf16")),
    ("void dpsk::ep::internode::dispatch<false, 8, false, 8>(int4*, float*, long*, float*)", Collective("EP dispatch")),
    ("void dpsk::ep::internode::notify_dispatch<false, 8>(int const*, long*, int)", Collective("EP notify")),
    ("void dpsk::ep::internode::cached_notify<false>(int, int, int, int, int*, int)", Collective("EP notify")),
    ("void dpsk::ep::cuda::get_dispatch_layout<256, 32, 8>(long const*, int*, int*)", Collective("EP layout")),
    ("void deep_ep::internode_ll::dispatch<true, 3, 10, 7168>(void*, void*, int*)", Collective("EP dispatch")),
    ("void deep_ep::internode_ll::combine<3, 10, 7168, 9>(void*, void*, int*)", Collective("EP combine")),
    # NVSHMEM's on-stream barrier: communication that names no collective
    ("void barrier_on_stream_kernel_threadgroup<(threadgroup_t)1>(int, int)", Collective("")),
]


@pytest.mark.parametrize(("name", "expected"), CASES)
def test_parse(name: str, expected: Collective) -> None:
    assert parse(name) == expected


@pytest.mark.parametrize(("name", "expected"), CASES)
def test_communication_kernels_are_not_math(name: str, expected: Collective) -> None:
    c = classify(name)
    assert c.tensor_core == "no" and c.family in ("nccl", "nvshmem", "deepep")
