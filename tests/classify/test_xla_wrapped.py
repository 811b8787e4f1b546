"""XLA's single-op fusions (`wrapped_<op>`: an op its FusionWrapper fused with nothing, alone in a kLoop fusion) are
not tensor-core kernels — measured with Nsight Compute on an H100 (tests/data/h100_runs/xla_wrapped_ncu: each op
jitted alone in fp16 and fp32, benchmarks/gpu/ncu_xla_wrapped.sh) — and the name rule says so (rules.toml
`xla-wrapped-op`); a wrapped dot or convolution keeps "unknown". Before the rule the seed's MLP on Keras-on-JAX left
wrapped_divide and wrapped_exponential unknown."""
from __future__ import annotations

import gzip

import pytest

from nvprof_wrap import readers
from nvprof_wrap.classify import classify
from nvprof_wrap.pipeline import analyze
from tests._ncu_truth import raw_truth
from tests._paths import H100_RUNS

NCU = H100_RUNS / "xla_wrapped_ncu" / "ncu.csv.gz"


def _raw_truth() -> tuple[dict[str, str], set[str]]:
    """From the CSV alone (tests/_ncu_truth.py): "yes" where a launch executed matrix instructions net of HFMA2; the
    kernels whose every HMMA was HFMA2.MMA (the tensor pipe busy in an fp16 elementwise kernel)."""
    with gzip.open(NCU, "rt") as f:
        return raw_truth(f.read().splitlines())


def test_the_wrapped_ops_ran_no_matrix_instruction_and_the_name_rule_agrees() -> None:
    truth, hfma2_only = _raw_truth()
    assert sorted(truth) == [f"wrapped_{op}" for op in (
        "add", "broadcast", "convert", "divide", "exponential", "maximum", "multiply", "rsqrt", "tanh", "transpose")]
    assert set(truth.values()) == {"no"}
    assert hfma2_only == {"wrapped_exponential", "wrapped_tanh"}  # HFMA2.MMA on the tensor pipe, no matrix math
    for name in truth:
        c = classify(name)
        assert (c.tensor_core, c.rule, c.family) == ("no", "xla-wrapped-op", "xla"), name
    # nvprof-wrap's own reading of the export says the same
    capture = readers.read(NCU)
    assert {k.name: k.tensor_core for k in analyze(NCU).kernels} == truth
    assert {k.name for k in capture.kernels} == set(truth)


@pytest.mark.parametrize("name", ["wrapped_dot", "wrapped_dot_general", "wrapped_convolution", "wrapped_convolution_2"])
def test_a_wrapped_dot_or_convolution_is_not_decided_by_the_rule(name: str) -> None:
    c = classify(name)
    assert c.tensor_core == "unknown" and c.rule != "xla-wrapped-op"


@pytest.mark.parametrize("name", ["wrapped_concatenate", "wrapped_dynamic_update_slice_3", "wrapped_add_1",
                                  "wrapped_reduce_window"])
def test_other_wrapped_ops_of_the_fusion_wrapper_list_are_not_tensor_core(name: str) -> None:
    assert classify(name).rule == "xla-wrapped-op"


def test_the_keras_on_jax_run_leaves_no_wrapped_op_unknown() -> None:
    rep = analyze(H100_RUNS / "keras_jax_fp16_numerics_nsys" / "nsys.sqlite.gz")
    wrapped = {k.name: k.tensor_core for k in rep.kernels if k.name.startswith("wrapped_")}
    assert {"wrapped_divide", "wrapped_exponential"} <= set(wrapped) and set(wrapped.values()) == {"no"}
