"""nvprof-wrap verify [--top N] [-o DIR] [--from FILE] -- CMD ARGS...

Ground truth from hardware counters. Runs CMD under Nsight Compute (children followed, clocks left
alone) collecting only the tensor-pipe metrics this GPU has, on the N kernels with the most GPU time in
an earlier `nvprof-wrap run` of the same command (or every kernel, up to --launch-count launches, when
there is none). Every kernel then gets a verdict "by counters"; the report opens with what the counters
said against the name rules (kernels measured, agreeing, decided where the names could not, each contradiction),
and --fail-on-disagreement exits 1 when any kernel's counters contradict its name's verdict (a CI gate).
`verify --from FILE [PATH...]` reads an existing `ncu --csv` export instead of running, and attaches its
verdicts to the captures in PATH (a run folder, say).

examples:
  nvprof-wrap verify -- python train.py --steps 20
  nvprof-wrap verify --top 10 --launch-count 200 -- python train.py
  nvprof-wrap verify --from ncu.csv runs/train-fp16
  nvprof-wrap verify --from ncu.csv --fail-on-disagreement         # a CI gate on the name rules
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._args import WIDE_HELP, Subcommands, add_format, add_save, positive, render_options
from nvprof_wrap.cli._write import check_output, put
from nvprof_wrap.errors import BadInput
from nvprof_wrap.pipeline.verify import counters_of, report_with_counters
from nvprof_wrap.renderers import render


def add_parser(sub: Subcommands, name: str) -> None:
    p = sub.add_parser(name, help="measure tensor-core use with Nsight Compute counters", description=__doc__,
                       epilog=_exit.VERIFY, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--top", type=positive, default=20, help="kernels to measure from an earlier run (default 20)")
    p.add_argument("--launch-count", type=positive, default=500,
                   help="at most this many launches are profiled (default 500)")
    p.add_argument("--from", dest="from_csv", type=Path,
                   help="an existing ncu --csv export to read instead (default: run ncu)")
    p.add_argument("--runs", type=Path, default=Path("runs"), help="where earlier runs are looked for (default: runs)")
    p.add_argument("--ncu", help="path of the ncu executable (default: $NVPROF_WRAP_NCU, else ncu on PATH)")
    p.add_argument("-o", "--output", help="verify folder (default runs/verify-NAME-TIMESTAMP)")
    p.add_argument("--limit", type=positive, default=15, help="kernels to list (default 15)")
    p.add_argument("--fail-on-disagreement", action="store_true",
                   help="exit 1 when any kernel's counters contradict its name's verdict (the report is still printed)")
    p.add_argument("--wide", action="store_true", help=WIDE_HELP)
    add_format(p)
    add_save(p)
    p.add_argument("paths", nargs="*", metavar="PATH", help="with --from: captures to attach the verdicts to")


def run(args: argparse.Namespace) -> int:
    check_output(args.save, [args.from_csv, *args.paths], into=args.output)
    if args.from_csv:
        csv, attach = args.from_csv, [Path(p) for p in args.paths]
    else:
        if not args.passthrough:
            raise BadInput(None, "nothing to verify: nvprof-wrap verify [options] -- CMD ARGS, or --from FILE")
        csv, attach = counters_of(args.passthrough, ncu_path=args.ncu, runs=args.runs, output=args.output,
                                  top=args.top, launch_count=args.launch_count, quiet_stdout=args.format != "table")
    rep = report_with_counters(csv, attach)
    put(args, render(args.format, rep, render_options(args, wide=args.wide, limit=args.limit)), "report")
    against = rep.counter_check.disagreements if rep.counter_check else ()
    if args.fail_on_disagreement and against:
        print(f"nvprof-wrap: --fail-on-disagreement: the counters of {len(against)} kernel(s) contradict the "
              "name rules (listed in the report)", file=sys.stderr)
        return 1
    if rep.disagreements and args.format == "table":
        print(f"nvprof-wrap: {len(rep.disagreements)} kernel(s) where counters and name rules disagree",
              file=sys.stderr)
    return 0
