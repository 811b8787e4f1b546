"""The numerics recorder's files of a run folder (``numerics-<pid>.jsonl``, docs/numerics.md) read into typed
records and handed to analyses/numerics.py, whose verdict joins the training health (``health.numerics``).

Read where the run's other job files are (metrics.jsonl, the logs: report/health.py), not kept in the run store:
the store holds the captures' aggregates and is rebuilt from them (its DATA_VERSION); these records are the job's
own account of its numbers, like its metrics, judged when the report is made, streamed once in bounded memory
(the analysis keeps a few records per tensor), so keeping a million rows of them in SQLite would buy nothing.

Bounded whatever the files hold: each opened only when it is a regular file (never a FIFO, a device or through a
link), at most ``MAX_NUMERICS_FILE_BYTES`` read of one and ``MAX_NUMERICS_TOTAL_BYTES`` of all, a line longer than
``MAX_NUMERICS_LINE_BYTES`` skipped without being kept, every line that is not a record of the format (bad JSON,
NaN literals, wrong types, unknown kinds) skipped and counted.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from nvprof_wrap.analyses.numerics import TENSORS, Diagnosis, End, LossStat, Meta, Record, TensorStat
from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import EpochMetrics, HealthVerdict, NumericsVerdict
from nvprof_wrap.run import Run
from nvprof_wrap.system import bounded, files, limits

PIECE = 1 << 20
_PHASES = frozenset({"forward", "backward", "update"})


def lines(path: Path, budget: int) -> Iterator[bytes | None]:
    """The lines of one file, at most ``budget`` bytes read; None for a line too long to be a record (dropped as
    it streams, never kept whole)."""
    try:
        fd = files.open_regular(path, 1 << 62)
    except BadInput:
        return
    with os.fdopen(fd, "rb") as f:
        rest, dropping, left = b"", False, budget
        while left > 0 and (chunk := f.read(min(PIECE, left))):
            left -= len(chunk)
            parts = (rest + chunk).split(b"\n")
            rest = parts.pop()
            for i, line in enumerate(parts):
                if dropping and i == 0:
                    dropping = False
                    continue
                yield line if len(line) <= limits.MAX_NUMERICS_LINE_BYTES else None
            if len(rest) > limits.MAX_NUMERICS_LINE_BYTES:
                if not dropping:
                    yield None
                rest, dropping = b"", True
        if rest and not dropping:
            yield rest


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and -2**62 < v < 2**62 else None


def _num(v: Any) -> float | None:
    """A finite number, or None (NaN / Infinity literals, which Python's parser takes, included)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        x = float(v)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def _share(v: Any) -> float | None:
    x = _num(v)
    return x if x is not None and 0.0 <= x <= 1.0 else None


def _str(v: Any, cut: int = 200) -> str | None:
    return v[:cut] if isinstance(v, str) else None


def record(d: dict[str, Any], pid: int) -> Record | None:
    """One line's object as a typed record of the format, or None when it is not one."""
    kind = d.get("kind")
    if kind == "tensor":
        step, n = _int(d.get("step")), _int(d.get("n"))
        phase, layer, tensor = d.get("phase"), _str(d.get("layer")), d.get("tensor")
        name, dtype = _str(d.get("name")), _str(d.get("dtype"), 40)
        zeros, sub = _share(d.get("zeros")), _share(d.get("subnormal"))
        nan, inf = _int(d.get("nan")), _int(d.get("inf"))
        max_abs, ratio = d.get("max_abs"), d.get("ratio")
        if step is None or step < 0 or n is None or n < 0 or phase not in _PHASES or layer is None \
                or tensor not in TENSORS or name is None or dtype is None or zeros is None or sub is None \
                or nan is None or inf is None or nan < 0 or inf < 0 \
                or (max_abs is not None and _num(max_abs) is None) or (ratio is not None and _num(ratio) is None):
            return None
        return TensorStat(pid, step, str(phase), layer, str(tensor), name, dtype, n,
                          None if max_abs is None else abs(_num(max_abs) or 0.0), zeros, sub, nan, inf,
                          None if ratio is None else _num(ratio))
    if kind == "loss":
        step, finite, scale, skipped = _int(d.get("step")), d.get("finite"), d.get("scale"), d.get("skipped")
        loss = d.get("loss")
        if step is None or step < 0 or not isinstance(finite, bool) or (loss is not None and _num(loss) is None) \
                or (scale is not None and _num(scale) is None) or not isinstance(skipped, (bool, type(None))):
            return None
        return LossStat(pid, step, _num(loss), finite and loss is not None, _num(scale), skipped)
    if kind == "meta":
        layers = d.get("layers")
        every, first = _int(d.get("every")), _int(d.get("first_steps"))
        if not isinstance(layers, list) or every is None or first is None:
            return None
        return Meta(_int(d.get("pid")) or pid, _str(d.get("framework"), 40), _str(d.get("backend"), 40),
                    _str(d.get("policy"), 80), every, first, tuple(str(x)[:200] for x in layers[:10_000]))
    if kind == "end":
        steps, records, dropped = _int(d.get("steps")), _int(d.get("records")), _int(d.get("dropped"))
        if steps is None or records is None or dropped is None:
            return None
        return End(pid, steps, records, dropped)
    return None


def _pid(path: Path) -> int:
    digits = path.name.removeprefix("numerics-").removesuffix(".jsonl")
    return int(digits) if digits.isdigit() and len(digits) < 12 else 0


def diagnose_run(folder: Path, final: EpochMetrics | None = None) -> NumericsVerdict | None:
    """The numerics verdict of a run folder's records; None when it holds no numerics file."""
    paths = Run(folder).numerics_files()
    if not paths:
        return None
    d = Diagnosis()
    left = limits.MAX_NUMERICS_TOTAL_BYTES
    for path in paths[:limits.MAX_NUMERICS_FILES]:
        if left <= 0:
            break
        try:
            size = min(path.stat().st_size, limits.MAX_NUMERICS_FILE_BYTES)
        except OSError:
            continue
        pid = _pid(path)
        for raw in lines(path, min(left, limits.MAX_NUMERICS_FILE_BYTES)):
            if raw is not None and not raw.strip():
                continue
            rec = None
            if raw is not None:
                try:
                    obj = bounded.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    obj = None
                if isinstance(obj, dict):
                    if obj.get("kind") == "truncated":
                        continue
                    rec = record(obj, pid)
            if rec is None:
                d.damaged += 1
            else:
                d.add(rec)
        left -= size
    return d.result(final)


def with_numerics(verdict: HealthVerdict, folder: Path) -> HealthVerdict:
    """The health verdict with the run's numerics verdict joined (the same verdict when the run has none)."""
    found = diagnose_run(folder, verdict.final)
    return verdict if found is None else replace(verdict, numerics=found)
