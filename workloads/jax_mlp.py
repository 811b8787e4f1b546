"""A small JAX MLP training loop (the seed's Reuters shape: 10,000 → 256 → 256 → 46, softmax cross-entropy, RMSprop
by hand) traced with ``jax.profiler``: what current JAX writes, an XSpace ``*.xplane.pb``, which nvprof-wrap reads.

    python workloads/jax_mlp.py [--precision fp32|bf16|fp16] [--steps 30] [--trace-dir DIR]
"""
from __future__ import annotations

import argparse
import sys
from typing import Any


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32", help="default fp32")
    p.add_argument("--steps", type=int, default=30, help="default 30")
    p.add_argument("--batch-size", type=int, default=512, help="default 512")
    p.add_argument("--trace-dir", help="write a jax.profiler trace of steps 10..20 here")
    args = p.parse_args(argv)
    import jax
    import jax.numpy as jnp

    dtype = {"fp32": jnp.float32, "bf16": jnp.bfloat16, "fp16": jnp.float16}[args.precision]
    key = jax.random.PRNGKey(0)
    sizes = (10_000, 256, 256, 46)
    keys = jax.random.split(key, len(sizes))
    params = [(jax.random.normal(k, (a, b), dtype) * (1 / a) ** 0.5, jnp.zeros((b,), dtype))
              for k, a, b in zip(keys, sizes[:-1], sizes[1:], strict=False)]
    x = (jax.random.uniform(keys[-1], (args.batch_size, sizes[0])) < 0.01).astype(dtype)
    y = jax.nn.one_hot(jnp.arange(args.batch_size) % sizes[-1], sizes[-1])

    def loss_fn(ps: Any, xb: Any, yb: Any) -> Any:  # jax arrays and pytrees of them
        h = xb
        for i, (w, b) in enumerate(ps):
            h = h @ w + b
            if i < len(ps) - 1:
                h = jax.nn.relu(h)
        return -jnp.mean(jnp.sum(yb * jax.nn.log_softmax(h.astype(jnp.float32)), axis=-1))

    @jax.jit  # type: ignore[untyped-decorator]  # jax is not type-checked here
    def step(ps: Any, acc: Any, xb: Any, yb: Any) -> Any:  # jax arrays and pytrees
        loss, grads = jax.value_and_grad(loss_fn)(ps, xb, yb)
        acc = jax.tree_util.tree_map(lambda a, g: 0.9 * a + 0.1 * g.astype(jnp.float32) ** 2, acc, grads)
        ps = jax.tree_util.tree_map(lambda p_, g, a: (p_ - 1e-3 * g / (jnp.sqrt(a) + 1e-7)).astype(p_.dtype),
                                    ps, grads, acc)
        return ps, acc, loss

    acc = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, jnp.float32), params)
    loss = None
    for i in range(args.steps):
        if args.trace_dir and i == 10:
            jax.profiler.start_trace(args.trace_dir)
        params, acc, loss = step(params, acc, x, y)
        if args.trace_dir and i == 20:
            loss.block_until_ready()
            jax.profiler.stop_trace()
    print(f"jax_mlp {args.precision} on {jax.devices()[0].device_kind}: {args.steps} steps, "
          f"loss {float(loss):.4f}" if loss is not None else "no step run", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
