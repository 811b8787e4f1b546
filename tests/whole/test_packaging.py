"""What a fresh `pip install nvprof-wrap` gets: every third-party module the package imports at module level is a
declared dependency (orjson and protobuf once were not: the package failed to import on a machine without them),
and every data file the package reads is in the wheel (classify/gpus.toml once was not: `demo` failed when
installed from the wheel). The last test installs the package into a fresh virtual environment and runs `demo`."""
from __future__ import annotations

import ast
import fnmatch
import json
import os
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

from tests._paths import FAKE_BIN, ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# import name -> distribution name, where they differ
DISTRIBUTION = {"google": "protobuf", "sqlite_utils": "sqlite-utils", "cupti": "cupti-python",
                "ahocorasick": "pyahocorasick"}
# modules that exist for users of one library and are imported only by them (never by the rest of the package)
OPTIONAL = {"nvprof_wrap/keras.py": {"keras"}}


def _declared() -> set[str]:
    return {re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower().replace("_", "-")
            for d in PYPROJECT["project"]["dependencies"]}


def _module_level_imports(path) -> set[str]:
    """Top-level names imported by statements that run when the module is imported (not inside a function, and
    not guarded by try/except ImportError)."""
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in tree.body:  # module level only: nested imports are lazy by design
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_every_module_level_import_is_a_declared_dependency():
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    missing = {}
    for path in sorted((ROOT / "nvprof_wrap").rglob("*.py")):
        if "inject" in path.parts:  # the injector runs inside the user's job and imports only the standard library
            continue
        rel = path.relative_to(ROOT).as_posix()
        for name in _module_level_imports(path) - stdlib - {"nvprof_wrap"} - OPTIONAL.get(rel, set()):
            if DISTRIBUTION.get(name, name).lower().replace("_", "-") not in _declared():
                missing.setdefault(name, rel)
    assert missing == {}, f"imported at module level but not in [project] dependencies: {missing}"


def test_every_data_file_of_the_package_is_in_the_wheel():
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["nvprof_wrap"]
    files = subprocess.run(["git", "ls-files", "nvprof_wrap"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    data = [f.removeprefix("nvprof_wrap/") for f in files if not f.endswith(".py") and (ROOT / f).is_file()]
    assert data, "no data files found: is this a git checkout?"
    left_out = [f for f in data if not any(fnmatch.fnmatch(f, p) for p in patterns)]
    assert left_out == []


@pytest.mark.slow
def test_a_fresh_install_runs_the_demo(tmp_path):
    """pip install of the checkout into an empty virtual environment (not editable: the wheel's own files), then
    `nvprof-wrap demo` from another folder. Skipped, saying why, where pip cannot reach a package index."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    pip = subprocess.run([str(py), "-m", "pip", "install", "-q", str(ROOT)], capture_output=True, text=True,
                         timeout=900, check=False)
    if pip.returncode != 0:
        if re.search(r"Could not find a version|No matching distribution|connection|Network", pip.stderr,
                     re.IGNORECASE):
            pytest.skip(f"pip could not reach a package index: {pip.stderr.strip().splitlines()[-1]}")
        pytest.fail(f"pip install failed: {pip.stderr[-2000:]}")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)} | {"NO_COLOR": "1",
                                                                                "NVPROF_WRAP_HISTORY": "off"}
    demo = subprocess.run([str(env_dir / "bin" / "nvprof-wrap"), "demo"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=env, check=False)
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "Tensor cores used: yes" in demo.stdout and str(env_dir) in demo.stdout  # the installed copy ran


def _wheel(out) -> object:
    """The wheel of this checkout, built as pip would (without isolation where setuptools here can: fast, offline)."""
    import importlib.util

    can_build = importlib.util.find_spec("setuptools") is not None and (
        importlib.util.find_spec("wheel") is not None or importlib.util.find_spec("setuptools.command.bdist_wheel"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                           *(["--no-build-isolation"] if can_build else []), "-w", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = out.glob("nvprof_wrap-*.whl")
    return wheel


@pytest.mark.slow
@pytest.mark.tf
def test_the_installed_wheel_runs_every_path_a_user_walks(tmp_path):
    """Issue 22: the user's package is the wheel, not this checkout. Into a fresh venv that sees this machine's
    packages (Keras, TensorFlow: what a user has beside us) but installs nvprof-wrap from its wheel, with nothing of the
    checkout on sys.path and run from another folder: demo, every workload's --help from the installed
    nvprof_wrap/workloads (one of them once put nvprof_wrap/ on sys.path, where keras.py shadows Keras), the seed's
    `experiment reuters_mlp` under the fake nsys, doctor, and the Python API's imports."""
    pytest.importorskip("keras")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=True)
    py, bin_ = env_dir / "bin" / "python", env_dir / "bin"
    _see_the_outer_venv(py)
    # --ignore-installed: the venv sees this machine's packages, where nvprof-wrap of the same version may be installed
    pip = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed",
                          str(_wheel(tmp_path))], capture_output=True, text=True, timeout=600, check=False)
    assert pip.returncode == 0, pip.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    fakes = FAKE_BIN
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NVPROF_WRAP_NSYS")} | {
        "NO_COLOR": "1", "NVPROF_WRAP_HISTORY": str(tmp_path / "history.sqlite"), "KERAS_BACKEND": "tensorflow",
        "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "", "COLUMNS": "160",
        "PATH": f"{fakes}:{bin_}:{os.environ['PATH']}"}

    def run(*argv, timeout=300) -> subprocess.CompletedProcess:
        return subprocess.run([str(a) for a in argv], cwd=elsewhere, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    where = run(py, "-c", "import json, sys, nvprof_wrap; print(json.dumps([nvprof_wrap.__file__, sys.path]))")
    assert where.returncode == 0, where.stderr
    module, path = json.loads(where.stdout)
    assert module.startswith(str(env_dir)), module  # the wheel's copy, not the checkout's (editable) one
    entries = [(elsewhere / p).resolve() for p in path]  # relative entries ('' is the cwd) as the child saw them
    assert not [p for p in entries if p == ROOT or ROOT in p.parents], path

    demo = run(bin_ / "nvprof-wrap", "demo")
    assert demo.returncode == 0 and "Tensor cores used: yes" in demo.stdout, demo.stderr[-2000:]

    installed = Path(module).parent / "workloads"
    scripts = sorted(p for p in installed.glob("*.py") if not p.name.startswith("_"))
    assert {"reuters_mlp.py", "convnet.py", "matmul_probe.py", "gpt_train.py"} <= {p.name for p in scripts}
    for script in scripts:
        helped = run(py, script, "--help")
        missing = re.search(r"No module named '(torch|jax)'", helped.stderr)
        assert helped.returncode == 0 or (missing and importlib_missing(missing.group(1))), \
            f"{script.name}: {helped.stderr[-1500:]}"
        assert "partially initialized module" not in helped.stderr, script.name

    exp = run(bin_ / "nvprof-wrap", "experiment", "reuters_mlp", "--backend", "nsys", "--precisions", "fp32,fp16",
              "-o", tmp_path / "exp", "--format", "json", "--", "--epochs", "1", "--samples", "512", timeout=900)
    assert exp.returncode == 0, exp.stdout[-1500:] + exp.stderr[-3000:]
    rows = {r["precision"]: r for r in json.loads(exp.stdout)["rows"]}
    assert set(rows) == {"fp32", "fp16"} and all(r["exit_code"] == 0 and r["steps"] for r in rows.values()), rows

    doctor = run(bin_ / "nvprof-wrap", "doctor")
    assert doctor.returncode == 0 and "keras yes" in doctor.stdout, doctor.stdout[-1500:] + doctor.stderr[-1500:]

    api = run(py, "-c", "import nvprof_wrap; nvprof_wrap.analyze; nvprof_wrap.profile; from nvprof_wrap import magic; "
                        "from nvprof_wrap.keras import ProfileSteps; print(ProfileSteps.__mro__[1].__module__)")
    assert api.returncode == 0 and api.stdout.startswith("keras"), api.stderr[-1500:]


def test_a_nested_venv_sees_what_the_outer_venv_installed(tmp_path):
    """README's test command run inside a venv (issue 45): the wheel test's nested venv (system_site_packages=True
    sees the base interpreter only) must import sqlite_utils from the outer venv's site-packages, else the wheel's
    `nvprof-wrap demo` dies on "No module named 'sqlite_utils'". Fast: no pip, no wheel."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("runs only inside a virtual environment (this interpreter is not one)")
    import site

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False, system_site_packages=True)
    py = env_dir / "bin" / "python"
    _see_the_outer_venv(py)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(py), "-c", "import sqlite_utils; print(sqlite_utils.__file__)"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-1500:]
    import sqlite_utils

    assert Path(proc.stdout.strip()).resolve() == Path(sqlite_utils.__file__).resolve()  # the one this suite sees
    assert any(Path(proc.stdout.strip()).is_relative_to(d) for d in site.getsitepackages())


def _see_the_outer_venv(py: Path) -> None:
    """Where the tests run inside a virtual environment (how most people run README's command), a nested venv's
    system site is the base interpreter's, which lacks what the outer venv installed (sqlite_utils, Keras): list the
    outer venv's site folders in a .pth of the nested one, after its own. Their .pth files are not processed, so the
    outer venv's editable nvprof-wrap stays out and the wheel's copy is the one imported."""
    if sys.prefix == sys.base_prefix:
        return
    import site

    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "_outer_venv.pth").write_text("".join(f"{d}\n" for d in site.getsitepackages()))


def importlib_missing(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is None
