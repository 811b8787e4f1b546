"""The GPUs' peak table (nvprof_wrap/analyses/peaks.toml): every row loads with its sources and sane rates, a broken
row is an error at load, the device names the real captures record resolve to the right row (and the GPUs the table
lacks to none), and docs/gpu-peaks.md is what the table generates."""
from __future__ import annotations

import gzip
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from nvprof_wrap.analyses import peaks
from nvprof_wrap.errors import BadInput
from tests._paths import DATA, FIXTURES, ROOT

# ---------------------------------------------------------------- device names as the captures record them

# A device name in text output ends where the tools put something after it: " (0)" (nvprof's device column),
# " (SM 8.0)" (ncu), " (sm_90)" (our table), " major:" (TensorFlow's log), a comma or quote (CSV), a run of spaces
# (console tables), the line's end.
_TEXT_NAME = re.compile(r"(?:NVIDIA |Tesla |Quadro |TITAN |GeForce )[A-Za-z0-9][\w\-]*(?: [A-Za-z0-9][\w\-]*)*?"
                        r"(?= \(\d+\)| \(SM | \(sm_| major:|,|\"| {2,}|\s*$)", re.MULTILINE)
_NOT_A_GPU = re.compile(r"^NVIDIA (?:GPUs?|Nsight|Corporation|Management|OpenCL|App)\b")  # prose, tool names


def _opened(path: Path, tmp: Path) -> Path:
    if path.suffix != ".gz":
        return path
    out = tmp / path.stem
    with gzip.open(path) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def _sqlite_names(path: Path) -> set[str]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        queries = {"TARGET_INFO_GPU": "SELECT name FROM TARGET_INFO_GPU",  # nsys
                   "device": "SELECT name FROM device",  # our CUPTI tracer
                   # nvprof: the name is an id into StringTable
                   "CUPTI_ACTIVITY_KIND_DEVICE": "SELECT s.value FROM CUPTI_ACTIVITY_KIND_DEVICE d "
                                                 "JOIN StringTable s ON s._id_ = d.name"}
        return {r[0] for t, q in queries.items() if t in tables for r in con.execute(q) if isinstance(r[0], str)}
    finally:
        con.close()


def _json_names(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_bytes())
    except ValueError:
        return set()
    if not isinstance(data, dict):
        return set()
    rows = [*(data.get("deviceProperties") or ()), *(data.get("gpus") or ())]  # Kineto; a run's manifest
    return {r["name"] for r in rows if isinstance(r, dict) and isinstance(r.get("name"), str)}


def device_names(roots: list[Path], tmp: Path) -> dict[str, set[str]]:
    """Every GPU name the files under these folders record (SQLite captures, Kineto traces, run manifests, console
    and CSV output), with the files that record it. Binary reports (.nsys-rep, .qdrep, .pb) are not read."""
    found: dict[str, set[str]] = {}
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            if path.name.lower() == "readme.md" or path.stat().st_size > 64 << 20:
                continue
            kind = path.name.removesuffix(".gz").rsplit(".", 1)[-1]
            if kind in ("sqlite", "sql", "nvvp"):
                names = _sqlite_names(_opened(path, tmp))
            elif kind == "json":
                names = _json_names(_opened(path, tmp))
            elif kind in ("csv", "txt", "log", "md"):
                names = set(_TEXT_NAME.findall(_opened(path, tmp).read_text(errors="replace")))
            else:
                continue
            for name in (" ".join(n.split()) for n in names):
                if not _NOT_A_GPU.match(name):
                    found.setdefault(name, set()).add(str(path))
    return found


# What each name the captures record resolves to: a key, or None where the table has no row for that GPU (and no
# neighbour's row may stand in for it). A capture with a new name fails test_fixture_names until it is added here.
IN_CAPTURES: dict[str, str | None] = {
    "NVIDIA H200": "h200-sxm",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA A100-SXM4-40GB": "a100-sxm4-40gb",
    "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb",
    "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb",
    "NVIDIA B200": "b200",
    "NVIDIA GeForce RTX 2080 Ti": "rtx-2080-ti",
    "NVIDIA GeForce RTX 3090": "rtx-3090",
    "Tesla T4": "t4",
    "Tesla V100-SXM2-16GB": "v100-sxm2",
    "Tesla V100-SXM2": "v100-sxm2",  # nvprof's console cuts the name; the form factor is still there
    "Tesla V100-PCIE-32GB": "v100-pcie",
    # not in the table
    "NVIDIA A100-PG509-200": None,  # OEM board name, no public datasheet
    "Tesla V100-DGXS-32GB": None,  # DGX Station board: its own clocks
    "NVIDIA H800": None,
    "NVIDIA A40": None,
    "NVIDIA RTX A5000": None,
    "NVIDIA GeForce RTX 4060": None,
    "NVIDIA GeForce RTX 4070": None,
    "NVIDIA GeForce RTX 5060": None,
    "NVIDIA GeForce GTX 1060": None,
    "GeForce GTX 950": None,
    "NVIDIA Tegra X1": None,
    "TITAN V": None,
    "TITAN Xp": None,
    "Tesla K20c": None,
    "Tesla K80": None,
    "AMD Instinct MI300X": None,
    "AMD Instinct MI300X VF": None,
    "AMD Radeon Graphics": None,
}

# Names as nvidia-smi and the profilers write them for the products the captures lack, and near misses.
WRITTEN: dict[str, str | None] = {
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA H100": "h100-sxm",  # the bare name: the row that lists it
    "NVIDIA H200 NVL": "h200-nvl",
    "Tesla V100-SXM2-32GB": "v100-sxm2",
    "Tesla V100-PCIE-16GB": "v100-pcie",
    "Tesla V100S-PCIE-32GB": "v100s-pcie",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "NVIDIA A10": "a10",
    "NVIDIA L4": "l4",
    "NVIDIA L40S": "l40s",
    "NVIDIA GeForce RTX 2080": "rtx-2080",
    "GeForce RTX 2080 Ti": "rtx-2080-ti",  # older drivers: no "NVIDIA"
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "NVIDIA GeForce RTX 5090": "rtx-5090",
    "NVIDIA GB200": "gb200",
    "  NVIDIA   H200 ": "h200-sxm",  # spaces as console tables leave them
    "NVIDIA A100": None,  # four boards, four memory bandwidths: no guess
    "NVIDIA A10G": None,
    "NVIDIA A16": None,
    "NVIDIA L40": None,
    "NVIDIA GeForce RTX 2080 SUPER": None,
    "NVIDIA GeForce RTX 2080 with Max-Q Design": None,
    "NVIDIA GeForce RTX 3090 Ti": None,
    "NVIDIA GeForce RTX 4090 D": None,
    "NVIDIA GeForce RTX 4090 Laptop GPU": None,
    "NVIDIA GeForce RTX 5090 D": None,
    "NVIDIA H20": None,
    "NVIDIA GH200 480GB": None,
    "NVIDIA B200A": None,
    "Tesla V100-SXM3-32GB": None,
    "": None,
}


def _matching(name: str) -> list[str]:
    name = " ".join(name.split())
    return [p.key for p in peaks.load() if any(re.search(n, name, re.IGNORECASE) for n in p.names)]


def _check(expected: dict[str, str | None]) -> None:
    for name, key in expected.items():
        found = peaks.lookup(name)
        assert (found.key if found else None) == key, name
        assert len(_matching(name)) == (0 if key is None else 1), (name, _matching(name))  # never two rows


def test_repository_captures_resolve(tmp_path: Path) -> None:
    names = device_names([DATA, ROOT / "nvprof_wrap" / "samples"], tmp_path)
    assert "NVIDIA H200" in names  # the helper reads them: the H200 runs and samples name their GPU
    assert not names.keys() - IN_CAPTURES.keys(), "add these names to IN_CAPTURES"
    _check({n: IN_CAPTURES[n] for n in names})


def test_fixture_names(tmp_path: Path) -> None:
    names = device_names([FIXTURES], tmp_path)
    assert {"NVIDIA H100 80GB HBM3", "Tesla T4", "NVIDIA A100-PG509-200"} <= names.keys()
    new = {n: sorted(where)[:2] for n, where in names.items() if n not in IN_CAPTURES}
    assert not new, f"add these names to IN_CAPTURES: {new}"
    _check({n: IN_CAPTURES[n] for n in names})


def test_written_names() -> None:
    _check(WRITTEN)
    assert {k for k in WRITTEN.values() if k} | {k for k in IN_CAPTURES.values() if k} == {p.key for p in peaks.load()}


def test_compute_capability_must_agree() -> None:
    assert peaks.lookup("NVIDIA H200", (9, 0)) == peaks.lookup("NVIDIA H200")
    assert peaks.lookup("NVIDIA H200", (8, 0)) is None
    assert peaks.lookup("NVIDIA GeForce RTX 5090", (12, 0)) is not None


# ---------------------------------------------------------------- the rows


def test_rows_load_with_sources() -> None:
    rows = peaks.load()
    assert len(rows) >= 20 and peaks.load() is rows  # cached
    for p in rows:
        assert p.sources and all(s.url.startswith("https://") and s.title for s in p.sources), p.key
        assert p.memory_gbs > 0 and p.names and set(p.rates) <= set(peaks.PRECISIONS), p.key
        assert {"fp32", "fp64", "fp16"} <= set(p.rates), p.key  # every GPU in the table has these


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.01 * max(a, b)


def test_rates_relate_as_the_hardware_does() -> None:
    for p in peaks.load():
        r = p.rates
        if "bf16" in r:
            assert r["bf16"] == r["fp16"], p.key  # both with FP32 accumulate
        if "fp8" in r:
            assert _close(r["fp8"], 2 * r["bf16"]), p.key
        if "fp4" in r:
            assert _close(r["fp4"], 2 * r["fp8"]) or p.key == "rtx-5090", p.key
        if (8, 0) <= p.cc <= (9, 0):
            assert _close(r["tf32"], r["bf16"] / 2), p.key
        if "fp64_tc" in r:
            assert r["fp64_tc"] >= r["fp64"], p.key
        assert r["fp16"] > r["fp32"], p.key  # a tensor rate, not the CUDA cores'
    assert {p.key for p in peaks.load() if "fp8" in p.rates} >= {"h100-sxm", "h200-sxm", "l4", "l40s", "rtx-4090"}
    assert not [p.key for p in peaks.load() if p.cc < (8, 0) and {"bf16", "tf32"} & set(p.rates)]


def test_h200_holds_the_dense_figures() -> None:
    h200 = peaks.lookup("NVIDIA H200")
    assert h200 is not None and h200.cc == (9, 0) and h200.memory_gbs == 4800
    assert h200.rates == {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp64_tc": 66.9, "fp64": 33.5,
                          "fp32": 66.9, "int8": 1978.9}
    assert 787 <= h200.rates["bf16"] < 1979  # above what the H200 measured in a bf16 matmul loop, below the sparse rate


def test_tensor_peak() -> None:
    h200, t4, a100 = (peaks.lookup(n) for n in ("NVIDIA H200", "Tesla T4", "NVIDIA A100-SXM4-40GB"))
    assert h200 and t4 and a100
    assert peaks.tensor_peak(h200, "bf16") == 989.4 and peaks.tensor_peak(h200, "tf32") == 494.7
    assert peaks.tensor_peak(h200, "fp32") is None  # fp32 GEMMs reach the tensor cores only as tf32
    assert peaks.tensor_peak(h200, "fp64") == 66.9 and peaks.tensor_peak(t4, "fp64") is None
    assert peaks.tensor_peak(a100, "fp8") is None and peaks.tensor_peak(h200, "fp4") is None
    assert peaks.tensor_peak(t4, "fp16/bf16") == 65.0 and peaks.tensor_peak(a100, "fp16/bf16") == 312.0
    assert peaks.tensor_peak(h200, "") is None and peaks.tensor_peak(h200, "mixed") is None


# ---------------------------------------------------------------- a broken row is an error at load

_GOOD = """
[[gpu]]
key = "x"
name = "X"
names = ['^x$']
cc = "9.0"
fp16 = 10.0
fp32 = 1.0
fp64 = 0.5
memory_gbs = 100.0
sources = [{ title = "T", url = "https://example.com/x.pdf" }]
"""


@pytest.mark.parametrize(("change", "why"), [
    (("sources = [{ title = \"T\", url = \"https://example.com/x.pdf\" }]", ""), "lacks sources"),
    (("sources = [{ title = \"T\", url = \"https://example.com/x.pdf\" }]", "sources = []"), "sources"),
    (("https://example.com", "http://example.com"), "https://"),
    (("fp16 = 10.0", "bf61 = 10.0"), "unknown field(s) bf61"),
    (("fp16 = 10.0", "fp16 = -10.0"), "fp16 must be a positive number"),
    (("fp16 = 10.0", "fp16 = \"10\""), "fp16 must be a positive number"),
    (("cc = \"9.0\"", "cc = \"9\""), "not major.minor"),
    (("names = ['^x$']", "names = ['(x']"), "not a regular expression"),
    (("names = ['^x$']", "names = []"), "names must be"),
    (("memory_gbs = 100.0", "memory_gbs = 0"), "memory_gbs"),
    (("key = \"x\"", "key = \"\""), "key must be"),
    (("fp32 = 1.0", "fp32 = 1.0\nsms = 1.5"), "positive integers"),
    (("[[gpu]]", "[gpu"), "not TOML"),
])
def test_broken_row_is_an_error(change: tuple[str, str], why: str) -> None:
    assert peaks.parse(_GOOD)[0].rates == {"fp16": 10.0, "fp32": 1.0, "fp64": 0.5}
    with pytest.raises(BadInput) as e:
        peaks.parse(_GOOD.replace(*change), "t.toml")
    assert why in str(e.value) and "t.toml" in str(e.value)


def test_duplicate_keys_and_no_rows_are_errors() -> None:
    with pytest.raises(BadInput, match="given twice: x"):
        peaks.parse(_GOOD + _GOOD)
    with pytest.raises(BadInput, match="no \\[\\[gpu\\]\\] rows"):
        peaks.parse("version = 1\n")


# ---------------------------------------------------------------- the doc is written from the table
# (that the wheel ships peaks.toml: tests/whole/test_packaging.py, for every data file of the package)


def test_doc_is_generated_from_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    doc = (ROOT / "docs" / "gpu-peaks.md").read_text(encoding="utf-8")
    assert doc == peaks.markdown(), "regenerate: python -m nvprof_wrap.analyses.peaks --markdown > docs/gpu-peaks.md"
    assert peaks.main(["--markdown"]) == 0 and capsys.readouterr().out == doc
    assert peaks.main([]) == 2
    assert all(p.name in doc and all(s.url in doc for s in p.sources) for p in peaks.load())

