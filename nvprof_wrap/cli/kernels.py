"""nvprof-wrap kernels PATH... — every kernel in a table: launches, time, share, tensor core ✓/✗/?, precision, reason.

examples:
  nvprof-wrap kernels runs/train-fp16 --tc no --sort time --limit 20
  nvprof-wrap kernels capture.nsys-rep --grep gemm --wide
  nvprof-wrap kernels runs/train-fp16 -o kernels.csv
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._args import (
    Subcommands,
    add_format,
    add_output,
    add_store,
    add_sum,
    add_window,
    positive,
    render_options,
)
from nvprof_wrap.cli._write import check_output, put
from nvprof_wrap.cli.report_cmd import build
from nvprof_wrap.errors import BadInput
from nvprof_wrap.renderers import Kernels, render

SORTS = {"time": lambda k: (-k.total_ns, k.name), "launches": lambda k: (-k.launches, k.name), "name": lambda k: k.name}


def add_parser(sub: Subcommands, name: str) -> None:
    p = sub.add_parser(name, help="list kernels with their tensor-core verdict", description=__doc__,
                       epilog=_exit.READ, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument("--tc", choices=("yes", "no", "unknown"), help="only kernels with this verdict (default: all)")
    p.add_argument("--grep", metavar="REGEX", help="only kernels whose name matches (case-insensitive; default: all)")
    p.add_argument("--sort", choices=tuple(SORTS), default="time", help="row order (default: time, the most first)")
    p.add_argument("--limit", type=positive, default=None, help="at most N kernels (default: all)")
    p.add_argument("--wide", action="store_true", help="whole kernel names (default: shortened)")
    add_window(p)
    add_sum(p)
    add_format(p)
    add_output(p)
    add_store(p)


def run(args: argparse.Namespace) -> int:
    check_output(args.output, [*args.paths, args.store])
    try:
        pattern = re.compile(args.grep, re.IGNORECASE) if args.grep else None
    except re.error as e:
        raise BadInput(None, f"--grep: invalid regular expression ({e})") from None
    rows = [k for k in build(args.paths, args).kernels
            if (args.tc is None or k.tensor_core == args.tc) and (pattern is None or pattern.search(k.name))]
    rows.sort(key=SORTS[args.sort])
    rows = rows[: args.limit] if args.limit else rows
    put(args, render(args.format, Kernels(tuple(rows)), render_options(args, wide=args.wide)), "kernel table")
    return 0
