"""The backend table and the tool lookup under it: one table gives `--backend` its choices and `auto` its order;
each backend plans what the real profiler is run with (checked against the fake nsys / nvprof, which answer
--version like the real ones); tools are found in the documented order."""
from __future__ import annotations

import argparse
import importlib
import stat
from pathlib import Path

import pytest

from nvprof_wrap.cli import parser
from nvprof_wrap.errors import BadInput, ToolMissing
from nvprof_wrap.launch import BACKENDS, BY_NAME, CHOICES, base, choose, ncu
from nvprof_wrap.model import Gpu
from nvprof_wrap.system import tools
from tests._paths import FAKE_BIN

GPU_H200 = Gpu.listed(0, "NVIDIA H200", "9.0", "580.95.05")
GPU_T4 = Gpu.listed(0, "Tesla T4", "7.5", "535.0")


def _choices(command: str) -> tuple[str, ...]:
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    backend = next(a for a in sub.choices[command]._actions if a.dest == "backend")
    return tuple(backend.choices)


def test_one_table_gives_every_command_its_backend_choices():
    assert CHOICES == ("auto", "nsys", "cupti", "nvprof", "none")  # auto's order: nsys, then cupti, then nvprof
    assert [b.name for b in BACKENDS] == list(CHOICES[1:-1]) and list(BY_NAME) == list(CHOICES[1:])
    assert _choices("run") == CHOICES and _choices("experiment") == CHOICES


def test_backend_none_runs_the_job_as_it_is_and_auto_never_picks_it(tmp_path):
    none = BY_NAME["none"]
    assert not none.usable([], base.RunSpec(["python", "t.py"])) and none not in BACKENDS  # nor doctor's list
    plan = none.plan(base.RunSpec(["python", "t.py"], "none"), tmp_path, [])
    assert plan.argv == ["python", "t.py"] and plan.env == {} and none.collect(tmp_path, base.RunSpec([])) == []


@pytest.mark.parametrize("name", list(BY_NAME))
def test_each_backend_is_one_module_with_one_object(name):
    module = importlib.import_module(f"nvprof_wrap.launch.{name}")
    backend = module.BACKEND
    assert backend is BY_NAME[name] and backend.name == name
    for method in ("find", "version", "usable", "looked_for", "plan", "collect"):
        assert callable(getattr(backend, method)), method
    assert backend.silence is None or isinstance(backend.silence, str)


@pytest.fixture
def only_fakes(monkeypatch):
    """PATH with the fake nsys and nvprof only; no $NVPROF_WRAP_* pointing elsewhere."""
    monkeypatch.setenv("PATH", f"{FAKE_BIN}:/usr/bin:/bin")
    for var in (tools.NSYS_VAR, tools.NVPROF_VAR, tools.NCU_VAR):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("RANK", raising=False)


def test_auto_takes_the_first_usable_backend_of_the_table(only_fakes, monkeypatch):
    spec = base.RunSpec(["true"])
    assert choose(spec, [GPU_H200]).name == "nsys"  # nsys found: first, whatever the GPU
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv(tools.NVPROF_VAR, str(FAKE_BIN / "nvprof"))
    monkeypatch.setenv("NVPROF_WRAP_LIBCUPTI", "/nonexistent/libcupti.so.13")  # no library for the tracer either
    if BY_NAME["cupti"].find() is None:  # cupti-python missing here: nvprof, on a GPU below 8.0 only
        assert choose(spec, [GPU_T4]).name == "nvprof"
        with pytest.raises(ToolMissing) as refused:
            choose(spec, [GPU_H200])
        assert str(refused.value).startswith("no profiler backend is usable here. Looked for: nsys (")
        assert all(b.looked_for([GPU_H200]) in str(refused.value) for b in BACKENDS)
    assert choose(base.RunSpec(["true"], backend="nvprof"), [GPU_H200]).name == "nvprof"  # named: no auto rules


def test_an_unknown_backend_name_is_refused():
    with pytest.raises(BadInput, match="unknown backend 'nvprofx'"):
        choose(base.RunSpec(["true"], backend="nvprofx"), [])


def test_nsys_plans_the_documented_command_and_exports_after_the_job(only_fakes, tmp_path, monkeypatch):
    nsys = BY_NAME["nsys"]
    plan = nsys.plan(base.RunSpec(["python3", "train.py"]), tmp_path, [GPU_H200])
    assert plan.argv == [str(FAKE_BIN / "nsys"), "profile", "--trace=cuda,nvtx,cublas,cudnn", "--sample=none",
                         "--cpuctxsw=none", "--cuda-graph-trace=node", "--force-overwrite=true", "--output",
                         str(tmp_path / "nsys"), "python3", "train.py"]
    assert plan.version == "NVIDIA Nsight Systems version 2025.3.1.90-fake" and plan.tool == str(FAKE_BIN / "nsys")
    monkeypatch.setenv("RANK", "3")  # ranks sharing a folder get their own capture names
    assert str(tmp_path / "rank3-nsys") in nsys.plan(base.RunSpec(["x"]), tmp_path, [GPU_H200]).argv
    (tmp_path / "broken.nsys-rep").write_bytes(b"not a report")
    problems = nsys.collect(tmp_path, base.RunSpec(["x"]))
    assert len(problems) == 1 and problems[0].startswith("broken.nsys-rep: ") and "nsys export failed" in problems[0]


def test_nvprof_refuses_ampere_and_newer_before_anything_runs(only_fakes, tmp_path):
    nvprof = BY_NAME["nvprof"]
    with pytest.raises(ToolMissing, match=r"^nvprof cannot profile GPU 1 NVIDIA H200 \(compute capability 9.0\): "):
        nvprof.plan(base.RunSpec(["x"]), tmp_path, [GPU_T4, Gpu.listed(1, "NVIDIA H200", "9.0", "")])
    plan = nvprof.plan(base.RunSpec(["x"]), tmp_path, [GPU_T4])
    assert plan.argv[1:] == ["-o", str(tmp_path / "profile%p.nvvp"), "--profile-child-processes", "x"]
    assert plan.version == "Release version 10.2.89 (21)"
    assert not nvprof.usable([GPU_H200], base.RunSpec(["x"])) and nvprof.usable([GPU_T4], base.RunSpec(["x"]))


def test_cupti_refuses_without_libcupti_and_cupti_python_before_anything_runs(tmp_path, monkeypatch):
    cupti = BY_NAME["cupti"]
    if cupti.find() is not None:
        pytest.skip("cupti-python is installed here")
    monkeypatch.setenv("NVPROF_WRAP_LIBCUPTI", str(tmp_path / "no" / "libcupti.so.13"))  # no library either
    assert not cupti.usable([GPU_H200], base.RunSpec(["x"]))
    with pytest.raises(ToolMissing, match=r"--backend cupti needs libcupti or the cupti-python package, and .* has "
                                          r"neither \(no usable libcupti \(.*/no/libcupti.so.13: "):
        cupti.plan(base.RunSpec(["x"]), tmp_path, [GPU_H200])


def test_cupti_needs_no_cupti_python_where_the_tracer_finds_libcupti(tmp_path, monkeypatch):
    """The tracer drives libcupti through its own ctypes binding: a machine with the CUDA toolkit's CUPTI (or the
    nvidia-cuda-cupti wheel PyTorch installs) can trace without cupti-python."""
    from nvprof_wrap.tracer import ccupti

    cupti = BY_NAME["cupti"]
    if cupti.find() is not None:
        pytest.skip("cupti-python is installed here")
    try:
        ccupti.load()
    except ccupti.Unavailable:
        pytest.skip("no libcupti on this machine")
    monkeypatch.delenv("NVPROF_WRAP_LIBCUPTI", raising=False)
    assert cupti.usable([GPU_H200], base.RunSpec(["x"])) and not cupti.usable([], base.RunSpec(["x"]))
    plan = cupti.plan(base.RunSpec(["x"]), tmp_path, [GPU_H200])
    assert plan.env["NVPROF_WRAP_CUPTI_DIR"] == str(tmp_path.resolve())
    assert plan.version.startswith("tracer on libcupti (")


def _exe(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho tool 1.0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_tools_are_found_in_the_documented_order(tmp_path, monkeypatch):
    """--nsys PATH, then $NVPROF_WRAP_NSYS, then PATH; the same for nvprof and ncu."""
    given, by_var, on_path = (_exe(tmp_path / d / "nsys") for d in ("given", "var", "path"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'path'}:/usr/bin:/bin")
    monkeypatch.setenv(tools.NSYS_VAR, by_var)
    assert tools.find_nsys(given) == given
    assert tools.find_nsys() == by_var
    monkeypatch.delenv(tools.NSYS_VAR)
    assert tools.find_nsys() == on_path and tools.tool_version(on_path) == "tool 1.0"
    monkeypatch.setenv(tools.NCU_VAR, _exe(tmp_path / "ncu" / "ncu"))
    assert ncu.NCU.require() == str(tmp_path / "ncu" / "ncu") and ncu.NCU.version() == "tool 1.0"
    monkeypatch.setenv(tools.NCU_VAR, str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    if tools.find_ncu() is None:  # no Nsight Compute installed here
        with pytest.raises(ToolMissing, match=r"ncu \(Nsight Compute\) not found: looked at --ncu, \$NVPROF_WRAP_NCU"):
            ncu.NCU.require()


def test_a_raw_stream_nsys_left_is_kept_and_said_with_the_import_command(tmp_path):
    """nsys deletes its .qdstrm after a clean import; one left behind (a JAX job's on the H200: 'Errors occurred
    while processing the raw events') is a problem of the run, kept, with the command that imports it again."""
    raw = tmp_path / "nsys.qdstrm"
    raw.write_bytes(b"\x00QDSTRM" * 100)
    problems = BY_NAME["nsys"].collect(tmp_path, base.RunSpec(["python3", "train.py"], nsys=str(FAKE_BIN / "nsys")))
    assert len(problems) == 1 and problems[0].startswith("nsys.qdstrm: nsys did not finish")
    assert f"{FAKE_BIN / 'QdstrmImporter'} --input-file {raw}" in problems[0] and raw.exists()
