"""Compiled-code evidence for kernels whose names say nothing (Triton / Inductor ``triton_tem_*``, user
Triton kernels): find the kernel's PTX in the Triton cache and look for tensor-core instructions.

A Triton kernel compiled without any ``mma`` / ``wgmma`` instruction cannot use tensor cores; one with
them does. Evidence rank: counters > compiled code > name rules.
"""
from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.system import files
from nvprof_wrap.system.limits import MAX_PTX_BYTES, MAX_PTX_DEPTH, MAX_PTX_ENTRIES, MAX_PTX_FILES, MAX_PTX_TOTAL_BYTES

# PTX tensor-core instructions: mma.sync (Volta+), wgmma.mma_async (Hopper), tcgen05.mma (Blackwell),
# and the legacy wmma.mma.
_MMA = re.compile(rb"^\s*(?:@%p\d+\s+)?(wgmma\.mma_async|mma\.sync|tcgen05\.mma|wmma\.mma)\S*", re.MULTILINE)
_ENTRY = re.compile(rb"\.entry\s+([A-Za-z_][\w$]*)")


@dataclass(frozen=True)
class StaticVerdict:
    name: str
    tensor_core: str  # "yes" | "no" | "unknown" (several compiled versions disagree)
    detail: str
    source: str  # "triton-cache" | "xla-dump"
    precision: str = ""  # what the compiled code says ("" where it cannot say: PTX without its operand types)


def cache_dirs() -> list[Path]:
    """Where Triton keeps compiled kernels: $TRITON_CACHE_DIR, else ~/.triton/cache."""
    dirs = [Path(os.environ["TRITON_CACHE_DIR"])] if os.environ.get("TRITON_CACHE_DIR") else []
    dirs.append(Path.home() / ".triton" / "cache")
    return [d for d in dirs if d.is_dir()]


def _ptx_files(dirs: Iterable[Path]) -> Iterable[Path]:
    """The ``*.ptx`` names under ``dirs``: no link to a folder followed, at most MAX_PTX_DEPTH folders deep and
    MAX_PTX_FILES names and MAX_PTX_ENTRIES entries in all (a cache folder can be anything the user points at:
    ``/``)."""
    return bounded_files(dirs, lambda name: name.endswith(".ptx"), MAX_PTX_FILES, MAX_PTX_ENTRIES, MAX_PTX_DEPTH)


def bounded_files(dirs: Iterable[Path], wanted: Callable[[str], bool], max_files: int, max_entries: int,
                  max_depth: int) -> Iterable[Path]:
    """The names under ``dirs`` that ``wanted`` accepts, in name order: no link to a folder followed, at most
    ``max_depth`` folders deep, ``max_files`` names and ``max_entries`` folder entries looked at in all."""
    count, seen = 0, 0
    stack = [(Path(d), 0) for d in reversed(list(dirs))]
    while stack and count < max_files and seen < max_entries:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(itertools.islice(it, max_entries - seen), key=lambda e: e.name)
        except OSError:
            continue  # unreadable, or not a folder: nothing of it is evidence
        seen += len(entries)
        for e in entries:
            if e.is_dir(follow_symlinks=False) and depth < max_depth:
                stack.append((Path(e.path), depth + 1))
            elif wanted(e.name) and count < max_files:
                count += 1
                yield Path(e.path)


def _read_ptx(path: Path, budget: int) -> bytes | None:
    """A regular file's bytes (open_regular: no link, FIFO or device; at most MAX_PTX_BYTES), or None."""
    try:
        fd = files.open_regular(path, min(MAX_PTX_BYTES, budget))
    except BadInput:
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            return f.read(MAX_PTX_BYTES + 1)[:MAX_PTX_BYTES]  # bounded even if the file grew since fstat
        except OSError:
            return None


def scan(names: set[str], dirs: Iterable[Path] | None = None) -> list[StaticVerdict]:
    """Verdicts for those of ``names`` (kernel entry names) found as PTX entries in the cache folders."""
    found: dict[str, list[tuple[str, str]]] = {}
    budget = MAX_PTX_TOTAL_BYTES
    for ptx in _ptx_files(cache_dirs() if dirs is None else [Path(d) for d in dirs]):
        text = _read_ptx(ptx, budget)
        if text is None:
            continue
        budget -= len(text)
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
