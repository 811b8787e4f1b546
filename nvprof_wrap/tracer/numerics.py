"""The numerics recorder (``nvprof-wrap run --numerics``): per training step and layer, how the numbers looked —
activations, gradients, weights, the update and optimizer state, the loss and the loss scale — in Keras 3 (any
backend: tracer/numerics_keras.py) and PyTorch (tracer/numerics_torch.py) jobs, without a change to the script.

Runs in every Python process of the job (the injected sitecustomize calls numerics_hooks.install() when
$NVPROF_WRAP_NUMERICS names the run folder). Nothing is imported eagerly: an import hook patches keras / torch once
the job imports them.
Each process writes ``numerics-<pid>.jsonl`` (docs/numerics-recorder.md; the record format: the project's
numerics schema). What this module holds is shared by both frameworks: the settings, the sampling of steps, the
bounded writer and the statistics of a numpy array.

Runs inside the user's process: standard library, numpy and the framework it patches only; never raises into the
job (one ``nvprof-wrap: numerics:`` line on stderr instead); never changes a value the job computes.
"""
from __future__ import annotations

import atexit
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nvprof_wrap.tracer import _util

ENV = "NVPROF_WRAP_NUMERICS"  # the folder the records go to (the run folder)
ENV_EVERY = "NVPROF_WRAP_NUMERICS_EVERY"  # steps between sampled steps (default EVERY)
ENV_FIRST = "NVPROF_WRAP_NUMERICS_FIRST"  # steps always recorded from the start (default FIRST)
ENV_LAYERS = "NVPROF_WRAP_NUMERICS_LAYERS"  # the most layers sampled (default LAYERS)
ENV_MAX_BYTES = "NVPROF_WRAP_NUMERICS_MAX_BYTES"  # a file's limit (default MAX_BYTES; tests set less)
FILE = "numerics-{pid}.jsonl"  # run/names.py NUMERICS (a test checks the two are equal)
VERSION = 1
EVERY, FIRST, LAYERS = 10, 3, 64
MAX_BYTES, MAX_LINE = 64 * 2**20, 64 * 2**10
BUDGET = 0.2  # a regular sampled step is skipped while the recorder has cost more than this share of the time

# The smallest normal number of each floating dtype: below it (and not 0) a value is subnormal.
TINY = {"float16": 6.103515625e-05, "bfloat16": 1.1754943508222875e-38, "float32": 1.1754943508222875e-38,
        "float64": 2.2250738585072014e-308}


def _warn(msg: str) -> None:
    _util._warn("numerics: " + msg)  # one line on stderr, never an exception


def _int_env(name: str, default: int, low: int = 1) -> int:
    try:
        return max(low, int(os.environ.get(name, "") or default))
    except ValueError:
        _warn(f"${name}={os.environ.get(name)!r} is not a whole number: {default} used")
        return default


def finite_or_none(x: Any) -> float | None:
    """A float for JSON: a non-finite one is None (strict JSON has no NaN)."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


class Writer:
    """numerics-<pid>.jsonl in ``folder``, bounded: a line over MAX_LINE is dropped, and once the next line would
    take the file past ``limit`` a last {"kind": "truncated"} is written and nothing more."""

    def __init__(self, folder: str, limit: int) -> None:
        self.path = os.path.join(folder, FILE.format(pid=os.getpid()))
        self.limit, self.bytes, self.records, self.dropped = limit, 0, 0, 0
        self.closed = False
        self._f: Any = None

    def write(self, record: dict[str, Any]) -> bool:
        if self.closed:
            self.dropped += 1
            return False
        try:
            line = json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n"
        except ValueError:  # a non-finite float slipped through: the record is not written, it is counted
            self.dropped += 1
            return False
        data = line.encode()
        if len(data) > MAX_LINE:
            self.dropped += 1
            return False
        tail = b'{"kind":"truncated"}\n'
        if self.bytes + len(data) + len(tail) > self.limit:
            self._put(tail)
            self.closed = True
            self.dropped += 1
            return False
        self._put(data)
        self.records += 1
        return True

    def _put(self, data: bytes) -> None:
        try:
            if self._f is None:
                self._f = open(self.path, "ab")  # noqa: SIM115 - held open for the life of the process
            self._f.write(data)
            self.bytes += len(data)
        except OSError as e:
            _warn(f"cannot write {self.path} ({e}); no more records")
            self.closed = True

    def flush(self) -> None:
        try:
            if self._f is not None:
                self._f.flush()
        except OSError:
            pass


@dataclass
class Recorder:
    """What one process records: its writer, the sampling of steps and the recorder's own cost. One per process:
    the first framework that records claims it (``claim``); a Keras job on the torch backend is Keras's."""

    folder: str
    every: int = EVERY
    first: int = FIRST
    max_layers: int = LAYERS
    writer: Writer | None = None
    framework: str | None = None
    steps: int = 0
    overhead_s: float = 0.0
    started: float | None = None  # when the first step began: the budget is a share of the training's time
    forced: set[int] = field(default_factory=set)
    before_end: list[Callable[[], None]] = field(default_factory=list)  # what writes its last records at the end

    def claim(self, framework: str) -> bool:
        """Whether ``framework`` records in this process (the first to ask does; a forked child records nothing)."""
        if self.framework is None:
            self.framework = framework
            atexit.register(self.end)
        return self.framework == framework and self.pid == os.getpid()

    pid: int = field(default_factory=os.getpid)

    def start(self, backend: str | None, policy: str, layers: list[str]) -> None:
        """The meta record: written once, before the first step's records."""
        if self.writer is not None:
            return
        self.writer = Writer(self.folder, _int_env(ENV_MAX_BYTES, MAX_BYTES, 1024))
        self.writer.write({"kind": "meta", "v": VERSION, "pid": os.getpid(), "framework": self.framework,
                           "backend": backend, "policy": policy, "every": self.every, "first_steps": self.first,
                           "layers": _fit_line(layers)})

    def sampled(self, step: int) -> bool:
        """Whether ``step`` is recorded whole: the first steps, a step forced by a bad value, and every
        ``every``-th step while the recorder's cost stays within its budget."""
        if self.started is None:
            self.started = time.perf_counter()
        if step < self.first or step in self.forced:
            return True
        if step % self.every:
            return False
        elapsed = time.perf_counter() - self.started
        return self.overhead_s <= BUDGET * max(elapsed - self.overhead_s, 1e-9)

    def write(self, record: dict[str, Any]) -> None:
        if self.writer is not None:
            self.writer.write(record)

    def tensor(self, step: int, phase: str, layer: str, tensor: str, name: str, stats: dict[str, Any] | None,
               ratio: float | None = None) -> None:
        if stats is None:
            return
        rec = {"kind": "tensor", "step": step, "phase": phase, "layer": layer, "tensor": tensor, "name": name,
               **stats}
        if tensor == "update":
            rec["ratio"] = finite_or_none(ratio) if ratio is not None else None
        self.write(rec)

    def loss(self, step: int, loss: Any, scale: Any = None, skipped: bool | None = None) -> None:
        value = finite_or_none(loss)
        self.write({"kind": "loss", "step": step, "loss": value, "finite": value is not None,
                    "scale": finite_or_none(scale) if scale is not None else None, "skipped": skipped})

    def end_step(self, step: int) -> None:
        self.steps = max(self.steps, step + 1)
        self.forced.discard(step)
        if self.writer is not None:
            self.writer.flush()

    def end(self) -> None:
        if self.writer is None or self.pid != os.getpid():
            return
        for fn in self.before_end:
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - the job's end: one line, never an exception
                _warn(f"last records not written ({type(e).__name__}: {e})")
        self.writer.write({"kind": "end", "steps": self.steps, "records": self.writer.records + 1,
                           "dropped": self.writer.dropped, "overhead_s": round(self.overhead_s, 6)})
        self.writer.flush()


def _fit_line(layers: list[str]) -> list[str]:
    """The meta record's layer list, cut to fit one line."""
    out, size = [], 0
    for name in layers:
        size += len(name) + 4
        if size > MAX_LINE // 2:
            break
        out.append(name)
    return out


def spread(names: list[str], most: int) -> list[str]:
    """At most ``most`` of ``names``, spread evenly over the model: the first and the last always among them."""
    if len(names) <= most:
        return list(names)
    if most <= 1:
        return names[:1]
    picks = sorted({round(i * (len(names) - 1) / (most - 1)) for i in range(most)})
    return [names[i] for i in picks]


def np_stats(a: Any, as_dtype: str | None = None) -> dict[str, Any] | None:
    """The statistics of one tensor (a numpy array, any float dtype), as a tensor record's fields; None for a
    tensor that is not floating point. ``as_dtype``: the format it stands for (an update computed in float32 is of
    a float16 weight: its subnormals are float16's)."""
    import numpy as np

    arr = np.asarray(a)
    dtype = as_dtype or str(arr.dtype)
    if dtype not in TINY or arr.size == 0:
        return None
    if str(arr.dtype) not in TINY:
        return None
    x = arr.astype(np.float32) if str(arr.dtype) in ("float16", "bfloat16") else arr  # exact: both fit float32
    n = int(x.size)
    absx = np.abs(x)
    finite = np.isfinite(absx)
    nan = int(np.isnan(x).sum())
    inf = n - nan - int(finite.sum())
    fin = absx[finite] if nan or inf else absx.ravel()
    tiny = TINY[dtype]
    return {"dtype": dtype, "n": n, "max_abs": float(fin.max()) if fin.size else None,
            "zeros": float((fin == 0).sum()) / n, "subnormal": float(((fin > 0) & (fin < tiny)).sum()) / n,
            "nan": nan, "inf": inf}


def bad(stats: dict[str, Any] | None) -> bool:
    """A tensor record that shows non-finite values or a collapse to all zeros."""
    return stats is not None and (stats["nan"] > 0 or stats["inf"] > 0 or stats["zeros"] >= 1.0)


_RECORDER: Recorder | None = None


def recorder() -> Recorder | None:
    return _RECORDER


def begin(folder: str) -> Recorder:
    """This process's recorder, writing into ``folder`` (tracer/numerics_hooks.py patches the frameworks)."""
    global _RECORDER
    _RECORDER = Recorder(folder, every=_int_env(ENV_EVERY, EVERY), first=_int_env(ENV_FIRST, FIRST, 0),
                         max_layers=_int_env(ENV_LAYERS, LAYERS))
    return _RECORDER
