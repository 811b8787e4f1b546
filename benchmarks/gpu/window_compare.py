"""Issue 27: a capture window against the same steps cut out of a whole-job capture afterwards.

    python3 benchmarks/gpu/window_compare.py WHOLE_STEPS.json WINDOW.json

Both are `nvprof-wrap report --format json` outputs: WHOLE_STEPS of a whole-job run read with `--steps A:B`, WINDOW of
a run made with `run --capture-steps A:B` of the same deterministic job. Prints the kernel launches per name of each,
every name whose count differs, and the per-op attribution of each (ops with kernels, launches attributed); the last
line says MATCH or DIFFER.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    whole, window = (json.loads(Path(p).read_text()) for p in argv[:2])
    a = {k["name"]: k["launches"] for k in whole["kernels"]}
    b = {k["name"]: k["launches"] for k in window["kernels"]}
    print(f"whole --steps: {len(a)} kernels, {sum(a.values()):,} launches; window: {len(b)} kernels, "
          f"{sum(b.values()):,} launches")
    for label, d in (("whole --steps", whole), ("window", window)):
        ops = d.get("ops") or []
        print(f"{label}: {len(ops)} ops, {sum(o['launches'] for o in ops):,} launches attributed; "
              f"headline {d.get('headline')}; job {d.get('job')}")
    differ = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
    for name in differ[:20]:
        print(f"  differs: {a.get(name)} vs {b.get(name)}  {name[:110]}")
    print("MATCH" if not differ else f"DIFFER ({len(differ)} names)")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
