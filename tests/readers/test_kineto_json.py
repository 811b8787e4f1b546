"""readers/kineto_json.py: a window of a Kineto trace."""
from __future__ import annotations

from nvprof_wrap.readers import kineto_json
from nvprof_wrap.timeline.window import Window
from tests._paths import RUNS

KINETO = RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz"


def test_a_capture_windows_cut_alone_reads_the_trace_whole() -> None:
    """The cut is nsys's (what it recorded while its stop ran): a Kineto trace read through a window of the cut
    alone is the whole trace. It was a TypeError (no steps to bound)."""
    whole = kineto_json.read(KINETO)
    assert kineto_json.read(KINETO, Window(cut=2)).kernels == whole.kernels
