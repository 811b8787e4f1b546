"""IPython / Jupyter: ``%load_ext nvprof_wrap``, then::

    %%nvprof_wrap
    model.fit(x, y, epochs=1)

profiles the cell with the built-in CUPTI tracer and shows the report (HTML in a notebook, text in a terminal).
``%%nvprof_wrap --json`` shows the JSON instead; ``-o FOLDER`` keeps the capture there. The report is also kept in
the variable ``_nvprof_wrap_report``.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell  # IPython's types are not read: Any

from nvprof_wrap.api import Profile
from nvprof_wrap.errors import NvprofWrapError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="%%nvprof_wrap", add_help=False)
    p.add_argument("-o", "--output", default=None)
    p.add_argument("--json", action="store_true")
    return p


def nvprof_wrap_cell(line: str, cell: str, shell: InteractiveShell) -> object:
    """Run ``cell`` in ``shell`` under a profiling window; return the report (displayed by IPython).

    Profiling never stops the cell: where tracing cannot start, or the capture cannot be read, one
    ``nvprof-wrap:`` line says why and the cell runs (or has run) unprofiled."""
    try:
        args = _parser().parse_args(shlex.split(line))
    except (SystemExit, ValueError) as e:  # argparse exits on a bad option; shlex raises on an open quote
        print(f"nvprof-wrap: %%nvprof_wrap {line}: not understood ({e or 'see %%nvprof_wrap? for the options'}); "
              "running the cell unprofiled", file=sys.stderr)
        shell.run_cell(cell)
        return None
    prof = Profile(args.output)
    try:
        prof.start()
    except NvprofWrapError as e:
        print(f"nvprof-wrap: not profiling this cell: {e}", file=sys.stderr)
        shell.run_cell(cell)
        return None
    try:
        result = shell.run_cell(cell)
    finally:
        prof.stop()
    try:
        rep = prof.report
    except NvprofWrapError as e:
        print(f"nvprof-wrap: the cell ran, but no report: {e}", file=sys.stderr)
        return None
    shell.user_ns["_nvprof_wrap_report"] = rep
    if getattr(result, "error_in_exec", None) is not None:
        print(f"nvprof-wrap: the cell raised {type(result.error_in_exec).__name__}; the report covers what ran")
    if args.json:
        import json

        print(json.dumps(rep.to_dict(), indent=2))
        return None
    return rep


def load_ipython_extension(ipython: InteractiveShell) -> None:
    def magic(line: str, cell: str) -> object:
        return nvprof_wrap_cell(line, cell, ipython)

    magic.__doc__ = __doc__
    ipython.register_magic_function(magic, magic_kind="cell", magic_name="nvprof_wrap")
