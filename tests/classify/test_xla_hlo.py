"""XLA's optimized HLO decides the kernels XLA generated (classify/xla_hlo.py, issue 43): real dumps of the H200
(tests/data/xla_dump: an fp32 MLP's jit_update, a bf16 Keras-on-JAX transformer's jit_train_step), the rules of
xla_hlo.toml, a hostile dump folder staying bounded, and a report of a run folder with an xla-dump/ sub-folder."""
from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.classify import xla_hlo
from nvprof_wrap.classify.engine import classify
from nvprof_wrap.classify.rank import decide
from nvprof_wrap.launch import xla as launch_xla
from nvprof_wrap.run.manifest import Manifest
from tests._paths import DATA, RUNS

DUMPS = DATA / "xla_dump"
MNIST, KJAX = DUMPS / "xla_mnist", DUMPS / "xla_kjax"
KERNEL = re.compile(r"^\d+:\s+kCustomKernel\s+\[[^\]]*\]\s+(\S+)", re.MULTILINE)


def launched(folder: Path) -> set[str]:
    """The kernel names the module's thunk sequence launches (what a capture of it shows)."""
    return set(KERNEL.findall(next(folder.glob("*.thunk_sequence.txt")).read_text()))


def scan(names: set[str], dirs: list[Path]) -> dict[str, xla_hlo.StaticVerdict]:
    return {v.name: v for v in xla_hlo.scan(names, dirs)}


def test_every_gemm_fusion_of_the_fp32_mlp_is_tf32_as_xla_allows():
    names = launched(MNIST)
    gemms = {n for n in names if n.startswith("gemm_fusion")}
    assert gemms == {"gemm_fusion_dot", *(f"gemm_fusion_dot_{i}" for i in range(1, 7)), "gemm_fusion_dot_general_12"}
    found = scan(names, [MNIST])
    assert found.keys() == names
    for n in gemms:
        v = found[n]
        assert (v.tensor_core, v.precision, v.source) == ("yes", "tf32", "xla-dump"), v
        assert "f32 × f32" in v.detail and "DEFAULT" in v.detail and "hardware counters" in v.detail
    assert "%gemm_fusion_dot.3 " not in found["gemm_fusion_dot_3"].detail  # the fusion, then its dot:
    assert found["gemm_fusion_dot_3"].detail.startswith("XLA fusion gemm_fusion_dot.3 (__triton_nested_gemm_fusion)")
    for n in names - gemms:  # loop, reduce and Triton elementwise fusions
        assert (found[n].tensor_core, found[n].precision) == ("no", ""), found[n]
        assert "no dot or convolution" in found[n].detail
    assert "(__triton)" in found["loop_reduce_fusion"].detail and "(kLoop)" not in found["loop_reduce_fusion"].detail


def test_every_gemm_fusion_of_the_bf16_transformer_is_bf16():
    names = launched(KJAX)
    gemms = {n for n in names if n.startswith("gemm_fusion")}
    assert gemms == {"gemm_fusion_dot_12", "gemm_fusion_dot_14", "gemm_fusion_dot_36", "gemm_fusion_dot_37",
                     "gemm_fusion_dot_118"}
    found = scan(names, [KJAX])
    for n in gemms:
        assert (found[n].tensor_core, found[n].precision) == ("yes", "bf16"), found[n]
        assert "bf16 × bf16" in found[n].detail
    # XLA launches one kernel for identical fusions: the thunk files say which instructions ran as it
    assert "15 more instruction(s)" in found["gemm_fusion_dot_37"].detail
    assert found["gemm_fusion_dot_37"].detail.startswith("XLA fusion gemm_fusion_dot.37 ")
    assert all(found[n].tensor_core == "no" for n in found.keys() - gemms)


def test_names_not_in_the_dumps_are_left_alone():
    others = {"gemm_fusion_dot_999", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "custom_call_10"}
    assert scan(others, [MNIST, KJAX]) == {}
    # a module's thunks say which kernels it launched: gemm_fusion_dot.18 exists but ran as gemm_fusion_dot_12
    assert scan({"gemm_fusion_dot_18"}, [KJAX]) == {}


def test_without_thunk_files_the_instruction_of_that_name_decides(tmp_path):
    shutil.copy(next(MNIST.glob("*after_optimizations.txt")), tmp_path)
    v = scan({"gemm_fusion_dot_4", "loop_select_fusion"}, [tmp_path])
    assert (v["gemm_fusion_dot_4"].tensor_core, v["gemm_fusion_dot_4"].precision) == ("yes", "tf32")
    assert v["loop_select_fusion"].tensor_core == "no"


def test_modules_that_disagree_leave_the_kernel_unknown(tmp_path):
    text = next(MNIST.glob("*after_optimizations.txt")).read_text()
    dims = "rhs_contracting_dims={1}"
    other = text.replace(f"{dims}\n", f"{dims}, operand_precision={{highest,highest}}\n")
    assert other != text
    (tmp_path / "module_0001.jit_update.sm_9.0a_gpu_after_optimizations.txt").write_text(other)
    v = scan({"gemm_fusion_dot_3", "loop_reduce_fusion"}, [MNIST, tmp_path])
    assert v["gemm_fusion_dot_3"].tensor_core == "unknown" and v["gemm_fusion_dot_3"].precision == ""
    assert "answer differently" in v["gemm_fusion_dot_3"].detail and "HIGHEST" in v["gemm_fusion_dot_3"].detail
    assert v["loop_reduce_fusion"].tensor_core == "no"  # the same answer everywhere stays decided


def hlo(dot: str, lhs: str = "f32", rhs: str = "f32") -> xla_hlo.Answer | None:
    dims = "lhs_contracting_dims={1}, rhs_contracting_dims={0}"
    text = f"""HloModule m, is_scheduled=true

%gemm_fusion_dot.1_computation (parameter_0: {lhs}[8,8], parameter_1: {rhs}[8,8]) -> f32[8,8] {{
  %parameter_0 = {lhs}[8,8]{{1,0}} parameter(0)
  %parameter_1 = {rhs}[8,8]{{1,0}} parameter(1)
  ROOT %dot.1 = f32[8,8]{{1,0}} dot(%parameter_0, %parameter_1), {dims}{dot}
}}

ENTRY %main (a: {lhs}[8,8], b: {rhs}[8,8]) -> f32[8,8] {{
  %a = {lhs}[8,8]{{1,0}} parameter(0)
  %b = {rhs}[8,8]{{1,0}} parameter(1)
  ROOT %gemm_fusion_dot.1 = f32[8,8]{{1,0}} fusion(%a, %b), kind=kCustom, calls=%gemm_fusion_dot.1_computation
}}
"""
    return xla_hlo.Module(text).answer("gemm_fusion_dot.1")


@pytest.mark.parametrize("dot, lhs, rhs, verdict, precision", [
    ("", "bf16", "bf16", "yes", "bf16"),
    ("", "f16", "f16", "yes", "fp16"),
    ("", "f8e4m3fn", "f8e5m2", "yes", "fp8"),
    ("", "s8", "s8", "yes", "int8"),
    ("", "f32", "f32", "yes", "tf32"),  # DEFAULT: XLA allows TF32 (needs_counters)
    (", operand_precision={high,high}", "f32", "f32", "unknown", ""),  # no rule says what HIGH runs
    (", operand_precision={highest,highest}", "f32", "f32", "no", "fp32"),
    (", algorithm=dot_f32_f32_f32", "f32", "f32", "no", "fp32"),
    (", algorithm=dot_bf16_bf16_f32_x3", "f32", "f32", "yes", "bf16"),
    (", algorithm=dot_bf16_bf16_f32_x6", "f32", "f32", "yes", "bf16"),
    (", algorithm=dot_tf32_tf32_f32", "f32", "f32", "yes", "tf32"),
    (", algorithm=dot_tf32_tf32_f32_x3", "f32", "f32", "yes", "fp32 (3xTF32)"),
    ("", "f64", "f64", "unknown", "fp64"),  # DMMA on sm_80/90 only: the HLO cannot say
    ("", "bf16", "f32", "unknown", ""),  # mixed operands: no rule
])
def test_rules(dot, lhs, rhs, verdict, precision):
    a = hlo(dot, lhs, rhs)
    assert a is not None and (a.tensor_core, a.precision) == (verdict, precision), a


def test_the_tf32_rule_is_marked_for_counters_and_each_rule_has_a_source():
    rules = {r.id: r for r in xla_hlo.rules()}
    assert rules["f32-default"].needs_counters and rules["f32-default"].tensor_core == "yes"
    assert not any(r.needs_counters for r in rules.values() if r.id != "f32-default")
    assert all(r.source and r.reason for r in rules.values())


def scan_within(names, dirs, seconds=20.0):
    """xla_hlo.scan in a thread: a FIFO it blocks on fails the test instead of hanging it."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(xla_hlo.scan(names, dirs)), daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        for fifo in (p for d in dirs for p in Path(d).rglob("*") if p.is_fifo()):
            os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))
        pytest.fail("the XLA dump scan blocked on a FIFO")
    return {v.name: v for v in out[0]}


def test_a_hostile_dump_folder_stays_bounded(tmp_path, monkeypatch):
    dump = tmp_path / "dump"
    shutil.copytree(MNIST, dump / "real")
    os.mkfifo(dump / "module_1.fifo.sm_9.0a_gpu_after_optimizations.txt")
    (dump / "module_2.zero.sm_9.0a_gpu_after_optimizations.txt").symlink_to("/dev/zero")
    (dump / "module_3.link.sm_9.0a_gpu_after_optimizations.txt").symlink_to(
        next(KJAX.glob("*after_optimizations.txt")))  # a link is not followed
    (dump / "loop").symlink_to(dump)  # a folder link is not walked
    with open(dump / "module_4.huge.sm_9.0a_gpu_after_optimizations.txt", "wb") as f:
        f.truncate(64 << 20)  # sparse: over the (lowered) bound, never read
    monkeypatch.setattr(xla_hlo, "MAX_HLO_BYTES", 1 << 20)
    found = scan_within({"gemm_fusion_dot_3", "gemm_fusion_dot_12"}, [dump])
    assert found.keys() == {"gemm_fusion_dot_3"}  # the real one, nothing through the link to kjax
    monkeypatch.setattr(xla_hlo, "MAX_HLO_DEPTH", 0)
    assert scan_within({"gemm_fusion_dot_3"}, [dump]) == {}  # real/ is one folder down


def test_compiled_code_precision_decides_with_its_verdict():
    c = classify("gemm_fusion_dot_3")
    assert c.tensor_core == "unknown"
    v = decide(c, 9.0, static=("yes", "XLA fusion …"), static_precision="bf16")
    assert (v.tensor_core, v.precision, v.evidence) == ("yes", "bf16", "compiled code")
    v = decide(c, 9.0, static=("unknown", "modules disagree"), static_precision="bf16")
    assert v.evidence == "name" and v.precision == c.precision  # an undecided answer does not lend its precision


# -- a run folder with an xla-dump/ sub-folder, end to end --------------------------------------------------------

RENAMED = {  # the gemm_nsys capture's kernels, renamed to kernels of the dumps
    "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT": "gemm_fusion_dot_3",
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT": "gemm_fusion_dot_general_12",
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8": "gemm_fusion_dot_37",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x256x32": "fusion_23",
}


def run_folder(tmp_path: Path, dumps: bool = True) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(RUNS / "gemm_nsys" / "manifest.json", run)
    db = run / "nsys.sqlite"
    shutil.copy(RUNS / "gemm_nsys" / "nsys.sqlite", db)
    con = sqlite3.connect(db)
    with con:
        for old, new in RENAMED.items():
            ids = [r[0] for r in con.execute("SELECT DISTINCT k.demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
                                             "StringIds s ON s.id = k.demangledName WHERE s.value LIKE ?", [old + "%"])]
            assert len(ids) == 1, old
            con.execute("UPDATE StringIds SET value = ? WHERE id = ?", [new, ids[0]])
            con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = demangledName, mangledName = demangledName "
                        "WHERE demangledName = ?", ids)
    con.close()
    if dumps:
        shutil.copytree(MNIST, run / "xla-dump" / "mnist")
        shutil.copytree(KJAX, run / "xla-dump" / "kjax")
    return run


def kernels(rep) -> dict[str, tuple[str, str, str]]:
    return {k.name: (k.tensor_core, k.precision, k.evidence) for k in rep.kernels}


def test_a_run_folder_with_xla_dumps_decides_xla_kernels(tmp_path):
    rep = analyze(run_folder(tmp_path), health=False)
    got = kernels(rep)
    assert got["gemm_fusion_dot_3"] == ("yes", "tf32", "compiled code")
    assert got["gemm_fusion_dot_general_12"] == ("yes", "tf32", "compiled code")
    assert got["gemm_fusion_dot_37"] == ("yes", "bf16", "compiled code")
    assert got["fusion_23"] == ("no", "", "compiled code")
    assert not any("xla-dump" in path for path, _ in rep.skipped)  # the dumps are never taken for captures
    row = next(k for k in rep.kernels if k.name == "gemm_fusion_dot_37")
    assert row.counter_detail and "bf16 × bf16" in row.counter_detail


def test_without_the_dumps_they_stay_unknown_and_report_xla_dump_finds_them(tmp_path, capsys):
    run = run_folder(tmp_path, dumps=False)
    assert kernels(analyze(run, health=False))["gemm_fusion_dot_3"][0] == "unknown"
    rep = analyze(run, health=False, xla_dump=[MNIST])
    assert kernels(rep)["gemm_fusion_dot_3"] == ("yes", "tf32", "compiled code")
    from nvprof_wrap.cli import main
    assert main(["report", str(run), "--format", "json", "--xla-dump", str(KJAX), "--store",
                 str(tmp_path / "s.sqlite")]) == 0
    out = json.loads(capsys.readouterr().out)
    by = {k["name"]: k for k in out["kernels"]}
    assert (by["gemm_fusion_dot_37"]["tensor_core"], by["gemm_fusion_dot_37"]["precision"]) == ("yes", "bf16")


def test_the_folder_the_jobs_own_xla_flags_named_is_read(tmp_path):
    run = run_folder(tmp_path, dumps=False)
    m = json.loads((run / "manifest.json").read_text())
    m["xla_dump"] = str(MNIST)
    (run / "manifest.json").write_text(json.dumps(m))
    assert kernels(analyze(run, health=False))["gemm_fusion_dot_3"] == ("yes", "tf32", "compiled code")


# -- run: the job's XLA_FLAGS ---------------------------------------------------------------------------------

def test_run_adds_the_dump_to_the_jobs_xla_flags(tmp_path, monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    env, user = launch_xla.dump_env(True, "nsys", tmp_path, None)
    assert env == {"XLA_FLAGS": f"--xla_dump_to={tmp_path.resolve()}/xla-dump --xla_dump_hlo_as_text"} and user is None
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_autotune_level=0")
    env, _ = launch_xla.dump_env(True, "cupti", tmp_path, None)
    assert env["XLA_FLAGS"].startswith("--xla_gpu_autotune_level=0 --xla_dump_to=")
    env, _ = launch_xla.dump_env(True, "cupti", tmp_path, {"XLA_FLAGS": "--xla_gpu_enable_triton_gemm=false"})
    assert env["XLA_FLAGS"].startswith("--xla_gpu_enable_triton_gemm=false --xla_dump_to=")
    assert launch_xla.dump_env(False, "nsys", tmp_path, None) == ({}, None)  # --no-xla-dump
    assert launch_xla.dump_env(True, "none", tmp_path, None) == ({}, None)  # --backend none: no kernels to decide


def test_a_jobs_own_dump_folder_is_kept_and_recorded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=mine --xla_dump_hlo_as_text")
    assert launch_xla.dump_env(True, "nsys", tmp_path / "run", None) == ({}, str(tmp_path / "mine"))
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=-")
    assert launch_xla.dump_env(True, "nsys", tmp_path / "run", None) == ({}, None)  # stdout: nothing to read
    m = Manifest(command=("python",), backend="nsys", xla_dump="/x/dump")
    assert Manifest.from_json(m.to_json()).xla_dump == "/x/dump"
    assert "xla_dump" not in Manifest(command=("python",), backend="nsys").to_json()  # older manifests: unchanged


def test_run_force_removes_the_runs_xla_dump_but_nothing_else(tmp_path):
    from nvprof_wrap.run.lock import claim
    run = run_folder(tmp_path)
    (run / "xla-dump" / "elsewhere").symlink_to(DUMPS)  # a link inside is removed, never followed
    _, lock = claim(run, force=True)
    os.close(lock)
    assert not (run / "xla-dump").exists() and DUMPS.is_dir() and any(MNIST.iterdir())
    (run / "strange").mkdir()
    (run / "manifest.json").write_text((RUNS / "gemm_nsys" / "manifest.json").read_text())
    with pytest.raises(Exception, match="strange/"):
        claim(run, force=True)
