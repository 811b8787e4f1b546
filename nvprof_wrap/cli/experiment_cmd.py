"""nvprof-wrap experiment WORKLOAD [--precisions fp32,fp16,mixed] [--backend ...] [-- ARGS]

Runs the workload once per precision under the profiler and prints one side-by-side table: wall time
per step, GPU kernel time, tensor-core share, memcpy share, GPU idle, kernel launches per step, final
loss / accuracy / validation accuracy, and a training-health verdict. WORKLOAD is a script path or the
name of one in workloads/ (reuters_mlp, convnet, matmul_probe). Each precision runs as
`python WORKLOAD --precision P ARGS`; P is one of fp32, fp16, bf16, mixed (what the workloads accept), checked
before anything runs.

examples:
  nvprof-wrap experiment reuters_mlp
  nvprof-wrap experiment convnet --precisions fp32,bf16,mixed --backend nsys -- --epochs 2
  nvprof-wrap experiment workloads/gpt_train.py --precisions fp32,bf16 --format markdown
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._args import Subcommands, add_format, add_save, render_options
from nvprof_wrap.cli._write import check_output, put, say
from nvprof_wrap.cli.run_cmd import add_hardware, add_numerics, annotate_kinds
from nvprof_wrap.errors import BadInput
from nvprof_wrap.launch import CHOICES
from nvprof_wrap.launch.base import RunSpec
from nvprof_wrap.launch.runner import execute
from nvprof_wrap.model import HealthVerdict
from nvprof_wrap.pipeline.stores import report_run
from nvprof_wrap.renderers import Experiment, render
from nvprof_wrap.report.experiment import ExperimentRow, fix_precision, row
from nvprof_wrap.report.health import health_from_run
from nvprof_wrap.report.numerics import with_numerics
from nvprof_wrap.run import Manifest, Run, read_manifest

WORKLOADS = Path(__file__).resolve().parents[1] / "workloads"  # a link to ../../workloads; a copy when installed
CLASSES = {"reuters_mlp": 46}
PRECISIONS = ("fp32", "fp16", "bf16", "mixed")  # workloads/_common.py: the --precision every workload accepts


def add_parser(sub: Subcommands, name: str) -> None:
    p = sub.add_parser(name, help="run a workload per precision and compare side by side", description=__doc__,
                       epilog=_exit.EXPERIMENT, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workload")
    p.add_argument("--precisions", default="fp32,fp16,mixed",
                   help="comma-separated, run in this order (default: fp32,fp16,mixed)")
    p.add_argument("--backend", choices=CHOICES, default="auto",
                   help="profiler (default: auto, the first usable here: nsys, then cupti, then nvprof; none: no "
                        "profiler, the job's log, health and numerics only)")
    p.add_argument("--nsys", help="path of the nsys executable (default: $NVPROF_WRAP_NSYS, else nsys on PATH)")
    p.add_argument("--annotate", metavar="keras,torch", type=annotate_kinds,
                   help="NVTX ranges per layer / module / op (see run; default: none)")
    add_numerics(p)
    p.add_argument("--try-fix", action="store_true",
                   help="where a precision's numerics name a cause (it turns --numerics on), run the workload again "
                        "with the fix that can work (mixed: float32 master weights and loss scaling; bf16: float32's "
                        "range) and add its row: did health become healthy?")
    p.add_argument("-o", "--output", help="experiment folder (default runs/experiment-NAME-TIMESTAMP)")
    p.add_argument("--force", action="store_true", help="replace the runs that -o DIR already holds")
    p.add_argument("--verbose", action="store_true",
                   help="show the profiler's own output live too (by default only in each run's logs)")
    p.add_argument("--no-run", action="store_true",
                   help="do not run: rebuild the table from the per-precision run folders already in -o DIR")
    add_hardware(p)
    add_format(p)
    add_save(p, "the table")


def resolve(workload: str) -> Path:
    p = Path(workload)
    for cand in (p, WORKLOADS / workload, WORKLOADS / f"{workload}.py"):
        if cand.is_file():
            return cand.resolve()
    known = sorted(x.stem for x in WORKLOADS.glob("*.py") if not x.stem.startswith("_"))
    raise BadInput(workload, f"no such workload (a script path, or one of: {', '.join(known)})")


def _row(precision: str, folder: Path, manifest: Manifest, script_stem: str) -> ExperimentRow:
    return _checked(precision, folder, manifest, script_stem)[0]


def _checked(precision: str, folder: Path, manifest: Manifest,
             script_stem: str) -> tuple[ExperimentRow, HealthVerdict]:
    """The row of a precision's run, and its health (with the numerics' verdict, where the run recorded them)."""
    rep = report_run(folder, warn=say, health=False)
    health = with_numerics(health_from_run(Run(folder).metrics_file, None, CLASSES.get(script_stem),
                                           log_paths=Run(folder).logs), folder)
    return row(precision, folder, manifest, rep, health), health


def _precisions(text: str) -> list[str]:
    """--precisions, refused before any workload runs when it names one the workloads do not know."""
    wanted = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in PRECISIONS]
    if unknown or not wanted or len(set(wanted)) != len(wanted):
        why = f"unknown precision {unknown[0]!r}" if unknown else "empty" if not wanted else "a precision twice"
        raise BadInput(None, f"--precisions {text!r}: {why} (choose from {', '.join(PRECISIONS)})")
    return wanted


def run(args: argparse.Namespace) -> int:
    check_output(args.save, [args.output] if args.no_run else (), into=None if args.no_run else args.output)
    precisions = _precisions(args.precisions)
    if args.no_run:
        if not args.output:
            raise BadInput(None, "--no-run needs -o DIR, the folder of an earlier experiment")
        base, stem = Path(args.output), Path(args.workload).stem
        rows = []
        for precision in precisions:
            mf = Run(base / precision).manifest_file
            if not mf.is_file():
                raise BadInput(mf, "no run of this precision in the experiment folder")
            manifest = read_manifest(mf)
            if manifest.exit_code is None:
                raise BadInput(mf, "this run never ended (its wrapper was killed?): run the experiment again")
            rows.append(_row(precision, base / precision, manifest, stem))
    else:
        script = resolve(args.workload)
        extra = args.passthrough or []
        base = Path(args.output or f"runs/experiment-{script.stem}-{time.strftime('%Y%m%d-%H%M%S')}")
        rows = []
        numerics = args.numerics or args.try_fix

        def once(precision: str, name: str) -> tuple[ExperimentRow, HealthVerdict]:
            cmd = [sys.executable, str(script), "--precision", precision, *extra]
            folder, manifest = execute(RunSpec(cmd, args.backend, str(base / name), nsys=args.nsys,
                                               quiet_stdout=args.format != "table", annotate=args.annotate,
                                               force=args.force, verbose=args.verbose, hardware=args.hardware,
                                               hardware_interval_s=args.hardware_interval,
                                               gpu_metrics_hz=args.gpu_metrics_frequency,
                                               numerics=numerics))
            return _checked(precision, folder, manifest, script.stem)

        fixes: list[tuple[str, str]] = []
        for precision in precisions:
            found, health = once(precision, precision)
            rows.append(found)
            fix = fix_precision(health) if args.try_fix else None
            if fix is not None and fix != precision and fix not in precisions and fix not in {f for f, _ in fixes}:
                fixes.append((fix, precision))
        for fix, broken in fixes:  # each fix run once, after the asked precisions
            found, _health = once(fix, f"{fix}-fix")
            rows.append(replace(found, precision=f"{fix} (fix for {broken})",
                                findings=(f"the fix for {broken}'s numerics: {found.health}", *found.findings)))
    put(args, render(args.format, Experiment(tuple(rows)), render_options(args)), "experiment table")
    # a run whose manifest recorded no end (None) did not succeed; it was a TypeError in max() before
    return max((1 if r.exit_code is None else r.exit_code for r in rows), default=0)
