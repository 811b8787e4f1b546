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

from nvprof_wrap.api import Profile


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="%%nvprof_wrap", add_help=False)
    p.add_argument("-o", "--output", default=None)
    p.add_argument("--json", action="store_true")
    return p


def nvprof_wrap_cell(line: str, cell: str, shell) -> object:
    """Run ``cell`` in ``shell`` under a profiling window; return the report (displayed by IPython)."""
    args = _parser().parse_args(shlex.split(line))
    prof = Profile(args.output)
    with prof:
        result = shell.run_cell(cell)
    shell.user_ns["_nvprof_wrap_report"] = rep = prof.report
    if getattr(result, "error_in_exec", None) is not None:
        print(f"nvprof-wrap: the cell raised {type(result.error_in_exec).__name__}; the report covers what ran")
    if args.json:
        import json

        print(json.dumps(rep.to_dict(), indent=2))
        return None
    return rep


def load_ipython_extension(ipython) -> None:
    def magic(line: str, cell: str):
        return nvprof_wrap_cell(line, cell, ipython)

    magic.__doc__ = __doc__
    ipython.register_magic_function(magic, magic_kind="cell", magic_name="nvprof_wrap")
