"""The command line's shared options and argument types: --format and -o/--save FILE (the format a FILE's
extension names), --width, --store, --window/--steps, the gates' thresholds, and how to render for them."""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeAlias, TypedDict

from nvprof_wrap.errors import BadInput
from nvprof_wrap.renderers import BY_EXTENSION, RENDERERS, Options
from nvprof_wrap.run.names import REPORT_HTML, STORE
from nvprof_wrap.system import environ

FORMATS = tuple(RENDERERS)
# What ArgumentParser.add_subparsers gives: each command's module adds its parser to it (a string: the class is
# generic only to the type checker).
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class Reading(TypedDict):
    """analyze()'s dask= and workers=."""

    dask: str | None
    workers: int | None


class Span(TypedDict):
    """analyze()'s window= and steps=."""

    window: tuple[float, float] | None
    steps: tuple[int, int] | None


# --wide, the same on every command that prints tables (docs/html.md#names)
WIDE_HELP = ("whole names in every table (kernels, ops, ranges) and reasons, wrapped (default: shortened: framework "
             "wrappers dropped, cut in the middle)")


def add_format(p: argparse.ArgumentParser, formats: tuple[str, ...] = FORMATS) -> None:
    p.add_argument("--format", choices=formats, default=None,
                   help="output format (default: the one the extension of the output FILE names — .html, .json, "
                        ".csv, .md, .txt —, else table)")
    p.set_defaults(formats_allowed=formats)
    p.add_argument("--width", type=between(environ.MIN_WIDTH, environ.MAX_WIDTH, "a width", integer=True),
                   default=None, help=f"table width, {environ.MIN_WIDTH} to {environ.MAX_WIDTH:,} (default: the "
                                      f"terminal's, or $COLUMNS: at least {environ.MIN_WIDTH})")


def add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", type=Path, default=None,
                   help=f"run store to keep the aggregates in (default: RUN_DIR/{STORE} for a run folder made by "
                        "'nvprof-wrap run', else in memory)")
    p.add_argument("--jobs", "-j", type=positive, default=None, metavar="N",
                   help="read up to N captures side by side in local processes (default: one per core; 1: one by one)")
    p.add_argument("--dask", metavar="ADDRESS", default=None,
                   help="read the captures on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786; "
                        "default: $DASK_SCHEDULER_ADDRESS where set; 'none': on this machine): its workers need "
                        "nvprof-wrap and the captures at the same paths (docs/ranks.md)")


def reading_args(args: argparse.Namespace) -> Reading:
    """report_on()'s dask= and workers= from --dask / $DASK_SCHEDULER_ADDRESS and --jobs."""
    from nvprof_wrap.pipeline.reading import dask_address

    return Reading(dask=dask_address(getattr(args, "dask", None)), workers=getattr(args, "jobs", None))


WARMUP_HELP = ("count a JAX job's warm-up — what its GPU ran before the first execution of the program it runs most: "
               "XLA's compilation and autotuning — which a report of a whole Nsight Systems capture leaves out and "
               "shows on its own line (docs/jax.md)")


def add_warmup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--with-warmup", action="store_true", help=WARMUP_HELP)


def add_sum(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sum", action="store_true",
                   help="sum captures of different jobs into one report (refused without it: their own contents — "
                        "command lines, session times — tell the jobs apart; `compare` puts two side by side)")


def add_window(p: argparse.ArgumentParser) -> None:
    p.add_argument("--window", metavar="START:END", default=None,
                   help="steady state: only what the GPU did from START to END seconds after the capture's first GPU "
                        "activity, e.g. 30:90 (default: the whole capture)")
    p.add_argument("--steps", metavar="A:B", default=None,
                   help="steady state: only training steps A to B-1 — NVTX ranges 'step N', torch.profiler's "
                        "ProfilerStep#N, or Keras batches with --annotate keras (default: every step)")


def window_args(args: argparse.Namespace) -> Span:
    """analyze()'s window= and steps= from --window / --steps."""
    from nvprof_wrap.timeline.window import parse

    return Span(window=parse(args.window, "--window") if getattr(args, "window", None) else None,
                steps=parse(args.steps, "--steps", integer=True) if getattr(args, "steps", None) else None)


def render_options(args: argparse.Namespace, **more: Any) -> Options:  # Options' fields by name
    """How to render for this command line: --width (else $COLUMNS, else the terminal's), colour on a terminal
    unless NO_COLOR / TERM=dumb and never in a file, and ``more`` (wide=, limit=, table=, gates=)."""
    width = args.width or environ.width()
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb" \
        and output_file(args) is None  # never colour in a file
    return Options(width=width, color=color, **more)


def add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", type=Path, default=None, metavar="FILE",
                   help="write the output to FILE instead of stdout, in the format its extension names unless "
                        f"--format says: -o {REPORT_HTML} (default: stdout)")
    p.set_defaults(output_file="output")


def add_save(p: argparse.ArgumentParser, what: str = "the report") -> None:
    """For a command whose -o names its folder (run, experiment, doctor, verify): --save FILE is their -o FILE."""
    p.add_argument("--save", type=Path, default=None, metavar="FILE",
                   help=f"write {what} to FILE instead of stdout, in the format its extension names unless --format "
                        f"says: --save {REPORT_HTML} (default: stdout)")
    p.set_defaults(output_file="save")


def output_file(args: argparse.Namespace) -> Path | None:
    """The FILE that -o (or --save) names, for the commands that print: None for stdout."""
    dest = getattr(args, "output_file", None)
    return getattr(args, dest, None) if dest else None


def resolve_format(args: argparse.Namespace) -> None:
    """--format wins; else the extension of the output FILE (BY_EXTENSION); else table. An extension naming a
    format the command does not write is refused. -o - (or --save -) is stdout."""
    dest = getattr(args, "output_file", None)
    if dest and str(getattr(args, dest, None)) == "-":
        setattr(args, dest, None)
    if not hasattr(args, "formats_allowed") or args.format is not None:
        return
    target = output_file(args)
    fmt = BY_EXTENSION.get(target.suffix.lower(), "table") if target is not None else "table"
    if fmt not in args.formats_allowed:
        raise BadInput(target, f"this command does not write {fmt} (its formats: {', '.join(args.formats_allowed)}); "
                               "give --format")
    args.format = fmt


def add_gates(p: argparse.ArgumentParser) -> None:
    """CI gates (analysis/gates.py): exit 1 with one line when the report falls short."""
    p.add_argument("--min-tensor-core-share", type=_fraction, metavar="F", default=None,
                   help="fail (exit 1) unless at least this fraction of GPU kernel time ran on tensor cores, e.g. 0.3 "
                        "(default: no gate)")
    p.add_argument("--expect-precision", type=_precisions, metavar="P,Q", default=(),
                   help="fail (exit 1) unless tensor-core kernels ran in each of these precisions, e.g. fp16,bf16 "
                        "(default: no gate)")


def between(lo: float, hi: float, what: str, integer: bool = False, note: str = "") -> Callable[[str], float]:
    """An argument type: a number (a whole one with ``integer``) from lo to hi, else argparse's usage line."""
    def parse(text: str) -> float | int:
        try:
            x = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a {'whole ' if integer else ''}number: {text!r}") from None
        if not lo <= x <= hi:
            raise argparse.ArgumentTypeError(f"{what} between {lo:g} and {hi:g}, got {text}{note}")
        return x
    return parse


_fraction = between(0, 1, "a fraction", note=" (30% is 0.3)")


_KNOWN_PRECISIONS = ("fp16", "bf16", "tf32", "fp32", "fp64", "fp8", "fp4", "int8", "fp32 (3xTF32)")


def _precisions(text: str) -> tuple[str, ...]:
    got = tuple(p.strip() for p in text.split(",") if p.strip())
    bad = [p for p in got if p not in _KNOWN_PRECISIONS]
    if bad or not got:
        raise argparse.ArgumentTypeError(f"unknown precision {', '.join(bad) or text!r} (choose from "
                                         f"{', '.join(_KNOWN_PRECISIONS)})")
    return got


def positive(text: str) -> int:
    """--limit and friends: a whole number of at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n
