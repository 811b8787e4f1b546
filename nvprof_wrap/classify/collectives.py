"""What a communication kernel's name says about its collective: which collective, reduction, data type, NCCL
algorithm and protocol — read from ``collectives.toml`` (names as data, like rules.toml), first match per field.

NCCL spells all of it in its kernel names (``ncclDevKernel_AllReduce_Sum_bf16_RING_LL``; before 2.19
``ncclKernel_AllReduce_RING_LL_Sum_float``); a field the name does not spell stays "" (an all-gather has no
reduction or type in its name; ``ncclDevKernel_Generic`` runs several grouped collectives: "Generic").
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

FIELDS = ("collective", "op", "dtype", "algorithm", "protocol")


@dataclass(frozen=True)
class Collective:
    collective: str  # "AllReduce" | "ReduceScatter" | "AllGather" | "AllToAll" | "Broadcast" | "SendRecv" | …
    op: str = ""  # the reduction: "Sum", "Max", "PreMulSum" …
    dtype: str = ""  # "bf16", "fp32" …
    algorithm: str = ""  # "ring", "tree", "NVLS" …
    protocol: str = ""  # "LL", "LL128", "Simple"


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return tomllib.loads(resources.files("nvprof_wrap.classify").joinpath("collectives.toml").read_text())


@lru_cache(maxsize=1)
def _tables() -> dict[str, tuple[tuple[re.Pattern[str], str], ...]]:
    return {f: tuple((re.compile(e["pattern"], re.IGNORECASE), e["value"]) for e in _data()[f]) for f in FIELDS}


def _first(table: tuple[tuple[re.Pattern[str], str], ...], name: str) -> str:
    for pattern, value in table:
        m = pattern.search(name)
        if m:
            return m.expand(value)
    return ""


@lru_cache(maxsize=4096)
def parse(name: str) -> Collective:
    """The collective a communication kernel's name spells; "" where it spells none (an NVSHMEM barrier)."""
    base = name.split("(", 1)[0]  # the parameters (ncclDevKernelArgsStorage<4096ul>) say nothing of it
    found = {f: _first(t, base) for f, t in _tables().items()}
    if found["collective"] in _data()["untyped"]:
        found["op"] = found["dtype"] = ""
    return Collective(found["collective"], found["op"], found["dtype"], found["algorithm"], found["protocol"])
