"""nvprof-wrap report PATH... — the verdict first, then where GPU time went, per device and process, top kernels.

PATH is a capture (nvprof .nvvp, Nsight Systems .sqlite/.nsys-rep, nvprof/nsys-stats/ncu CSV, Kineto JSON,
TensorBoard trace JSON / .xplane.pb, nvprof/nsys/ncu console output: docs/formats.md)
or a folder: every capture in it, as one run.

--format trace -o run.json.gz writes the captures' timeline as a Chrome trace-event JSON to open in ui.perfetto.dev
or chrome://tracing: kernels coloured by verdict (docs/trace-export.md).
-o report.html writes one self-contained page (no scripts, no network) to share (docs/html.md): the format is the
one the file's extension names (.html, .json, .csv, .md, .txt; any other: the table text) unless --format says.
Two runs are not one: given two run folders, or a folder holding several, report refuses and points to `compare`.
A run's job that failed or was killed says so first (its manifest). Captures of different jobs (their command lines
or sessions an hour apart tell them apart) are refused unless --sum; summed, the report says so.

examples:
  nvprof-wrap report runs/train-fp16
  nvprof-wrap report capture.nsys-rep --format json | jq .verdict
  nvprof-wrap report runs/train-fp16 -o report.html
  nvprof-wrap report runs/train-fp16 --format trace -o train.json.gz
  nvprof-wrap report runs/train-fp16 --format csv --table ops --limit 20 > ops.csv
  nvprof-wrap report runs/train-bf16 --min-tensor-core-share 0.3 --expect-precision bf16   # a CI gate
"""
from __future__ import annotations

import argparse
from pathlib import Path

from nvprof_wrap import report
from nvprof_wrap.cli import _exit, _trace
from nvprof_wrap.cli._args import (
    FORMATS,
    WIDE_HELP,
    Subcommands,
    add_format,
    add_gates,
    add_output,
    add_store,
    add_sum,
    add_warmup,
    add_window,
    positive,
    reading_args,
    render_options,
    window_args,
)
from nvprof_wrap.cli._gates import gate, gates
from nvprof_wrap.cli._progress import reading
from nvprof_wrap.cli._write import check_output, deliver, say
from nvprof_wrap.pipeline.stores import remember, report_on
from nvprof_wrap.renderers import render
from nvprof_wrap.renderers.csv import TABLES as CSV_TABLES
from nvprof_wrap.run import Run
from nvprof_wrap.timeline.series import MAX_LAUNCHES, PER_STEP_MAX_LAUNCHES, asked_per_step


def add_parser(sub: Subcommands, name: str) -> None:
    p = sub.add_parser(name, help="report on captures: were tensor cores used, where GPU time went",
                       description=__doc__, epilog=_exit.GATED, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument("--limit", type=positive, default=None,
                   help="kernels (and ops) to list (default: 15 in table, markdown and html; all in json and csv)")
    p.add_argument("--table", choices=CSV_TABLES, default="kernels",
                   help="with --format csv: which table to write, one per file (default: kernels)")
    p.add_argument("--wide", action="store_true", help=WIDE_HELP)
    p.add_argument("--per-step", action="store_true",
                   help="one row per step (or time bucket): step time, GPU busy, kernels, tensor-core share, copies, "
                        "the host's time in CUDA calls by kind and outside them (JSON and CSV always carry them); "
                        f"measured up to {PER_STEP_MAX_LAUNCHES:,} kernel launches per capture with it, "
                        f"{MAX_LAUNCHES:,} without (docs/steps.md)")
    p.add_argument("--triton-cache", type=Path, action="append", metavar="DIR",
                   help="look for compiled PTX of kernels the names leave unknown (repeatable; default: "
                        "$TRITON_CACHE_DIR and ~/.triton/cache)")
    p.add_argument("--max-events", type=positive, default=None, metavar="N",
                   help="with --format trace: write at most N events (the first N in each capture's time order; "
                        "with --steps / --window, what a trace of a long run should be cut to; default: every event)")
    p.add_argument("--progress", action="store_true",
                   help="with --format trace: report progress on stderr (default: only when stderr is a terminal)")
    p.add_argument("--xla-dump", type=Path, action="append", metavar="DIR",
                   help="XLA's dump folder (--xla_dump_to) whose optimized HLO decides the kernels XLA generated "
                        "(repeatable; default: none but a run folder's own xla-dump/, read without it: docs/jax.md)")
    add_window(p)
    add_warmup(p)
    add_sum(p)
    add_format(p, (*FORMATS, "trace"))
    add_output(p)
    add_store(p)
    add_gates(p)


def build(paths: list[Path], args: argparse.Namespace, *, charted: bool = False) -> report.Report:
    """The report of `paths`; --per-step (the rows asked for) and `charted` (the HTML page: its charts of them) lift
    the series' launch limit (timeline/series.py)."""
    with asked_per_step(getattr(args, "per_step", False) or charted), reading() as progress:
        return report_on(paths, warn=say, store=args.store, triton_cache=getattr(args, "triton_cache", None),
                         progress=progress, sum_jobs=bool(getattr(args, "sum", False)),
                         xla_dump=getattr(args, "xla_dump", None),
                         warmup=getattr(args, "with_warmup", False), **window_args(args),
                         **reading_args(args))


def run(args: argparse.Namespace) -> int:
    check_output(args.output, [*args.paths, args.store])
    if args.format == "trace":
        _trace.refuse_without_output(args)
    rep = build(args.paths, args, charted=args.format == "html")
    if args.format == "trace":
        _trace.write(args, rep)
        return gate(args, rep, gates(args, rep))
    limit = args.limit or (None if args.format in ("json", "csv") else 15)
    results = gates(args, rep)
    opts = render_options(args, wide=args.wide, limit=limit, table=args.table, gates=tuple(results) or None,
                          per_step=args.per_step)
    deliver(render(args.format, rep, opts), args.output, f"{args.format} report")
    if len(args.paths) == 1 and Run(args.paths[0]).manifest_file.is_file():
        remember(args.paths[0], rep, say)
    return gate(args, rep, results)
