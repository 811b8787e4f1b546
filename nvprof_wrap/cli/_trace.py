"""`report --format trace -o FILE`: the captures as a Chrome trace-event JSON (docs/trace-export.md), gzipped when
FILE ends in .gz. -o is required (a trace is a file to open in ui.perfetto.dev, not text for a terminal); FILE is
checked like any other output before the work and written whole or not at all (cli/_write.py)."""
from __future__ import annotations

import argparse
import gzip
import io
import sys
import time
from typing import BinaryIO

from nvprof_wrap.cli._args import window_args
from nvprof_wrap.cli._write import say, write_stream
from nvprof_wrap.errors import BadInput
from nvprof_wrap.report import Report

# gzip's default level: measured on a generated 500k-launch nsys capture, level 1 saved 1.0 s of 15.8 s and wrote a
# file 1.4x larger (39 MB against 28 MB)
GZIP_LEVEL = 6
PROGRESS_S = 0.5  # the progress line is rewritten at most this often


def refuse_without_output(args: argparse.Namespace) -> None:
    if args.output is None:
        raise BadInput(None, "--format trace writes a file: name it with -o, e.g. -o run.json.gz (open it in "
                             "ui.perfetto.dev or chrome://tracing)")


def write(args: argparse.Namespace, rep: Report) -> None:
    from nvprof_wrap.export.trace import check, export, size_warning

    check(rep)
    warning = size_warning(rep, args.max_events)
    if warning:
        say(warning)
    gz = args.output.name.lower().endswith(".gz")
    shown = _Progress() if args.progress or sys.stderr.isatty() else None

    def fill(raw: BinaryIO) -> None:
        packed = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0) if gz else None
        text = io.TextIOWrapper(packed or raw, encoding="utf-8", errors="replace", newline="\n",
                                write_through=False)
        text._CHUNK_SIZE = 1 << 16  # type: ignore[attr-defined]  # CPython's TextIOWrapper has it, typeshed not: fewer, bigger writes
        export(rep, text, warn=say, max_events=args.max_events, progress=shown, **window_args(args))
        text.flush()
        text.detach()
        if packed is not None:
            packed.close()

    write_stream(args.output, fill)
    if shown is not None and shown.said:
        print(file=sys.stderr)  # past the progress line
    say(f"nvprof-wrap: wrote the trace to {args.output} (open it in ui.perfetto.dev or chrome://tracing)")


class _Progress:
    """One line on stderr, rewritten at most every PROGRESS_S seconds: events and MB of JSON written so far."""

    def __init__(self) -> None:
        self.start = self.last = time.monotonic()
        self.said = False

    def __call__(self, events: int, chars: int) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_S:
            self.last, self.said = now, True
            print(f"\rnvprof-wrap: trace: {events:,} events, {chars / 1e6:,.0f} MB written ({now - self.start:.0f} s)",
                  end="", file=sys.stderr, flush=True)
