"""Real captures reshaped the way people and tools reshape files — another layout of the same format, a byte-order
mark, another text encoding, two files joined, indentation lost in a paste — read as they are or refused in one line
that names what happened; never a different answer with exit 0."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from nvprof_wrap.cli import main
from tests._paths import RUNS

KINETO_GPT = RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz"


def _report(capsys, path: Path) -> dict:
    capsys.readouterr()
    assert main(["report", str(path), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _kernels(report: dict) -> list[tuple[str, int, int, str]]:
    return sorted((k["name"], k["launches"], k["total_ns"], k["tensor_core"]) for k in report["kernels"])


def test_a_trace_in_the_array_form_is_read_as_its_object_form(tmp_path, capsys):
    """The Trace Event Format's array form (the events as the top-level list, as Chrome's and other tools' traces
    are written) of a real torch.profiler trace: its events had been looked for under "traceEvents" and the trace
    read as "no kernels", exit 0. Its kernels now read as the object form's, one by one."""
    body = json.loads(gzip.decompress(KINETO_GPT.read_bytes()))
    path = tmp_path / "events.json"
    path.write_text(json.dumps(body["traceEvents"]))
    whole, array = _report(capsys, KINETO_GPT), _report(capsys, path)
    assert array["verdict"] == whole["verdict"] == "yes"
    assert array["launches"] == whole["launches"] > 0 and array["kernel_ns"] == whole["kernel_ns"]
    assert _kernels(array) == _kernels(whole)
