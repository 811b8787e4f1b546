"""benchmarks.accuracy: label files, nvprof-wrap against counter truth, and the other tools' measured numbers."""
from __future__ import annotations

import json

import pytest

from benchmarks import accuracy
from benchmarks.accuracy import LABELS_DIR, Label, evaluate, load_labels, read_labels
from benchmarks.other_tools import (
    TB_PLUGIN_ALLOWLIST,
    TOOLS,
    XPROF_PATTERNS,
    apex_pyprof,
    nsys_ai,
    torch_tb_profiler,
    xprof,
)
from tests._ncu_truth import raw_truth
from tests._paths import FIXTURES, H200, ROOT

NCU_CSV = H200 / "ncu_tensor_metrics.csv"
OURS = ("h200_counters.tsv", "public_named.tsv", "h200_training_runs.tsv")


@pytest.fixture(scope="module")
def labels() -> dict[str, list[Label]]:
    return load_labels(LABELS_DIR)


@pytest.fixture(scope="module")
def scores(labels) -> dict[str, dict[str, accuracy.Score]]:
    return {sc.name: {s.tool: s for s in sc.scores} for sc in evaluate(labels)}


# --- the label files -------------------------------------------------------------------------
def test_label_files_parse_and_are_small(labels):
    assert set(OURS) <= set(labels)
    for fname in labels:
        path = LABELS_DIR / fname
        assert path.stat().st_size < 200_000, fname
        rows = read_labels(path)
        assert rows, fname
        assert all(r.truth in ("yes", "no") and r.name and r.source for r in rows)
    assert len(labels["h200_counters.tsv"]) == 62
    assert len(labels["public_named.tsv"]) == 472
    assert len(labels["h200_training_runs.tsv"]) == 249
    accuracy.merged(labels)  # no name carries two truths across files


def test_every_tsv_in_the_folder_is_read(tmp_path):
    for fname in OURS:
        (tmp_path / fname).write_bytes((LABELS_DIR / fname).read_bytes())
    (tmp_path / "later_run.tsv").write_text("name\ttensor_core\tsource\nmy_kernel_x\tno\tcounters\n")
    got = load_labels(tmp_path)
    assert list(got) == ["h200_counters.tsv", "h200_training_runs.tsv", "later_run.tsv", "public_named.tsv"]
    assert got["later_run.tsv"] == [Label("my_kernel_x", "no", "counters", "later_run.tsv")]


@pytest.mark.parametrize("body, why", [
    ("k\tmaybe\tsrc\n", "must be yes or no"),
    ("k\tyes\n", "expected 3"),
    ("k\tyes\ta\nk\tno\tb\n", "labelled both"),
])
def test_bad_label_files_are_refused(tmp_path, body, why):
    (tmp_path / "bad.tsv").write_text(body)
    with pytest.raises(accuracy.LabelError, match=why):
        load_labels(tmp_path)
    assert accuracy.main(["--labels", str(tmp_path)]) == 2


def _raw_ncu_truth() -> tuple[dict[str, str], set[str]]:
    """Independent of nvprof_wrap's reader (tests/_ncu_truth.py): each kernel's truth, and those whose HMMA count
    was all HFMA2."""
    return raw_truth(NCU_CSV.read_text().splitlines())


@pytest.mark.skipif(not NCU_CSV.is_file(), reason=f"needs the shared fixtures folder {FIXTURES}")
def test_h200_labels_agree_with_the_raw_counters(labels):
    raw, hfma2_only = _raw_ncu_truth()
    assert len(raw) == 24 and sum(v == "yes" for v in raw.values()) == 10
    # RNG, copy and reduce kernels whose "HMMA" instructions were all HFMA2.MMA: not tensor-core
    assert len(hfma2_only) == 7 and {raw[n] for n in hfma2_only} == {"no"}
    by_name = {lab.name: lab for lab in labels["h200_counters.tsv"]}
    for name, truth in raw.items():
        assert by_name[name].truth == truth, name
        assert by_name[name].source == accuracy.H200_NCU_SOURCE
    # the other spellings of ncu-measured kernels carry the same verdict
    assert sum(lab.source == accuracy.H200_VERIFIED_SOURCE for lab in by_name.values()) == 13
    assert "Memset (Device)" not in by_name


@pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"needs the shared fixtures folder {FIXTURES}")
def test_label_files_rebuild_byte_for_byte(tmp_path):
    accuracy.rebuild_labels(FIXTURES, tmp_path)
    for fname in OURS:
        assert (tmp_path / fname).read_bytes() == (LABELS_DIR / fname).read_bytes(), fname


# --- nvprof-wrap against hardware-counter truth ------------------------------------------------
def test_nvprof_wrap_is_exact_on_the_h200_counter_labels(scores):
    s = scores["h200_counters.tsv"]["nvprof-wrap"]
    assert (s.tp, s.fp, s.fn, s.tn, s.unknown) == (13, 0, 0, 49, 0)


def test_nvprof_wrap_has_no_fp_or_fn_on_any_counter_verified_label(labels):
    verified = [lab for rows in labels.values() for lab in rows
                if ("counter" in lab.source.lower() or "ncu" in lab.source.lower())
                and "not in the ncu run" not in lab.source]
    assert len(verified) >= 37
    s = accuracy.score("nvprof-wrap", accuracy.nvprof_wrap_rule, verified)
    assert (s.fp, s.fn) == (0, 0), [(m.kind, m.name[:80], m.file) for m in s.mistakes]


# --- every tool's measured numbers, pinned so that a change is noticed --------------------------
# (TP, FP, FN, TN, unknown)
MEASURED = {
    "h200_counters.tsv": {
        "nvprof-wrap": (13, 0, 0, 49, 0),
        "xprof/tensorboard": (1, 2, 12, 47, 0),
        "torch-tb-profiler": (1, 2, 12, 47, 0),
        "nsys-ai": (13, 3, 0, 46, 0),
        "apex.pyprof": (0, 0, 13, 49, 0),
    },
    "public_named.tsv": {
        "nvprof-wrap": (92, 0, 0, 376, 4),
        "xprof/tensorboard": (64, 7, 28, 373, 0),
        "torch-tb-profiler": (64, 7, 28, 373, 0),
        "nsys-ai": (92, 10, 0, 370, 0),
        "apex.pyprof": (54, 0, 38, 380, 0),
    },
    # PyTorch training steps on the H200, labelled by matrix-instruction counters (benchmarks/gpu/training_truth.sh)
    "h200_training_runs.tsv": {
        "nvprof-wrap": (66, 0, 0, 183, 0),
        "xprof/tensorboard": (26, 16, 40, 167, 0),
        "torch-tb-profiler": (26, 16, 40, 167, 0),
        "nsys-ai": (64, 20, 2, 163, 0),
        "apex.pyprof": (16, 0, 50, 183, 0),
    },
}


@pytest.mark.parametrize("fname", OURS)
def test_measured_numbers(scores, fname):
    got = {tool: (s.tp, s.fp, s.fn, s.tn, s.unknown) for tool, s in scores[fname].items()}
    assert got == MEASURED[fname]


def test_why_the_other_tools_miss(scores):
    h200 = scores["h200_counters.tsv"]

    def names(tool, kind):
        return [m.name for m in h200[tool].mistakes if m.kind == kind]

    # XProf / torch-tb-profiler: no nvjet, no sm90 xmma fprop, no wgmma SDPA, no "wmma_tensorop_i161616";
    # and "xmma_gemm" calls the FP32 FFMA cuBLAS kernels tensor-core.
    for tool in ("xprof/tensorboard", "torch-tb-profiler"):
        fns = names(tool, "FN")
        assert sum(n.startswith("nvjet_") for n in fns) == 6
        assert any(n.startswith("sm90_xmma_fprop_") for n in fns)
        assert any("sdpa_sm90_flash_fprop_wgmma" in n for n in fns)
        assert all("_ffma_" in n and n.startswith("sm80_xmma_gemm_") for n in names(tool, "FP"))
    # nsys-ai: "xmma" anywhere is a yes, FFMA included (GEMM and conv)
    assert len(names("nsys-ai", "FP")) == 3 and all("_ffma_" in n for n in names("nsys-ai", "FP"))
    # apex.pyprof only knows Volta/Turing 884/1688 names
    assert h200["apex.pyprof"].tp == 0


def test_precision_recall_accuracy_arithmetic(scores):
    s = scores["public_named.tsv"]["nvprof-wrap"]
    assert s.precision == 1.0 and s.recall == 1.0
    assert s.accuracy == pytest.approx(468 / 472)  # the 4 unknowns (Rodinia user kernels) count as not correct
    x = scores["h200_counters.tsv"]["xprof/tensorboard"]
    assert x.precision == pytest.approx(1 / 3) and x.recall == pytest.approx(1 / 13)
    assert scores["h200_counters.tsv"]["apex.pyprof"].precision is None


# --- the other tools' rules, as their sources state them ---------------------------------------
def test_other_tool_rules_as_published():
    assert len(XPROF_PATTERNS) == 19 and len(TB_PLUGIN_ALLOWLIST) == 18
    assert set(XPROF_PATTERNS) - set(TB_PLUGIN_ALLOWLIST) == {"i16832"}
    # the examples in XProf's own comment
    assert xprof("volta_h884gemm_64x64_ldg8_nn") == "yes"
    assert xprof("turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1") == "yes"
    assert torch_tb_profiler("turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1") == "yes"
    assert xprof("ampere_i16832gemm_int8_128x128") == "yes"
    assert torch_tb_profiler("ampere_i16832gemm_int8_128x128") == "no"
    assert xprof("Volta_H884Gemm") == "no"  # absl::StrContains is case-sensitive
    assert nsys_ai("Volta_H884Gemm") == "yes"  # nsys-ai lower-cases first
    assert nsys_ai("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT") == "yes"
    assert apex_pyprof("volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn") == "yes"
    assert apex_pyprof("turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1") == "yes"
    assert apex_pyprof("volta_h884cudnn_256x64_ldg8_relu_exp_small_nhwc_tn_v1") == "yes"
    assert apex_pyprof("sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_tensor16x8x16") == "no"
    assert list(TOOLS) == ["xprof/tensorboard", "torch-tb-profiler", "nsys-ai", "apex.pyprof"]


# --- the command line and the write-up --------------------------------------------------------
def test_cli_json(capsys):
    assert accuracy.main(["--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    scopes = {sc["scope"]: sc for sc in doc["scopes"]}
    assert set(OURS) | {"overall"} <= set(scopes)
    row = next(r for r in scopes["h200_counters.tsv"]["results"] if r["tool"] == "nvprof-wrap")
    assert (row["fp"], row["fn"], row["unknown"]) == (0, 0, 0)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_cli_text_formats(capsys, fmt):
    assert accuracy.main(["--format", fmt]) == 0
    out = capsys.readouterr().out
    assert "nvprof-wrap" in out and "nsys-ai" in out and "Mistakes" in out


def test_docs_carry_the_measured_per_file_tables():
    doc = (ROOT / "docs" / "accuracy.md").read_text()
    assert "python -m benchmarks.accuracy --format markdown" in doc
    md = accuracy.render_markdown(evaluate(load_labels(LABELS_DIR)))
    blocks = md.split("### ")
    for fname in OURS:
        block = next(b for b in blocks if b.startswith(fname))
        for line in block.splitlines()[1:]:
            if line.startswith("|"):
                assert line in doc, line
