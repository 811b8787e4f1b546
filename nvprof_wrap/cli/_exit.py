"""Exit codes, one table per kind of command: shown in each command's --help; the whole table, with an example and
a test per class, is docs/exit-codes.md."""
from __future__ import annotations

import os
import sys

from nvprof_wrap.cli._write import say

_FAIL = """  2    bad input or usage: a file that is not a capture, a run store that is not one, an output that cannot
       be written (read-only, locked, under a file), a missing profiler, an NVPROF_WRAP_* variable that cannot be
       used; one line on stderr names the file (or variable) and why
  74   the machine's storage failed: disk or quota full, an I/O error (one line says which file)
  130  interrupted (Ctrl-C)
  143  terminated (SIGTERM; 129: SIGHUP, a closed terminal): ended like Ctrl-C, temporary files removed
  70   an internal error: a bug; one line says where to report it (NVPROF_WRAP_DEBUG=1 prints the traceback)"""

READ = f"""exit codes:
  0    done; also when the output was cut short by a closed pipe (| head)
{_FAIL}"""

VERIFY = f"""exit codes:
  0    done (also when the output was cut short by a closed pipe, | head); with --fail-on-disagreement, no
       kernel's counters contradict the name rules
  1    --fail-on-disagreement: the counters of at least one kernel contradict its name's verdict (one line on
       stderr says how many; the report, printed anyway, lists each)
{_FAIL}"""

GATED = """exit codes:
  0    done, and every gate given (--min-tensor-core-share, --expect-precision) is met
  1    a gate is not met: one line on stderr says what fell short (the report is still printed)
  2    bad input or usage: a file that is not a capture, a folder without one, two runs given to `report` or a
       folder holding several (use compare), a run store that is not one, an output that cannot be written
       (read-only, locked); one line on stderr names the file and why
  74   the machine's storage failed: disk or quota full, an I/O error (one line says which file)
  130  interrupted (Ctrl-C)
  143  terminated (SIGTERM; 129: SIGHUP, a closed terminal): ended like Ctrl-C, temporary files removed
  70   an internal error: a bug; one line says where to report it (NVPROF_WRAP_DEBUG=1 prints the traceback)"""

RUN = """exit codes:
  N    the job's exit code (128+S when signal S ended it); also when the output was cut short (| head -1)
       or cannot be written (> /dev/full: one line on stderr says so): nvprof-wrap stops printing, waits for
       the job and exits with its code
  1    the job exited 0 but a gate (--min-tensor-core-share, --expect-precision) is not met: one line says which
  2    nvprof-wrap could not start the job (bad options, a --name that is not one folder name, a run folder
       that already holds a run, no profiler), or the job succeeded but its run could not be recorded or read
       (the profiler left no capture, say), or its --save FILE written: one line on stderr
  74   the job succeeded but the machine's storage failed recording it (disk or quota full, an I/O error)
  130  interrupted before the job started
  143  SIGTERM before the job started or after it ended (while the job runs, SIGINT and SIGTERM go to it and its
       code is the exit code; SIGHUP, a closed terminal, is not passed on: the job and the run go on)
  70   an internal error (a bug; one line says where to report it): before the job ran, or after a job that
       exited 0 — after a job that failed, the job's code wins"""

EXPERIMENT = f"""exit codes:
  0    every precision's run exited 0 and was recorded
  N    the highest exit code of the precisions' runs (see `nvprof-wrap run --help`)
{_FAIL}"""

GENERAL = """exit codes: run and experiment exit with the job's code; every other command with 0 when done, 2 for bad
input or a file that cannot be written (one line on stderr), 74 when the disk is full or fails, 130 when
interrupted, 143 when terminated (SIGTERM), 70 for an internal error (a bug: one line; NVPROF_WRAP_DEBUG=1 prints
the traceback); 1 only for a missed gate (--min-tensor-core-share, --expect-precision; verify's
--fail-on-disagreement).
`nvprof-wrap COMMAND --help` gives each command's table."""


DEBUG_ENV = "NVPROF_WRAP_DEBUG"


def internal_error(e: BaseException) -> int:
    """An unexpected exception (a bug of ours): one line, where to report it, exit code INTERNAL (70); the
    traceback only with NVPROF_WRAP_DEBUG=1."""
    import traceback

    from nvprof_wrap._version import __version__
    from nvprof_wrap.errors import INTERNAL

    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        try:
            traceback.print_exception(e, file=sys.stderr)
        except (OSError, ValueError):
            pass
    where = "" if os.environ.get(DEBUG_ENV, "") not in ("", "0") else f"; {DEBUG_ENV}=1 shows the traceback"
    say(f"nvprof-wrap: internal error (a bug in nvprof-wrap {__version__}): {type(e).__name__}: "
        f"{' '.join(str(e).split())[:200]} — please report it on the nvprof-wrap issue tracker with the command "
        f"line{where}")
    return INTERNAL
