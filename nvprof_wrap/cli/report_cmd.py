"""nvprof-wrap report PATH... — the verdict first, then where GPU time went, per device and process, top kernels.

PATH is a capture (nvprof .nvvp, Nsight Systems .sqlite/.nsys-rep, nvprof/nsys-stats/ncu CSV, Kineto JSON,
TensorBoard trace JSON / .xplane.pb, nvprof/nsys/ncu console output: docs/formats.md)
or a folder: every capture in it, as one run.

--format html -o report.html writes one self-contained page (no scripts, no network) to share (docs/html.md).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from nvprof_wrap import report
from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._output import (
    add_format,
    add_output,
    add_store,
    add_window,
    check_output,
    deliver,
    open_store,
    options,
    window_args,
)
from nvprof_wrap.pipeline import analyze
from nvprof_wrap.renderers import RENDERERS


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="report on captures: were tensor cores used, where GPU time went",
                       description=__doc__, epilog=_exit.READ, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument("--limit", type=int, default=15, help="kernels to list (default 15)")
    p.add_argument("--wide", action="store_true", help="whole kernel names and reasons")
    p.add_argument("--triton-cache", type=Path, action="append", metavar="DIR",
                   help="look for compiled PTX of kernels the names leave unknown (repeatable; default: "
                        "$TRITON_CACHE_DIR and ~/.triton/cache)")
    add_window(p)
    add_format(p)
    add_output(p)
    add_store(p)


def build(paths: list[Path], args: argparse.Namespace) -> report.Report:
    store = open_store(args, paths)
    try:
        return analyze(*paths, store=store, triton_cache=getattr(args, "triton_cache", None), **window_args(args))
    finally:
        store.close()


def run(args: argparse.Namespace) -> int:
    check_output(args.output)
    rep = build(args.paths, args)
    opts = options(args) | ({"color": False} if args.output else {})
    deliver(RENDERERS[args.format].render_report(rep, wide=args.wide, limit=args.limit, **opts), args.output,
            f"{args.format} report")
    return 0
