"""nvprof-wrap summarize CAPTURE... -o DIR — each capture's summary, for a report merged afterwards.

Reading is the costly part of a report; its result per capture is small. Where a job's ranks wrote captures too big
to read on one machine, summarise each rank's captures where they lie (a Slurm array task per rank or per node),
then `nvprof-wrap report DIR` merges the summaries into the report the captures themselves give (docs/ranks.md).
A summary remembers which data version read it and through which window (--steps / --window): reported with another
version or window, it is refused. Only DIR/NAME.summary.json.gz files are written; anything else is left alone.

examples:
  nvprof-wrap summarize /scratch/job42/rank$SLURM_ARRAY_TASK_ID -o /scratch/job42/summaries
  nvprof-wrap report /scratch/job42/summaries
  nvprof-wrap summarize runs/ddp --steps 100:120 -o summaries && nvprof-wrap report summaries --steps 100:120
"""
from __future__ import annotations

import argparse
from pathlib import Path

from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._args import Subcommands, add_window, positive, window_args
from nvprof_wrap.cli._progress import reading
from nvprof_wrap.cli._write import say
from nvprof_wrap.pipeline.summarize import summarize


def add_parser(sub: Subcommands, name: str) -> None:
    p = sub.add_parser(name, help="summarise captures into small files that `report` merges (per rank, per task)",
                       description=__doc__, epilog=_exit.READ, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", type=Path, metavar="CAPTURE")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="DIR",
                   help="the folder to write the summaries into (made when missing; required: no default)")
    p.add_argument("--jobs", "-j", type=positive, default=None, metavar="N",
                   help="summarise up to N captures side by side (default: one per core)")
    add_window(p)


def run(args: argparse.Namespace) -> int:
    with reading() as progress:
        written, skipped = summarize(args.paths, args.output, workers=args.jobs, progress=progress,
                                     **window_args(args))
    for path, why in skipped:
        say(f"nvprof-wrap: skipped {path}: {why}")
    say(f"nvprof-wrap: {len(written)} summar{'y' if len(written) == 1 else 'ies'} in {args.output}")
    return 0
