"""nvprof output as people paste it into issues (shared/fixtures/wild3, read in place): summaries without their
`==PID== Profiling result:` header (rows from "GPU activities:" on, or a few bare rows from the middle of a table),
names a console wrapped onto the next line, and `nvprof --metrics --csv` output. What each file holds is counted here
from its own rows, independently of the reader; text that has no summary row stays refused, with its one line."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from nvprof_wrap import readers
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers import nvprof_csv
from tests._paths import fixture_file

# A summary row as the files show it, matched independently of the reader: percent, time, calls, avg, min, max, name
_ROW = re.compile(r"^\s*(?:GPU activities:)?\s+[\d.]+%\s+(?P<time>\S+)\s+(?P<calls>\d+)\s+\S+\s+\S+\s+\S+\s+"
                  r"(?P<name>\S.*)$")


def _wild3(name: str) -> Path:
    return fixture_file(f"wild3/{name}")


def _rows(path: Path) -> list[tuple[int, str]]:
    return [(int(m["calls"]), m["name"].strip()) for ln in path.read_text().splitlines() if (m := _ROW.match(ln))]


def _refused(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    assert main(["report", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err
    return err


@pytest.mark.parametrize("name, kernels", [
    ("nvprof-fragment-apex-666-v100.txt", 6),  # six bare rows from the middle of the table, inside a fence
    ("nvprof-fragment-pytorch-42311-t4.md", 2),  # from "GPU activities:" on, after the comment's prose
])
def test_a_summary_pasted_without_its_header_is_read(name: str, kernels: int) -> None:
    path = _wild3(name)
    rows = _rows(path)
    assert len(rows) == kernels
    c = readers.read(path)
    assert c.format == "console-nvprof-summary"
    assert sorted((k.launches, k.name) for k in c.kernels) == sorted(rows)
    assert any(f"{kernels} rows without their '==PID== Profiling result:' header" in n for n in c.notes)


def test_the_apex_fragment_reads_as_a_person_reads_it(capsys: pytest.CaptureFixture[str]) -> None:
    """NVIDIA/apex#666's V100 table, middle rows only: the s884cudnn convolution is fp16 on tensor cores (884 = the
    Volta HMMA shape); the complex GEMMs (cgemm, fermiCgemm) and the pointwise kernels are not. Times come in ms."""
    path = _wild3("nvprof-fragment-apex-666-v100.txt")
    c = readers.read(path)
    s884 = next(k for k in c.kernels if "s884cudnn" in k.name)
    assert (s884.launches, s884.total_ns, s884.min_ns, s884.max_ns) == (452, 365_560_000, 613_980, 1_178_100)
    assert main(["kernels", str(path), "--tc", "yes", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc2nchw_tn_v1" in out
    assert out.count("\n") == 2  # the header and the one tensor-core kernel


def test_the_t4_fragment_says_no_tensor_cores(capsys: pytest.CaptureFixture[str]) -> None:
    """pytorch#42311: a model.half() run on a T4 that "seems to show no tensor core usage": volta_fp16_scudnn (a
    SIMT cuDNN kernel in fp16) and an fp16 implicit_convolveNd_sgemm — fp16 work, none of it on tensor cores."""
    assert main(["report", str(_wild3("nvprof-fragment-pytorch-42311-t4.md"))]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Tensor cores used: no — none of the 2 kernels is a tensor-core kernel") and "fp16" in out


@pytest.mark.parametrize("name", ["nvprof-summary-mxnet-14725-v100-lstm.txt", "nvprof-summary-lu-v100-hpc2n.md",
                                  "nvprof-summary-pytorch-benchmark-volta.md"])
def test_whole_summaries_still_read_every_row_and_no_api_call(name: str) -> None:
    path = _wild3(name)
    c = readers.read(path)
    expected = {n for _, n in _rows(path) if not n.startswith(("cuda", "[CUDA"))}
    got = {k.name for k in c.kernels}
    assert len(got) == len({n.split("(")[0].split("<")[0].removeprefix("void ") for n in expected})
    assert not any(n.startswith("cuda") for n in got)  # API calls are not kernels
    assert not any("rows without their" in n for n in c.notes)  # whole summaries are no fragment


def test_names_a_console_wrapped_are_joined(tmp_path: Path) -> None:
    """The apex fragment as an 120-column terminal shows it: each long row broken into lines of 120 characters."""
    src = _wild3("nvprof-fragment-apex-666-v100.txt")
    lines = src.read_text().splitlines()
    wrapped = "".join(ln[i:i + 120] + "\n" for ln in lines for i in range(0, max(len(ln), 1), 120))
    assert wrapped.count("\n") > src.read_text().count("\n") + 3
    path = tmp_path / "wrapped.txt"
    path.write_text(wrapped)
    assert sorted(k.name for k in readers.read(path).kernels) == sorted(k.name for k in readers.read(src).kernels)


@pytest.mark.parametrize("text, why", [
    ("GPU activities: were high this week\nloss 45.5% lower\n", "not a profiler capture"),
    # one row alone is not "a handful": random text with a percent and some times could look like it
    ("                    3.23%  309.42ms         3  103.14ms  102.48ms  104.10ms  volta_cgemm_32x64_tn\n",
     "not a profiler capture"),
    # numbers without their units say nothing about time
    (("   3.23%  309.42  3  103.14  102.48  104.10  volta_cgemm_32x64_tn\n"
      "   3.14%  300.47  2700  111.29  15.937  291.47  volta_sgemm_128x64_nn\n"), "not a profiler capture"),
    # API-call rows pasted on their own: no kernel in them
    (("      API calls:   66.69%  380.36ms        80  4.7544ms  2.3590us  102.54ms  cudaDeviceSynchronize\n"
      "                   33.29%  189.87ms       469  404.85us  4.6590us  186.59ms  cudaLaunchKernel\n"
      "                    0.02%  108.07us       702     153ns      90ns  4.9130us  cudaGetLastError\n"),
     "nvprof-summary found, but no kernel row in it"),
])
def test_text_without_a_summary_row_stays_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                                  why: str) -> None:
    path = tmp_path / "pasted.txt"
    path.write_text(text)
    assert why in _refused(capsys, path)


# --- nvprof --metrics --csv ----------------------------------------------------------------------------------------
def test_nvprof_metrics_csv_is_read_not_taken_for_ncu(capsys: pytest.CaptureFixture[str]) -> None:
    """dengxiaosys' FlashAttention-2 forward on a GTX 1060 (sm_61, no tensor cores), nvprof --metrics --csv with
    occupancy, stall and throughput metrics: no tensor-unit metric, so the kernel's name (fp32) and the GPU decide.
    It was refused as "ncu CSV without a header row"."""
    path = _wild3("nvprof-metrics-csv-fa2-gtx1060.csv")
    kernels = {ln.split('",')[1] for ln in path.read_text().splitlines() if ln.startswith('"NVIDIA')}
    assert len(kernels) == 1
    c = readers.read(path)
    assert c.format == "nvprof-metrics" and [k.launches for k in c.kernels] == [1]
    assert c.kernels[0].total_ns is None and c.counters == ()
    assert [(g.device_id, g.name) for g in c.devices] == [(0, "NVIDIA GeForce GTX 1060")]
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Tensor cores used: no") and "GTX 1060, sm_61) has no tensor cores" in out


def test_nvprof_metrics_csv_tensor_units_decide(tmp_path: Path) -> None:
    """The same export's preamble and header, with tensor-unit rows in the layout nvprof --csv writes them (levels
    as "Idle (0)" … "Max (10)"; built here, no public file has them): above Idle → yes, Idle → no."""
    real = _wild3("nvprof-metrics-csv-fa2-gtx1060.csv").read_text().splitlines()
    head = [ln for ln in real if ln.startswith("==") and "Warning" not in ln] + [real[5]]
    dev = '"Tesla V100-SXM2-16GB (0)"'
    desc = '"Tensor-Precision Function Unit Utilization"'
    tpu = f'"tensor_precision_fu_utilization",{desc}'
    rows = [f'{dev},"volta_h884gemm_64x64_ldg8_nn",4,{tpu},"Low (2)","Mid (5)","Low (3)"',
            f'{dev},"volta_sgemm_128x64_nn",2,{tpu},"Idle (0)","Idle (0)","Idle (0)"',
            f'{dev},"volta_sgemm_128x64_nn",2,"achieved_occupancy","Achieved Occupancy",0.12,0.13,0.12']
    assert head[-1].startswith('"Device","Kernel","Invocations","Metric Name"')
    path = tmp_path / "metrics.csv"
    path.write_text("\n".join(head + rows) + "\n")
    v = {x.name: x for x in readers.read(path).counters}
    assert v["volta_h884gemm_64x64_ldg8_nn"].tensor_core == "yes" and v["volta_h884gemm_64x64_ldg8_nn"].value == 5
    assert v["volta_sgemm_128x64_nn"].tensor_core == "no"
    assert "tensor_precision_fu_utilization max Idle (0) over 2 invocations" == v["volta_sgemm_128x64_nn"].detail


def test_a_metrics_header_without_rows_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty_metrics.csv"
    path.write_text('"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n')
    with pytest.raises(BadInput, match="nvprof --metrics CSV with a header but no kernel rows"):
        nvprof_csv.read(path)
