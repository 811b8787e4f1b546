"""The typed run manifest: the manifests of the real H200 runs (written by earlier versions) read back field for
field, what `run` writes now reads back key for key, and what is not a manifest `run` wrote is refused in one
line — by every command that reads one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.launch.verify import earlier_run
from nvprof_wrap.model import Gpu
from nvprof_wrap.run.manifest import Manifest, Process, read_manifest
from nvprof_wrap.system.limits import MAX_MANIFEST_BYTES
from tests._paths import FAKE_BIN, H100_RUNS, ROOT, RUNS

WRITTEN = sorted(RUNS.glob("*/manifest.json")) + sorted(H100_RUNS.glob("*/manifest.json")) + \
    sorted((ROOT / "nvprof_wrap" / "samples").glob("*/manifest.json"))


@pytest.mark.parametrize("path", WRITTEN, ids=lambda p: p.parent.name)
def test_the_manifests_of_real_runs_read_back_field_for_field(path):
    data = json.loads(path.read_text())
    m = read_manifest(path)
    out = m.to_json()
    assert {k: out[k] for k in data} == data  # every key of the file, the same value
    assert Manifest.from_json(out) == m and m.recorded
    assert m.status == "ended"  # written before "status" existed: at the end only
    assert len(m.processes) == len(data["processes"]) and all(isinstance(p, Process) for p in m.processes)


def test_real_manifests_say_what_ran_where():
    ddp = read_manifest(RUNS / "ddp_cupti" / "manifest.json")
    assert ddp.backend == "cupti" and ddp.command[:3] == ("torchrun", "--nproc-per-node", "2")
    assert ddp.gpus == tuple(Gpu(i, "NVIDIA H200", 9, 0, driver="580.159.04") for i in (0, 1))
    assert ddp.ranks == {5269: 0, 5270: 1} and ddp.exit_code == 0 and ddp.host.cpus == 32
    killed = read_manifest(RUNS / "crash_kill_cupti" / "manifest.json")
    assert killed.exit_code == 137 and killed.captures == ("cupti-vm-5133.sqlite.partial",)


def test_what_run_writes_reads_back_key_for_key(tmp_path):
    env = {"NVPROF_WRAP_HISTORY": "off", "PATH": f"{FAKE_BIN}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "NO_COLOR": "1", "HOME": os.environ.get("HOME", "/root"), "FAKE_GPUS": "NVIDIA H200:9.0"}
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "nvprof_wrap", "run", "--backend", "nsys", "-o", str(out),
                           "--no-report", "--", sys.executable, "-c", "print('hi')"], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "manifest.json").read_text())
    m = read_manifest(out / "manifest.json")
    assert m.to_json() == data and list(m.to_json()) == list(data)  # the same keys in the same order
    assert m.status == "ended" and m.backend == "nsys" and m.exit_code == 0 and m.wrapper_pid
    assert {"nsys.nsys-rep", "nsys.sqlite"} <= set(m.captures)
    assert any(p.cmdline == (sys.executable, "-c", "print('hi')") for p in m.processes)  # the job, under nsys


def _manifest(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data))
    return path


GOOD = {"command": ["python", "x.py"], "backend": "nsys", "exit_code": 0, "wall_s": 1.5}


@pytest.mark.parametrize("data, why", [
    ([], "not a run manifest: it is not an object"),
    ({"backend": "nsys"}, "not a run manifest: no 'command'"),
    ({**GOOD, "command": "python x.py"}, "not a run manifest: command is not a list"),
    ({**GOOD, "exit_code": True}, "not a run manifest: exit_code is not an integer"),
    ({**GOOD, "processes": [{"pid": 1}, {"pid": "2"}]}, "not a run manifest: processes[1].pid is not an integer"),
    ({**GOOD, "gpus": [{"index": 0, "name": "H200"}]}, "not a run manifest: no 'gpus[0].compute_capability'"),
])
def test_what_is_not_a_run_manifest_is_refused_naming_what(tmp_path, data, why):
    path = _manifest(tmp_path, data)
    with pytest.raises(BadInput) as refused:
        read_manifest(path)
    assert str(refused.value) == f"{path}: {why}"


def test_a_manifest_past_the_bounds_is_refused_before_it_costs(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(MAX_MANIFEST_BYTES + 1)  # sparse: nothing to read, refused by its size
    with pytest.raises(BadInput, match="more than 64 MiB"):
        read_manifest(big)
    deep = _manifest(tmp_path, None)
    deep.write_text("[" * 200_000)
    with pytest.raises(BadInput, match=r"unreadable run manifest \(RecursionError\)"):
        read_manifest(deep)
    with pytest.raises(BadInput, match="unreadable run manifest"):
        read_manifest(tmp_path / "none.json")


def test_unknown_keys_and_nulls_are_read_as_absent(tmp_path):
    m = read_manifest(_manifest(tmp_path, {**GOOD, "future_field": {"x": 1}, "signal": None, "host": None}))
    assert m.signal is None and m.host.name is None and m.status == "ended"
    assert read_manifest(_manifest(tmp_path, {**GOOD, "exit_code": None})).status == "running"


def test_experiment_no_run_refuses_a_broken_manifest_in_one_line(tmp_path, capsys):
    (tmp_path / "fp32").mkdir()
    (tmp_path / "fp32" / "manifest.json").write_text('{"command": ["x"], "backend": "nsys", "wall_s": "long"}')
    code = main(["experiment", "reuters_mlp", "--precisions", "fp32", "--no-run", "-o", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "fp32/manifest.json: not a run manifest: wall_s is not a number" in err
    (tmp_path / "fp32" / "manifest.json").write_text('{"command": ["x"], "backend": "nsys", "status": "running"}')
    assert main(["experiment", "reuters_mlp", "--precisions", "fp32", "--no-run", "-o", str(tmp_path)]) == 2
    assert "this run never ended" in capsys.readouterr().err


def test_verify_finds_the_newest_run_of_the_command_and_skips_what_is_not_a_run(tmp_path):
    for name, started, cmd in (("old", 100.0, ["python", "x.py"]), ("new", 200.0, ["python", "x.py"]),
                               ("other", 300.0, ["python", "y.py"])):
        (tmp_path / name).mkdir()
        _manifest(tmp_path / name, {"command": cmd, "backend": "nsys", "started": started})
        (tmp_path / name / "run.sqlite").write_bytes(b"")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "manifest.json").write_text("[" * 200_000)
    (tmp_path / "junk" / "run.sqlite").write_bytes(b"")
    assert earlier_run(["python", "x.py"], tmp_path) == tmp_path / "new"
    assert earlier_run(["python", "z.py"], tmp_path) is None
