"""The commands, in-process through main([...]), and a few real subprocess runs."""
from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys

import pytest

from nvprof_wrap.cli import main
from tests._paths import DATA, H200, PUBLIC, ROOT


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_report_json_contract(capsys):
    code, out, _ = run(capsys, "report", str(H200 / "nsys_torch_ops.sqlite"), "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["schema"] == "nvprof-wrap.report/1"
    assert d["tensor_cores_used"] is True and 0.3 < d["tensor_core_time_fraction"] < 0.33
    assert d["devices"][0]["label"] == "NVIDIA H200 (sm_90)" and d["processes"][0]["pid"] == 5353
    assert {"HtoD"} == set(d["memcpy"])
    k = next(k for k in d["kernels"] if k["name"] == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT")
    assert (k["tensor_core"], k["precision"], k["launches"]) == ("yes", "bf16", 2)
    assert sum(k["launches"] for k in d["kernels"]) == d["launches"] == 122


def test_report_table_verdict_first(capsys):
    code, out, _ = run(capsys, "report", str(PUBLIC / "GindaChen__nsys-ai__h100_2gpu_1s.sqlite"), "--width", "100")
    assert code == 0
    assert out.splitlines()[0].startswith("Tensor cores used: no — none of the 41 kernels")
    assert "memcpy HtoD" in out and "Per process" in out


def test_counters_win_over_names_and_are_shown(capsys):
    code, _, err = run(capsys, "report", str(H200), "--format", "json")  # three jobs' captures (ops.py, spawn.py, ncu)
    assert code == 2 and "3 captures of 3 different jobs" in err
    _code, out, _ = run(capsys, "report", str(H200), "--format", "json", "--sum")
    d = json.loads(out)
    ev = {k["name"]: k["evidence"] for k in d["kernels"]}
    assert ev["nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"] == "counters"
    assert d["disagreements"] == []
    assert {s["path"].rsplit("/", 1)[1] for s in d["skipped"]} == {"cupti_python_records.json", "nsys_torch_ops.log",
                                                                   "torch_ops_kernels.json"}


def test_captures_of_two_gpus_are_two_jobs_and_summed_name_each_device_as_one_capture_does(capsys):
    """An nvprof capture of a V100 (sm_70) and an H200's ncu export (sm_90), both device 0, were summed as one job's,
    device 0 a 'Tesla V100-SXM2-16GB' of sm_90 — a GPU that does not exist — with the ncu kernels' verdicts under
    it. Two captures that state one device id as two GPUs are of two machines: refused unless --sum, naming each
    one's GPU; summed, the device keeps one capture's name and compute capability together."""
    net, ncu = PUBLIC / "josiahdavis__profiling-lm__net.sql", H200 / "ncu_tensor_metrics.csv"
    code, _, err = run(capsys, "report", str(net), str(ncu), "--format", "json")
    assert code == 2 and "2 captures of 2 different jobs" in err, err
    assert "(on Tesla V100-SXM2-16GB, sm_70)" in err and "ncu_tensor_metrics.csv (on sm_90)" in err, err
    code, out, _ = run(capsys, "report", str(net), str(ncu), "--format", "json", "--sum")
    assert code == 0
    (gpu,) = json.loads(out)["gpus"]
    assert (gpu["name"], gpu["compute_capability"]) == ("Tesla V100-SXM2-16GB", 7.0)


def test_kernels_filters_and_sort(capsys):
    code, out, _ = run(capsys, "kernels", str(H200 / "nsys_torch_ops.sqlite"), "--tc", "yes", "--format", "json",
                       "--sort", "name")
    rows = json.loads(out)["kernels"]
    assert code == 0 and len(rows) == 12 and all(r["tensor_core"] == "yes" for r in rows)
    assert [r["name"] for r in rows] == sorted(r["name"] for r in rows)
    code, out, _ = run(capsys, "kernels", str(H200 / "nsys_torch_ops.sqlite"), "--grep", "^nvjet", "--format", "csv")
    assert out.splitlines()[0].startswith("name,launches,total_ns") and len(out.splitlines()) == 7


def test_classify_names_file_and_mangled(capsys, tmp_path):
    f = tmp_path / "names.txt"
    f.write_text("volta_h884gemm_64x64_ldg8_nn\n\n_ZN5cudnn4gemm20computeOffsetsKernelENS0_20ComputeOffsetsParamsE\n")
    _code, out, _ = run(capsys, "classify", "--names-file", str(f), "--format", "json")
    d = json.loads(out)["kernels"]
    assert [x["tensor_core"] for x in d] == ["yes", "no"]
    assert d[1]["name"] == "cudnn::gemm::computeOffsetsKernel(cudnn::gemm::ComputeOffsetsParams)"


def test_markdown_escapes_hostile_names(capsys, tmp_path):
    from nvprof_wrap.renderers import Classifications, Options, markdown

    out = markdown.render(Classifications((__import__("nvprof_wrap.classify", fromlist=["classify"]).classify(
        "<script>alert(1)</script>|`x`"),)), Options())
    assert "<script>" not in out and "&lt;script&gt;" in out and "\\|" in out


def test_csv_neutralises_formulas():
    from nvprof_wrap.classify import classify
    from nvprof_wrap.renderers import Classifications, Options, csv

    out = csv.render(Classifications((classify("=HYPERLINK(\"http://x\")"),)), Options())
    assert "'=HYPERLINK" in out


def _without_kernels(tmp_path, *tables):
    db = tmp_path / "empty.sqlite"
    src = sqlite3.connect(H200 / "nsys_two_child_processes.sqlite")
    dst = sqlite3.connect(db)
    src.backup(dst)
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", *tables):
        dst.execute(f"DELETE FROM {table}")
    dst.commit()
    dst.close()
    return db


def test_a_job_that_launched_nothing_is_not_an_error(capsys, tmp_path):
    code, out, _ = run(capsys, "report", str(_without_kernels(tmp_path, "CUPTI_ACTIVITY_KIND_RUNTIME")))
    assert code == 0 and out.startswith("No GPU kernels were recorded")


def test_launch_calls_without_kernel_records_say_so(capsys, tmp_path):
    """The real two-process H200 capture with its kernel records gone: its 22 launch calls remain (20 cuLaunchKernelEx
    by cuBLAS, 2 cudaLaunchKernel)."""
    code, out, err = run(capsys, "report", str(_without_kernels(tmp_path)))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "2,056 CUDA API calls, 22 of them kernel launches, but no kernel records" in err


@pytest.mark.parametrize("make, why", [
    (lambda p: p.write_text("hello, world\n"), "not a profiler capture"),
    (lambda p: p.write_bytes(b""), "empty file"),
    (lambda p: p.write_bytes((H200 / "nsys_two_child_processes.sqlite").read_bytes()[:5000]), "SQLite"),
    (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200), "SQLite"),
    (lambda p: p.write_text('{"traceEvents": [{"cat": "kernel", "name": "x"'), "Kineto"),
    (lambda p: p.write_text('{"a": 1}'), "traceEvents"),
])
def test_bad_input_is_one_line_exit_2(capsys, tmp_path, make, why):
    p = tmp_path / "capture.sqlite"
    make(p)
    code, out, err = run(capsys, "report", str(p))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and str(p) in err and why in err and "Traceback" not in err


def test_export_without_kernel_table(capsys, tmp_path):
    db = tmp_path / "nokernels.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE StringIds(id INTEGER, value TEXT)")
    conn.execute("CREATE TABLE TARGET_INFO_SESSION_START_TIME(utcEpochNs INTEGER)")
    conn.commit()
    conn.close()
    code, _, err = run(capsys, "report", str(db))
    assert code == 2 and "CUPTI_ACTIVITY_KIND_KERNEL" in err


def test_folder_with_one_bad_file_reports_the_good_ones(capsys, tmp_path):
    (tmp_path / "good.sqlite").write_bytes((H200 / "nsys_two_child_processes.sqlite").read_bytes())
    (tmp_path / "bad.nvvp").write_bytes(b"SQLite format 3\x00garbage")
    code, out, _ = run(capsys, "report", str(tmp_path), "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["tensor_cores_used"] is True
    assert [s["path"].rsplit("/", 1)[1] for s in d["skipped"]] == ["bad.nvvp"]


def test_unreadable_path(capsys, tmp_path):
    code, _, err = run(capsys, "report", str(tmp_path / "missing.sqlite"))
    assert code == 2 and "no such file" in err


def test_demo_subprocess_and_module_entry():
    proc = subprocess.run([sys.executable, "-m", "nvprof_wrap", "demo", "--width", "110"], capture_output=True,
                          check=False, text=True, timeout=120,
                          env={"NVPROF_WRAP_HISTORY": "off", "NO_COLOR": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("[1/3] The seed's Keras Reuters MLP in pure fp16")
    assert "Tensor cores used: yes — 12 of 53 kernels, 11.8% of GPU kernel time, fp16" in out
    assert "Tensor cores used: yes — 12 of 36 kernels" in out and "Tensor cores used: yes — 1 of 2 kernels" in out
    assert "keras:dense (Dense)" in out and "aten::mm" in out and "\x1b[" not in out


def test_console_report_matches_the_golden_text_at_width_100(capsys):
    """The terminal report of a bundled sample, byte for byte (COLUMNS=100, no colour). Regenerate deliberately:
    COLUMNS=100 NO_COLOR=1 nvprof-wrap report nvprof_wrap/samples/torch_ops --limit 8 > tests/data/golden/…"""

    code, out, _ = run(capsys, "report", str(ROOT / "nvprof_wrap" / "samples" / "torch_ops"), "--limit", "8",
                       "--width", "100")
    golden = (DATA / "golden" / "torch_ops_report_w100.txt").read_text()
    assert code == 0
    assert out.replace(str(ROOT) + "/", "") == golden.replace(str(ROOT) + "/", "")


def test_an_ncu_export_none_of_whose_kernels_ran_in_the_timeline_says_so(capsys):
    """An H200's ncu export beside another H200 job's nsys capture (NVIDIA Fuser's): none of its 24 kernels ran
    there, so its counters decided nothing — and nothing said so. A note on the export says it; beside its own job's
    capture (tests' H200 folder: 13 names spelled apart by the two tools, each one kernel) no note."""
    fuser, ncu = PUBLIC / "NVIDIA__Fuser__report1.sqlite", H200 / "ncu_tensor_metrics.csv"
    code, out, _ = run(capsys, "report", str(fuser), str(ncu), "--format", "json")
    assert code == 0
    notes = {s["path"]: s["notes"] for s in json.loads(out)["sources"]}
    assert notes[str(ncu)] == [("none of its 24 kernels ran in the timeline captures read with it: their counters "
                               "decide nothing here (a capture of another job or run?)")]
    code, out, _ = run(capsys, "report", str(H200), "--format", "json", "--sum")
    assert code == 0
    assert not any("decide nothing" in n for s in json.loads(out)["sources"] for n in s["notes"])
    # beside another H200 job that ran 2 of its kernels (two child processes' fills): the other 22 said
    code, out, _ = run(capsys, "report", str(H200 / "nsys_two_child_processes.sqlite"), str(ncu), "--format", "json",
                       "--sum")
    notes = {s["path"]: s["notes"] for s in json.loads(out)["sources"]}
    assert code == 0 and notes[str(ncu)] == [
        ("22 of its 24 kernels ran in no timeline capture read with it: their counters decide nothing here (kernels "
         "of another run, or of the part of it the timeline left out?)")]


def test_counters_attach_to_kernels_the_two_tools_spell_apart(capsys, tmp_path):
    """The bundled H200 sample: ncu measured 24 kernels of the job whose nsys capture lies beside it, but writes 13 of
    their names as Nsight Systems does not ('void at::vectorized_elementwise_kernel<8, at::CUDAFunctor_add<c10::Half>,
    std::array<char *, 3>>…' for nsys' 'void at::native::vectorized_elementwise_kernel<(int)8, at::native::
    CUDAFunctor_add<c10::Half>, std::array<char *, (unsigned long)3>>…'): their counters decided nothing and the
    kernels fell back on their names. Each of the 24 is measured by its counters now — the framework kernels' HFMA2
    counted out, each a "no" — and none disagrees with what its name says."""
    sample = ROOT / "nvprof_wrap" / "samples" / "torch_ops"
    code, out, _ = run(capsys, "report", str(sample), "--format", "json", "--store", str(tmp_path / "s.sqlite"))
    assert code == 0
    d = json.loads(out)
    lines = (sample / "ncu_tensor_metrics.csv").read_text().splitlines()
    ncu = [row["Kernel Name"] for row in csv.DictReader(line for line in lines if line.startswith('"'))]
    measured = {k["name"]: k for k in d["kernels"] if k["evidence"] == "counters"}
    assert len(set(ncu)) == len(measured) == 24 and len(set(ncu) - set(measured)) == 13
    spelled = measured["void at::native::vectorized_elementwise_kernel<(int)8, at::native::CUDAFunctor_add<c10::Half>, "
                       "std::array<char *, (unsigned long)3>>(int, T2, T3)"]
    assert (spelled["tensor_core"], spelled["counter_verdict"]) == ("no", "no")
    assert all(k["tensor_core"] == k["name_verdict"] for k in measured.values() if k["name_verdict"] != "unknown")
    assert not any(n for s in d["sources"] for n in s["notes"] if "decide nothing" in n)


@pytest.mark.parametrize("argv, said", [
    (["report", "x.sqlite", "--steps", "-1:3"], "nvprof-wrap report: error: argument --steps: expected one argument"),
    (["report", "--format", "xml", "x.sqlite"], "argument --format: invalid choice: 'xml'"),
    (["bogus"], "nvprof-wrap: error: argument COMMAND: invalid choice: 'bogus'"),
])
def test_a_usage_error_is_one_line(capsys, argv, said):
    """argparse printed its whole usage block (12 lines for `report --steps -1:3`) before the line saying what was
    wrong; every bad input gets one line, exit 2 — --help prints the usage."""
    with pytest.raises(SystemExit) as ended:
        main(argv)
    err = capsys.readouterr().err
    assert ended.value.code == 2 and err.count("\n") == 1 and said in err and "--help" in err, err


@pytest.mark.parametrize("option, value", [("--window", "0:1e308"), ("--window", "0:nan"),
                                           ("--steps", "0:99999999999")])
def test_a_window_past_what_a_capture_holds_is_refused_as_the_options(capsys, option, value):
    """--window 0:1e308 came out as the capture's error ("unreadable nsys-sqlite capture (OverflowError …)"): the
    option is what is wrong."""
    code, out, err = run(capsys, "report", str(H200 / "nsys_torch_ops.sqlite"), option, value)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"nvprof-wrap: error: {option} '{value}': each end a number of") and "capture" not in err
