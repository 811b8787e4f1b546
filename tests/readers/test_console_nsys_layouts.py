"""`nsys stats` console tables as public repositories hold them (shared/fixtures/wild3, read in place): the boxed
layout (`+---+`, `| … |` rows; plain and inside Markdown fences, the B200 files with fp8 DeepGEMM and bf16
attention among them), a pasted column table whose rows are out of line with their header (vLLM's profiling docs),
names cut by the console, and kernel names prefixed with their NVTX range (`:nvtx-name`). What each file holds is
counted here independently of the reader, from the file's own rows."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from nvprof_wrap import readers
from nvprof_wrap.classify import classify
from nvprof_wrap.readers.console_nsight import nsys_tables
from nvprof_wrap.readers.nsys_stats_csv import nvtx_split
from tests._paths import fixture_file

BOXED = ["nsys-stats-table-vllm-llama70b-h100.txt", "nsys-stats-table-vllm-deepseek-r1-b200.md",
         "nsys-stats-table-vllm-qwen7b-b200.md"]


def _wild3(name: str) -> Path:
    return fixture_file(f"wild3/{name}")


def _kernel_rows(text: str, row: re.Pattern[str]) -> list[tuple[int, int, str]]:
    """(instances, total ns, name) of each row of the file's cuda_gpu_kern_sum tables, by a pattern of its own."""
    out, inside = [], False
    for line in text.splitlines():
        if "** " in line and "(" in line:
            inside = "(cuda_gpu_kern_sum)" in line
        elif inside and (m := row.match(line)):
            out.append((int(m["count"].replace(",", "")), int(m["total"].replace(",", "")), m["name"].strip()))
    return out


_BOX_ROW = re.compile(r"^\|\s+[\d.]+ \|\s+(?P<total>\d+) \|\s+(?P<count>\d+) \|(?:[^|]*\|){5}\s(?P<name>.*?)\s*\|$")


@pytest.mark.parametrize("name", BOXED)
def test_boxed_tables_are_read_row_for_row(name):
    path = _wild3(name)
    rows = _kernel_rows(path.read_text(), _BOX_ROW)
    assert len(rows) >= 20
    capture = readers.read(path)
    assert capture.format == "console-nsys-stats"
    assert sum(k.launches for k in capture.kernels) == sum(n for n, _, _ in rows)
    assert sum(k.total_ns or 0 for k in capture.kernels) == sum(t for _, t, _ in rows)
    # every name whole as the console left it, the cut ones still marked cut
    names = {k.name for k in capture.kernels}
    for _, _, shown in rows:
        assert any(shown.removeprefix("void ").startswith(n.removeprefix("void ").rstrip("…")) for n in names), shown
    assert sum(n.endswith("…") for n in names) >= 5


def test_the_b200_files_read_fp8_deepgemm_and_bf16_attention():
    deepseek = readers.read(_wild3("nsys-stats-table-vllm-deepseek-r1-b200.md"))
    gemm = [k for k in deepseek.kernels if "deep_gemm::sm100_fp8_gemm" in k.name]
    assert gemm and all(k.name.endswith("…") for k in gemm)
    assert {(classify(k.name).tensor_core, classify(k.name).precision) for k in gemm} == {("yes", "fp8")}
    qwen = readers.read(_wild3("nsys-stats-table-vllm-qwen7b-b200.md"))
    top = max(qwen.kernels, key=lambda k: k.total_ns or 0)
    assert top.name == "fmhaSm100fKernel_QkvBfloat16OBfloat16H128PagedKvCausalP16VarSeqQ128Kv128PersistentContext"
    assert (classify(top.name).tensor_core, classify(top.name).precision) == ("yes", "bf16")


_COLUMN_ROW = re.compile(r"^\s+[\d.]+\s+(?P<total>[\d,]+)\s+(?P<count>[\d,]+)(?:\s+[\d,.]+){5}\s+(?P<name>\S.*)$")


def test_rows_out_of_line_with_their_header_keep_every_letter():
    """vLLM's docs paste a table whose rows from the fourth on are one character shorter than the header: cut by
    the header's spans, 'sm90_xmma…' read 'm90_xmma…' and 'void vllm::…' read 'oid vllm::…'."""
    path = _wild3("vllm-docs-profiling-nsys-stats-h100.md")
    text = path.read_text()
    rows = _kernel_rows(text.replace("```", ""), _COLUMN_ROW) or [
        (int(m["count"].replace(",", "")), int(m["total"].replace(",", "")), m["name"].strip())
        for m in map(_COLUMN_ROW.match, text.splitlines()) if m]
    assert len(rows) == 9
    capture = readers.read(path)
    by_total = {k.total_ns: k.name for k in capture.kernels}
    for count, total, shown in rows:
        assert by_total[total].removeprefix("void ") == shown.removeprefix("void "), (by_total[total], shown)
    assert sum(k.name.startswith("sm90_xmma_gemm_bf16bf16_bf16f32") for k in capture.kernels) == 4
    assert not any(k.name.startswith(("m90_", "oid ")) for k in capture.kernels)


def test_a_shifted_row_is_not_split_at_a_grouped_number():
    """The split at a row's own spaces is taken only where each word is its column's cell: a number grouped by
    spaces stays one cell (by the header's spans)."""
    header = " Time (%)  Total Time (ns)  Instances    Name\n --------  ---------------  ---------  --------\n"
    t = nsys_tables([header.split("\n")[0] + "\n", header.split("\n")[1] + "\n",
                     "     60.0        1 139 457          3  gemm_kernel\n",
                     "     40.0          800,000          2  sm80_xmma_gemm_f16f16…\n"])
    assert {(k.name, k.launches, k.total_ns) for k in t.kernels} == {
        ("gemm_kernel", 3, 1139457), ("sm80_xmma_gemm_f16f16…", 2, 800000)}


def test_nvtx_prefixed_names_keep_range_and_kernel_apart():
    capture = readers.read(_wild3("nsys-stats-nvtx-name-cs336-forward.txt"))
    assert not any("/" in k.name for k in capture.kernels)
    ops = {(o.op, o.name): o for o in capture.ops}
    softmax = ops[("attention_softmax", "elementwise_kernel")]
    assert (softmax.launches, softmax.total_ns) == (960, 170307236)
    assert classify("elementwise_kernel").tensor_core == "no"  # not "matrix-math, unknown" from its range's name
    assert sum(o.launches for o in capture.ops) == sum(k.launches for k in capture.kernels)
    assert any("NVTX range" in n for n in capture.notes)
    # the same run without ':nvtx-name' gives the same kernel time
    plain = readers.read(_wild3("nsys-stats-cs336-trainstep-plain.txt"))
    step = readers.read(_wild3("nsys-stats-nvtx-name-cs336-trainstep.txt"))
    assert sum(k.total_ns or 0 for k in step.kernels) == pytest.approx(sum(k.total_ns or 0 for k in plain.kernels),
                                                                        rel=1e-6)
    assert not plain.ops
    assert ("(no NVTX range)", "Kernel2") in {(o.op, o.name) for o in step.ops}


@pytest.mark.parametrize(("name", "split"), [
    ("attention_softmax/elementwise_kernel", ("attention_softmax", "elementwise_kernel")),
    ("train step 3/void at::native::foo<float>(int)", ("train step 3", "void at::native::foo<float>(int)")),
    ("void f<a/b>(int)", (None, "void f<a/b>(int)")),
    ("bool operator/<float>(int)", (None, "bool operator/<float>(int)")),
    ("sm80_xmma_gemm_f16f16", (None, "sm80_xmma_gemm_f16f16")),
])
def test_what_counts_as_an_nvtx_prefix(name, split):
    assert nvtx_split(name) == split


def test_nvtx_prefixed_names_in_the_csv_format(tmp_path):
    """`nsys stats --format csv` with ':nvtx-name': the rows of the wild3 forward file, in the CSV layout nsys
    writes (its header, one row per kernel, names quoted)."""
    rows = _kernel_rows(_wild3("nsys-stats-nvtx-name-cs336-forward.txt").read_text(), _COLUMN_ROW)
    assert len(rows) == 17
    lines = [('"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)",'
              '"Name"')]
    lines += [f'1.0,{t},{n},1.0,1.0,1,1,0.0,"{name}"' for n, t, name in rows]
    path = tmp_path / "kern_sum_nvtx.csv"
    path.write_text("\n".join(lines) + "\n")
    capture = readers.read(path)
    assert capture.format == "nsys-stats-kernels"
    assert not any("/" in k.name for k in capture.kernels)
    assert ("attention_softmax", "elementwise_kernel") in {(o.op, o.name) for o in capture.ops}
    assert sum(o.total_ns for o in capture.ops) == sum(t for _, t, _ in rows)
