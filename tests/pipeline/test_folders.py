"""Folders and failures said plainly (issue 22): a folder of several runs is refused, a folder without a capture is
refused, captures of different jobs are said to be summed, and the job's exit or signal from the run's manifest
comes first in every format. Every folder is built in tmp_path from real captures (tests/data/h200_runs)."""
from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.pipeline import analyze
from nvprof_wrap.renderers import render
from nvprof_wrap.report import jobs
from tests._paths import H200, ROOT, RUNS

SAMPLES = ROOT / "nvprof_wrap" / "samples"


def copy_run(name: str, into, as_name: str | None = None, **manifest):
    """A copy of a real run folder (without any run store made beside it), its manifest edited with ``manifest``."""
    dst = into / (as_name or name)
    shutil.copytree(RUNS / name, dst, ignore=shutil.ignore_patterns("run.sqlite*"))
    if manifest:
        m = json.loads((dst / "manifest.json").read_text())
        (dst / "manifest.json").write_text(json.dumps({**m, **manifest}))
    return dst


def report(*paths, sum_jobs=False):
    return analyze(*paths, health=False, sum_jobs=sum_jobs)


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ 1. a folder of several runs
def test_a_folder_of_several_runs_is_refused_naming_them(tmp_path, capsys):
    for name in ("gemm_cupti", "crash_exc_cupti", "gpt_bf16_nsys", "children_nsys"):
        copy_run(name, tmp_path / "runs")
    with pytest.raises(BadInput) as e:
        report(tmp_path / "runs")
    assert "holds 4 runs (children_nsys, crash_exc_cupti, gemm_cupti, …)" in e.value.why
    code, out, err = cli(capsys, "report", str(tmp_path / "runs"))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"nvprof-wrap: error: {tmp_path / 'runs'}: holds 4 runs (children_nsys, ")
    assert err.rstrip().endswith("name one of them (a folder inside), or set them side by side with "
                                 "`nvprof-wrap compare RUN RUN`")


def test_a_run_beside_a_folder_holding_another_run_is_two_runs(tmp_path):
    a = copy_run("gemm_cupti", tmp_path)
    copy_run("crash_exc_cupti", tmp_path / "more")
    with pytest.raises(BadInput, match="2 run folders given"):
        report(a, tmp_path / "more")
    r = report(tmp_path / "more")  # a folder holding one run: that run, its job's end included
    assert r.job.status == "failed" and r.headline == ("Job failed (exit 1) — report of what ran",)


def test_the_rank_folders_of_one_run_are_one_run(tmp_path):
    """RUN/rank0, RUN/rank1 (`run -o RUN` under torchrun) are one job's: reported together, as before."""
    for rank in (0, 1):
        copy_run("crash_exc_cupti", tmp_path / "RUN", f"rank{rank}", rank=rank, exit_code=0)
    r = report(tmp_path / "RUN")
    assert r.verdict.tensor_cores == "yes" and len(r.sources) == 1  # the same capture twice: read once
    assert r.job.status == "succeeded" and r.headline == ()


# ------------------------------------------------------------------ 3. a folder without a capture
def test_a_folder_without_a_capture_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match="no profiler capture in .*empty"):
        report(tmp_path / "empty")
    code, out, err = cli(capsys, "report", str(tmp_path / "empty"))
    assert code == 2 and out == ""
    assert err.strip() == f"nvprof-wrap: error: no profiler capture in {tmp_path / 'empty'} (the folder is empty)"
    notes = tmp_path / "notes"
    notes.mkdir()
    shutil.copy(RUNS / "gpt_bf16_nsys" / "stdout.log", notes / "train.txt")
    code, _, err = cli(capsys, "report", str(notes))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"no profiler capture in {notes} (1 file skipped; train.txt: " in err


def test_a_folder_without_a_capture_is_refused_beside_one_with(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match="no profiler capture in"):
        report(RUNS / "gemm_cupti" / "cupti-vm-4574.sqlite", tmp_path / "empty")


# ------------------------------------------------------------------ 2. captures of different jobs
def test_captures_of_different_commands_are_refused_unless_summed(tmp_path, capsys):
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(RUNS / "gemm_cupti" / "cupti-vm-4574.sqlite", mixed)
    shutil.copy(RUNS / "crash_exc_cupti" / "cupti-vm-5344.sqlite", mixed)
    with pytest.raises(BadInput, match="2 captures of 2 different jobs, not summed into one verdict"):
        report(mixed)
    code, out, err = cli(capsys, "report", str(mixed))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "--sum sums them (python3 with workloads/matmul_probe.py; workloads/crash_midway.py --how exception)" in err
    r = report(mixed, sum_jobs=True)
    assert [g.command for g in r.different_jobs] == ["python3 workloads/matmul_probe.py",
                                                     "python3 workloads/crash_midway.py --how exception"]
    assert r.headline[0].startswith("2 captures of 2 different jobs summed (--sum): python3 workloads/matmul_probe.py "
                                    "(1 capture, started 2026-11-29 19:59 UTC); ")
    assert r.headline[0].endswith("every figure below is of them all; `nvprof-wrap compare A B` puts two side by side")
    code, out, _ = cli(capsys, "report", str(mixed), "--sum", "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["headline"] == list(r.headline) and d["job"] is None
    assert [len(g["captures"]) for g in d["different_jobs"]] == [1, 1]
    assert d["different_jobs"][0]["started_ns"] == 1795982369004379400
    code, out, _ = cli(capsys, "report", str(mixed), "--sum")
    assert out.splitlines()[0].startswith("2 captures of 2 different jobs summed")


def _bare(tmp_path, *runs: str):
    """The nsys captures of real run folders, bare: no manifest beside them (gunzipped where the run keeps them so)."""
    out = []
    for name in runs:
        src = next((RUNS / name).glob("nsys.sqlite*"))
        dst = tmp_path / f"{name}.sqlite"
        dst.write_bytes(gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes())
        out.append(dst)
    return out


def test_an_fp32_and_a_bf16_run_given_bare_are_told_apart_by_nsys_command_lines(tmp_path, capsys):
    """Two nsys captures of two trainings 14 s apart (fp32, then bf16 with fused AdamW), no manifest: before, one
    summed verdict with no word (2 of 64 kernels on tensor cores). nsys records the command it launched
    (META_DATA_CAPTURE): two jobs, not summed unless asked; `compare` named with the files given."""
    fp32, bf16 = _bare(tmp_path, "gpt_fp32_nsys", "gpt_bf16_nsys")
    code, out, err = cli(capsys, "report", str(fp32), str(bf16))
    assert code == 2 and out == ""
    two = f"{fp32} {bf16}" if len(str(fp32)) < 50 else "A B"  # the paths given, where the line has room
    assert err.strip() == (f"nvprof-wrap: error: 2 captures of 2 different jobs, not summed into one verdict: "
                           f"`nvprof-wrap compare {two}` puts two side by side, --sum sums them (python3 "
                           "workloads/gpt_train.py with --precision fp32 --steps 30; --precision bf16 --steps 30 "
                           "--fused-adam)")
    code, _, err = cli(capsys, "kernels", str(fp32), str(bf16))
    assert code == 2 and "2 different jobs" in err
    r = report(fp32, bf16, sum_jobs=True)
    assert [g.command for g in r.different_jobs] == ["python3 workloads/gpt_train.py --precision fp32 --steps 30",
                                                     ("python3 workloads/gpt_train.py --precision bf16 --steps 30 "
                                                      "--fused-adam")]
    assert r.headline[0].startswith("2 captures of 2 different jobs summed (--sum): ")
    one = report(fp32)  # one capture: nothing to tell apart
    assert one.different_jobs == () and one.headline == ()


def test_ranks_launched_with_their_own_rank_argument_are_one_job(tmp_path):
    """One nsys session per rank (srun / mpirun launch nsys once per rank), each with the launcher's --local_rank=N:
    one job. Two real sessions of one command line made into rank 0 and rank 1."""
    a, b = _bare(tmp_path, "gpt_fp32_nsys", "gpt_bf16_nsys")
    for rank, path in enumerate((a, b)):
        with sqlite3.connect(path) as conn:
            conn.execute("DELETE FROM META_DATA_CAPTURE WHERE name LIKE 'PROCESS_0:ARGUMENT_%'")
            conn.executemany("INSERT INTO META_DATA_CAPTURE (name, value) VALUES (?, ?)",
                             [("PROCESS_0:ARGUMENT_0", "train.py"), ("PROCESS_0:ARGUMENT_1", f"--local_rank={rank}")])
    assert report(a, b).different_jobs == ()
    with sqlite3.connect(b) as conn:
        conn.execute("UPDATE META_DATA_CAPTURE SET value = 'eval.py' WHERE name = 'PROCESS_0:ARGUMENT_0'")
    with pytest.raises(BadInput, match="different jobs"):
        report(a, b)


def test_job_command_sets_a_ranks_own_argument_aside():
    assert jobs.job_command("python -u train.py --local_rank=3 --lr 0.1") == "python -u train.py --lr 0.1"
    assert jobs.job_command("python train.py --local-rank 1") == "python train.py"
    assert jobs.job_command("python train.py --node_rank=1 --rank 7") == "python train.py"
    assert jobs.job_command("python train.py --ranking 1 --rank=a") == "python train.py --ranking 1 --rank=a"


def test_one_pid_with_two_command_lines_is_two_jobs():
    """pid 1 in two containers (or the same pid on two machines) with different commands: not one process."""
    row = {"path": "", "file": "", "started_ns": None, "ended_ns": None, "ppid": None, "pid": 1}
    caps = [{**row, "id": 1, "path": "a.sqlite", "command": "python3 a.py"},
            {**row, "id": 2, "path": "b.sqlite", "command": "python3 b.py"},
            {**row, "id": 3, "path": "c.sqlite", "command": "python3 a.py"}]
    groups = jobs.different_jobs(caps, [], [])
    assert [(g.command, g.paths) for g in groups] == [("python3 a.py", ("a.sqlite", "c.sqlite")),
                                                      ("python3 b.py", ("b.sqlite",))]
    assert jobs.not_summed(groups, [Path("a.sqlite"), Path("b.sqlite")]) == (
        "3 captures of 2 different jobs, not summed into one verdict: `nvprof-wrap compare a.sqlite b.sqlite` puts "
        "two side by side, --sum sums them (python3 with a.py; b.py)")
    same = [{**c, "command": f"python3 a.py --local_rank={c['id']}"} for c in caps]
    assert jobs.different_jobs(same, [], []) == ()


def test_sessions_hours_apart_or_of_other_commands_are_different_jobs(tmp_path):
    """Two nsys sessions four hours apart, and two ten seconds apart that launched different scripts."""
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(RUNS / "gemm_nsys" / "nsys.sqlite", mixed / "gemm.sqlite")
    shutil.copy(H200 / "nsys_torch_ops.sqlite", mixed / "ops.sqlite")
    r = report(mixed, sum_jobs=True)
    assert [(g.command, g.label.rsplit("/", 1)[1]) for g in r.different_jobs] == [
        ("python3 workloads/matmul_probe.py", "gemm.sqlite"), ("python3 ops.py", "ops.sqlite")]
    assert "2 captures of 2 different jobs summed (--sum): " in r.headline[0]
    side = tmp_path / "side"
    side.mkdir()
    for n in ("nsys_torch_ops.sqlite", "nsys_two_child_processes.sqlite"):
        shutil.copy(H200 / n, side)
    with pytest.raises(BadInput, match=r"different jobs.*\(python3 with ops.py; spawn.py\)"):
        report(side)


@pytest.mark.parametrize("make", [
    pytest.param(lambda d: [shutil.copy(f, d) for f in (RUNS / "children_cupti").glob("*.sqlite")],
                 id="one-capture-per-child-process"),
    pytest.param(lambda d: [shutil.copy(f, d) for f in (RUNS / "ddp_cupti").glob("*.sqlite")], id="torchrun-ranks"),
    pytest.param(lambda d: shutil.copy(SAMPLES / "two_children" / "nsys_two_child_processes.sqlite", d),
                 id="two-children-sample"),
    pytest.param(lambda d: shutil.copy(RUNS / "ddp_nsys" / "nsys.sqlite", d), id="torchrun-ranks-in-one-session"),
    pytest.param(lambda d: [shutil.copy(RUNS / "ddp_nsys" / "nsys.sqlite", d / f"rank{i}.sqlite") for i in (0, 1)],
                 id="one-session-twice"),
])
def test_one_jobs_captures_are_summed_silently(tmp_path, make):
    (tmp_path / "caps").mkdir()
    make(tmp_path / "caps")
    r = report(tmp_path / "caps")
    assert r.verdict.tensor_cores == "yes" and r.different_jobs == () and r.headline == ()


def test_a_run_and_a_capture_of_another_job_beside_it(tmp_path):
    run = copy_run("crash_exc_cupti", tmp_path / "folder")
    shutil.copy(RUNS / "gemm_cupti" / "cupti-vm-4574.sqlite", tmp_path / "folder")
    with pytest.raises(BadInput, match="2 captures of 2 different jobs"):
        report(tmp_path / "folder")
    r = report(tmp_path / "folder", sum_jobs=True)
    assert [g.label for g in r.different_jobs] == [str(run), str(tmp_path / "folder" / "cupti-vm-4574.sqlite")]
    assert r.headline[0] == "Job failed (exit 1) — report of what ran"
    assert r.headline[1].startswith("2 captures of 2 different jobs summed (--sum): python3 workloads/crash_midway.py")
    # a capture of one of the run's own child processes beside it is the run's job
    run = copy_run("children_cupti", tmp_path / "other")
    (run / "cupti-vm-5010.sqlite").rename(tmp_path / "other" / "cupti-vm-5010.sqlite")
    r = report(tmp_path / "other")
    assert len(r.sources) == 7 and r.different_jobs == () and r.headline == ()


def test_a_run_folder_with_a_capture_per_process_is_one_job(tmp_path):
    r = report(copy_run("children_cupti", tmp_path))
    assert len(r.sources) == 7 and r.different_jobs == () and r.headline == ()


# ------------------------------------------------------------------ 4. how the job ended
def test_a_job_that_failed_says_so_first_in_every_format(tmp_path, capsys):
    run = copy_run("crash_exc_cupti", tmp_path)
    r = report(run)
    line = "Job failed (exit 1) — report of what ran"  # no steps marked, no metrics.jsonl: no "after N steps"
    assert r.headline == (line,) and r.verdict.message.startswith("Tensor cores used: yes — 1 of 3 kernels, 81.4%")
    code, out, _ = cli(capsys, "report", str(run))
    assert code == 0 and out.splitlines()[:2] == [line, r.verdict.message]
    d = json.loads(render("json", r))
    assert d["headline"] == [line] and d["message"] == r.verdict.message
    assert d["job"] == {"status": "failed", "exit_code": 1, "signal": None, "signal_number": None,
                        "forwarded_signal": None, "steps": None, "steps_source": None, "rank": None, "message": line}
    assert render("markdown", r).startswith(
        "**Job failed \\(exit 1\\) — report of what ran**\n\n**Tensor cores used: yes")
    page = render("html", r)
    assert page.index(f'<p class="headline">{line}</p>') < page.index('<p class="message">Tensor cores used')


def test_a_job_killed_before_its_kernels_were_recorded_is_not_asked_whether_it_ran(tmp_path, capsys):
    run = copy_run("crash_kill_cupti", tmp_path)
    code, out, _ = cli(capsys, "report", str(run), "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["verdict"] == "no-kernels"
    assert d["headline"] == ["Job killed by signal 9 (SIGKILL)"]
    assert d["job"]["status"] == "killed" and d["job"]["exit_code"] == 137 and d["job"]["signal"] == "SIGKILL"
    assert "Did the job run on the GPU" not in d["message"]
    assert d["message"].startswith("No GPU kernels were recorded before the job ended: its capture is partial")
    _, out, _ = cli(capsys, "report", str(run))
    assert out.splitlines()[0] == "Job killed by signal 9 (SIGKILL)"


def test_the_steps_before_the_end_come_from_the_capture_or_the_metrics(tmp_path):
    gpt = report(copy_run("gpt_bf16_nsys", tmp_path, exit_code=137, signal="SIGINT"))
    assert gpt.headline == ("Job killed by signal 9 (SIGKILL) after 30 steps — report of what ran",)
    assert (gpt.job.steps, gpt.job.steps_source, gpt.job.forwarded) == (30, "capture", "SIGINT")
    keras = report(copy_run("keras_fp16_cupti_ops", tmp_path, exit_code=1))  # Keras batches are not 'step N'
    assert keras.headline == ("Job failed (exit 1) after 48 steps — report of what ran",)
    assert keras.job.steps_source == "metrics.jsonl"
    ctrl_c = report(copy_run("gemm_cupti", tmp_path, exit_code=130, signal="SIGINT"))
    assert ctrl_c.headline[0] == ("Job killed by signal 2 (SIGINT, which nvprof-wrap received and passed on) — "
                                  "report of what ran")


def test_a_run_whose_end_was_not_recorded_says_so(tmp_path):
    r = report(copy_run("gemm_cupti", tmp_path, status="running", exit_code=None, ended=None))
    assert r.job.status == "unrecorded"
    assert r.headline[0].startswith("Job's end was not recorded: its run's manifest still says \"running\"")


def test_a_job_that_succeeded_adds_no_line(tmp_path):
    r = report(copy_run("gemm_cupti", tmp_path))
    assert r.job.status == "succeeded" and r.job.exit_code == 0 and r.headline == ()
    assert render("table", r).startswith("Tensor cores used: yes")
