#!/usr/bin/env bash
# For the lead, on the H200: a real JAX GPU profile (XSpace + trace JSON) to add as a test fixture, and what
# nvprof-wrap reads from it. Needs: pip install "jax[cuda12]" (or cuda13). Writes to ${OUT:-jax_profile}/.
set -euo pipefail
OUT=${OUT:-jax_profile}
python3 - "$OUT" <<'PY'
import sys
import jax
import jax.numpy as jnp

out = sys.argv[1]
key = jax.random.key(0)
w = jax.random.normal(key, (4096, 4096), jnp.bfloat16)
x = jax.random.normal(key, (4096, 4096), jnp.bfloat16)
w32, x32 = w.astype(jnp.float32), x.astype(jnp.float32)

@jax.jit
def train_step(w, x):  # a bf16 GEMM (tensor cores), a fused elementwise op, a reduction
    y = jnp.tanh(x @ w)
    return w - 1e-3 * (x.T @ y), jnp.mean(y)

@jax.jit
def fp32_step(w, x):  # fp32 GEMM: TF32 or CUDA cores depending on jax_default_matmul_precision
    return jnp.sum(x @ w)

for _ in range(2):  # compile outside the trace
    train_step(w, x)[1].block_until_ready(); fp32_step(w32, x32).block_until_ready()
with jax.profiler.trace(out):
    for _ in range(5):
        w, loss = train_step(w, x)
    loss.block_until_ready()
    fp32_step(w32, x32).block_until_ready()
print(jax.devices())
PY
find "$OUT" -name "*.xplane.pb" -o -name "*.trace.json.gz" | sort
for f in $(find "$OUT" -name "*.xplane.pb" | sort); do
  python3 -m nvprof_wrap report "$f" --width 120
  python3 -m nvprof_wrap report "$f" --format json > "${f%.xplane.pb}.report.json"
done
PY_EXIT=$?
exit $PY_EXIT
