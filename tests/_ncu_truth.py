"""Tensor-core truth from an Nsight Compute CSV export, read with the standard library alone (independent of
nvprof_wrap's reader): a kernel used tensor cores if some launch executed matrix instructions net of HFMA2
(HMMA − HFMA2, or wgmma, IMMA, DMMA > 0). Used by the tests that check labels and rules against raw counters."""
from __future__ import annotations

import csv
from collections.abc import Iterable

_INST = "sm__inst_executed_pipe_tensor_op_{}.sum"


def raw_truth(lines: Iterable[str]) -> tuple[dict[str, str], set[str]]:
    """({kernel name: "yes" | "no"}, the kernels whose every HMMA was HFMA2.MMA) of an ncu CSV's lines."""
    launches: dict[tuple[str, str], dict[str, float]] = {}
    for row in csv.DictReader(ln for ln in lines if ln.strip() and not ln.startswith("==")):
        value = row["Metric Value"].replace(",", "")
        if value not in ("", "n/a"):
            launches.setdefault((row["ID"], row["Kernel Name"]), {})[row["Metric Name"]] = float(value)
    truth: dict[str, str] = {}
    hfma2_only: set[str] = set()
    for (_, name), m in launches.items():
        def inst(kind: str, m: dict[str, float] = m) -> float:
            return m.get(_INST.format(kind), 0.0)
        mma = max(inst("hmma") - inst("hmma_type_hfma2"), inst("gmma")) + inst("imma") + inst("dmma")
        truth[name] = "yes" if mma > 0 or truth.get(name) == "yes" else "no"
        if inst("hmma") > 0 and mma == 0:
            hfma2_only.add(name)
    return truth, hfma2_only
