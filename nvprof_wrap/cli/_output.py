"""Output plumbing shared by subcommands: --format, --width, colour on a TTY unless NO_COLOR."""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from nvprof_wrap.renderers import RENDERERS
from nvprof_wrap.store import Store

FORMATS = tuple(RENDERERS)


def add_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    p.add_argument("--width", type=int, default=None, help="table width (default: the terminal's, or $COLUMNS)")


def add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", type=Path, default=None,
                   help="run store to keep the aggregates in (default: RUN_DIR/run.sqlite for a run folder made by "
                        "'nvprof-wrap run', else in memory)")


def options(args: argparse.Namespace) -> dict:
    width = args.width or int(os.environ.get("COLUMNS") or 0) or shutil.get_terminal_size((120, 24)).columns
    color = sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    return {"width": width, "color": color}


def emit(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def open_store(args: argparse.Namespace, paths: list[Path]) -> Store:
    if args.store:
        return checked(Store(args.store))
    if len(paths) == 1 and (paths[0] / "manifest.json").is_file() and os.access(paths[0], os.W_OK):
        return checked(Store(paths[0] / "run.sqlite"))
    return Store()


def checked(store: Store) -> Store:
    """Say so when a damaged run store had to be set aside and rebuilt from the captures."""
    if store.rebuilt_from is not None:
        print(f"nvprof-wrap: warning: {store.path} was damaged; kept it as {store.rebuilt_from} and rebuilt it "
              "from the captures", file=sys.stderr)
    return store
