"""Never a silent nothing (issue 13.5), on real captures with their kernel records taken out: every timeline format
and summary CSV that still holds kernel launch calls or copies is refused in one line saying what it found (exit 2);
a run folder whose other processes ran kernels still reports, copies included; a capture that holds nothing at all
still says "No GPU kernels were recorded"."""
from __future__ import annotations

import gzip
import json
import shutil
import sqlite3

import pytest

from nvprof_wrap import readers
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from tests._paths import PUBLIC, ROOT, RUNS

NSYS = ROOT / "nvprof_wrap" / "samples" / "torch_ops" / "nsys_torch_ops.sqlite"  # bundled H200 capture


def _sqlite_without(src, dst, *deletes: str):
    shutil.copy(src, dst)
    with sqlite3.connect(dst) as conn:
        for table in deletes:
            conn.execute(f"DELETE FROM {table}")
    conn.close()
    return dst


def _refused(capsys, path) -> str:
    assert main(["report", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err
    return err


def test_nsys_copies_without_kernels(tmp_path, capsys):
    """The H200 capture's 5 copies and 16 sets stay; kernels and launch calls are gone."""
    path = _sqlite_without(NSYS, tmp_path / "copies.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL",
                           "CUPTI_ACTIVITY_KIND_RUNTIME")
    assert "21 copy/set events on the GPU, but no kernel records" in _refused(capsys, path)


def test_nsys_launches_and_copies_without_kernels(tmp_path, capsys):
    path = _sqlite_without(NSYS, tmp_path / "lost.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL")
    err = _refused(capsys, path)
    assert "2,998 CUDA API calls, 122 of them kernel launches and 21 copy/set events on the GPU, but no kernel " \
           "records" in err and "nsys profile --trace=cuda" in err


@pytest.mark.parametrize(("gone", "gpu"), [((), "NVIDIA H200 recorded 5 copies and 16 memsets but no kernel"),
                                           (("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"),
                                            "NVIDIA H200 recorded nothing")])
def test_nsys_api_calls_without_a_launch_say_cuda_was_traced(tmp_path, capsys, gone, gpu):
    """The H200 capture with its kernel rows and launch calls deleted (its kernel table kept, empty): 2,876 other CUDA
    API calls show CUDA was traced, so the refusal says so and that no kernel ran — it never asks whether the
    profiler traced CUDA ("No GPU kernels were recorded. Did the job run on the GPU?" or "kernels were not traced,
    or none ran" before)."""
    path = _sqlite_without(NSYS, tmp_path / "no_launch.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL", *gone)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId IN "
                     "(SELECT id FROM StringIds WHERE value LIKE '%Launch%')")
    conn.close()
    err = _refused(capsys, path)
    assert "no kernel ran while the job was profiled: CUDA was traced (2,876 CUDA API calls, none a kernel launch: " \
           "cuGetProcAddress ×2,251, cudaStreamIsCapturing ×86, cuKernelGetName ×82, …) and " + gpu in err
    assert "traced?" not in err and "not traced" not in err and "Did the job" not in err


def test_cupti_launch_calls_without_kernels(tmp_path, capsys):
    """The Keras fp16 run's tracer capture: 4,696 runtime and 456 driver launch records (cbids 211, 430, 307, 652)."""
    plain = tmp_path / "cupti.sqlite"
    plain.write_bytes(gzip.decompress((RUNS / "keras_fp16_cupti_ops" / "cupti-vm-559.sqlite.gz").read_bytes()))
    path = _sqlite_without(plain, tmp_path / "lost.sqlite", "kernel")
    assert "5,152 CUDA API calls, 5,152 of them kernel launches and 762 copy/set events" in _refused(capsys, path)


def test_cupti_copies_without_kernels(tmp_path, capsys):
    path = _sqlite_without(RUNS / "gemm_cupti" / "cupti-vm-4574.sqlite", tmp_path / "sets.sqlite", "kernel")
    assert "66 copy/set events on the GPU, but no kernel records" in _refused(capsys, path)


def test_a_run_folder_where_one_process_only_copied_still_reports(tmp_path, capsys):
    """Per-process captures: a process that copies without launching is part of the run, not an error."""
    run = tmp_path / "ddp"
    shutil.copytree(RUNS / "ddp_cupti", run)
    with sqlite3.connect(run / "cupti-vm-5269.sqlite") as conn:
        conn.execute("DELETE FROM kernel")
    conn.close()
    assert main(["report", str(run), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["launches"] == 1037 and d["skipped"] == []
    copies = sum(r["count"] for r in d["time_split"] if r["kind"] == "memcpy")
    assert copies == 2 * 347  # both processes' copies


def test_kineto_launch_calls_without_kernels(tmp_path, capsys):
    """This project's torch.profiler trace of a GPT bf16 step on the H200, kernel events removed."""
    trace = json.loads(gzip.decompress((RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz").read_bytes()))
    kernels = sum(e.get("cat") == "kernel" for e in trace["traceEvents"])
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") != "kernel"]
    path = tmp_path / "lost.pt.trace.json"
    path.write_text(json.dumps(trace))
    err = _refused(capsys, path)
    launches = int(err.split(" of them kernel launches")[0].rsplit(", ", 1)[1].replace(",", ""))
    assert launches == kernels and "but no kernel records" in err


def test_nvprof_launch_calls_without_kernels(tmp_path, capsys):
    """nvprof on a TITAN V (public): its 38 kernels were launched by 38 cudaLaunchKernel_v7000 (cbid 211) calls."""
    src = PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp"
    path = _sqlite_without(src, tmp_path / "lost.nvvp", "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL")
    assert "2,683 CUDA API calls, 38 of them kernel launches and 30 copy/set events" in _refused(capsys, path)


def test_nvprof_summary_csv_with_copies_only(tmp_path, capsys):
    src = PUBLIC / "nanzifan__nvprof-result__print-gpu-summary.csv"
    path = tmp_path / "copies.csv"
    path.write_text("".join(line for line in src.read_text().splitlines(keepends=True) if "cuda_" not in line))
    assert "2,006 copy/set events on the GPU, but no kernel records" in _refused(capsys, path)


def test_an_nsys_stats_table_of_copies_alone(capsys):
    path = RUNS / "gpt_fp32_stats" / "cuda_gpu_mem_time_sum.csv"
    assert "nsys stats table of copies" in _refused(capsys, path)
    assert main(["report", str(path.parent), "--format", "json"]) == 0  # with the kernel table: read
    assert json.loads(capsys.readouterr().out)["launches"] > 0


def test_nothing_at_all_still_says_no_kernels(tmp_path, capsys):
    path = _sqlite_without(NSYS, tmp_path / "nothing.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL",
                           "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
    assert main(["report", str(path)]) == 0
    assert capsys.readouterr().out.startswith("No GPU kernels were recorded")


def test_a_window_is_left_to_say_what_it_holds(tmp_path):
    """--window / --steps: the reader does not refuse (readers.read and ingest say what a window holds)."""
    path = _sqlite_without(NSYS, tmp_path / "lost.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL")
    with pytest.raises(BadInput, match="122 of them kernel launches"):
        readers.read(path)
    assert readers.read(path, window=(0, 1000)).kernels == ()
