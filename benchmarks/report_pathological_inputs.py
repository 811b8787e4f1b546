"""Tiny inputs that once cost minutes or gigabytes (issue 14), and how long and how much memory `report` takes on
each, beside a one-kernel trace (what any report costs: start-up and imports).

    python -m benchmarks report_pathological_inputs [--quick]   # 300 MB of whitespace; full: 3 GB (as issue 14's)
    python -m benchmarks.report_pathological_inputs make DIR    # writes the inputs (a few MB on disk)
    python -m benchmarks.report_pathological_inputs measure DIR [--timeout S] [--mem-gb G] [--repo PATH]

`measure` runs `python -m nvprof_wrap report INPUT --format json` for each input in a fresh process under an
address-space limit (RLIMIT_AS, default 4 GB, so that a regression fails instead of taking the machine down) and
prints wall time, peak RSS of the largest process of the tree (the reader and its forked workers; ru_maxrss of the
waited-for children), the exit code and the last line of stderr. --repo runs another checkout's code (PYTHONPATH).
The numbers before and after issue 14 are in docs/reliability.md.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.suite.types import Case, Figure, Result, RunArgs

ROOT = Path(__file__).resolve().parents[1]
NAME = "report_pathological_inputs"
MEASURES = ("report time, peak memory and exit code on tiny inputs that once cost minutes or gigabytes (nested "
            "JSON, gigabytes of whitespace, a 128 MB name, a demangling bomb, a FIFO, 5,000 junk files)")
FLOOR = "report on a one-kernel trace: start-up and imports, what any report costs"
ANCHOR = "none: no other tool is held to these inputs"
QUICK_MB, FULL_MB = 300, 3000  # MB of whitespace after a complete trace
TIMEOUT_S, MEM_GB = 120.0, 4.0


def mangled_bomb(levels: int = 24) -> str:
    """f(A<B,B>, A<A<B,B>,A<B,B>>, …): each parameter is A<prev, prev> through two substitutions, so the
    demangled text doubles per level while the mangled name grows by 10 bytes (24 levels: 243 bytes → 218 MB)."""
    def sid(i: int) -> str:
        if i == 0:
            return "S_"
        n, digits, s = i - 1, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", ""
        while True:
            s, n = digits[n % 36] + s, n // 36
            if n == 0:
                return f"S{s}_"

    return "_Z1f" + "1AI1BS0_E" + "".join(f"S_I{sid(k)}{sid(k)}E" for k in range(2, levels + 1))


def _gzip_stream(path: Path, pieces: Iterable[tuple[bytes, int]]) -> None:
    """Write a gzip file from (bytes, repeat) pieces without holding the whole text."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        for data, repeat in pieces:
            f.writelines(comp.compress(data) for _ in range(repeat))
        f.write(comp.flush())


def make(folder: Path, whitespace_mb: int = 3000) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    # 1. nested arrays: ~300,000 levels in 318 bytes of gzip
    _gzip_stream(folder / "nested.json.gz", [(b'{"traceEvents": [', 1), (b"[" * 100_000, 3)])
    # 2. whitespace: 3 GB of spaces after a complete trace, ~3 MB of gzip
    _gzip_stream(folder / "whitespace.json.gz",
                 [(b'{"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1, "dur": 2}]', 1),
                  (b" " * (1 << 20), whitespace_mb), (b"}", 1)])
    # 3. one 128 MB kernel name (gzip: ~130 KB)
    _gzip_stream(folder / "longname.json.gz", [(b'{"traceEvents": [{"cat": "kernel", "ts": 1, "dur": 2, "name": "', 1),
                                               (b"A" * (1 << 20), 128), (b'"}]}', 1)])
    # 4. a 243-byte mangled name that demangles to 218 MB
    (folder / "mangled_bomb.json").write_text(json.dumps(
        {"traceEvents": [{"cat": "kernel", "name": mangled_bomb(), "ts": 1, "dur": 2, "args": {"device": 0}}]}))
    # 5. a folder with a real capture and a FIFO
    fifo_dir = folder / "with_fifo"
    fifo_dir.mkdir(exist_ok=True)
    trace = {"traceEvents": [{"cat": "kernel", "name": "volta_h884gemm_64x64_ldg8_nn", "ts": 1, "dur": 2,
                              "args": {"device": 0}}]}
    (fifo_dir / "trace.json").write_text(json.dumps(trace))
    if not (fifo_dir / "pipe").exists():
        os.mkfifo(fifo_dir / "pipe")
    # 6. 5,000 junk files beside one capture
    junk = folder / "junk"
    junk.mkdir(exist_ok=True)
    (junk / "trace.json").write_text(json.dumps(trace))
    for i in range(5000):
        (junk / f"note{i:04d}.txt").write_text("not a capture\n")
    with gzip.open(folder / "nested.json.gz") as g:
        depth = len(g.read())
    print(f"wrote {folder}: nested.json.gz {(folder / 'nested.json.gz').stat().st_size} B ({depth:,} B unpacked), "
          f"whitespace.json.gz {(folder / 'whitespace.json.gz').stat().st_size:,} B, "
          f"longname.json.gz {(folder / 'longname.json.gz').stat().st_size:,} B, "
          f"mangled name {len(mangled_bomb())} B")


CASES = ("nested.json.gz", "whitespace.json.gz", "longname.json.gz", "mangled_bomb.json", "with_fifo", "junk")


def measure_one(path: Path, timeout: float, mem_gb: float, repo: Path, python: str | None = None) -> dict[str, Any]:
    """In a child of a fresh process, so that ru_maxrss of the children is this case's alone. python: another
    interpreter whose installed nvprof-wrap runs (a fresh venv with the wheel: what users get), without PYTHONPATH."""
    code = f"""
import json, resource, subprocess, sys, time
t = time.time()
try:
    p = subprocess.run({[python or sys.executable, "-m", "nvprof_wrap", "report", str(path), "--format", "json"]!r},
                       capture_output=True, text=True, timeout={timeout},
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, ({int(mem_gb * 2**30)},) * 2))
    rc, err, out = p.returncode, p.stderr.strip().splitlines(), p.stdout
except subprocess.TimeoutExpired as e:
    rc, err, out = "timeout", [f"killed after {timeout} s"], ""
wall = time.time() - t
try:
    launches = json.loads(out)["launches"] if rc == 0 else None
except (ValueError, KeyError, TypeError):
    launches = None
print(json.dumps({{"wall_s": round(wall, 2), "launches": launches,
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
                  "rc": rc, "stderr_lines": len(err), "last": (err[-1] if err else "")[:160],
                  "stdout_bytes": len(out)}}))
"""
    env = dict(os.environ, PYTHONPATH=str(repo), NO_COLOR="1", NVPROF_WRAP_HISTORY="off")
    if python is not None:
        env.pop("PYTHONPATH")
    # cwd: `python -m` puts the current folder first on sys.path, before PYTHONPATH
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False,
                          timeout=timeout + 60, cwd=repo if python is None else path.parent)
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def run(args: RunArgs) -> Result:
    mb = QUICK_MB if args.quick else FULL_MB
    folder = args.work_dir / f"pathological_{mb}mb"
    if not all((folder / c).exists() for c in CASES):
        make(folder, whitespace_mb=mb)
    what = {"nested.json.gz": "JSON arrays nested ~300,000 levels, 345 B gzipped",
            "whitespace.json.gz": f"{mb:,} MB of spaces after a complete trace (gzipped)",
            "longname.json.gz": "one 128 MB kernel name", "mangled_bomb.json": "a 243 B name demangling to 218 MB",
            "with_fifo": "a folder: a trace beside a FIFO", "junk": "a folder: a trace beside 5,000 other files"}
    floor_input = folder / "with_fifo" / "trace.json"
    got: dict[str, list[dict[str, Any]]] = {c: [] for c in ("floor", *CASES)}
    for _ in range(args.rounds):
        got["floor"].append(measure_one(floor_input, TIMEOUT_S, MEM_GB, ROOT))
        for case in CASES:
            got[case].append(measure_one(folder / case, TIMEOUT_S, MEM_GB, ROOT))
    floor = tuple(float(r["wall_s"]) for r in got["floor"])
    cases = []
    for case in CASES:
        rs = got[case]
        said = said_of(rs[0], folder) if rs[0]["rc"] != 0 else ""
        note = f"exit {rs[0]['rc']}" + (f": {said}" if said else "")
        cases.append(Case(f"{case}: {what[case]}", (
            Figure("one-kernel trace", "floor", "s", floor),
            Figure("report", "measured", "s", tuple(float(r["wall_s"]) for r in rs), versus="one-kernel trace"),
            Figure("peak RSS", "measured", "MB", tuple(float(r["peak_rss_mb"]) for r in rs))), note=note))
    return args.result(tuple(cases))


def said_of(r: dict[str, Any], folder: Path) -> str:
    """The line a refused input gave, without the program's name and the work folder's path."""
    line = str(r["last"]).removeprefix("nvprof-wrap: error: ").replace(f"{folder.resolve()}/", "")
    return line if len(line) <= 110 else line[:109] + "…"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("make", "measure"))
    p.add_argument("folder", type=Path)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--mem-gb", type=float, default=4)
    p.add_argument("--repo", type=Path, default=ROOT)
    p.add_argument("--case", action="append", choices=CASES)
    args = p.parse_args(argv)
    if args.action == "make":
        make(args.folder)
        return 0
    for case in args.case or CASES:
        t = time.time()
        r = measure_one(args.folder / case, args.timeout, args.mem_gb, args.repo.resolve())
        print(f"{case:20s} {r['wall_s']:8.2f} s  {r['peak_rss_mb']:6d} MB  exit {r['rc']}  "
              f"stderr lines {r['stderr_lines']}  {r['last']}", flush=True)
        del t
    return 0


if __name__ == "__main__":
    sys.exit(main())
