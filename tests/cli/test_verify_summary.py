"""`verify --from FILE` opens with what the counters said against the name rules (report/counter_check.py, drawn by
renderers/_counter_check.py in the terminal, Markdown and HTML; JSON "counter_check", validated against the package's
schema), and `--fail-on-disagreement` exits 1 when a kernel's counters contradict its name's verdict.

Real exports: the H200 compile run's ncu.csv (3 kernels: 2 agree, 1 the names leave unknown —
triton_tem_fused_mm_0 — that the counters call yes), the shared H200 fixture and a public A100 export whose
counters hold no matrix-instruction count for 4 kernels. No real export contradicts the rules (they were tuned on
them: docs/accuracy.md), so the contradiction is the same real export with one kernel renamed."""
from __future__ import annotations

import json
from pathlib import Path

from nvprof_wrap.cli import main
from nvprof_wrap.report.counter_check import check
from tests._paths import H200, RUNS, WILD
from tests.renderers.test_json_schema import check as validates

CSV = RUNS / "verify_compile" / "ncu.csv"
# A name every rule reads as a bf16 tensor-core GEMM (Hopper xmma): its counters (the real ones of the fused
# add+relu, 0 MMA) say no.
GEMM_NAME = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
             "execute_segment_k_off_kernel")


def verify(capsys, *argv: object) -> tuple[int, str, str]:
    code = main(["verify", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def contradicted(tmp_path: Path) -> Path:
    """The compile run's export with its fused add+relu renamed to a GEMM's name: the names then say yes, the
    counters (0 matrix instructions on every launch) no."""
    text = CSV.read_text()
    assert text.count("triton_poi_fused_add_relu_1") > 100
    out = tmp_path / "ncu.csv"
    out.write_text(text.replace("triton_poi_fused_add_relu_1", GEMM_NAME))
    return out


def test_the_summary_counts_what_the_counters_said_of_the_compile_run(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = verify(capsys, "--from", CSV)
    lines = out.splitlines()
    assert code == 0
    start = lines.index("Counters against the name rules")
    assert lines[0].startswith("Tensor cores used: yes") and start <= 2  # right under the verdict
    assert lines[start + 1:start + 5] == ["  measured by the counters: 3 kernels", "  agree with the name rules: 2",
                                          "  left unknown by the names, decided by the counters: 1",
                                          "  contradict the name rules: 0"]
    doc = validates(json.loads(verify(capsys, "--from", CSV, "--format", "json")[1]), "report")
    assert doc["counter_check"] == {"measured": 3, "agree": 2, "newly_decided": 1, "undecided": 0,
                                    "not_measured": 0, "disagreements": []}


def test_a_report_that_is_not_verify_has_no_summary(capsys):
    assert main(["report", str(CSV), "--format", "json"]) == 0
    assert "counter_check" not in json.loads(capsys.readouterr().out)


def test_the_h200_fixture_and_a_public_export_without_matrix_counts(capsys):
    doc = json.loads(verify(capsys, "--from", H200 / "ncu_tensor_metrics.csv", "--format", "json")[1])
    assert doc["counter_check"] == {"measured": 24, "agree": 24, "newly_decided": 0, "undecided": 0,
                                    "not_measured": 0, "disagreements": []}
    code, out, _ = verify(capsys, "--from", WILD / "ncu-metrics-bert-flashattn-a100.csv", "--format", "markdown")
    assert code == 0
    assert "- measured by the counters: 7 kernels\n- agree with the name rules: 2\n" \
           "- left unknown by the names, decided by the counters: 1\n" \
           "- measured, but the counters decide nothing \\(no matrix\\-instruction count\\): 4\n" in out


def test_the_gate_fails_on_a_kernel_whose_counters_contradict_its_name(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    csv = contradicted(tmp_path)
    assert verify(capsys, "--from", CSV, "--fail-on-disagreement")[0] == 0
    code, out, err = verify(capsys, "--from", csv, "--fail-on-disagreement", "--wide")
    assert code == 1
    assert err.strip().splitlines() == [("nvprof-wrap: --fail-on-disagreement: the counters of 1 kernel(s) "
                                         "contradict the name rules (listed in the report)")]
    assert "  contradict the name rules: 1 (each below)" in out
    words = " ".join(out.split())  # the terminal wraps the long line
    assert f"name said yes, counters no: {GEMM_NAME} (no matrix instruction (HMMA 0 of which HFMA2 0" in words
    assert "3.2% of kernel time)" in words
    # without the gate the same report exits 0
    assert verify(capsys, "--from", csv)[0] == 0
    doc = validates(json.loads(verify(capsys, "--from", csv, "--format", "json", "--fail-on-disagreement")[1]),
                    "report")
    (d,) = doc["counter_check"]["disagreements"]
    assert (d["name"], d["name_verdict"], d["counter_verdict"], doc["counter_check"]["agree"]) == \
        (GEMM_NAME, "yes", "no", 1)
    assert d["total_ns"] > 0 and 0 < d["share"] < 1
    page = verify(capsys, "--from", csv, "--format", "html")[1]
    assert "<h2>Counters against the name rules</h2>" in page and "name said yes, counters no" in page


def test_kernels_the_export_never_measured_are_counted_apart(capsys):
    """Rows without counters (captures attached beside the export) are neither agreement nor contradiction."""
    from nvprof_wrap.pipeline.verify import report_with_counters
    rep = report_with_counters(CSV, [RUNS / "gemm_cupti"])
    c = check(rep.kernels)
    assert c == rep.counter_check
    assert c.not_measured == sum(1 for k in rep.kernels if k.counter_verdict is None) > 0
    assert c.measured + c.not_measured == len(rep.kernels)
