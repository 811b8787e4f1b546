"""Time and peak memory of reading a big XSpace: N kernel launches on one stream of an H200 plane, built in the
structure of tests/xspace_build.py. Usage: python -m benchmarks.xplane_scale 1000000 (prints seconds, peak RSS)."""
from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def build(n: int, path: Path) -> None:
    from nvprof_wrap.readers import _xplane_schema
    from tests import xspace_build as xb

    planes = xb.h200_jax_step()
    stream = planes[1].lines[0]
    base = list(stream.events)
    stream.events = [xb.Ev(base[i % 4].name, i * 1000, 500, base[i % 4].stats) for i in range(n)]
    path.write_bytes(xb.xspace(planes, _xplane_schema.own()))


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    if len(sys.argv) > 3:  # a child that builds the file
        build(n, Path(sys.argv[2]))
        return 0
    if len(sys.argv) > 2:  # the measured child: read only, so that its peak RSS is the reader's (ru_maxrss survives
        # exec: the parent that starts it stays small)
        from nvprof_wrap.readers import xplane

        t = time.perf_counter()
        c = xplane.read(Path(sys.argv[2]))
        print(f"{sum(k.launches for k in c.kernels):,} launches read in {time.perf_counter() - t:.2f} s, "
              f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.xplane.pb"
        subprocess.check_call([sys.executable, "-m", "benchmarks.xplane_scale", str(n), str(path), "--build"])
        print(f"{path.stat().st_size / 1e6:.1f} MB XSpace")
        return subprocess.call([sys.executable, "-m", "benchmarks.xplane_scale", str(n), str(path)])


if __name__ == "__main__":
    sys.exit(main())
