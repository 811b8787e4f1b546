"""Time and peak memory of reading a big XSpace (a JAX/TensorFlow profile, .xplane.pb): N kernel launches on one
stream of an H200 plane, built in the structure of tests/xspace_build.py, read by readers/xplane in a fresh process.

    python -m benchmarks read_xplane [--quick]           # 100k launches; full: 1M
    python -m benchmarks.read_xplane 1000000              # one size, printed: seconds, peak RSS

The file is built by a child process and read by another that does nothing else, so that the reader's peak RSS is
its own (ru_maxrss survives exec: the parent that starts it stays small).
"""
from __future__ import annotations

import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.suite.measure import Measured, measure, python, values
from benchmarks.suite.types import Case, Figure, Result, RunArgs

NAME = "read_xplane"
MEASURES = "time and peak memory of reading a generated XSpace (.xplane.pb) of N kernel launches on one H200 stream"
FLOOR = "the file's bytes read whole in a fresh Python process: what any reader of it pays"
ANCHOR = "none measured: xprof (TensorBoard's profile plugin) reads the same file, and is not installed here"
QUICK, FULL = (100_000,), (1_000_000,)
READ_FLOOR = "import sys; print(len(open(sys.argv[1], 'rb').read()))"


def build(n: int, path: Path) -> None:
    from nvprof_wrap.readers import _xplane_schema
    from tests import xspace_build as xb

    planes = xb.h200_jax_step()
    stream = planes[1].lines[0]
    base = list(stream.events)
    stream.events = [xb.Ev(base[i % 4].name, i * 1000, 500, base[i % 4].stats) for i in range(n)]
    path.write_bytes(xb.xspace(planes, _xplane_schema.own()))


def read(path: Path) -> str:
    """Read only, in this process: the line the measured child prints."""
    from nvprof_wrap.readers import xplane

    t = time.perf_counter()
    c = xplane.read(path)
    return (f"{sum(k.launches for k in c.kernels):,} launches read in {time.perf_counter() - t:.2f} s, "
            f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def generated(n: int, work_dir: Path) -> Path:
    path = work_dir / f"xplane_{n}.xplane.pb"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.check_call(python("-m", "benchmarks.read_xplane", str(n), str(path), "--build"))
    return path


def run(args: RunArgs) -> Result:
    cases = []
    for n in QUICK if args.quick else FULL:
        path = generated(n, args.work_dir)
        got: dict[str, list[Measured]] = {"floor": [], "read": []}
        for _ in range(args.rounds):
            got["floor"].append(measure(python("-c", READ_FLOOR, str(path))))
            got["read"].append(measure(python("-m", "benchmarks.read_xplane", str(n), str(path)), keep_stdout=True))
        inside = []
        for m in got["read"]:
            found = re.search(r"([\d,]+) launches read in ([\d.]+) s", m.stdout)
            if found is None or int(found[1].replace(",", "")) != n:
                raise RuntimeError(f"the reader did not read {n:,} launches: {m.stdout.strip()}")
            inside.append(float(found[2]))
        (floor, _), (wall, mem) = values(got["floor"]), values(got["read"])
        cases.append(Case(f"{n:,} launches, {path.stat().st_size / 1e6:.0f} MB", (
            Figure("bytes read, fresh process", "floor", "s", floor),
            Figure("read, fresh process", "measured", "s", wall, versus="bytes read, fresh process"),
            Figure("read, inside the process", "measured", "s", tuple(inside)),
            Figure("peak memory", "measured", "MB", mem))))
    return args.result(tuple(cases))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    n = int(argv[0]) if argv else 1_000_000
    if len(argv) > 2:  # a child that builds the file
        build(n, Path(argv[1]))
        return 0
    if len(argv) > 1:  # the measured child: read only
        print(read(Path(argv[1])))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = generated(n, Path(tmp))
        print(f"{path.stat().st_size / 1e6:.1f} MB XSpace")
        return subprocess.call(python("-m", "benchmarks.read_xplane", str(n), str(path)))


if __name__ == "__main__":
    sys.exit(main())
