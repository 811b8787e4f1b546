"""Diagnosis on a GPU: does a profiling window opened inside a running process (nvprof_wrap.profile) get the launch
calls' API records that attribute kernels to NVTX ranges? Three ways, each in its own process:
raw buffers + per-call enabling (the default), cupti-python objects + per-call enabling, raw + the RUNTIME/DRIVER
kinds. Prints one JSON line per way: kernels, runtime and driver records, NVTX ranges, the ops the report found.

    python benchmarks/gpu/window_api_records.py OUT_DIR
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

CHILD = """
import sys, torch, nvprof_wrap
a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
(a @ a).sum().item()
p = nvprof_wrap.profile(sys.argv[1], steps=(1, 3))
with p:
    for step in range(4):
        for _ in range(3):
            c = a @ a
        torch.cuda.synchronize()
        p.step()
print("OPS", sorted((o.op, o.launches) for o in p.report.ops), flush=True)
print("CAPTURE", p.capture, flush=True)
"""
WAYS = {"raw_cbid": {}, "objects_cbid": {"NVPROF_WRAP_CUPTI_RAW": "0"},
        "raw_kinds": {"NVPROF_WRAP_CUPTI_RUNTIME": "kinds"}}


def main(out: Path) -> int:
    for way, env in WAYS.items():
        proc = subprocess.run([sys.executable, "-c", CHILD, str(out / way)], env={**os.environ, **env},
                              capture_output=True, text=True, timeout=120, check=False)
        lines = dict(ln.split(" ", 1) for ln in proc.stdout.splitlines() if ln.startswith(("OPS", "CAPTURE")))
        counts, meta = {}, {}
        if "CAPTURE" in lines and Path(lines["CAPTURE"]).is_file():
            c = sqlite3.connect(lines["CAPTURE"])
            counts = {t: c.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                      for t in ("kernel", "runtime", "driver", "nvtx")}
            meta = dict(c.execute("SELECT key, value FROM meta"))
        print(json.dumps({"way": way, "rc": proc.returncode, "counts": counts, "ops": lines.get("OPS"),
                          "api_records": meta.get("api_records"), "records": meta.get("records"),
                          "stderr": proc.stderr[-600:]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
