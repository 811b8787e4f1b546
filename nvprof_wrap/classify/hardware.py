"""The hardware's tensor-pipe activity as evidence about one kernel name: a verdict for a kernel the names leave
unknown, and a cross-check of the names' verdict for the others. Thresholds are data (hardware.toml), with the
measurements they come from."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@dataclass(frozen=True)
class Thresholds:
    yes_at_least: float
    no_below: float
    min_samples: int
    min_filled_ms: float
    busy_at_least: float
    idle_below: float
    version: str


@lru_cache(maxsize=1)
def thresholds() -> Thresholds:
    data = tomllib.loads(resources.files("nvprof_wrap.classify").joinpath("hardware.toml").read_text())
    d, c = data["decide"], data["check"]
    return Thresholds(float(d["yes_at_least"]), float(d["no_below"]), int(d["min_samples"]),
                      float(d["min_filled_ms"]), float(c["busy_at_least"]), float(c["idle_below"]), data["version"])


def _pipe(hmma: float | None, imma: float | None, dfma: float | None) -> str:
    """Which matrix pipe did the work, where the source tells them apart (GPM)."""
    pipes = [(v, n) for v, n in ((hmma, "HMMA"), (imma, "IMMA"), (dfma, "DMMA/DFMA")) if v and v >= 1]
    return f", mostly {max(pipes)[1]}" if pipes else ""


def describe(samples: int, interval_ns: int, tensor: float, source: str, hmma: float | None = None,
             imma: float | None = None, dfma: float | None = None) -> str:
    every = f"{interval_ns / 1e6:g} ms" if interval_ns >= 1_000_000 else f"{interval_ns / 1e3:g} µs"
    return (f"{source}: tensor pipes {tensor:.1f}% active{_pipe(hmma, imma, dfma)} over {samples:,} samples "
            f"of {every} it filled alone")


def judge(samples: int, interval_ns: int, tensor: float | None, source: str, hmma: float | None = None,
          imma: float | None = None, dfma: float | None = None) -> tuple[str, str] | None:
    """("yes" | "no" | "unknown", detail) from a kernel's samples; None when there are too few to say anything."""
    t = thresholds()
    if tensor is None or samples < t.min_samples or samples * interval_ns < t.min_filled_ms * 1e6:
        return None
    detail = describe(samples, interval_ns, tensor, source, hmma, imma, dfma)
    if "fp16" in source:  # Turing's metric counts FP16 arithmetic with the tensor pipes: never decides
        return "unknown", detail + " (this metric counts FP16 arithmetic too)"
    if tensor >= t.yes_at_least:
        return "yes", detail
    if tensor < t.no_below:
        return "no", detail
    return "unknown", detail + f" (between {t.no_below:g}% and {t.yes_at_least:g}%: not decided)"


def disagrees(name_verdict: str, tensor: float | None, samples: int, interval_ns: int) -> str | None:
    """What the hardware says against the names' yes/no verdict, or None when it agrees or cannot say."""
    t = thresholds()
    if tensor is None or samples < t.min_samples or samples * interval_ns < t.min_filled_ms * 1e6:
        return None
    if name_verdict == "no" and tensor >= t.busy_at_least:
        return f"the name says CUDA cores, but the tensor pipes were {tensor:.1f}% active while it ran alone"
    if name_verdict == "yes" and tensor < t.idle_below:
        return f"the name says tensor cores, but the tensor pipes were {tensor:.1f}% active while it ran alone"
    return None
