"""The package passes mypy --strict with 0 errors: the configuration is pyproject.toml's [tool.mypy] (strict, the whole
package, workloads/ included through its link), run from a fresh cache inside the test's own folder. Only third-party
modules that ship no types may be exempted there, never a module of ours; a ``# type: ignore`` names its error code
and says why beside it."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests._paths import ROOT

PACKAGE = ROOT / "nvprof_wrap"
# `# type: ignore[code]  # why` (or `# type: ignore[code]  why`): a bare ignore, or one without a reason, is refused.
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)$")


def _config() -> dict[str, object]:
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert isinstance(mypy, dict)
    return mypy


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (the test extra pins it)")
def test_package_has_no_type_errors(tmp_path: Path) -> None:
    # cwd=ROOT: mypy reads pyproject.toml there; --cache-dir keeps its cache in tmp_path, never beside the sources.
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "--no-color-output",
                           "--no-error-summary"], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode in (0, 1), f"mypy itself failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    assert not errors, f"{len(errors)} type errors:\n" + "\n".join(errors)
    assert done.returncode == 0, done.stdout + done.stderr


def test_configuration_is_strict_and_exempts_no_module_of_ours() -> None:
    mypy = _config()
    assert mypy.get("strict") is True
    assert mypy.get("packages") == ["nvprof_wrap"]
    overrides = mypy.get("overrides", [])
    assert isinstance(overrides, list)
    for override in overrides:
        assert isinstance(override, dict)
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        assert not [m for m in modules if m.split(".")[0] == "nvprof_wrap"], modules
        # Only "this library ships no types": nothing that loosens the checking of our own code.
        assert set(override) <= {"module", "ignore_missing_imports", "follow_imports"}, override


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    bare = []
    # workloads/ is reached through the package's link to it: read each file once, by its real path.
    paths = sorted({path.resolve() for folder in (PACKAGE, ROOT / "workloads") for path in folder.rglob("*.py")})
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found = IGNORE.search(line)
            if found and (not found["codes"] or not found["rest"].strip(" #")):
                bare.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not bare, "a type: ignore without its code or its reason:\n" + "\n".join(bare)
