"""Writes nsys.sqlite.gz here from ../gpt_bf16_nsys/nsys.sqlite.gz (a real H200 Nsight Systems export of
workloads/gpt_train.py in bf16): every table and row as recorded, plus the NVTX ranges torch's emit_nvtx(
record_shapes=True) writes around the ops that launched its GEMM and attention kernels, in torch's exact text
(torch/csrc/profiler/util.cpp getNvtxStr: 'NAME, seq = N, op_id = N, sizes = [[..], [..], []]'), each around the
real launch call of that kernel (same thread, the call's own start and end). The shapes are assigned per kernel
name (README.md), not recorded: the FLOPs they give are exact for the test, not a measurement of that run.

python3 tests/data/annotate_shapes/make.py
"""
from __future__ import annotations

import gzip
import shutil
import sqlite3
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# the capture it writes sits in h200_runs/ with the other run folders (this folder holds only how it is made)
RUNS = HERE.parent / "h200_runs"
SOURCE = RUNS / "gpt_bf16_nsys" / "nsys.sqlite.gz"
OUT = RUNS / "annotate_shapes_nsys"
TOKENS, D, VOCAB = 4096, 512, 8192  # batch 16 × block 256; d_model, vocab (gpt_train.py's defaults)
ATT = "[16, 8, 256, 64]"  # (B, H, L, D) of q, k, v


def mm(m: int, k: int, n: int) -> str:
    return f"[[{m}, {k}], [{k}, {n}]]"


def addmm(m: int, k: int, n: int) -> str:  # (self, mat1, mat2, beta, alpha): scalars are [] in torch's sizes
    return f"[[{n}], [{m}, {k}], [{k}, {n}], [], []]"


NVJET = "nvjet_sm90_tst_"
# kernel name prefix → (outer range, inner range's op, sizes text or None: the range without record_shapes)
PLAN = {
    NVJET + "128x128_64x6_2x1_v_bz_bias_TNT": ("aten::linear", "aten::addmm", addmm(TOKENS, D, D)),
    NVJET + "192x128_64x5_1x2_h_bz_coopB_bias_TNT": ("aten::linear", "aten::addmm", addmm(TOKENS, D, 3 * D)),
    NVJET + "256x128_64x4_1x2_h_bz_coopA_bias_TNT": ("aten::linear", "aten::addmm", addmm(TOKENS, D, 4 * D)),
    NVJET + "256x128_64x4_1x2_h_bz_coopA_TNT": ("aten::linear", "aten::mm", mm(TOKENS, D, VOCAB)),
    NVJET + "128x128_64x6_2x1_v_bz_NNT": ("AddmmBackward0", "aten::mm", mm(TOKENS, D, D)),
    NVJET + "256x128_64x4_1x2_h_bz_coopA_NNT": ("AddmmBackward0", "aten::mm", mm(TOKENS, 4 * D, D)),
    NVJET + "64x128_64x8_2x1_v_bz_NTN": ("AddmmBackward0", "aten::mm", mm(D, TOKENS, D)),
    NVJET + "64x128_64x8_4x2_h_bz_NTN": ("AddmmBackward0", "aten::mm", mm(4 * D, TOKENS, D)),
    NVJET + "128x256_64x4_2x1_v_bz_coopA_NTN": ("MmBackward0", "aten::mm", mm(VOCAB, TOKENS, D)),
    # recorded without shapes: an op range as record_shapes=False writes it, no FLOPs
    NVJET + "32x64_64x16_2x1_v_bz_NTN": ("AddmmBackward0", "aten::mm", None),
    # attention: the sizes give no is_causal, so no FLOPs (classify/flops.py needs it)
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop": ("aten::scaled_dot_product_attention",
                                                         "aten::_scaled_dot_product_cudnn_attention",
                                                         f"[{ATT}, {ATT}, {ATT}, [], [], [], [], [], []]"),
}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "nsys.sqlite"
        with gzip.open(SOURCE) as src, open(db_path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        db = sqlite3.connect(db_path)
        calls = db.execute("""SELECT s.value, r.globalTid, r.start, r."end" FROM CUPTI_ACTIVITY_KIND_KERNEL k
                              JOIN StringIds s ON s.id = k.demangledName
                              JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
                              ORDER BY r.start""").fetchall()
        rows, seq = [], 100
        for name, tid, start, end in calls:
            plan = next((p for prefix, p in PLAN.items() if name.startswith(prefix)), None)
            if plan is None:
                continue
            outer, op, sizes = plan
            seq += 1
            inner = f"{op}, seq = {seq}, op_id = {2 * seq + 1}" + (f", sizes = {sizes}" if sizes else "")
            rows.append((start - 1, end + 1, f"{outer}, seq = {seq}, op_id = {2 * seq}", tid))
            rows.append((start, end, inner, tid))
        db.executemany('INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid, domainId) '
                       "VALUES (?, ?, 59, ?, ?, 0)", rows)
        db.commit()
        db.execute("VACUUM")
        db.close()
        with open(db_path, "rb") as src, gzip.GzipFile(OUT / "nsys.sqlite.gz", "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    print(f"{len(rows)} NVTX ranges added")


if __name__ == "__main__":
    main()
