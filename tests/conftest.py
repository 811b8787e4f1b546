"""Where the tests find the shared fixtures, and what happens without them.

The public and H200 captures lie in ../shared/fixtures beside the repository (or where $NVPROF_WRAP_FIXTURES
points). A clean clone has no such folder: every test that reads from it is skipped with a reason naming the
folder, and the rest run. A test needs the fixtures when it is marked ``needs_fixtures``, asks for the
``fixtures`` fixture, is parametrized with a path inside the folder, or names FIXTURES / PUBLIC / H200 in its
body (found from its code, so that a new test cannot forget the mark). CI has the folder and runs them all.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("NVPROF_WRAP_FIXTURES") or ROOT.parent / "shared" / "fixtures")  # as benchmarks.generate
PUBLIC = FIXTURES / "public"
H200 = FIXTURES / "h200"
_NAMES = {"FIXTURES", "PUBLIC", "H200", "CAPTURES", "SEEDS", "NCU_CSV"}


def _names(code) -> set[str]:
    out = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            out |= _names(const)
    return out


def _needs_fixtures(item: pytest.Item) -> bool:
    if item.get_closest_marker("needs_fixtures") or "fixtures" in getattr(item, "fixturenames", ()):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    if any(str(v).startswith((str(FIXTURES), "public/", "h200/")) for v in params.values()):
        return True
    fn = getattr(item, "function", None)
    return fn is not None and bool(_names(fn.__code__) & _NAMES)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_fixtures: reads ../shared/fixtures (skipped when the folder is absent)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if FIXTURES.is_dir():
        return
    skip = pytest.mark.skip(reason=f"needs the shared fixtures folder {FIXTURES} (absent here; CI has it; "
                                   "set NVPROF_WRAP_FIXTURES to use another)")
    for item in items:
        if _needs_fixtures(item):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return FIXTURES


def fixture_file(rel: str) -> Path:
    """A file of the shared fixtures that a test needs; the test is skipped, naming the file, when it is absent."""
    path = FIXTURES / rel
    if not path.is_file():
        pytest.skip(f"needs {path} (absent here; tests/README.md says where it comes from)")
    return path
