"""Real captures reshaped the way people and tools reshape files — another layout of the same format, a byte-order
mark, another text encoding, two files joined, indentation lost in a paste — read as they are or refused in one line
that names what happened; never a different answer with exit 0."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from nvprof_wrap.cli import main
from tests._paths import RUNS, fixture_file

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


NSYS_STATS_TEXTS = ["wild/nsys-stats-console-flashattn-rtx4070.md", "wild/nsys-stats-console-gcn.txt",
                    "wild/nsys-stats-console-trt-jetson-orin.txt", "wild/nsys-stats-tables-laplace-a100-h100-readme.md",
                    "wild3/nsys-stats-cs336-trainstep-plain.txt", "wild3/nsys-stats-nvtx-name-cs336-forward.txt",
                    "wild3/nsys-stats-nvtx-name-cs336-trainstep.txt", "wild3/nsys-stats-table-vllm-deepseek-r1-b200.md",
                    "wild3/nsys-stats-table-vllm-llama70b-h100.txt", "wild3/nsys-stats-table-vllm-qwen7b-b200.md",
                    "wild3/vllm-docs-profiling-nsys-stats-h100.md"]


def _header(line: str) -> bool:
    return bool(re.match(r"\s*(\|\s*)?Time ?\(%\)", line))


PASTES = {
    # every line's indentation lost (a paste into a form, a code block re-indented): each row loses its own
    "indentation stripped": lambda lines: [line.lstrip(" ") for line in lines],
    # the selection started at the header's first visible character: its one leading blank lost
    "header's leading blank lost": lambda lines: [line.lstrip(" ") if _header(line) else line for line in lines],
    # the columns' blanks turned into tabs (an editor's "tabify", a spreadsheet's copy)
    "blanks turned into tabs": lambda lines: [re.sub(r" {2,}", "\t", line) for line in lines],
}


@pytest.mark.parametrize("paste", PASTES)
@pytest.mark.parametrize("rel", NSYS_STATS_TEXTS)
def test_nsys_stats_tables_pasted_out_of_line_read_as_they_were_printed(tmp_path, capsys, rel, paste):
    """nsys stats' console tables are cut by the columns of their dashes line. A paste that moved the rows against
    their header (each row's indentation stripped: a number's digits cut into two columns — 'Instances 3360' read as
    336013, 519,029 launches as 4,973,412 and the verdict's 73.7% as 46.9%, exit 0) or the header against its dashes
    ('no kernel row in it', exit 2) now reads as the table nsys printed, kernel by kernel."""
    src = fixture_file(rel)
    path = tmp_path / src.name
    path.write_text("".join(PASTES[paste](src.read_text().splitlines(keepends=True))))
    whole, pasted = _report(capsys, src), _report(capsys, path)
    assert (pasted["verdict"], pasted["launches"], pasted["kernel_ns"]) == \
        (whole["verdict"], whole["launches"], whole["kernel_ns"])
    assert _kernels(pasted) == _kernels(whole)
