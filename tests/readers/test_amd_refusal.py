"""AMD GPU captures (rocprof's stats CSV, its HIP Chrome trace) are refused saying what they are — an AMD GPU (ROCm)
capture — never with a generic 'not a profiler capture' or 'not a PyTorch profiler trace' line (issue 45)."""
from __future__ import annotations

import pytest

from nvprof_wrap.cli import main
from nvprof_wrap.readers._vendor import rocm_capture
from tests._paths import FIXTURES

WILD3 = FIXTURES / "wild3"


@pytest.mark.skipif(not WILD3.is_dir(), reason="the shared fixtures' wild3 folder is absent")
@pytest.mark.parametrize("name", ["rocprof-stats-aiter-gfx950.stats.csv", "rocprof-trace-aiter-gfx950.json"])
def test_rocprof_outputs_are_refused_as_amd_captures(name, capsys):
    path = WILD3 / name
    assert main(["report", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err
    assert "an AMD GPU (ROCm) capture: not read" in err and "[clone .kd]" in err


def test_nvidia_text_is_no_amd_capture():
    # an nvprof summary row and a Kineto kernel name: none of rocprof's marks
    assert rocm_capture(b'"Type","Time(%)","Time","Calls","Avg","Min","Max","Name"\n'
                        b'"GPU activities",44.5,170.38,38,4.48,1.75,97.9,"volta_dgemm_128x64_nn"') is None
    assert rocm_capture(b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "void at::native::'
                        b'vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"}]}') is None
    assert rocm_capture(b'"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n"k",1,2,2,100.0').startswith(
        "an AMD GPU (ROCm) capture: not read (a rocprof --stats table)")
