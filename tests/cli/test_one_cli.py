"""One CLI and a clean run history (issue 22): -o FILE everywhere with the format from its extension, an internal
error that is not a missed gate, gate results in the JSON; the history keyed by scope, migrated, never the user's;
bundled samples never written to."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from nvprof_wrap.cli import COMMANDS, main, parser
from nvprof_wrap.store import history
from tests._paths import ROOT, RUNS
from tests.readers.test_bounds import unprivileged

PACKAGE = ROOT / "nvprof_wrap"
SAMPLE = PACKAGE / "samples" / "keras_reuters_fp16"  # a run folder: it has a manifest


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if "__pycache__" not in p.parts}


# -o FILE ------------------------------------------------------------------------------------------------------------

def test_demo_writes_html_to_the_file_its_help_names(capsys, tmp_path):
    """`demo --format html -o demo.html`, from demo's own --help, exited 2 (no -o)."""
    out = tmp_path / "demo.html"
    code, stdout, err = run(capsys, "demo", "--format", "html", "-o", out)
    assert code == 0 and stdout == "" and str(out) in err
    assert out.read_text().startswith("<!DOCTYPE html>") and "keras" in out.read_text().lower()
    code, _, _ = run(capsys, "demo", "--sample", "two_children", "-o", tmp_path / "demo.json")
    assert code == 0 and "two_children" in json.loads((tmp_path / "demo.json").read_text())["reports"]


@pytest.mark.parametrize(("name", "fmt", "check"), [
    ("x.html", None, lambda t: t.startswith("<!DOCTYPE html>")),
    ("x.HTM", None, lambda t: t.startswith("<!DOCTYPE html>")),
    ("x.json", None, lambda t: json.loads(t)["schema"] == "nvprof-wrap.report/1"),
    ("x.csv", None, lambda t: t.startswith("name,launches,total_ns")),
    ("x.md", None, lambda t: "|" in t and not t.startswith("<")),
    ("x.txt", None, lambda t: t.startswith("Tensor cores used")),
    ("x.out", None, lambda t: t.startswith("Tensor cores used")),  # any other extension: the table text
    ("x.html", "json", lambda t: json.loads(t)["schema"] == "nvprof-wrap.report/1"),  # --format wins
])
def test_report_takes_the_format_from_the_files_extension(capsys, tmp_path, name, fmt, check):
    """`report X -o x.html` wrote the terminal text into x.html."""
    out = tmp_path / name
    code, stdout, _ = run(capsys, "report", SAMPLE, "-o", out, *(("--format", fmt) if fmt else ()))
    text = out.read_text()
    assert code == 0 and stdout == "" and check(text), text[:200]
    assert "\x1b[" not in text  # never colour in a file


def test_every_command_that_prints_writes_to_a_file(capsys, tmp_path):
    """-o FILE on the commands that only read; --save FILE where -o already names a folder (run, experiment,
    doctor, verify). Each one's --help says so."""
    sub = next(a for a in parser()._actions if a.dest == "command").choices
    for name in COMMANDS:
        opts = {o for a in sub[name]._actions for o in a.option_strings}
        assert ("--save" in opts) if name in ("run", "experiment", "doctor", "verify") else ("-o" in opts), name
    assert run(capsys, "kernels", SAMPLE, "-o", tmp_path / "k.csv")[0] == 0
    assert (tmp_path / "k.csv").read_text().startswith("name,launches")
    assert run(capsys, "classify", "_Z17volta_h884gemm_64x64_ldg8_nn", "-o", tmp_path / "c.json")[0] == 0
    assert json.loads((tmp_path / "c.json").read_text())["kernels"][0]["tensor_core"] == "yes"
    assert run(capsys, "runs", "-o", tmp_path / "r.json")[0] == 0
    assert isinstance(json.loads((tmp_path / "r.json").read_text())["runs"], list)
    assert run(capsys, "doctor", "--no-probe", "--save", tmp_path / "d.json")[0] == 0
    assert "gpus" in json.loads((tmp_path / "d.json").read_text())
    assert run(capsys, "compare", RUNS / "gpt_fp32_nsys", RUNS / "gpt_bf16_nsys", "-o", tmp_path / "c.md")[0] == 0
    assert "|" in (tmp_path / "c.md").read_text()


def test_run_save_is_refused_before_the_job_runs(capsys, tmp_path):
    code, _, err = run(capsys, "run", "--save", tmp_path / "no" / "r.html", "--", sys.executable, "-c",
                       f"open({str(tmp_path / 'ran')!r}, 'w')")
    assert code == 2 and "does not exist" in err and not (tmp_path / "ran").exists()


# exit codes ---------------------------------------------------------------------------------------------------------

def _bug(*_a, **_k):
    raise ZeroDivisionError("a bug of ours")


def test_an_internal_error_is_one_line_and_exit_70_not_the_gates_1(capsys, monkeypatch):
    monkeypatch.setattr(history, "runs", _bug)
    monkeypatch.delenv("NVPROF_WRAP_DEBUG", raising=False)
    code, _, err = run(capsys, "runs")
    assert code == 70 and err.count("\n") == 1 and "Traceback" not in err
    assert "internal error" in err and "ZeroDivisionError: a bug of ours" in err and "report it" in err
    monkeypatch.setenv("NVPROF_WRAP_DEBUG", "1")
    code, _, err = run(capsys, "runs")
    assert code == 70 and "Traceback" in err and "ZeroDivisionError" in err


def _name_bug(*_a, **_k):
    return undefined_name  # noqa: F821 - the bug under test


def test_a_readers_own_bug_is_an_internal_error_not_bad_input(capsys, monkeypatch, tmp_path):
    """A reader's NameError on a good capture (a bug this project's own changes made twice: a name not imported) read
    "unreadable kineto-json capture (NameError: …)", exit 2 — bad input, the user's file blamed. A failure no content
    can cause is our bug: exit 70, saying where to report it; the file's own damage stays exit 2."""
    from nvprof_wrap.readers import kineto_json
    from tests._paths import RUNS
    monkeypatch.setattr(kineto_json, "_devices", _name_bug)
    monkeypatch.delenv("NVPROF_WRAP_DEBUG", raising=False)
    trace = RUNS / "kineto_matmul_bf16_shapes" / "matmul.pt.trace.json.gz"
    code, _, err = run(capsys, "report", trace, "--store", tmp_path / "s.sqlite")
    assert code == 70 and "internal error" in err and "NameError" in err and "unreadable" not in err, err


def test_an_internal_error_through_the_console_script_is_70(tmp_path):
    """What the installed `nvprof-wrap` runs: sys.exit(main())."""
    script = ("import sys; from nvprof_wrap.store import history\n"
              "history.runs = lambda *a: 1 / 0\n"
              "from nvprof_wrap.cli import main\nsys.exit(main())\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("NVPROF_WRAP_DEBUG", None)
    p = subprocess.run([sys.executable, "-c", script, "runs"], capture_output=True, text=True, env=env, timeout=120,
                       check=False)
    assert p.returncode == 70 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize(("job_code", "expected"), [(0, 70), (3, 3)])
def test_a_bug_after_the_job_ran_never_hides_the_jobs_code(capsys, monkeypatch, tmp_path, job_code, expected):
    from nvprof_wrap.cli import run_cmd

    manifest = SimpleNamespace(backend="nsys", exit_code=job_code, wall_s=0.1, recorded=True, captures=["x"],
                               problems=(), hardware=None, gpus=(), storage_failed=False)
    monkeypatch.setattr(run_cmd, "execute", lambda spec: (tmp_path, manifest))
    monkeypatch.setattr(run_cmd, "report_run", _bug)
    code, _, err = run(capsys, "run", "--", "true")
    assert code == expected and "internal error" in err and "Traceback" not in err


def test_every_exit_code_table_names_70_for_a_bug_and_1_only_for_a_gate():
    from nvprof_wrap.cli import _exit

    for table in (_exit.READ, _exit.GATED, _exit.RUN, _exit.EXPERIMENT, _exit.GENERAL, _exit.VERIFY):
        assert "70" in table and "internal error" in table
        assert "1    an internal" not in table
    doc = (ROOT / "docs" / "exit-codes.md").read_text()
    assert "| 70 |" in doc and "a bug" in doc and "nothing else is 1 | 1 |" in doc
    assert "(exit-codes.md)" in (ROOT / "docs" / "reliability.md").read_text()


# gates in the JSON --------------------------------------------------------------------------------------------------

def test_gate_results_are_in_the_json(capsys):
    code, out, err = run(capsys, "report", SAMPLE, "--format", "json", "--min-tensor-core-share", "0.05",
                         "--expect-precision", "fp16,bf16")
    gates = json.loads(out)["gates"]
    assert code == 1 and err.count("gate failed") == 1
    share, prec = gates
    assert share["gate"] == "--min-tensor-core-share" and share["threshold"] == 0.05 and share["passed"] is True
    assert 0.05 < share["measured"] < 1 and share["message"] is None
    assert prec == {"gate": "--expect-precision", "threshold": ["fp16", "bf16"], "measured": ["fp16"],
                    "passed": False, "missing": ["bf16"], "message": prec["message"]} and "bf16" in prec["message"]
    code, out, _ = run(capsys, "report", SAMPLE, "--format", "json")
    assert code == 0 and "gates" not in json.loads(out)  # no gate given: exactly Report.to_dict()
    code, out, _ = run(capsys, "compare", RUNS / "gpt_fp32_nsys", RUNS / "gpt_bf16_nsys", "--format", "json",
                       "--expect-precision", "bf16")
    assert code == 0 and [g["passed"] for g in json.loads(out)["gates"]] == [True]


# the run history ----------------------------------------------------------------------------------------------------

@pytest.fixture
def hist(tmp_path, monkeypatch) -> Path:
    p = tmp_path / "history.sqlite"
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", str(p))
    return p


def _run_folder(tmp_path: Path, name: str = "gpt_bf16_nsys", under: str = "runs") -> Path:
    folder = tmp_path / under / name
    shutil.copytree(RUNS / name, folder)
    return folder


def test_a_steps_report_has_its_own_history_row(capsys, tmp_path, hist):
    """`report RUN --steps` overwrote the whole run's row."""
    folder = _run_folder(tmp_path)
    assert run(capsys, "report", folder)[0] == 0
    assert run(capsys, "report", folder, "--steps", "10:20")[0] == 0
    assert run(capsys, "report", folder, "--window", "0:1")[0] == 0
    assert run(capsys, "report", folder)[0] == 0  # the whole run again: its row updated, not a fourth
    rows = history.runs()
    assert sorted(r["scope"] for r in rows) == ["steps 10:20", "whole", "window 0:1"]
    assert {r["folder"] for r in rows} == {str(folder.resolve())}
    code, out, _ = run(capsys, "runs", "--format", "json")
    got = json.loads(out)["runs"]
    assert code == 0 and got[0]["scope"] == "whole" and got[0]["tensor_core_precisions"] == ["bf16", "fp16/bf16"]
    # the stored forms, as Datasette shows them: ISO 8601 times, precisions a JSON array
    conn = sqlite3.connect(hist)
    recorded, started, precisions = conn.execute(
        "SELECT recorded_at, started, precisions FROM runs WHERE scope = 'whole'").fetchone()
    conn.close()
    assert recorded.endswith("+00:00") and recorded[:4].isdigit() and recorded[10] == "T"
    assert started[10] == "T" and json.loads(precisions) == ["bf16", "fp16/bf16"]
    code, out, _ = run(capsys, "runs", "--width", "200")
    assert code == 0 and "[steps 10:20]" in out and "bf16 + fp16/bf16" in out


def _old_history(path: Path, rows: list[dict]) -> None:
    """A history as versions before scopes wrote it: one row per folder, Unix seconds, "a + b" precisions."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE [runs] ([folder] TEXT PRIMARY KEY, [name] TEXT, [recorded_at] FLOAT, [started] TEXT, "
                 "[command] TEXT, [backend] TEXT, [exit_code] INTEGER, [verdict] TEXT, [tensor_core_share] FLOAT, "
                 "[precisions] TEXT, [kernel_time_ns] INTEGER, [launches] INTEGER, [health] TEXT)")
    for r in rows:
        conn.execute(f"INSERT INTO runs ({', '.join(r)}) VALUES ({', '.join('?' * len(r))})", list(r.values()))
    conn.commit()
    conn.close()


def test_an_older_history_is_migrated_and_still_read(capsys, tmp_path, hist):
    folder = _run_folder(tmp_path)
    _old_history(hist, [{"folder": str(folder.resolve()), "name": folder.name, "recorded_at": 1764000000.5,
                         "started": "1763999990.25", "command": "python train.py", "backend": "nsys", "exit_code": 0,
                         "verdict": "yes", "tensor_core_share": 0.33, "precisions": "bf16 + fp16/bf16",
                         "kernel_time_ns": 1, "launches": 2, "health": "healthy"},
                        {"folder": "/gone/old", "name": "old", "recorded_at": 1700000000.0, "started": "",
                         "command": "", "backend": "", "exit_code": None, "verdict": "no", "tensor_core_share": 0.0,
                         "precisions": "", "kernel_time_ns": 0, "launches": 0, "health": ""}])
    code, out, _ = run(capsys, "runs", "--format", "json")
    rows = json.loads(out)["runs"]
    assert code == 0 and [r["name"] for r in rows] == [folder.name, "old"]
    assert rows[0]["recorded_at"] == "2025-11-24T16:00:00.500+00:00" and rows[0]["scope"] == "whole"
    assert rows[0]["started"] == "2025-11-24T15:59:50.250+00:00"
    assert rows[0]["tensor_core_precisions"] == ["bf16", "fp16/bf16"]
    assert rows[1]["tensor_core_precisions"] == [] and rows[1]["started"] == ""
    assert run(capsys, "report", folder, "--steps", "10:20")[0] == 0  # a scoped row beside the migrated one
    assert sorted(r["scope"] for r in history.runs()) == ["steps 10:20", "whole", "whole"]
    conn = sqlite3.connect(hist)
    assert {r[0] for r in conn.execute("SELECT typeof(recorded_at) FROM runs")} == {"text"}
    conn.close()


def test_a_history_row_of_any_age_reads(hist):
    """Reading never depends on the migration: the older forms are understood as such."""
    assert history.precisions_list("fp16 + bf16") == ["fp16", "bf16"]
    assert history.precisions_list('["fp8"]') == ["fp8"] and history.precisions_list(None) == []
    assert history.iso(0) == "1970-01-01T00:00:00.000+00:00" and history.iso("2025-01-01T00:00:00+00:00") == \
        "2025-01-01T00:00:00+00:00" and history.iso(None) == ""


def test_compare_refuses_a_run_name_that_several_folders_carry(capsys, tmp_path, hist, monkeypatch):
    a, b = _run_folder(tmp_path, under="a"), _run_folder(tmp_path, under="b")
    other = _run_folder(tmp_path, "gpt_fp32_nsys")
    for f in (a, b, other):
        assert run(capsys, "report", f)[0] == 0
    assert run(capsys, "report", a, "--steps", "10:20")[0] == 0  # two rows of one folder: not ambiguous by itself
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "compare", "gpt_fp32_nsys", "gpt_bf16_nsys")
    assert code == 2 and err.count("\n") == 1 and str(a.resolve()) in err and str(b.resolve()) in err
    code, _, err = run(capsys, "compare", "gpt_fp32_nsys", str(a), "--format", "json")  # the folder: taken
    assert code == 0, err


# bundled samples and read-only folders ------------------------------------------------------------------------------

def test_reporting_a_bundled_sample_writes_nothing_into_the_package(capsys, hist):
    """`report` of a bundled sample wrote run.sqlite into site-packages."""
    for leftover in SAMPLE.glob("run.sqlite*"):  # from a version before the fix
        leftover.unlink()
    before = files_under(PACKAGE)
    assert run(capsys, "report", SAMPLE)[0] == 0
    assert run(capsys, "kernels", SAMPLE, "--format", "json")[0] == 0
    assert run(capsys, "demo", "--format", "json")[0] == 0
    assert files_under(PACKAGE) == before
    assert history.runs() == []  # a sample is not one of the user's runs


def test_a_read_only_run_folder_is_reported_from_memory(tmp_path):
    folder = tmp_path / "ro" / "sample"
    shutil.copytree(SAMPLE, folder)
    folder.chmod(0o555)
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
        p = subprocess.run(unprivileged([sys.executable, "-m", "nvprof_wrap", "report", str(folder), "--format",
                                         "json"]), capture_output=True, text=True, env=env, timeout=120, check=False)
        assert p.returncode == 0 and json.loads(p.stdout)["tensor_cores_used"] is True, p.stderr
        assert sorted(x.name for x in folder.iterdir()) == sorted(x.name for x in SAMPLE.iterdir()
                                                                 if not x.name.startswith("run.sqlite"))
    finally:
        folder.chmod(0o755)


# the tests' own history ---------------------------------------------------------------------------------------------

def test_the_session_never_points_at_the_users_history():
    """tests/conftest.py: a throwaway history and XDG_DATA_HOME for the whole session, and a check at its end."""
    import tempfile

    p = history.path()
    assert p is not None and str(p).startswith(tempfile.gettempdir())
    assert str(history.default_path()).startswith(tempfile.gettempdir())
    assert Path.home() / ".local" / "share" not in history.default_path().parents


def test_a_subprocess_without_the_variable_records_under_its_own_home(tmp_path):
    """The default place is $XDG_DATA_HOME, else ~/.local/share: with HOME a temporary folder nothing else is
    touched."""
    folder = _run_folder(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "HOME": str(home)}
    p = subprocess.run([sys.executable, "-m", "nvprof_wrap", "report", str(folder)], capture_output=True, text=True,
                       env=env, timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    assert (home / ".local" / "share" / "nvprof-wrap" / "history.sqlite").is_file()
