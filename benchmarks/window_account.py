"""Issue 27: what a capture window itself costs a nanoGPT job, from the job's own iteration times — a direct
account where whole-job wall times drift more than the cost (the H200 machine: ±20-30% between runs of one
command). Per run: the iterations from A-1 to B (the step that opens the window, the window, the step that closes
it) and B+1 (where a stop beside the job ends and, under nsys, its CUPTI is detached), each over the median of the
30 steps on either side of them; their sum, in seconds and as a share of the training loop after step 20. Runs with
no window (the unprofiled job) get the same account: their sum is the account's own noise.

    python3 -m benchmarks.window_account DIR_OR_TGZ... [--window 100:120] [--runs REGEX]

DIR: sub-folders PREFIX_VARIANT_ROUND holding stdout.log (benchmarks/gpu/capture_window.sh writes them); a .tgz of them
(its *_stdout.tgz) is read in place.
"""
from __future__ import annotations

import argparse
import io
import re
import statistics
import sys
import tarfile
from pathlib import Path

from benchmarks.gpu.nano_iterations import iterations_of
from benchmarks.window_rounds import RUN


def outputs(paths: list[Path]):
    """(run, variant, its stdout's lines) for every run under each folder or in each archive."""
    for path in paths:
        if path.is_dir():
            for log in sorted(path.glob("*/stdout.log")):
                if m := RUN.match(log.parent.name):
                    yield m[0], m["variant"], log.read_text(errors="replace").splitlines()
            continue
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                run, _, name = member.name.partition("/")
                if (m := RUN.match(run)) and name == "stdout.log" and member.isfile():
                    text = io.TextIOWrapper(tar.extractfile(member), errors="replace").read()
                    yield run, m["variant"], text.splitlines()


def account(lines: list[str], lo: int, hi: int) -> tuple[float, float] | None:
    """(seconds the window's steps took over their neighbours' median, the loop after step 20 in seconds)."""
    times = iterations_of(lines)
    near = [times[i] for i in (*range(lo - 31, lo - 1), *range(hi + 2, hi + 32)) if i in times]
    if len(near) < 30 or any(i not in times for i in range(lo - 1, hi + 2)):
        return None
    m = statistics.median(near)
    return sum(times[i] - m for i in range(lo - 1, hi + 2)) / 1e3, sum(t for i, t in times.items() if i > 20) / 1e3


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--window", default="100:120")
    p.add_argument("--runs", default=".", help="only runs whose name matches this")
    a = p.parse_args(argv)
    lo, hi = (int(x) for x in a.window.split(":"))
    by_variant: dict[str, list[float]] = {}
    print("| run | window's steps over their neighbours (s) | loop after step 20 (s) | share of the loop |")
    print("|---|---|---|---|")
    for run, variant, lines in outputs(a.paths):
        got = account(lines, lo, hi) if re.search(a.runs, run) else None
        if got is None:
            continue
        extra, loop = got
        by_variant.setdefault(variant, []).append(extra / loop)
        print(f"| {run} | {extra:.3f} | {loop:.2f} | {extra / loop:.1%} |")
    for variant, shares in sorted(by_variant.items()):
        print(f"account {variant}: {len(shares)} runs, share of the loop median {statistics.median(shares):.1%} "
              f"({min(shares):.1%} to {max(shares):.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
