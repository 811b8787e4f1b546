"""readers/kineto_json.py: a window of a Kineto trace; what Kineto wrote that is not JSON."""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from nvprof_wrap.readers import kineto_json
from nvprof_wrap.timeline.window import Window
from tests._paths import RUNS, fixture_file

KINETO = RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz"


def test_a_capture_windows_cut_alone_reads_the_trace_whole() -> None:
    """The cut is nsys's (what it recorded while its stop ran): a Kineto trace read through a window of the cut
    alone is the whole trace. It was a TypeError (no steps to bound)."""
    whole = kineto_json.read(KINETO)
    assert kineto_json.read(KINETO, Window(cut=2)).kernels == whole.kernels


def _edited(src: Path, dst: Path, edits: list[tuple[bytes, bytes]]) -> Path:
    """src (a gzipped trace) with each (pattern, replacement) applied once, in order, written to dst (gzipped if it
    ends .gz)."""
    data = gzip.decompress(src.read_bytes())
    for pattern, new in edits:
        data, n = re.subn(pattern, new, data, count=1)
        assert n == 1
    dst.write_bytes(gzip.compress(data, 1) if dst.suffix == ".gz" else data)
    return dst


@pytest.mark.parametrize("name", ["edited.pt.trace.json", "edited.pt.trace.json.gz"])
def test_kinetos_bare_inf_and_nan_are_read_as_null_not_a_refusal(name: str, tmp_path: Path) -> None:
    """Kineto wrote a copy of duration 0 as "memory bandwidth (GB/s)": inf (pytorch/kineto#105), not JSON: the whole
    trace was refused ("not a readable Kineto/Chrome trace JSON"). A public trace of that Kineto with one copy's
    bandwidth inf and another's C++'s -nan reads as the trace itself, with a note; a string holding the words stays."""
    src = fixture_file("public/pytorch__kineto__worker0.1623143089861.pt.trace.json.gz")
    bandwidth = rb'("memory bandwidth \(GB/s\)": )[0-9][0-9.e+-]*'
    edited = _edited(src, tmp_path / name, [(bandwidth, rb"\1inf"), (bandwidth, rb"\1-nan"),
                                            (rb'"Trace name": "PyTorch Profiler"', b'"Trace name": "inf, nan"')])
    whole, got = kineto_json.read(src), kineto_json.read(edited)
    assert got.kernels == whole.kernels and got.ops == whole.ops
    assert sorted(got.memops, key=repr) == sorted(whole.memops, key=repr)
    assert got.notes == whole.notes + ("2 non-finite number(s) (nan, inf: not JSON) read as null",)


def test_a_utf8_byte_order_mark_before_the_json_is_passed_over(tmp_path) -> None:
    """A trace saved by a Windows editor starts with a UTF-8 byte-order mark: refused with the JSON parser's own
    dump ("lexical error: invalid char in json text. \\ufeff { …"). It is read as the trace it is, plain and gzipped."""
    import gzip as gz

    from nvprof_wrap import readers
    from tests._paths import RUNS

    src = RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz"
    plain = gz.decompress(src.read_bytes())
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + plain)
    (tmp_path / "bom.json.gz").write_bytes(gz.compress(b"\xef\xbb\xbf" + plain))
    want = sorted((k.name, k.launches, k.total_ns) for k in readers.read(src).kernels)
    for name in ("bom.json", "bom.json.gz"):
        assert sorted((k.name, k.launches, k.total_ns) for k in readers.read(tmp_path / name).kernels) == want
