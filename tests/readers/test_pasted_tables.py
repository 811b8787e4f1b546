"""Format details of issue 26's inputs, on short inline excerpts: nsys stats tables as people paste them (fences, no
nsys lines, CSV among prose, Markdown pipe tables, locale separators, repeated sections, GPUs named by headings),
ncu metric rows without their rule columns, the tensor-pipe counter rules, a TensorFlow 1 timeline that does name
kernels, an nsys export without a kernel table, a DLProf kernel report. Excerpts of real files say their source;
the others are built in the layout the real tool writes, and say so."""
from __future__ import annotations

import json
import re
import sqlite3
import time

import pytest

from nvprof_wrap import readers
from nvprof_wrap.classify import classify, counters
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from tests._paths import fixture_file


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


# reguly/laplace_vector @817851e3 README.md: a table without nsys's lines, here inside a Markdown code fence
FENCED = ("# Results from A100-4GB PCI-e\nProfiling Single Precision...\n\n```\n"
          " Time (%)  Total Time (ns)  Instances  Avg (ns)   Med (ns)   Min (ns)  Max (ns)  StdDev (ns)"
          "                 Name\n"
          " --------  ---------------  ---------  ---------  ---------  --------  --------  -----------"
          "  -----------------------------------\n"
          "     51.0          919,138          2  459,569.0  459,569.0   458,721   460,417      1,199.3"
          "  stencil(int, int, float *, float *)\n"
          "     49.0          881,603          2  440,801.5  440,801.5   440,737   440,866         91.2"
          "  copy(int, int, float *, float *)\n"
          "```\n\nThe stencil is memory bound; Total Time is the sum over both calls.\n")


def test_a_fenced_table_without_nsys_lines(tmp_path):
    path = _write(tmp_path, "README.md", FENCED)
    assert readers.detect(path) == "console-text"
    c = readers.read(path)
    assert [(k.name, k.launches, k.total_ns, k.min_ns, k.max_ns, k.device_id) for k in c.kernels] == [
        ("stencil(int, int, float *, float *)", 2, 919_138, 458_721, 460_417, 0),
        ("copy(int, int, float *, float *)", 2, 881_603, 440_737, 440_866, 0)]
    assert [d.name for d in c.devices] == ["A100-4GB PCI-e"]


def test_the_same_table_without_separators_and_a_second_section_on_another_gpu(tmp_path):
    """The README's H100 section prints 730788 where the A100's prints 919,138; the two GPUs stay apart."""
    h100 = FENCED.replace("A100-4GB", "H100-80GB").replace("919,138", "730788").replace("881,603", "689253")
    c = readers.read(_write(tmp_path, "README.md", FENCED + h100))
    assert sorted((k.device_id, k.total_ns) for k in c.kernels) == [(0, 881_603), (0, 919_138), (1, 689_253),
                                                                    (1, 730_788)]
    assert not any("repeated" in n for n in c.notes)


def test_a_section_pasted_twice_is_counted_once(tmp_path):
    c = readers.read(_write(tmp_path, "README.md", FENCED + FENCED.replace("Results from A100", "A100")))
    assert sorted(k.total_ns for k in c.kernels) == [881_603, 919_138]
    assert "1 nsys stats table repeated verbatim in the file (the same section pasted twice?): counted once" in c.notes


# F64081169/Nvprof_Jetson_Nano_Example @3b0aaf5a new_profile_yolov4tiny.txt: zh_CN groups of four digits
FOUR_DIGITS = """[6/8] Executing 'gpukernsum' stats report

CUDA Kernel Statistics:

 Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)  Min (ns)  Max (ns)  StdDev (ns)  Name
 --------  ---------------  ---------  --------  --------  --------  --------  -----------  --------------------------
     14.1      8,4521,1450     3,8928  2,1712.2  2,4320.0      9120    3,9265       8830.6  generatedNativePointwise
      0.0           2,6815         13    2062.7    2016.0      1952      2496        139.9  computeOffsetsKernel

"""


def test_four_digit_groups(tmp_path):
    c = readers.read(_write(tmp_path, "jetson.log", FOUR_DIGITS))
    assert sorted((k.name, k.launches, k.total_ns, k.max_ns) for k in c.kernels) == [
        ("computeOffsetsKernel", 13, 26_815, 2_496), ("generatedNativePointwise", 38_928, 845_211_450, 39_265)]


def test_dot_groups_with_a_decimal_comma(tmp_path):
    """The layout nsys prints under a de_DE locale (built here: '.' groups, ',' decimals); a column's integers
    decide which is which."""
    text = FOUR_DIGITS.replace("8,4521,1450", "845.211.450").replace("3,8928", "38.928").replace(
        "2,1712.2", "21.712,2").replace("3,9265", "39.265").replace("2,6815", "26.815")
    c = readers.read(_write(tmp_path, "de.log", text))
    k = next(k for k in c.kernels if k.name == "generatedNativePointwise")
    assert (k.launches, k.total_ns, k.max_ns) == (38_928, 845_211_450, 39_265)
    assert next(k for k in c.kernels if k.name == "computeOffsetsKernel").total_ns == 26_815


def test_csv_rows_among_prose(tmp_path):
    """`nsys stats --report cuda_gpu_kern_sum --format csv` output (its header as the nsys-stats-csv reader knows it)
    pasted into notes between other lines: names with commas stay whole."""
    text = ("Run 3, fp16 build:\n"
            "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
            '61.2,1204032,24,50168.0,50112.0,49920,50656,180.2,"ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn"\n'
            '38.8,763904,24,31829.3,31808.0,31616,32160,141.9,"void at::native::vectorized_elementwise_kernel<4, '
            'at::native::FillFunctor<c10::Half>, at::detail::Array<char *, 1>>(int, T2, T3)"\n'
            "\nThe GEMM is the tensor-core part.\n")
    c = readers.read(_write(tmp_path, "notes.txt", text))
    names = {k.name: k for k in c.kernels}
    assert names["ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn"].total_ns == 1_204_032
    assert any(n.startswith("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor")
               and names[n].launches == 24 for n in names)


def test_a_markdown_pipe_table(tmp_path):
    text = ("## Kernels on the H100\n\n"
            "| Time (%) | Total Time (ns) | Instances | Avg (ns) | Min (ns) | Max (ns) | Name |\n"
            "|---:|---:|---:|---:|---:|---:|:---|\n"
            "| 72.5 | 2,048,000 | 16 | 128,000.0 | 127,000 | 130,000 "
            "| `nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT` |\n"
            "| 27.5 | 776,000 | 16 | 48,500.0 | 48,000 | 49,000 | `triton_red_fused_native_layer_norm_0` |\n\n")
    c = readers.read(_write(tmp_path, "RESULTS.md", text))
    assert sorted((k.name, k.launches, k.total_ns, k.device_id) for k in c.kernels) == [
        ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", 16, 2_048_000, 0),
        ("triton_red_fused_native_layer_norm_0", 16, 776_000, 0)]
    assert [d.name for d in c.devices] == ["Kernels on the H100"]


def test_api_and_nvtx_tables_are_not_kernels_and_prose_does_not_break(tmp_path):
    """Untitled cuda_api_sum (Num Calls … Name) and nvtx_sum (… Range) tables beside a kernel table, and a sentence
    that says "Total Time": only the kernel table gives kernels."""
    text = ("Total Time was measured twice.\n\n"
            " Time (%)  Total Time (ns)  Num Calls  Avg (ns)  Name\n"
            " --------  ---------------  ---------  --------  ----------------\n"
            "     90.0          900,000          5   180,000  cudaLaunchKernel\n\n"
            " Time (%)  Total Time (ns)  Instances  Avg (ns)  Range\n"
            " --------  ---------------  ---------  --------  -----------\n"
            "     90.0          800,000          2   400,000  train_step\n\n"
            " Time (%)  Total Time (ns)  Instances  Avg (ns)  Name\n"
            " --------  ---------------  ---------  --------  -----------------\n"
            "    100.0          700,000          5   140,000  my_kernel(float *)\n")
    c = readers.read(_write(tmp_path, "log.txt", text))
    assert [(k.name, k.total_ns) for k in c.kernels] == [("my_kernel(float *)", 700_000)]


def test_cuda_gpu_sum_kernels_and_copies_by_category(tmp_path):
    """`nsys stats --report cuda_gpu_sum`: kernels and copies in one table, told apart by Category (layout built as
    nsys 2023 prints it)."""
    text = ("[5/5] Executing 'cuda_gpu_sum' stats report\n\n"
            " Time (%)  Total Time (ns)  Instances  Avg (ns)  Category     Operation\n"
            " --------  ---------------  ---------  --------  -----------  ----------------------------\n"
            "     80.0          800,000          4   200,000  CUDA_KERNEL  volta_sgemm_128x64_nn\n"
            "     20.0          200,000          2   100,000  MEMORY_OPER  [CUDA memcpy Host-to-Device]\n\n")
    c = readers.read(_write(tmp_path, "gpu_sum.log", text))
    assert [(k.name, k.launches, k.total_ns) for k in c.kernels] == [("volta_sgemm_128x64_nn", 4, 800_000)]
    assert [(m.kind, m.direction, m.count) for m in c.memops] == [("memcpy", "HtoD", 2)]


def test_a_program_line_naming_its_gpu(tmp_path):
    """A program's own 'Detected GPU: …' line (as wangzy0327/cuda-roofline prints it) puts the tables after it on that
    GPU; a heading that names no GPU changes nothing."""
    text = "Detected GPU: NVIDIA A100-PCIE-40GB (SM 8.0)\n# Flash Attention\n" + FOUR_DIGITS
    c = readers.read(_write(tmp_path, "run.log", text))
    assert [d.name for d in c.devices] == ["NVIDIA A100-PCIE-40GB"] and {k.device_id for k in c.kernels} == {0}


def test_long_program_lines_are_not_searched_for_gpu_names(tmp_path):
    text = "GPU " * 250_000 + "\n" + "# " + " " * 200_000 + "A100\n" + FOUR_DIGITS
    start = time.monotonic()
    c = readers.read(_write(tmp_path, "long.log", text))
    assert time.monotonic() - start < 20 and c.devices == () and len(c.kernels) == 2


# --- ncu ----------------------------------------------------------------------------------------------------------
NCU_HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
            '"Rule Description","Estimated Speedup Type","Estimated Speedup"\n')


def _ncu_row(i: int, name: str, cc: str, section: str, metric: str, unit: str, value: str, rule: bool = False) -> str:
    cells = [str(i), "6153", "python3.11", "127.0.0.1", name, "1", "7", "(256, 1, 1)", "(1024, 1, 1)", "0", cc,
             section, metric, unit, value]
    tail = ',"SOLBottleneck","OPT","This kernel exhibits low compute throughput","global","38.16"' if rule else ","
    return ",".join(f'"{c}"' for c in cells) + tail + "\n"


def test_ncu_metric_rows_end_at_their_value(tmp_path):
    """ncu 2024's section export (as brycelelbach/nsightful's numba T4 file): a metric row stops after "Metric Value"
    (one empty field), only rule rows fill the rule columns; the Duration row is in usecond here."""
    text = NCU_HEAD + _ncu_row(0, "copy_blocked", "7.5", "GPU Speed Of Light Throughput", "Duration", "usecond",
                               "21.06") + _ncu_row(0, "copy_blocked", "7.5", "GPU Speed Of Light Throughput", "", "",
                                                   "", rule=True)
    (k,) = readers.read(_write(tmp_path, "sections.csv", text)).kernels
    assert k.total_ns == 21_060


def test_tensor_pipe_total_in_an_ncu_export(tmp_path):
    rows = [(0, "void InitializeMatrix_kernel<__half, (bool)1>(T1 *, int, int, int)", "8.6", "0"),
            (1, "hand_written_hgemm(const __half *, const __half *, __half *)", "8.6", "4,096"),
            (2, "hand_written_hgemm(const __half *, const __half *, __half *)", "7.0", "4,096")]
    text = NCU_HEAD + "".join(_ncu_row(i, n, cc, "Command line profiler metrics", "sm__inst_executed_pipe_tensor.sum",
                                       "inst", v) for i, n, cc, v in rows)
    c = readers.read(_write(tmp_path, "pipe.csv", text))
    v = {x.name: x for x in c.counters}
    assert v["void InitializeMatrix_kernel<__half, (bool)1>(T1 *, int, int, int)"].tensor_core == "no"
    # one launch on sm_86 (no HFMA2 split: could be HFMA2.MMA), one on a V100: the V100's proves matrix instructions
    hgemm = v["hand_written_hgemm(const __half *, const __half *, __half *)"]
    assert hgemm.tensor_core == "yes" and "1 of 2 launches used tensor cores" in hgemm.detail


P, HF, TC = counters.PIPE_INST, counters.HFMA2_INST, counters.TC_PIPE_INST


@pytest.mark.parametrize("metrics, cc, verdict, says", [
    ({P: 5120.0}, "7.0", "yes", "tensor pipe of sm_70 runs matrix instructions only"),  # Volta: no HFMA2.MMA
    ({P: 5120.0}, "7.2", "yes", "sm_72"),
    ({P: 5120.0}, "8.0", "unknown", "without the HFMA2 split"),
    ({P: 5120.0}, None, "unknown", "without the HFMA2 split"),
    ({P: 5120.0, HF: 1024.0}, "8.0", "yes", "4,096 matrix instructions"),  # net of HFMA2
    ({P: 1024.0, HF: 1024.0}, None, "no", "HFMA2.MMA"),  # an HFMA2 count places it on GA100 / GH100
    ({P: 0.0}, "9.0", "no", "nothing ran on the tensor pipe"),
    ({P: 0.0}, "12.0", "no", "nothing ran on the tensor pipe"),  # consumer Blackwell: mma.sync on the tensor pipe
    ({P: 0.0}, "10.0", "unknown", "tc pipe"),  # B200: tcgen05 MMAs on the tc pipe
    ({P: 0.0, TC: 0.0}, "10.0", "no", "nothing ran"),
    ({P: 0.0, TC: 640.0}, "10.0", "unknown", "640 tc-pipe (tcgen05) instructions"),
    ({P: 0.0}, None, "unknown", "names no GPU"),
    ({"sm__pipe_tensor_cycles_active.sum": 0.0}, "10.0", "unknown", ""),  # an idle tensor pipe is no proof on sm_100
    ({"sm__pipe_tensor_cycles_active.sum": 0.0}, "9.0", "no", "tensor pipe idle"),
    # other versions' names: Ada's _v2, Blackwell's subpipe_, smsp__ for sm__
    ({"smsp__inst_executed_pipe_tensor_v2.sum": 0.0}, "8.9", "no", "tensor pipe 0"),
    ({"sm__inst_executed_pipe_tensor_subpipe_imma.sum": 64.0}, "10.0", "yes", "IMMA 64"),
    ({"sm__inst_executed_pipe_tensor_subpipe_hmma.sum": 64.0}, "12.0", "unknown", "without the HFMA2 split"),
])
def test_tensor_pipe_rules(metrics, cc, verdict, says):
    e = counters.launch_verdict(metrics, cc)
    assert e.tensor_core == verdict and says in e.detail, e


def test_the_h200_training_exports_keep_their_verdicts_with_the_pipe_total():
    """The H200 exports hold the total beside the split; adding it changes no verdict (hmma − hfma2 decided)."""
    fp32_layer_norm = {counters.HMMA_INST: 147456.0, HF: 147456.0, P: 147456.0, counters.GMMA_INST: 0.0,
                       counters.IMMA_INST: 0.0, counters.DMMA_INST: 0.0}
    assert counters.launch_verdict(fp32_layer_norm, "9.0").tensor_core == "no"
    nvjet = {counters.HMMA_INST: 524288.0, HF: 0.0, P: 524288.0, counters.GMMA_INST: 524288.0,
             counters.IMMA_INST: 0.0, counters.DMMA_INST: 0.0}
    e = counters.launch_verdict(nvjet, "9.0")
    assert e.tensor_core == "yes" and e.value == 524288


# --- TensorFlow 1 timeline, nsys export, DLProf ---------------------------------------------------------------------
def _tf1(tmp_path, kernel_names: bool):
    procs = ["/device:GPU:0/stream:13 Compute", "/device:GPU:0/stream:13 Tensors",
             "/job:localhost/replica:0/task:0/device:GPU:0 Compute"]
    events = [{"name": "process_name", "ph": "M", "pid": i, "args": {"name": n}} for i, n in enumerate(procs)]
    for i, op in enumerate(("MatMul", "Conv2D", "MatMul")):
        name = f"volta_sgemm_128x64_nn_{i}" if kernel_names else op
        events.append({"ph": "X", "cat": "Op", "name": name, "pid": 0, "tid": 0, "ts": 100 + 50 * i, "dur": 20,
                       "args": {"name": f"dense/{op}", "op": op}})
    path = tmp_path / "timeline.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_a_tf1_timeline_of_op_names_is_refused(tmp_path):
    """The structure timeline.py writes (as in aistein/dlprof's timelines), built small."""
    with pytest.raises(BadInput, match=r"TensorFlow 1 timeline: its GPU rows hold 3 events named by TensorFlow op "
                                       r"\(MatMul, Conv2D\)"):
        readers.read(_tf1(tmp_path, kernel_names=False))


def test_a_tf1_timeline_whose_rows_name_kernels_is_read(tmp_path):
    c = readers.read(_tf1(tmp_path, kernel_names=True))
    assert sorted(k.name for k in c.kernels) == [f"volta_sgemm_128x64_nn_{i}" for i in range(3)]


def test_nsys_export_without_a_kernel_table_says_what_it_holds(tmp_path, capsys):
    """Tables as nsys 2024 exports them (the subset read here): API calls, one memset, the GPU."""
    db = tmp_path / "setup_only.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript("""
        CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE TARGET_INFO_SESSION_START_TIME(utcEpochNs INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, "end" INTEGER, globalTid INTEGER,
                                                 correlationId INTEGER, nameId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET(start INTEGER, "end" INTEGER, deviceId INTEGER, globalPid INTEGER,
                                                bytes INTEGER);
        CREATE TABLE TARGET_INFO_GPU(id INTEGER, name TEXT);
        INSERT INTO StringIds VALUES (1, 'cudaMalloc_v3020'), (2, 'cudaMemsetAsync_v3020');
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 2, 0, 1, 1), (3, 4, 0, 2, 2), (5, 6, 0, 3, 1);
        INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (10, 20, 0, 0, 4096);
        INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200');
    """)
    conn.close()
    assert main(["report", str(db)]) == 2
    err = capsys.readouterr().err
    assert "CUDA was traced (3 CUDA API calls, none a kernel launch: cudaMalloc ×2, cudaMemsetAsync) and NVIDIA " \
           "H200 recorded 1 memset but no kernel" in err


def test_a_dlprof_kernel_report_is_refused_with_its_own_column(tmp_path):
    """A DLProf kernel report's columns (built: no such file is in the wild set): its 'Uses TC' is DLProf's verdict."""
    text = ("Kernel Name,Op Name,Uses TC,Calls,Total GPU Time (ns)\n"
            "volta_h884gemm_64x64_ldg8_nn,dense/MatMul,yes,10,3000000\n"
            "Eigen::internal::EigenMetaKernel,dense/BiasAdd,no,10,1000000\n")
    with pytest.raises(BadInput, match=r"DLProf kernel report: not read; its own 'Uses TC' column: 1 of 2 kernels "
                                       r"used tensor cores \(75\.0% of their GPU time\)"):
        readers.read(_write(tmp_path, "dlprof_kernel.csv", text))


@pytest.mark.parametrize("rel, layout", [
    ("wild3/nsys-stats-table-vllm-llama70b-h100.txt", "boxed, rows padded and closed with '|'"),
    ("wild3/nsys-stats-table-vllm-deepseek-r1-b200.md", "boxed, rows closed with '|'"),
    ("wild3/nsys-stats-cs336-trainstep-plain.txt", "columns, rows padded to the longest name"),
])
def test_a_table_cut_off_inside_a_name_does_not_read_the_stub_as_a_kernel(tmp_path, rel, layout):
    """A real nsys stats table whose text ends inside its last kernel row's name (a paste or a file cut short): the
    stub ('nvjet_tst_256x152_64x4_1x2_h_bz_' of 'nvjet_tst_256x152_64x4_1x2_h_bz_coopA_TNT') had read as a whole
    kernel's name — a kernel that never ran, decided by what the stub says. It is a cut name now ('…':
    classify/engine.py trusts only what the cut cannot hide); every row before it reads as in the whole file."""
    src = fixture_file(rel)
    lines = src.read_text().splitlines(keepends=True)
    whole = {k.name: k for k in readers.read(src).kernels}
    header = next(i for i, line in enumerate(lines) if "Total Time" in line and "Name" in line)
    rows = [i for i in range(header + 1, len(lines)) if re.match(r"^[\s|]*\d", lines[i])]
    last = rows[-1] if rows[-1] - rows[0] == len(rows) - 1 else rows[next(j for j in range(1, len(rows))
                                                                          if rows[j] != rows[j - 1] + 1) - 1]
    row = lines[last]
    (name,) = [n for n in whole if n.rstrip("…") in row and not any(
        m != n and n.rstrip("…") in m.rstrip("…") and m.rstrip("…") in row for m in whole)]
    stub = row[:row.index(name.rstrip("…")) + 12]
    cut = _write(tmp_path, src.name, "".join(lines[:last]) + stub)
    kernels = {k.name: k for k in readers.read(cut).kernels}
    assert set(kernels) - set(whole) == {name[:12] + "…"}, layout
    assert classify(name[:12] + "…").tensor_core in ("unknown", classify(name).tensor_core)
    before = {k.name: k for k in readers.read(_write(tmp_path, "before" + src.suffix, "".join(lines[:last]))).kernels}
    assert {n: k for n, k in kernels.items() if n in whole} == before and len(before) >= 1


def _cut_rows(rel: str) -> tuple[list[str], list[int]]:
    """A real nsys stats text's lines and its first kernel table's row lines."""
    lines = fixture_file(rel).read_text().splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if "Total Time" in line and "Name" in line)
    rows = [i for i in range(header + 1, len(lines)) if re.match(r"^[\s|]*\d", lines[i])]
    return lines, rows


@pytest.mark.parametrize("rel, layout", [
    ("wild3/nsys-stats-table-vllm-llama70b-h100.txt", "boxed, rows padded and closed with '|'"),
    ("wild3/nsys-stats-table-vllm-deepseek-r1-b200.md", "boxed, rows closed with '|'"),
    ("wild3/nsys-stats-cs336-trainstep-plain.txt", "columns, rows padded to the longest name"),
])
@pytest.mark.parametrize("where", ["inside its numbers", "at its name", "at its name, the row closed"])
def test_a_table_cut_off_before_a_rows_name_says_the_row_is_lost(tmp_path, rel, layout, where):
    """A real nsys stats text that ends inside a kernel row's numbers, or just before its name (a paste or a file
    cut short there): the row ended the table unsaid — its kernel silently missing from the report, or, with its
    name cell empty, read as a kernel named ''. The rows before it read as they do, and a note says a row was cut
    off, with the share of the table's time its Time column gives; a text whose only row is cut is refused so."""
    lines, rows = _cut_rows(rel)
    row = lines[rows[2]]
    name = row.split("|")[9] if "|" in row else re.match(r"^(?:\s*\S+){8}\s+(.*)", row).group(1)
    at = row.index(name.strip())
    stub = {"inside its numbers": row[:at // 2], "at its name": row[:at],
            "at its name, the row closed": row[:at] + ("|" if "|" in row else "") + "\n"}[where]
    cut = readers.read(_write(tmp_path, "cut" + fixture_file(rel).suffix, "".join(lines[:rows[2]]) + stub))
    before = readers.read(_write(tmp_path, "before" + fixture_file(rel).suffix, "".join(lines[:rows[2]])))
    assert cut.kernels == before.kernels and len(before.kernels) == 2, layout
    (said,) = [n for n in cut.notes if "ends before its name" in n]
    share = row.strip(" |").split()[0]
    assert said.startswith("a row of an nsys stats kernel table ends before its name ('") and \
        f"that kernel ({share}% of the table's time) is not in this report — the text was cut off there" in said
    assert not [n for n in before.notes if "ends before its name" in n]
    with pytest.raises(BadInput, match=r"no kernel row in it \(only copies, API calls or other tables\) — a row of an "
                                       r"nsys stats kernel table ends before its name"):
        readers.read(_write(tmp_path, "only" + fixture_file(rel).suffix, "".join(lines[:rows[0]]) + stub))


@pytest.mark.parametrize("rel", ["wild3/nsys-stats-cs336-trainstep-plain.txt",
                                 "wild3/nsys-stats-table-vllm-llama70b-h100.txt"])
@pytest.mark.parametrize("width", [80, 120])
def test_a_table_folded_at_a_terminals_width_is_said_to_look_folded(tmp_path, rel, width):
    """Real nsys stats texts hard-wrapped at 80 or 120 columns (a terminal's or an editor's fold, as `fold -w`
    does): every row cut in two, no kernel row left — refused as "no kernel row in it (only copies, API calls or other
    tables)", which sent the user looking for a missing table. The line says the text looks folded, at which width."""
    text = fixture_file(rel).read_text()
    folded = "".join(line[i:i + width] + "\n" for line in text.splitlines() for i in range(0, max(len(line), 1), width))
    with pytest.raises(BadInput) as refused:
        readers.read(_write(tmp_path, "folded.txt", folded))
    assert f"characters long: the text looks folded at {width} columns, each table row cut in two" in refused.value.why

