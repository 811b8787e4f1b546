"""Which kernels `verify` asks Nsight Compute to measure (launch/ncu.py): the earlier run's top kernels, by the
function name ncu's `--kernel-name-base function` matches. A kernel in an anonymous namespace — '(anonymous
namespace)::' as Nsight Systems, the PyTorch profiler and the CUPTI tracer write it, '<unnamed>::' in ncu's own
spelling — had given no function name at all: 8 of the H200 GPT trainer's 20 kernels with the most time (22% of its
GPU time: layer norm, dropout, softmax, cat) were left out of ncu's filter, never measured."""
from __future__ import annotations

import re

import pytest

from nvprof_wrap.classify.counters import alike
from nvprof_wrap.launch.ncu import base_function, profile_argv
from nvprof_wrap.readers import read
from tests._paths import RUNS

CAPTURES = {"nsys": RUNS / "gpt_bf16_nsys" / "nsys.sqlite.gz",
            "kineto": next((RUNS / "kineto_gpt_bf16_shapes").glob("*.pt.trace.json.gz"))}
NCU = RUNS / "train_counters" / "gpt_bf16.ncu.csv.gz"


@pytest.mark.parametrize("tool", sorted(CAPTURES))
def test_every_kernel_of_the_gpt_trainer_gives_the_function_name_ncu_gives_it(tool):
    """Each kernel of the timeline that ncu measured (the same job) gives the function name ncu's own spelling of it
    gives; every kernel gives an identifier."""
    timeline = [k.name for k in read(CAPTURES[tool]).kernels]
    counted = {k.name for k in read(NCU).kernels}
    same = {**alike(counted, [(1, n) for n in timeline]), **{n: n for n in timeline if n in counted}}
    assert len(same) == 63
    assert all(base_function(ours) == base_function(theirs) for ours, theirs in same.items())
    assert all(re.fullmatch(r"[A-Za-z_]\w*", base_function(n)) for n in timeline)
    assert base_function("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, false>("
                         "int, float, float const*, float const*, float const*, float*, float*, float*)") == \
        "vectorized_layer_norm_kernel"


@pytest.mark.parametrize("tool", sorted(CAPTURES))
def test_ncus_filter_holds_every_top_kernel(tool):
    top = sorted(read(CAPTURES[tool]).kernels, key=lambda k: -k.total_ns)[:20]
    argv = profile_argv("ncu", ["python3", "train.py"], RUNS / "x", ["m"], [k.name for k in top], 100)
    regex = argv[argv.index("--kernel-name") + 1].removeprefix("regex:")
    assert all(re.fullmatch(regex, base_function(k.name)) for k in top)
    assert re.fullmatch(regex, "vectorized_layer_norm_kernel") and not re.fullmatch(regex, "")


def test_names_of_no_function_measure_every_kernel_not_none():
    """Names that give no function name (a capture that lost its names) filter nothing: ncu's regex '^()$' had
    matched no kernel, and verify measured nothing."""
    argv = profile_argv("ncu", ["python3", "train.py"], RUNS / "x", ["m"], ["<unnamed kernel>"], 100)
    assert "--kernel-name" not in argv and argv[-2:] == ["python3", "train.py"]
