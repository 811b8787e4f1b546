"""Compiled-code evidence for kernels whose names say nothing (Triton / Inductor ``triton_tem_*``, user
Triton kernels): find the kernel's PTX in the Triton cache and look for tensor-core instructions.

A Triton kernel compiled without any ``mma`` / ``wgmma`` instruction cannot use tensor cores; one with
them does. Evidence rank: counters > compiled code > name rules.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# PTX tensor-core instructions: mma.sync (Volta+), wgmma.mma_async (Hopper), tcgen05.mma (Blackwell),
# and the legacy wmma.mma.
_MMA = re.compile(rb"^\s*(?:@%p\d+\s+)?(wgmma\.mma_async|mma\.sync|tcgen05\.mma|wmma\.mma)\S*", re.MULTILINE)
_ENTRY = re.compile(rb"\.entry\s+([A-Za-z_][\w$]*)")


@dataclass(frozen=True)
class StaticVerdict:
    name: str
    tensor_core: str  # "yes" | "no" | "unknown" (several compiled versions disagree)
    detail: str
    source: str


def cache_dirs() -> list[Path]:
    """Where Triton keeps compiled kernels: $TRITON_CACHE_DIR, else ~/.triton/cache."""
    dirs = [Path(os.environ["TRITON_CACHE_DIR"])] if os.environ.get("TRITON_CACHE_DIR") else []
    dirs.append(Path.home() / ".triton" / "cache")
    return [d for d in dirs if d.is_dir()]


def _ptx_files(dirs: Iterable[Path]) -> Iterable[Path]:
    for d in dirs:
        yield from d.rglob("*.ptx")


def scan(names: set[str], dirs: Iterable[Path] | None = None) -> list[StaticVerdict]:
    """Verdicts for those of ``names`` (kernel entry names) found as PTX entries in the cache folders."""
    found: dict[str, list[tuple[str, str]]] = {}
    for ptx in _ptx_files(cache_dirs() if dirs is None else [Path(d) for d in dirs]):
        try:
            text = ptx.read_bytes()
        except OSError:
            continue
        entries = {m.decode() for m in _ENTRY.findall(text)}
        hit = entries & names
        if not hit:
            continue
        instr = sorted({m.decode() for m in _MMA.findall(text)})
        for name in hit:
            found.setdefault(name, []).append(("yes" if instr else "no", ", ".join(instr) or "no mma instruction"))
    out = []
    for name, versions in found.items():
        verdicts = {v for v, _ in versions}
        verdict = verdicts.pop() if len(verdicts) == 1 else "unknown"
        detail = f"PTX of {len(versions)} compiled version(s): " + "; ".join(sorted({d for _, d in versions}))
        out.append(StaticVerdict(name, verdict, detail, "triton-cache"))
    return out
