"""The PyTorch numerics recorder's cost per unsampled step (tracer/numerics_torch.py), on the CPU or a GPU: a small
transformer (4 layers of width 64, 48 modules, 52 parameters) trained STEPS steps in a child process without and
with the recorder (steps from FIRST on are sampled every EVERY-th only, as under `run --numerics`), interleaved A B A
B; prints the median wall and CPU time of the unsampled steps (min over the rounds) and the torch operations (each a
kernel launch on a GPU) one unsampled step runs: the recorder's share of those does not depend on the machine's load.
The whole job under `run --numerics` on the H200 is benchmarks/gpu/numerics_cost.sh; this isolates the recorder's
per-step part.

    /tmp/venv-torch/bin/python benchmarks/gpu/numerics_step_host.py [--rounds 3] [--steps 200]   # PYTHONPATH=repo
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
import torch
from torch.utils._python_dispatch import TorchDispatchMode

class Count(TorchDispatchMode):
    ops = 0
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        Count.ops += 1
        return func(*args, **(kwargs or {}))
mode, steps, every, first, folder = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
if mode == "numerics":
    from nvprof_wrap.tracer import numerics, numerics_torch
    numerics.begin(folder)
    numerics_torch.patch(torch)
dev = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
enc = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
model = torch.nn.Sequential(torch.nn.Embedding(64, 64), enc, torch.nn.Linear(64, 64)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randint(0, 64, (4, 16), device=dev)
times, cpus = [], []
def train():
    loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), x.flatten())
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()

for step in range(steps):
    t, c = time.perf_counter(), time.process_time()
    if step == first + 1:  # an unsampled step's operations, counted
        with Count():
            train()
    else:
        train()
    if dev == "cuda":
        torch.cuda.synchronize()  # the step's whole time, the device's included
    if step >= first and step % every:
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
med = lambda v: 1e3 * sorted(v)[len(v) // 2]
print(json.dumps({"median_ms": med(times), "cpu_ms_per_step": med(cpus), "device": dev, "ops": Count.ops}))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--first", type=int, default=3)
    args = p.parse_args()
    got: dict[str, list[dict[str, float]]] = {"plain": [], "numerics": []}
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
           "NVPROF_WRAP_NUMERICS_EVERY": str(args.every), "NVPROF_WRAP_NUMERICS_FIRST": str(args.first)}
    for _ in range(args.rounds):
        for mode in ("plain", "numerics"):
            with tempfile.TemporaryDirectory() as folder:
                out = subprocess.run([sys.executable, "-c", CHILD, mode, str(args.steps), str(args.every),
                                      str(args.first), folder], capture_output=True, text=True, check=True, env=env,
                                     cwd=folder)  # not the current folder first on sys.path: $PYTHONPATH's
            got[mode].append(json.loads(out.stdout.splitlines()[-1]))
    for mode, runs in got.items():
        med = [r["median_ms"] for r in runs]
        cpu = [r["cpu_ms_per_step"] for r in runs]
        print(f"{mode:9s} unsampled step median {min(med):.3f} ms (runs {', '.join(f'{m:.3f}' for m in med)}); "
              f"its CPU time median {min(cpu):.3f} ms; {runs[0]['ops']} torch operations; {runs[0]['device']}")
    base = min(r["median_ms"] for r in got["plain"])
    print(f"ratio (min medians): {min(r['median_ms'] for r in got['numerics']) / base:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
