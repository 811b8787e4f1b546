"""Which CUPTI API records link every kernel to its launching thread? One mode per process, on a GPU with
torch and cupti-python (the H200 results: docs/backends.md):

    for m in none runtime runtime+driver runtime+driver_sel runtime+driver_sel_kind; do
        python benchmarks/gpu/cupti_api_modes.py $m; done

5,000 x (an elementwise kernel launched by PyTorch through the runtime + a 4096^2 fp16 GEMM that cuBLAS
launches through the driver); prints the records of each kind and how many kernels have a launch record."""
import collections
import sys
import time

from cupti import cupti as c

mode = sys.argv[1]
got = []
c.subscribe(lambda *a: None, None)
c.activity_enable(c.ActivityKind.CONCURRENT_KERNEL)
def tryit(name, f):
    try: f(); return "ok"
    except Exception as e: return f"FAIL {type(e).__name__} {e}"  # noqa: BLE001 - a probe: every failure is data
notes = {}
K = c.ActivityKind
DRV = ["cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
       "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz"]
def drv_cbid(n):
    return int(getattr(c.driver_api_trace_cbid, n, None) or getattr(c.DriverApiTraceCbid, n))
if mode in ("runtime", "runtime+driver", "runtime+driver_sel", "runtime+driver_sel_kind"):
    notes["rt"] = tryit("rt", lambda: c.activity_enable(K.RUNTIME))
if mode == "runtime+driver":
    notes["drv"] = tryit("drv", lambda: c.activity_enable(K.DRIVER))
if mode == "runtime+driver_sel":
    notes["sel"] = [tryit(n, lambda n=n: c.activity_enable_driver_api(drv_cbid(n), 1)) for n in DRV]
if mode == "runtime+driver_sel_kind":
    notes["drv"] = tryit("drv", lambda: c.activity_enable(K.DRIVER))
    notes["sel"] = [tryit(n, lambda n=n: c.activity_enable_driver_api(drv_cbid(n), 1)) for n in DRV]
print(mode, notes)
c.activity_register_callbacks(lambda: (8 << 20, 0), lambda acts: got.extend(
    (a.kind, getattr(a, "correlation_id", None), getattr(a, "cbid", None), getattr(a, "thread_id", None))
    for a in acts))
import torch

x = torch.randn(64, 64, device="cuda", dtype=torch.float16)
w = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
(w @ w).sum().item(); torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(5000):
    x = x * 1.0001          # runtime-launched elementwise kernel
    y = w @ w               # cuBLAS GEMM
torch.cuda.synchronize(); dt = time.perf_counter() - t0
c.activity_flush_all(1)
kinds = collections.Counter(k for k, *_ in got)
kern = {cid for k, cid, *_ in got if k == int(K.CONCURRENT_KERNEL)}
rt = {cid for k, cid, *_ in got if k == int(K.RUNTIME)}
dr = {cid for k, cid, *_ in got if k == int(K.DRIVER)}
drv_cbids = collections.Counter(cb for k, cid, cb, t in got if k == int(K.DRIVER))
print(f"{mode}: loop {dt*1e3:.0f} ms; records { {K(k).name: n for k, n in kinds.items()} }")
print(f"  kernels {len(kern)}: via runtime {len(kern & rt)}, via driver {len(kern & dr)}, "
      f"both {len(kern & rt & dr)}, neither {len(kern - rt - dr)}")
print("  driver cbids (top)", drv_cbids.most_common(6))
