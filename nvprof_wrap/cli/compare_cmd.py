"""nvprof-wrap compare BEFORE AFTER — two runs side by side: did the GEMMs move to tensor cores, in which precision,
and did the step get faster?

BEFORE and AFTER are captures, run folders or the names of recorded runs (nvprof-wrap runs); a name that several
recorded run folders carry is refused with them listed (give the folder). Tables per kernel family,
per precision, per framework op and per kind of GPU time give before, after and the difference, as time and as a
share of each run's own time; step time comes from the runs' metrics when both have them. The gates of `report`
apply to AFTER.

examples:
  nvprof-wrap compare runs/gpt-fp32 runs/gpt-bf16
  nvprof-wrap compare runs/gpt-fp32 runs/gpt-bf16 --steps 10:30     # the steady state of both
  nvprof-wrap compare gpt-fp32 gpt-bf16 --format markdown >> $GITHUB_STEP_SUMMARY
  nvprof-wrap compare before.sqlite after.sqlite -o compare.html --min-tensor-core-share 0.3
"""
from __future__ import annotations

import argparse

from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._args import (
    Subcommands,
    add_format,
    add_gates,
    add_output,
    add_warmup,
    add_window,
    positive,
    render_options,
    window_args,
)
from nvprof_wrap.cli._gates import gate, gates
from nvprof_wrap.cli._progress import reading
from nvprof_wrap.cli._write import check_output, deliver
from nvprof_wrap.pipeline.stores import compare_runs, resolve_run
from nvprof_wrap.renderers import render


def add_parser(sub: Subcommands, name: str) -> None:
    p = sub.add_parser(name, help="two runs side by side: tensor-core share, precisions, ops, step time",
                       description=__doc__, epilog=_exit.GATED, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("before", metavar="BEFORE", help="a capture, a run folder or a recorded run's name")
    p.add_argument("after", metavar="AFTER", help="the same, for the run to compare with BEFORE")
    p.add_argument("--limit", type=positive, default=15, help="rows per table in the terminal (default 15)")
    add_format(p)
    add_output(p)
    add_window(p)
    add_warmup(p)
    add_gates(p)


def run(args: argparse.Namespace) -> int:
    check_output(args.output)
    before, after = resolve_run(args.before), resolve_run(args.after)
    check_output(args.output, [before, after])
    with reading() as progress:  # the same window or steps of both runs
        c, after_report = compare_runs(before, after, progress=progress,
                                          warmup=getattr(args, "with_warmup", False), **window_args(args))
    results = gates(args, after_report)
    opts = render_options(args, limit=args.limit, gates=tuple(results) or None)
    deliver(render(args.format, c, opts), args.output, f"{args.format} comparison")
    return gate(args, after_report, results)
