"""`--annotate torch` asks emit_nvtx for the ops' shapes (their GEMMs' FLOPs: readers/_nvtx_flops.py) unless
NVPROF_WRAP_ANNOTATE_SHAPES=0. torch is not installed on the CPU machines: a stand-in module offers what
patch_torch calls (nn.Module, cuda.nvtx.range_push/pop, autograd.profiler.emit_nvtx(record_shapes=…) as a
context manager) and records the argument."""
from __future__ import annotations

import types

import pytest

from nvprof_wrap.tracer import annotate


def _stand_in(seen: list[bool]) -> types.SimpleNamespace:
    class EmitNvtx:
        def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
            seen.append(record_shapes)

        def __enter__(self) -> None:
            return None

    class Module:
        def __call__(self) -> str:
            return "called"

    return types.SimpleNamespace(
        nn=types.SimpleNamespace(Module=Module),
        cuda=types.SimpleNamespace(nvtx=types.SimpleNamespace(range_push=lambda name: 0, range_pop=lambda: 0)),
        autograd=types.SimpleNamespace(profiler=types.SimpleNamespace(emit_nvtx=EmitNvtx)))


@pytest.mark.parametrize("value, shapes", [(None, True), ("1", True), ("0", False), ("off", False), ("no", False)])
def test_annotate_torch_records_shapes_unless_told_not_to(monkeypatch, value, shapes):
    monkeypatch.setitem(annotate._state, "patched", set())
    monkeypatch.setitem(annotate._state, "emit_nvtx", None)
    if value is None:
        monkeypatch.delenv(annotate.SHAPES_ENV, raising=False)
    else:
        monkeypatch.setenv(annotate.SHAPES_ENV, value)
    seen: list[bool] = []
    torch = _stand_in(seen)
    annotate.patch_torch(torch)
    assert seen == [shapes]
    assert torch.nn.Module()() == "called"  # the module calls still go through, inside their range
