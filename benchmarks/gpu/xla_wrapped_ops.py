"""Single XLA ops, each jitted alone so that XLA's FusionWrapper puts it in a kLoop fusion named `wrapped_<op>`, in
fp16 and fp32, each run three times: the kernels Nsight Compute measures in benchmarks/gpu/ncu_xla_wrapped.sh (the
seed's MLP itself crashes under ncu 2025.3.1 on JAX). On the H100 ten came out wrapped (add, broadcast, convert,
divide, exponential, maximum, multiply, rsqrt, tanh, transpose); the reduce and the select fuse under other names
(input_reduce_fusion, loop_select_fusion) and are not in the export (ncu's filter is ^wrapped_)."""
import jax
import jax.numpy as jnp

# name → (number of arguments, the op)
OPS = {
    "divide": (2, lambda a, b: a / b), "exponential": (1, jnp.exp), "convert": (1, lambda a: a.astype(jnp.float32)),
    "multiply": (2, lambda a, b: a * b), "add": (2, lambda a, b: a + b), "tanh": (1, jnp.tanh),
    "transpose": (1, lambda a: a.T), "reduce": (1, lambda a: a.sum(axis=0)), "maximum": (2, jnp.maximum),
    "rsqrt": (1, jax.lax.rsqrt), "select": (2, lambda a, b: jnp.where(a > b, a, b)),
    "broadcast": (1, lambda a: jnp.broadcast_to(a[0], (512, 512)) * 1),
}
for dtype in (jnp.float16, jnp.float32):
    a = jnp.ones((512, 512), dtype) * 0.5
    b = jnp.full((512, 512), 2, dtype)
    for arity, op in OPS.values():
        g = jax.jit(op)
        for _ in range(3):
            g(*(a, b)[:arity]).block_until_ready()
print("done")
