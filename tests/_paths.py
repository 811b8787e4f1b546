"""Where the tests find their files: the one module that knows them. Tests, tests/conftest.py and the fakes that
need a fixture (tests/fakes/nvprof_inject) import these names from here and build no such path of their own.

- ROOT: the repository; TESTS: this folder.
- DATA (tests/data, RUNS = its h200_runs, H100_RUNS = its h100_runs) and FAKES (tests/fakes, FAKE_BIN = its bin):
  committed with the tests.
- FIXTURES: the shared fixtures, $NVPROF_WRAP_FIXTURES or ../shared/fixtures beside the repository (as
  benchmarks.generate finds them), with its folders PUBLIC, H200 and WILD. A clean clone has none: tests/conftest.py
  skips, with the reason, every test whose code names one of these (or a path built from them).

Only the standard library here: the fake nvprof's per-process hook loads this file by its path.
"""
from __future__ import annotations

import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
RUNS = DATA / "h200_runs"
H100_RUNS = DATA / "h100_runs"
FAKES = TESTS / "fakes"
FAKE_BIN = FAKES / "bin"
FIXTURES = Path(os.environ.get("NVPROF_WRAP_FIXTURES") or ROOT.parent / "shared" / "fixtures")
PUBLIC = FIXTURES / "public"
H200 = FIXTURES / "h200"
WILD = FIXTURES / "wild"


def fixtures_absent() -> str | None:
    """Why the shared fixtures count as absent, or None when they are here. A folder that lacks any of its parts
    (public/, h200/, wild/: an empty folder, say) counts as absent, not as a folder of missing files."""
    if not FIXTURES.is_dir():
        return "absent here"
    missing = [f"{part.name}/" for part in (PUBLIC, H200, WILD) if not part.is_dir()]
    return f"it has no {', '.join(missing)} here" if missing else None


def fixture_file(rel: str) -> Path:
    """A file of the shared fixtures that a test needs; the test is skipped, naming the file, when it is absent."""
    path = FIXTURES / rel
    if not path.is_file():
        import pytest

        pytest.skip(f"needs {path} (absent here; tests/README.md says where it comes from)")
    return path


def run_copy(run: Path, into: Path) -> Path:
    """A run folder of RUNS copied into a test's temporary folder, its name kept: `report FOLDER` keeps its run store
    inside the folder it reports, and the committed ones are read, never written (tests/conftest.py checks)."""
    import shutil

    return Path(shutil.copytree(run, into / run.name, ignore=shutil.ignore_patterns("run.sqlite*")))
