"""nvprof-wrap runs — the run history: every `run`, and every `report` of a run folder, newest first.

The history is one SQLite database (sqlite-utils; browsable with Datasette): $NVPROF_WRAP_HISTORY, else
$XDG_DATA_HOME/nvprof-wrap/history.sqlite or ~/.local/share/nvprof-wrap/history.sqlite; NVPROF_WRAP_HISTORY=off
records nothing. One row per run folder and scope: a `report --steps 10:40` of a run is its own row ("steps 10:40"),
beside the whole run's ("whole"); a run that recorded only a window of its job is "capture steps 100:120".
`compare` accepts the names listed here (a name several folders carry: refused, give the folder).

examples:
  nvprof-wrap runs
  nvprof-wrap runs --limit 5 --format json
  nvprof-wrap runs -o runs.csv
  datasette ~/.local/share/nvprof-wrap/history.sqlite
"""
from __future__ import annotations

import argparse

from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._args import Subcommands, add_format, add_output, positive, render_options
from nvprof_wrap.cli._write import check_output, put, say
from nvprof_wrap.pipeline.stores import history_path, recorded_runs
from nvprof_wrap.renderers import Runs, render


def add_parser(sub: Subcommands, name: str) -> None:
    p = sub.add_parser(name, help="list recorded runs (name, date, command, verdict, tensor-core share)",
                       description=__doc__, epilog=_exit.READ, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", type=positive, default=None, help="the newest N only (default: all)")
    add_format(p)
    add_output(p)


def run(args: argparse.Namespace) -> int:
    check_output(args.output, [history_path()])
    problems: list[str] = []
    rows = recorded_runs(args.limit, problems)
    for line in problems:  # a row edited by hand or written by another version: named, left out
        say(f"nvprof-wrap: warning: {line}")
    if not rows and args.format == "table" and args.output is None:
        say(f"nvprof-wrap: no run recorded yet in {history_path() or 'the history (NVPROF_WRAP_HISTORY=off)'}")
        return 0
    put(args, render(args.format, Runs(tuple(rows)), render_options(args)), "run history")
    return 0
