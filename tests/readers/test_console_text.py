"""Console text and ncu CSVs as people capture them, from real outputs.

tests/data/console/xplacer_*: files from peihunglin/XPlacer-ML-DataPlacement @a4c96c7 (BSD-3-Clause, Lawrence
Livermore National Security; tests/data/console/README.md), a V100 running Rodinia BFS: ncu CSV after the program's
own output, nvprof's summary and --print-gpu-trace. Short excerpts of other public pastes are inline, each with
its source.
"""
from __future__ import annotations

import json

import pytest

from nvprof_wrap import readers
from nvprof_wrap.classify import classify
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from tests._paths import DATA

CONSOLE = DATA / "console"


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_ncu_csv_after_the_programs_own_output_old_layout():
    """ncu 2020 on a V100: the program's prints and ==PROF== lines first; no Device / CC columns; 'Kernel Time'
    is a wall-clock time, not a duration; the section export names the duration 'Duration', in nsecond."""
    path = CONSOLE / "xplacer_ncu_bfs_graph4096.log"
    assert readers.detect(path) == "ncu-csv"
    c = readers.read(path)
    kernels = {k.name: k for k in c.kernels}
    assert set(kernels) == {"Kernel2(bool*,bool*,bool*,bool*,int)", "Kernel(Node*,int*,bool*,bool*,bool*,int*,int)"}
    k2 = kernels["Kernel2(bool*,bool*,bool*,bool*,int)"]
    assert (k2.launches, k2.device_id, k2.pid) == (7, None, 27599)
    assert k2.total_ns == 3200 + sum(int(r.split('","')[-1].rstrip('"\n')) for r in path.read_text().splitlines()
                                     if '"Duration"' in r and "Kernel2" in r and not r.startswith('"0"'))
    assert c.devices == () and c.notes == ()


def test_ncu_csv_with_the_header_repeated():
    c = readers.read(CONSOLE / "xplacer_lassen_ncu_bfs_graph4096.log")  # the same run on Lassen: the header twice
    assert sum(k.launches for k in c.kernels) == 13 and all(k.total_ns for k in c.kernels)


def test_ncu_section_export_units_and_no_duration(tmp_path, capsys):
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream",'
            '"Section Name","Metric Name","Metric Unit","Metric Value"\n')
    rows = [("0", "Duration", "msecond", "1.5"), ("1", "Duration", "second", "0.002"),
            ("2", "Duration", "usecond", "3")]
    text = "epoch 1 loss 0.3\n==PROF== Connected to process 7\n" + head + "".join(
        f'"{i}","7","python","127.0.0.1","volta_sgemm_128x64_nn","2020-Apr-07 17:01:05","1","7",'
        f'"GPU Speed Of Light","{m}","{u}","{v}"\n' for i, m, u, v in rows)
    c = readers.read(_write(tmp_path, "sections.csv", text))
    assert c.kernels[0].total_ns == 1_500_000 + 2_000_000 + 3_000
    untimed = _write(tmp_path, "no_duration.csv", text.replace('"Duration"', '"SM [%]"'))
    c = readers.read(untimed)
    assert c.kernels[0].total_ns is None
    assert main(["report", str(untimed), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert "kernel time was not captured" in d["message"] and "0.0%" not in d["message"]


# ncu 2021 with --nvtx: the header as eth-easl/orion @630f23b profiling/README.md quotes it (NVTX columns before the
# kernel name, rule columns after the value); cells of the push/pop column as ncu fills them (quotes doubled).
NCU_NVTX_HEADER = ('"ID","Process ID","Process Name","Host Name",'
                   '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",'
                   '"Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name",'
                   '"Kernel Time","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value",'
                   '"Rule Name","Rule Type","Rule Description"\n')


def test_ncu_csv_with_nvtx_and_rule_columns(tmp_path):
    nvtx = '"1  ""<default domain>:start:none:none:none:none:none:none""  "'
    name = "volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn"
    rows = []
    for i, unit, value in (("0", "usecond", "12.5"), ("1", "nsecond", "3,200")):
        lead = f'"{i}","4242","python3","127.0.0.1",{nvtx},"","{name}","2021-Jun-01 10:00:00","1","7",'
        rows.append(lead + f'"GPU Speed Of Light Throughput","Duration","{unit}","{value}","","",""\n')
        rows.append(lead + '"GPU Speed Of Light Throughput","","","","SOLBottleneck","WRN",'
                           '"This kernel exhibits low compute throughput, and memory bandwidth"\n')
    path = _write(tmp_path, "output_ncu.csv", "step 1 loss 2.3\n==PROF== Connected to process 4242\n"
                  + NCU_NVTX_HEADER + "".join(rows))
    assert readers.detect(path) == "ncu-csv"
    (k,) = readers.read(path).kernels
    assert (k.name, k.pid, k.launches, k.total_ns, k.device_id) == (name, 4242, 2, 12_500 + 3_200, None)


def test_ncu_raw_page_with_units_row(tmp_path):
    text = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","gpu__time_duration.sum","sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum"\n'
            '"","","","","","","","","","","","usecond","cycle"\n'
            '"0","11","python3","127.0.0.1","nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT","1","7","(384, 1, 1)",'
            '"(132, 1, 1)","0","9.0","25.2","1,234,567"\n')
    c = readers.read(_write(tmp_path, "raw.csv", text))
    (k,) = c.kernels
    assert (k.total_ns, k.device_id) == (25_200, 0) and c.devices[0].compute_capability == "9.0"
    # cycles alone cannot tell matrix instructions from HFMA2.MMA (issue 12): unknown, with the number shown
    assert c.counters[0].tensor_core == "unknown" and "1,234,567" in c.counters[0].detail
    with_inst = text.replace('"sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum"\n',
                             '"sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum",'
                             '"sm__inst_executed_pipe_tensor_op_gmma.sum"\n')
    with_inst = with_inst.replace('"cycle"\n', '"cycle","inst"\n').replace('"1,234,567"\n', '"1,234,567","32,768"\n')
    c = readers.read(_write(tmp_path, "raw_inst.csv", with_inst))
    assert c.counters[0].tensor_core == "yes" and c.counters[0].value == 32_768


def test_nvprof_summary_console_with_a_units_row():
    c = readers.read(CONSOLE / "xplacer_nvprof_summary_bfs.log")
    assert c.format == "console-nvprof-summary" and [p.pid for p in c.processes] == [5324]
    k = next(k for k in c.kernels if k.name.startswith("Kernel("))
    assert (k.launches, k.total_ns, k.min_ns, k.max_ns) == (8, 37_986, 2_110, 6_240)  # 'ms' units, 2.11e-03 ms
    htod = next(m for m in c.memops if m.direction == "HtoD")
    assert (htod.count, htod.total_ns) == (14, 341_204)


def test_nvprof_summary_with_unit_suffixes_and_api_calls(tmp_path):
    """The default layout (us/ms suffixes), among the program's output; API calls are not kernels."""
    text = """Epoch 1/1
==31337== Profiling application: python train.py
==31337== Profiling result:
            Type  Time(%)      Time     Calls       Avg       Min       Max  Name
 GPU activities:   61.37%  1.2345ms        10  123.45us  120.00us  130.00us  volta_h884gemm_64x64_ldg8_nn
                   30.00%  603.49us         5  120.70us  1.0000us  500.00us  [CUDA memcpy HtoD]
                    8.63%  173.60us        10  17.360us  17.000us  18.000us  volta_sgemm_128x64_nn
      API calls:   99.00%  2.00000s        20  100.00ms  1.0000us  1.90000s  cudaLaunchKernel
"""
    c = readers.read(_write(tmp_path, "log.txt", text))
    got = {k.name: (k.launches, k.total_ns) for k in c.kernels}
    assert got == {"volta_h884gemm_64x64_ldg8_nn": (10, 1_234_500), "volta_sgemm_128x64_nn": (10, 173_600)}
    assert c.memops[0].direction == "HtoD" and c.memops[0].total_ns == 603_490


def test_nvprof_gpu_trace_console():
    c = readers.read(CONSOLE / "xplacer_nvprof_gpu_trace_bfs.log")
    kernels = {k.name: k for k in c.kernels}
    assert set(kernels) == {"Kernel(Node*, int*, bool*, bool*, bool*, int*, int)",
                            "Kernel2(bool*, bool*, bool*, bool*, int)"}
    assert kernels["Kernel2(bool*, bool*, bool*, bool*, int)"].launches == 8  # ' [137]' correlation ids stripped
    htod = next(m for m in c.memops if m.direction == "HtoD")
    assert htod.count == 10 and htod.bytes == 114_696  # Unified Memory rows are not copies of this list


# nvprof --metrics on a V100, from LeiWang1999/leiblog.wang @f52ac58 source/_bak_posts_yun/使用Tensor-Core.md
NVPROF_METRICS = """\
Invocations                               Metric Name                           Metric Description         Min         \
Max         Avg
Device "Tesla V100-PCIE-16GB (0)"
    Kernel: volta_scudnn_128x32_relu_medium_nn_v1
        100           tensor_precision_fu_utilization   Tensor-Precision Function Unit Utilization    Idle (0)    Idle \
(0)    Idle (0)
    Kernel: void cutlass::Kernel<cutlass_tensorop_h884fprop_analytic_64x64_32x2>(cutlass_tensorop_h884fprop_analytic_64\
x64_32x2Params)
        106           tensor_precision_fu_utilization   Tensor-Precision Function Unit Utilization     Low (1)     Low \
(2)     Low (1)
    Kernel: void nchwToNhwcKernel<__half, __half, float, bool=1, bool=0, cudnnKernelDataType_t=0>(int, int, int, int, \
__half const *, __half*, float, float)
        106           tensor_precision_fu_utilization   Tensor-Precision Function Unit Utilization    Idle (0)    Idle \
(0)    Idle (0)
"""


def test_nvprof_metrics_tensor_units_are_counter_evidence(tmp_path, capsys):
    path = _write(tmp_path, "metrics.log", NVPROF_METRICS)
    c = readers.read(path)
    assert c.format == "nvprof-metrics" and c.devices[0].name == "Tesla V100-PCIE-16GB"
    verdicts = {v.name: (v.tensor_core, v.launches, v.value) for v in c.counters}
    cutlass = ("void cutlass::Kernel<cutlass_tensorop_h884fprop_analytic_64x64_32x2>"
               "(cutlass_tensorop_h884fprop_analytic_64x64_32x2Params)")
    assert verdicts[cutlass] == ("yes", 106, 2.0)  # Max 'Low (2)'
    assert verdicts["volta_scudnn_128x32_relu_medium_nn_v1"] == ("no", 100, 0.0)
    assert all(k.total_ns is None for k in c.kernels)
    assert main(["report", str(path), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["verdict"] == "yes" and "kernel time was not captured" in d["message"]


# nsys profile --stats=true on an A100, from ayush-os/nsight-systems-deep-dive @0e3f06f README.md
NSYS_STATS = """Launching kernel with 1 blocks...
[6/8] Executing 'cuda_gpu_kern_sum' stats report

 Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)  Min (ns)  Max (ns)  StdDev (ns)                          \
Name                         
 --------  ---------------  ---------  --------  --------  --------  --------  -----------  \
-----------------------------------------------------
    100.0        1,831,281      1,010   1,813.1   1,823.0     1,791     4,705         93.3  vectorAdd(const float *, \
const float *, float *, int)

[7/8] Executing 'cuda_gpu_mem_time_sum' stats report

 Time (%)  Total Time (ns)  Count  Avg (ns)  Med (ns)  Min (ns)  Max (ns)  StdDev (ns)      Operation     
 --------  ---------------  -----  --------  --------  --------  --------  -----------  ------------------
     51.0            2,432      2   1,216.0   1,216.0     1,024     1,408        271.5  [CUDA memcpy HtoD]
     49.0            2,336      1   2,336.0   2,336.0     2,336     2,336          0.0  [CUDA memcpy DtoH]

[8/8] Executing 'cuda_gpu_mem_size_sum' stats report
"""


def test_nsys_stats_console_tables(tmp_path):
    c = readers.read(_write(tmp_path, "nsys.log", NSYS_STATS))
    (k,) = c.kernels
    assert (k.name, k.launches, k.total_ns, k.min_ns, k.max_ns) == (
        "vectorAdd(const float *, const float *, float *, int)", 1010, 1_831_281, 1_791, 4_705)
    assert {(m.direction, m.count, m.total_ns) for m in c.memops} == {("HtoD", 2, 2432), ("DtoH", 1, 2336)}


# nsys 2020 ("CUDA Kernel Statistics"), from YKTian-x2b/AI4Materials_EvaluationTool @86c5f2b
# CodeInstrumentation/README.md: names longer than the column are cut without a mark (the first one here).
NSYS_2020 = """CUDA Kernel Statistics (nanoseconds)

Time(%)      Total Time   Instances         Average         Minimum         Maximum  \
Name                                                                                                                
-------  --------------  ----------  --------------  --------------  --------------  \
--------------------------------------------------------------------------------------------------------------------
   18.3           58366           6          9727.7            2784           17215  void \
phi::BNForwardInference<float, (common::DataLayout)2>(float const*, \
phi::backends::gpu::CudnnDataType<float>::BatchNormParamType const*, \
phi::backends::gpu::CudnnDataType<float>::BatchNormPa
    9.1           28960           3          9653.3            9440            9824  void \
cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align1>(cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align1:\
:Params)                                                                        



CUDA Memory Operation Statistics (nanoseconds)

Time(%)      Total Time  Operations         Average         Minimum         Maximum  \
Name                                                                            
-------  --------------  ----------  --------------  --------------  --------------  \
--------------------------------------------------------------------------------
   70.7          279581         215          1300.4             831            6240  [CUDA memcpy \
HtoD]                                                              
"""


def test_nsys_2020_tables_and_names_cut_without_a_mark(tmp_path):
    c = readers.read(_write(tmp_path, "nsys2020.log", NSYS_2020))
    names = {k.name: k for k in c.kernels}
    cut = next(n for n in names if n.startswith("void phi::BNForwardInference"))
    assert cut.endswith("BatchNormPa…") and classify(cut).tensor_core == "unknown"
    tf32 = ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align1>"
            "(cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align1::Params)")
    assert names[tf32].launches == 3 and classify(tf32).tensor_core == "yes"
    assert [(m.direction, m.count) for m in c.memops] == [("HtoD", 215)]


@pytest.mark.parametrize("name, verdict", [
    # the hidden part of a cut 'xmma' name may hold '_ffma_' (CUDA cores): not trusted
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8…", "unknown"),
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coop…", "unknown"),
    # negative evidence in the visible part holds whatever follows
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_align…", "no"),
    ("volta_sgemm_128x64_nn...", "no"),
])
def test_cut_names_are_not_classified_as_if_whole(name, verdict):
    assert classify(name).tensor_core == verdict


# ncu's default console output with --metrics, from YKTian-x2b/AI4Materials_EvaluationTool @86c5f2b
# CodeInstrumentation/TestCase_Demo_ncu/metrics_713_paddle.txt (first launch)
NCU_CONSOLE = """==PROF== Connected to process 2361568 (/home/yujixuan/anaconda3/envs/CGCNN_paddle/bin/python3.8)
==PROF== Profiling "Kernel" - 1: 0%....50%....100% - 8 passes
Tensor(shape=[4, 4], dtype=float32, place=Place(gpu:0), stop_gradient=True,
       [[ 0.04751094,  1.33061492,  0.62597644,  4.33939219]])
==PROF== Disconnected from process 2361568
[2361568] python3.8@127.0.0.1
  void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x10_nn_align4>(cutlass_80_tensorop_s1688gemm_64x64_16x10_n\
n_align4::Params), 2024-Jul-13 18:00:33, Context 1, Stream 13

    NVTX Start/End Ranges:
      <default domain>
        <0,linear_nvtx>
    Section: Command line profiler metrics
    ---------------------------------------------------------------------- --------------- \
------------------------------
    gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed                     %                           \
2.61
    gpu__time_duration.sum                                                         usecond                           \
5.15
    launch__block_size                                                                                                \
128
    sm__throughput.avg.pct_of_peak_sustained_elapsed                                     %                           \
0.38
    ---------------------------------------------------------------------- --------------- \
------------------------------

"""


def test_ncu_console_sections(tmp_path):
    path = _write(tmp_path, "ncu.txt", NCU_CONSOLE)
    assert readers.detect(path) == "console-text"
    c = readers.read(path)
    (k,) = c.kernels
    assert c.format == "ncu-console" and (k.pid, k.launches, k.total_ns) == (2361568, 1, 5150)
    assert k.name.startswith("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm")
    assert c.counters[0].tensor_core == "unknown"  # no tensor-pipe metric was asked for


def test_ncu_console_newer_layout_with_device_and_tensor_metric(tmp_path):
    """ncu 2023+: grid and block, device and compute capability on the launch line; a header row per section."""
    text = """[4242] python3.11@127.0.0.1
  nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT (132, 1, 1)x(384, 1, 1), Context 1, Stream 7, Device 0, CC 9.0
    Section: Command line profiler metrics
    ----------------------------------------------------------------------- ----------- ------------
    Metric Name                                                             Metric Unit Metric Value
    ----------------------------------------------------------------------- ----------- ------------
    gpu__time_duration.sum                                                           us        25.18
    sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum               cycle    1,234,567
    sm__inst_executed_pipe_tensor_op_gmma.sum                                      inst       32,768
    ----------------------------------------------------------------------- ----------- ------------
"""
    c = readers.read(_write(tmp_path, "ncu2025.txt", text))
    (k,) = c.kernels
    assert (k.device_id, k.total_ns) == (0, 25_180) and c.devices[0].compute_capability == "9.0"
    assert c.counters[0].tensor_core == "yes" and c.counters[0].value == 32_768
    cycles_only = readers.read(_write(tmp_path, "ncu2025c.txt", text.replace(
        "    sm__inst_executed_pipe_tensor_op_gmma.sum                                      inst       32,768\n", "")))
    assert cycles_only.counters[0].tensor_core == "unknown"  # cycles alone also count HFMA2.MMA


def test_console_text_without_kernel_rows_is_one_line(tmp_path, capsys):
    path = _write(tmp_path, "copies.log", NSYS_STATS.split("[6/8]")[0] + "[7/8]" + NSYS_STATS.split("[7/8]")[1])
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no kernel row" in err


def test_unrelated_text_is_still_refused(tmp_path):
    with pytest.raises(BadInput, match="not a profiler capture"):
        readers.detect(_write(tmp_path, "notes.txt", "Epoch 1/10\nloss: 0.3\n"))


def _kernels(capture) -> list[tuple]:
    return sorted((k.name, k.launches, k.total_ns, k.pid) for k in capture.kernels)


@pytest.mark.parametrize("name", sorted(p.name for p in CONSOLE.glob("*.log")))
def test_a_gzipped_log_reads_as_the_log(tmp_path, name):
    """People compress logs to keep or share them: a .log.gz is the same capture (it read as 'no kernel row')."""
    import gzip

    plain = CONSOLE / name
    packed = tmp_path / (name + ".gz")
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert readers.detect(packed) == readers.detect(plain)
    assert _kernels(readers.read(packed)) == _kernels(readers.read(plain)) != []


def test_a_summary_past_the_first_64_kib_of_a_gzipped_log_is_found(tmp_path):
    """nvprof prints its summary when the program ends, after the program's own output: detection looks at the
    last 64 KiB too, which a gzipped log only gives by streaming through it."""
    import gzip

    plain = CONSOLE / "xplacer_nvprof_summary_bfs.log"
    chatter = "".join(f"epoch {i}: loss {1 / (i + 1):.6f} accuracy 0.{i % 10}\n" for i in range(8000))  # ~300 KB
    long_log = tmp_path / "train.log"
    long_log.write_text(chatter + plain.read_text())
    packed = tmp_path / "train.log.gz"
    packed.write_bytes(gzip.compress(long_log.read_bytes()))
    assert len(chatter) > 4 * 65536
    assert readers.detect(packed) == readers.detect(long_log) == "console-text"
    assert _kernels(readers.read(packed)) == _kernels(readers.read(long_log)) == _kernels(readers.read(plain))
