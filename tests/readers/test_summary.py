"""readers/summary.py: a summary file holds one capture, or it is refused as damaged."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from nvprof_wrap import model
from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers import summary


def _summary_file(path: Path, capture: object) -> Path:
    body = json.dumps({"identity": "x", "window": None, "capture": summary._encode(capture)})
    path.write_bytes(gzip.compress((summary.MAGIC.decode() + ', "body": ' + body + "}").encode()))
    return path


def test_a_summary_round_trips_its_capture(tmp_path: Path) -> None:
    capture = model.Capture("c.sqlite", "cupti-sqlite", (), processes=(model.Process(7, "python"),))
    assert summary.load(_summary_file(tmp_path / "s.summary.json.gz", capture)) == ("x", None, capture)


def test_a_summary_holding_another_record_than_a_capture_is_damaged(tmp_path: Path) -> None:
    """A well-formed record of the model that is not a Capture was handed on as the capture."""
    path = _summary_file(tmp_path / "s.summary.json.gz", model.Process(7, "python"))
    with pytest.raises(BadInput, match=r"damaged summary \(TypeError: it holds Process, not a capture\)"):
        summary.load(path)
