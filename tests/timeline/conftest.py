"""Fixtures the timeline tests share."""
from __future__ import annotations

import gzip
import shutil

import pytest

from tests._paths import RUNS


@pytest.fixture(scope="session")
def gpt(tmp_path_factory):
    """The GPT trainer (workloads/gpt_train.py, fp32, 30 steps) under nsys: NVTX ranges 'step 0'..'step 29'."""
    path = tmp_path_factory.mktemp("gpt") / "nsys.sqlite"
    with gzip.open(RUNS / "gpt_fp32_nsys_steps" / "nsys.sqlite.gz") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return path
