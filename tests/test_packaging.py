"""What a fresh `pip install nvprof-wrap` gets: every third-party module the package imports at module level is a
declared dependency (orjson and protobuf once were not: the package failed to import on a machine without them),
and every data file the package reads is in the wheel (classify/gpus.toml once was not: `demo` failed when
installed from the wheel). The last test installs the package into a fresh virtual environment and runs `demo`."""
from __future__ import annotations

import ast
import fnmatch
import os
import re
import subprocess
import sys
import tomllib
import venv

import pytest

from tests.conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# import name -> distribution name, where they differ
DISTRIBUTION = {"google": "protobuf", "sqlite_utils": "sqlite-utils", "cupti": "cupti-python"}
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
        if re.search(r"Could not find a version|No matching distribution|connection|Network", pip.stderr, re.IGNORECASE):
            pytest.skip(f"pip could not reach a package index: {pip.stderr.strip().splitlines()[-1]}")
        pytest.fail(f"pip install failed: {pip.stderr[-2000:]}")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)} | {"NO_COLOR": "1",
                                                                                "NVPROF_WRAP_HISTORY": "off"}
    demo = subprocess.run([str(env_dir / "bin" / "nvprof-wrap"), "demo"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=env, check=False)
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "Tensor cores used: yes" in demo.stdout and str(env_dir) in demo.stdout  # the installed copy ran
