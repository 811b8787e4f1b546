"""The GPUs' dense peak rates per precision and memory bandwidth, as data (peaks.toml: one row per product, with its
sources). The speed-up ceiling and achieved-TFLOP/s analyses read the rates from here, never numbers of their own.

- ``load()``: every row, checked (a row that lacks a field, has one of the wrong type or one the table does not know
  is an error at load, naming the row).
- ``lookup(device_name, cc)``: the row for a device name as profilers and nvidia-smi write it, or None. Never a guess
  from a neighbour: "NVIDIA H100" matches the SXM5 row only because that row lists the bare name (the PCIe and NVL
  boards write their form factor), "NVIDIA A100-PG509-200" or "NVIDIA H800" match nothing. A compute capability,
  where the capture records one, must agree with the row's.
- ``tensor_peak(peak, precision)``: the tensor-core rate a GEMM in that precision can reach.
- ``markdown()``: docs/gpu-peaks.md (``python -m nvprof_wrap.analyses.peaks --markdown`` writes it).
"""
from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from nvprof_wrap.errors import BadInput

# The precision names of model.Classification.precision, plus the two the table adds: fp4 (Blackwell) and fp64_tc
# (FP64 on the tensor cores, DMMA). fp64 and fp32 are the CUDA cores' rates.
PRECISIONS = ("fp64", "fp64_tc", "fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8")
# A precision's GEMMs on tensor cores run at this rate. fp32 has none: an fp32 GEMM on tensor cores runs as tf32
# (torch.backends.cuda.matmul.allow_tf32, TF_ENABLE_TF32), which is its own precision in the verdicts; fp64 runs on
# the tensor cores (DMMA) only where the GPU has them.
_TENSOR = {"tf32": "tf32", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8", "fp4": "fp4", "int8": "int8",
           "fp64": "fp64_tc", "fp64_tc": "fp64_tc"}
_REQUIRED = {"key", "name", "names", "cc", "memory_gbs", "sources"}
_OPTIONAL = {"sms", "boost_mhz", "note", *PRECISIONS}
_TABLE = "nvprof_wrap/analyses/peaks.toml"


@dataclass(frozen=True)
class Source:
    title: str
    url: str


@dataclass(frozen=True)
class Peak:
    """One GPU product's peak rates: dense TFLOP/s (int8: TOPS) by precision name, memory bandwidth in GB/s."""

    key: str  # "h200-sxm"
    name: str  # "H200 SXM"
    cc: tuple[int, int]
    rates: dict[str, float] = field(hash=False)  # absent: the GPU lacks the format
    memory_gbs: float
    sources: tuple[Source, ...]
    note: str = ""
    names: tuple[str, ...] = ()  # the regular expressions device names are matched with
    sms: int | None = None
    boost_mhz: int | None = None


def _row(i: int, row: object, origin: str) -> Peak:
    where = f"row {i + 1}" + (f" ({row.get('key')!r})" if isinstance(row, dict) and "key" in row else "")

    def bad(why: str) -> BadInput:
        return BadInput(origin, f"{where}: {why}")

    if not isinstance(row, dict):
        raise bad("not a table")
    if missing := sorted(_REQUIRED - row.keys()):
        raise bad(f"lacks {', '.join(missing)}")
    if unknown := sorted(row.keys() - _REQUIRED - _OPTIONAL):
        raise bad(f"has unknown field(s) {', '.join(unknown)}")
    for k in ("key", "name", "cc", "note"):
        if k in row and not (isinstance(row[k], str) and row[k].strip()):
            raise bad(f"{k} must be a non-empty string")
    if any(k in row and not (type(row[k]) is int and row[k] > 0) for k in ("sms", "boost_mhz")):
        raise bad("sms and boost_mhz must be positive integers")
    if not re.fullmatch(r"\d+\.\d+", row["cc"]):
        raise bad(f"cc {row['cc']!r} is not major.minor")
    numbers = {k: row[k] for k in (*PRECISIONS, "memory_gbs") if k in row}
    for k, v in numbers.items():
        if type(v) not in (int, float) or not v > 0:
            raise bad(f"{k} must be a positive number, not {v!r}")
    names = row["names"]
    if not (isinstance(names, list) and names and all(isinstance(n, str) and n for n in names)):
        raise bad("names must be a non-empty list of regular expressions")
    for n in names:
        try:
            re.compile(n)
        except re.error as e:
            raise bad(f"names: {n!r} is not a regular expression: {e}") from None
    sources = row["sources"]
    if not (isinstance(sources, list) and sources):
        raise bad("sources must be a non-empty list")
    for s in sources:
        if not (isinstance(s, dict) and s.keys() == {"title", "url"} and isinstance(s["title"], str)
                and s["title"].strip() and isinstance(s["url"], str) and s["url"].startswith("https://")):
            raise bad(f"a source must be {{title, url}} with an https:// url, not {s!r}")
    major, minor = (int(x) for x in row["cc"].split("."))
    return Peak(key=row["key"], name=row["name"], cc=(major, minor),
                rates={k: float(row[k]) for k in PRECISIONS if k in row}, memory_gbs=float(row["memory_gbs"]),
                sources=tuple(Source(s["title"], s["url"]) for s in sources), note=row.get("note", ""),
                names=tuple(names), sms=row.get("sms"), boost_mhz=row.get("boost_mhz"))


def parse(text: str, origin: str = _TABLE) -> tuple[Peak, ...]:
    """The rows of a peaks table (TOML text), checked; BadInput naming the row that is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BadInput(origin, f"not TOML: {e}") from None
    rows = data.get("gpu")
    if not (isinstance(rows, list) and rows):
        raise BadInput(origin, "no [[gpu]] rows")
    peaks = tuple(_row(i, row, origin) for i, row in enumerate(rows))
    keys = [p.key for p in peaks]
    if dupes := sorted({k for k in keys if keys.count(k) > 1}):
        raise BadInput(origin, f"key(s) given twice: {', '.join(dupes)}")
    return peaks


@lru_cache(maxsize=1)
def load() -> tuple[Peak, ...]:
    """Every row of the package's peaks.toml, checked once."""
    return parse(resources.files("nvprof_wrap.analyses").joinpath("peaks.toml").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[Peak, tuple[re.Pattern[str], ...]], ...]:
    return tuple((p, tuple(re.compile(n, re.IGNORECASE) for n in p.names)) for p in load())


@lru_cache(maxsize=256)
def lookup(device_name: str, cc: tuple[int, int] | None = None) -> Peak | None:
    """The row whose names match the device name (spaces collapsed, ends stripped), or None when none does. With a
    compute capability, a row of another one does not match: a name that disagrees with the hardware is no evidence."""
    name = " ".join(device_name.split())
    if not name:
        return None
    return next((p for p, patterns in _patterns()
                 if (cc is None or p.cc == cc) and any(r.search(name) for r in patterns)), None)


def tensor_peak(peak: Peak, precision: str) -> float | None:
    """The dense tensor-core rate a GEMM in this precision can reach on this GPU, or None where it has none: "fp32"
    (its GEMMs reach the tensor cores only as tf32, a precision of its own), a format the GPU lacks, or a precision
    name the table does not know. "fp16/bf16" (a kernel that serves both) gets the lower of the two."""
    if precision == "fp16/bf16":
        rates = [r for r in (tensor_peak(peak, "fp16"), tensor_peak(peak, "bf16")) if r is not None]
        return min(rates) if rates else None
    key = _TENSOR.get(precision)
    return None if key is None else peak.rates.get(key)


_INTRO = """\
# GPU peak rates

Generated from `nvprof_wrap/analyses/peaks.toml` by `python -m nvprof_wrap.analyses.peaks --markdown`; do not edit by
hand (`tests/analyses/test_peaks.py` checks this file against the table). The speed-up ceiling and the achieved
TFLOP/s against peak (MFU) read these rates; `nvprof_wrap.analyses.peaks.lookup(device_name)` finds a GPU's row.

**Dense** means without 2:4 structured sparsity. NVIDIA's datasheets print most tensor-core rates *with* sparsity
(marked with an asterisk), twice the dense rate; a dense GEMM — what training runs — can never reach those, so the
table halves them (an H200 running a bf16 matmul loop reached 761-787 TFLOP/s against 989.4 dense). Tensor rates
are for FP16, BF16 and FP8 inputs **with FP32 accumulate**, which is what frameworks run. GeForce cards run that at
half the FP16-accumulate rate their spec sheets lead with, so for them the table holds the FP32-accumulate figure
(the notes below give the other). TFLOP/s, INT8 in TOPS; FP32 and FP64 are the CUDA cores' rates (an FP32 GEMM on
tensor cores runs as TF32), FP64 TC the tensor cores' (DMMA); — where the GPU lacks the format. Memory in GB/s.
"""
_COLUMNS = (("TF32", "tf32"), ("FP16", "fp16"), ("BF16", "bf16"), ("FP8", "fp8"), ("FP4", "fp4"), ("INT8", "int8"),
            ("FP32", "fp32"), ("FP64", "fp64"), ("FP64 TC", "fp64_tc"))


def markdown() -> str:
    """docs/gpu-peaks.md: the table, then each row's device names, note and sources."""
    head = ["GPU", "cc", *(c for c, _ in _COLUMNS), "memory GB/s", "sources"]
    lines = [_INTRO, "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for p in load():
        links = ", ".join(f"[{i + 1}]({s.url})" for i, s in enumerate(p.sources))
        rates = (f"{p.rates[k]:g}" if k in p.rates else "—" for _, k in _COLUMNS)
        cells = [p.name, f"{p.cc[0]}.{p.cc[1]}", *rates, f"{p.memory_gbs:g}", links]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Rows", ""]
    for p in load():
        lines.append(f"- **{p.name}** (`{p.key}`), device names matching {', '.join(f'`{n}`' for n in p.names)}."
                     + (f" {p.note}" if p.note else ""))
        lines += [f"  - {s.title}: <{s.url}>" for s in p.sources]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["--markdown"]:
        sys.stderr.write("usage: python -m nvprof_wrap.analyses.peaks --markdown > docs/gpu-peaks.md\n")
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
