"""The benchmark suite's command line.

    python -m benchmarks                              # the benchmarks: name, what it measures, its floor, its anchor
    python -m benchmarks NAME [--quick] [--out DIR]   # run one; writes DIR/NAME.json (default benchmarks/results/,
                                                      # benchmarks/results/quick/ with --quick)
    python -m benchmarks all --quick                  # every benchmark that can run here
    python -m benchmarks compare OLD.json NEW.json [--by-floor]   # side by side; exit 1 when a time is > 5% slower
    python -m benchmarks docs [--check]               # docs/performance.md's tables from benchmarks/results/*.json
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import textwrap
from pathlib import Path

from benchmarks.suite import compare, docs, registry
from benchmarks.suite.machine import ROOT
from benchmarks.suite.measure import measure, report_cmd
from benchmarks.suite.types import Result, RunArgs, Unavailable


def listing() -> str:
    out = []
    for b in registry.every():
        out.append(b.NAME)
        for label, text in (("measures", b.MEASURES), ("floor", b.FLOOR), ("anchor", b.ANCHOR)):
            out.append(textwrap.fill(text, 116, initial_indent=f"    {label + ':':10}", subsequent_indent=" " * 14))
    return "\n".join(out)


def run_one(name: str, a: argparse.Namespace, command: str) -> Path:
    bench = registry.load(name)
    rounds = a.rounds or (1 if a.quick else 3)
    args = RunArgs(bench=bench, quick=a.quick, work_dir=a.work_dir, rounds=rounds, command=command, note=a.note)
    result = bench.run(args)
    out = a.out or (docs.RESULTS / "quick" if a.quick else docs.RESULTS)
    return result.write(out / f"{name}.json")


def _bytecode_as_installed(work_dir: Path) -> None:
    """The measured processes import the package from compiled bytecode, as an installed wheel does (pip compiles
    it): a machine with PYTHONDONTWRITEBYTECODE set recompiled ~400 modules in every measured process (~0.45 s of a
    2M-launch report on 2 cores). The bytecode goes into the work dir (PYTHONPYCACHEPREFIX), never the checkout,
    written by one report of a bundled sample here, before anything is measured."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(work_dir / "pycache")
    with tempfile.TemporaryDirectory() as tmp:
        measure(report_cmd(ROOT / "nvprof_wrap" / "samples" / "torch_ops"), env={"NVPROF_WRAP_HISTORY": f"{tmp}/h"})


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(listing())
        return 0
    if argv[0] == "compare":
        p = argparse.ArgumentParser(prog="python -m benchmarks compare")
        p.add_argument("old", type=Path)
        p.add_argument("new", type=Path)
        p.add_argument("--by-floor", action="store_true", help="flag on each time over its floor")
        c = p.parse_args(argv[1:])
        text, slower = compare.render(Result.read(c.old), Result.read(c.new), c.by_floor)
        print(text)
        return 1 if slower else 0
    if argv[0] == "docs":
        p = argparse.ArgumentParser(prog="python -m benchmarks docs")
        p.add_argument("--check", action="store_true", help="exit 1 when the doc is not what the results give")
        d = p.parse_args(argv[1:])
        before = docs.DOC.read_text(encoding="utf-8")
        after = docs.generate(before, docs.results())
        if d.check:
            print("docs/performance.md is " + ("up to date" if after == before else "stale: python -m benchmarks docs"))
            return 0 if after == before else 1
        docs.DOC.write_text(after, encoding="utf-8")
        print("docs/performance.md " + ("unchanged" if after == before else "rewritten"))
        return 0
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=(__doc__ or "").splitlines()[0])
    p.add_argument("name", help="a benchmark's name, or all")
    p.add_argument("--quick", action="store_true", help="small sizes, one round: minutes, not a bar")
    p.add_argument("--out", type=Path, help="folder for NAME.json")
    p.add_argument("--rounds", type=int, help="repeats of each measurement (default 1 with --quick, else 3)")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/nvprof-wrap-benchmarks"),
                   help="generated captures, kept for the next run")
    p.add_argument("--note", default="", help="the machine's note: its load, what ran beside")
    a = p.parse_args(argv)
    command = "python -m benchmarks " + shlex.join(argv)
    _bytecode_as_installed(a.work_dir)
    names = registry.NAMES if a.name == "all" else (a.name,)
    for name in names:
        try:
            print(f"{name}: {run_one(name, a, command)}", flush=True)
        except Unavailable as e:
            print(f"{name}: skipped: {e}", flush=True)
            if a.name != "all":
                return 2
        except KeyError as e:
            print(e.args[0], file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
