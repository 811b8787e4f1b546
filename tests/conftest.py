from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("NVPROF_WRAP_FIXTURES") or ROOT.parent / "shared" / "fixtures")  # as benchmarks.generate
PUBLIC = FIXTURES / "public"
H200 = FIXTURES / "h200"


@pytest.fixture(scope="session")
def fixtures() -> Path:
    assert FIXTURES.is_dir(), f"the shared fixtures must lie beside the repo: {FIXTURES}"
    return FIXTURES
