"""FLOPs from the op shapes `run --annotate torch` records in NVTX range names (readers/_nvtx_flops.py), through
the Nsight Systems and CUPTI readers, up to the report's achieved TFLOP/s.

annotate_shapes_nsys is a real H200 export of gpt_train.py in bf16 with emit_nvtx(record_shapes=True)'s ranges
added around the real launch calls of its GEMM and attention kernels (tests/data/annotate_shapes/make.py and
README.md say how); the CUPTI test rewrites the text of a real capture's own emit_nvtx ranges (recorded
without shapes) into the record_shapes format."""
from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from nvprof_wrap.analyses.achieved import HOW
from nvprof_wrap.readers import read
from nvprof_wrap.readers._nvtx_flops import sizes_of
from nvprof_wrap.timeline.window import Window
from tests._paths import RUNS

SHAPED = RUNS / "annotate_shapes_nsys" / "nsys.sqlite.gz"
UNSHAPED = RUNS / "gpt_bf16_nsys" / "nsys.sqlite.gz"  # the same run without the ranges
CUPTI_OPS = RUNS / "keras_fp16_cupti_ops" / "cupti-vm-559.sqlite.gz"
TOKENS, D, VOCAB = 4096, 512, 8192
NVJET = "nvjet_sm90_tst_"
# kernel name → (op, FLOPs of one launch): 2·M·N·K of the shapes make.py put around each launch
EXPECTED = {
    NVJET + "128x128_64x6_2x1_v_bz_bias_TNT": ("aten::addmm", 2 * TOKENS * D * D),
    NVJET + "192x128_64x5_1x2_h_bz_coopB_bias_TNT": ("aten::addmm", 2 * TOKENS * D * 3 * D),
    NVJET + "256x128_64x4_1x2_h_bz_coopA_bias_TNT": ("aten::addmm", 2 * TOKENS * D * 4 * D),
    NVJET + "256x128_64x4_1x2_h_bz_coopA_TNT": ("aten::mm", 2 * TOKENS * D * VOCAB),
    NVJET + "128x128_64x6_2x1_v_bz_NNT": ("aten::mm", 2 * TOKENS * D * D),
    NVJET + "256x128_64x4_1x2_h_bz_coopA_NNT": ("aten::mm", 2 * TOKENS * 4 * D * D),
    NVJET + "64x128_64x8_2x1_v_bz_NTN": ("aten::mm", 2 * D * TOKENS * D),
    NVJET + "64x128_64x8_4x2_h_bz_NTN": ("aten::mm", 2 * 4 * D * TOKENS * D),
    NVJET + "128x256_64x4_2x1_v_bz_coopA_NTN": ("aten::mm", 2 * VOCAB * TOKENS * D),
}


@pytest.mark.parametrize("text, found", [
    # torch's getNvtxStr: name, seq, op_id, sizes (scalars as []), input_op_ids after
    ("aten::addmm, seq = 12, op_id = 40, sizes = [[3072], [64, 768], [768, 3072], [], []]",
     ("aten::addmm", [[3072], [64, 768], [768, 3072], [], []])),
    ("aten::mm, seq = 3, op_id = 9, sizes = [[8, 4], [4, 2]], input_op_ids = [(7, 0), (8, 0)]",
     ("aten::mm", [[8, 4], [4, 2]])),
    ("aten::bmm, sizes = [[2, 8, 4], [2, 4, 2]]", ("aten::bmm", [[2, 8, 4], [2, 4, 2]])),  # no autograd: no seq
    ("aten::mm, seq = 3, op_id = 9", None),  # record_shapes off
    ("aten::add, seq = 3, op_id = 9, sizes = [[8, 4], [8, 4], []]", None),  # not an op with FLOPs
    ("aten::mm, seq = 3, sizes = [[8, 4], [4, 2]", None),  # cut short
    ("aten::mm, seq = 3, sizes = [[8, x], [4, 2]]", None),
    ("aten::mm, sizes = [" + "[1], " * 2000 + "[1]]", None),  # longer than shapes can be
])
def test_sizes_of_reads_torchs_text(text, found):
    assert sizes_of(text) == found


def test_annotated_gemms_get_the_flops_of_their_shapes():
    cap = read(SHAPED)
    rows = {r.name: r for r in cap.op_flops}
    kernels = {k.name: k for k in cap.kernels}
    assert set(rows) == set(EXPECTED)  # no row for the range without sizes, nor for attention (no is_causal)
    for name, (op, one) in EXPECTED.items():
        r, k = rows[name], kernels[name]
        assert (r.op, r.precision, r.launches, r.total_ns) == (op, "bf16", k.launches, k.total_ns)
        assert r.flops == one * k.launches
        assert r.pid == k.pid


def test_the_same_run_without_sizes_has_no_flops_and_says_how():
    cap = read(UNSHAPED)
    assert cap.op_flops == ()
    assert "--annotate torch" in HOW


def test_the_scan_for_shapes_is_made_only_where_a_swept_name_holds_them(monkeypatch):
    """The compiled attribution gives every closed range's name: the run without sizes is not scanned for them
    again, the annotated one is (and gets its FLOPs: test_annotated_gemms_get_the_flops_of_their_shapes)."""
    from nvprof_wrap.readers import _nvtx_flops
    from nvprof_wrap.timeline import native

    if not native.available():
        pytest.skip("the compiled helper is not built: no swept names, every capture scanned")
    scanned: list[int] = []
    real = _nvtx_flops.nsys
    monkeypatch.setattr(_nvtx_flops, "nsys", lambda *a, **k: scanned.append(1) or real(*a, **k))
    assert read(UNSHAPED).op_flops == () and scanned == []
    assert read(SHAPED).op_flops and scanned == [1]


@pytest.mark.parametrize("found, may", [(None, True), (True, True), (False, False)])
def test_may_hold_shapes(found, may):
    """None: the compiled attribution did not look (the SQL's, no ranges): scanned as ever."""
    from nvprof_wrap.readers._nvtx_flops import may_hold_shapes

    assert may_hold_shapes(found) is may


def test_a_window_keeps_its_steps_flops():
    whole = {r.name: r for r in read(SHAPED).op_flops}
    part = {r.name: r for r in read(SHAPED, Window(steps=(5, 10))).op_flops}
    assert set(part) == set(whole)
    for name, r in part.items():
        assert 0 < r.launches < whole[name].launches
        assert r.flops == EXPECTED[name][1] * r.launches


def test_report_gives_achieved_tflops_from_the_annotated_shapes(tmp_path):
    from nvprof_wrap.cli import main

    out = tmp_path / "r.json"
    assert main(["report", str(SHAPED), "--format", "json", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    bf16 = data["achieved"]["bf16"]
    cap = read(SHAPED)
    flops = sum(r.flops for r in cap.op_flops)
    ns = sum(r.total_ns for r in cap.op_flops)
    assert bf16["flops"] == round(flops) and bf16["tflops"] == round(flops / ns / 1e3, 2)
    assert bf16["peak_tflops"] and bf16["tflops"] < bf16["peak_tflops"]
    # attention and the unshaped GEMM are tensor-core time without FLOPs: too little is known for MFU
    assert data.get("mfu") is None


def test_cupti_capture_with_shaped_ranges(tmp_path):
    path = tmp_path / "cupti.sqlite"
    with gzip.open(CUPTI_OPS) as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    db = sqlite3.connect(path)
    n = db.execute("UPDATE nvtx SET name = name || ', sizes = [[128, 64], [64, 32]]' "
                   "WHERE name LIKE 'aten::mm,%'").rowcount
    db.commit()
    db.close()
    assert n > 0
    cap = read(path)
    assert cap.op_flops, "no rows"
    assert {r.op for r in cap.op_flops} == {"aten::mm"} and {r.pid for r in cap.op_flops} == {559}
    launches = sum(r.launches for r in cap.op_flops)
    assert 0 < launches and abs(sum(r.flops for r in cap.op_flops) - 2 * 128 * 64 * 32 * _mm_calls(path)) < 1
    assert read(tmp_path / "cupti.sqlite").op_flops == cap.op_flops


def _mm_calls(path: Path) -> int:
    """The shaped aten::mm ranges that launched a kernel: each one's FLOPs counted once, whatever it launched."""
    db = sqlite3.connect(path)
    try:
        return db.execute("""SELECT COUNT(*) FROM nvtx n WHERE n.name LIKE 'aten::mm,%sizes%' AND EXISTS (
                               SELECT 1 FROM (SELECT correlation_id, tid, start FROM runtime UNION ALL
                                              SELECT correlation_id, tid, start FROM driver) r
                               JOIN kernel k ON k.correlation_id = r.correlation_id
                               WHERE r.tid = n.tid AND r.start BETWEEN n.start AND n."end")""").fetchone()[0]
    finally:
        db.close()
