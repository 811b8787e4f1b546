"""Every report of every capture this project has, in every format, rendered by one checkout: the proof that a
change of layout (moves and cuts) changed no behaviour (issue 24). Run it on two checkouts and compare:

    python benchmarks/same_reports.py OUT_A            # in the checkout before (PYTHONPATH=that checkout)
    python benchmarks/same_reports.py OUT_B            # in the checkout after
    python benchmarks/same_reports.py --compare OUT_A OUT_B

Inputs: the bundled samples, tests/data (run folders, console logs, public traces) and the shared fixtures
(../shared/fixtures or $NVPROF_WRAP_FIXTURES: public/, h200/, wild/), each copied once into one folder outside both
checkouts (the first run's OUT_A/inputs, reused by later runs through --inputs) so that every path a report prints
is the same. Each input gets `report` as table (COLUMNS=120, NO_COLOR), json, csv, markdown and html, and `kernels
--format json`; a refusal's stderr and exit code are part of the output. Written to OUT/<input>.<kind>; the
comparison lists every file that differs.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("NVPROF_WRAP_FIXTURES") or ROOT.parent / "shared" / "fixtures")
KINDS = {"table": ["report"], "json": ["report", "--format", "json"], "csv": ["report", "--format", "csv"],
         "md": ["report", "--format", "markdown"], "html": ["report", "--format", "html"],
         "kernels.json": ["kernels", "--format", "json"]}


def gather(inputs: Path) -> list[Path]:
    """Copy every input once (a folder keeps its shape); the list of what to report."""
    if not inputs.exists():
        inputs.mkdir(parents=True)
        sources = [*(ROOT / "nvprof_wrap" / "samples").iterdir(), *(ROOT / "tests" / "data" / "h200_runs").iterdir(),
                   *(p for p in (ROOT / "tests" / "data" / "h100_runs").iterdir() if p.is_dir()),
                   *(ROOT / "tests" / "data" / "console").glob("*.log"),
                   *(ROOT / "tests" / "data" / "public_mit").glob("*.gz")]
        for sub in ("public", "h200", "wild"):
            if (FIXTURES / sub).is_dir():
                sources += sorted(p for p in (FIXTURES / sub).iterdir() if p.name != "README.md")
        for src in sorted(sources):
            dst = inputs / f"{src.parent.name}__{src.name}"
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, dst)
    return sorted(inputs.iterdir())


def render(inputs: list[Path], out: Path) -> None:
    from nvprof_wrap.cli import main

    os.environ.update(COLUMNS="120", NO_COLOR="1", NVPROF_WRAP_HISTORY="off")
    out.mkdir(parents=True, exist_ok=True)
    for path in inputs:
        for kind, argv in KINDS.items():
            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                try:
                    code = main([*argv, str(path)])
                except SystemExit as e:
                    code = e.code
            (out / f"{path.name}.{kind}").write_text(f"exit {code}\n--- stderr\n{stderr.getvalue()}--- stdout\n"
                                                     f"{stdout.getvalue()}")


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir() if p.is_file()} | {p.name for p in b.iterdir() if p.is_file()})
    differ = [n for n in names if not ((a / n).is_file() and (b / n).is_file()
                                       and (a / n).read_bytes() == (b / n).read_bytes())]
    print(f"{len(names)} outputs, {len(differ)} differ")
    for n in differ:
        print(f"  {n}")
    return 1 if differ else 0


def main_(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", nargs="+")
    p.add_argument("--compare", action="store_true")
    p.add_argument("--inputs", help="the copied inputs of an earlier run (default: OUT/../same-reports-inputs)")
    args = p.parse_args(argv)
    if args.compare:
        return compare(Path(args.out[0]), Path(args.out[1]))
    out = Path(args.out[0]).resolve()
    inputs = Path(args.inputs).resolve() if args.inputs else out.parent / "same-reports-inputs"
    render(gather(inputs), out)
    print(f"{len(list(out.iterdir()))} outputs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main_())
