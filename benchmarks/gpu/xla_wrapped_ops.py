"""Single XLA ops, each jitted alone so that XLA's FusionWrapper puts it in a kLoop fusion named `wrapped_<op>`
(divide, exponential, convert, multiply, add, tanh, transpose, reduce, ...), in fp16 and fp32, run a few times: the
kernels Nsight Compute measures in benchmarks/gpu/ncu_xla_wrapped.sh (the seed's MLP crashes under ncu on JAX)."""
import jax
import jax.numpy as jnp

ops = {
    "divide": lambda a, b: a / b, "exponential": jnp.exp, "convert": lambda a: a.astype(jnp.float32),
    "multiply": lambda a, b: a * b, "add": lambda a, b: a + b, "tanh": jnp.tanh, "transpose": lambda a: a.T,
    "reduce": lambda a: a.sum(axis=0), "maximum": jnp.maximum, "rsqrt": jax.lax.rsqrt, "select": lambda a, b:
    jnp.where(a > b, a, b), "broadcast": lambda a: jnp.broadcast_to(a[0], (512, 512)) * 1,
}
for dtype in (jnp.float16, jnp.float32):
    a = jnp.ones((512, 512), dtype) * 0.5
    b = jnp.full((512, 512), 2, dtype)
    for name, f in ops.items():
        g = jax.jit(f)
        args = (a, b)[: f.__code__.co_argcount] if hasattr(f, "__code__") else (a, b)[:1 if name in (
            "exponential", "tanh", "rsqrt") else 2]
        for _ in range(3):
            g(*args).block_until_ready()
print("done")
