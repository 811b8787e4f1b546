"""Command line: one small module per subcommand. ``main(argv) -> int`` maps errors to one line and an exit code
(the table: cli/_exit.py, docs/reliability.md).

A command parses its options, calls one function of a stage below (pipeline/ for reading and reporting, launch/
for running a job) and renders the result (renderers.render): it never opens a store nor runs launch work itself
(tests/whole/test_layers.py). Shared pieces: _args (options, argument types, how to render for them), _write (stdout,
-o FILE, one line on stderr), _gates, _progress, _exit.

How to add a command: a module here whose docstring is its --help (ending with "examples:"), with
``add_parser(sub, name)`` and ``run(args) -> int``, and one entry in _MODULES (COMMANDS imports it when asked for);
the contract test (tests/whole/test_contracts.py) checks every command has both, its help and its examples.
"""
from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import sys
from collections.abc import Mapping
from typing import NoReturn, Protocol

from nvprof_wrap._version import __version__
from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._args import Subcommands, resolve_format
from nvprof_wrap.cli._exit import internal_error
from nvprof_wrap.cli._write import say, stdout_gone
from nvprof_wrap.errors import IO_ERROR, NvprofWrapError, Terminated, terminate
from nvprof_wrap.system import environ, storage, tempdirs
from nvprof_wrap.system.lazy import Modules
from nvprof_wrap.system.lifeline import Handler, end_on, leave_terminal, restore, terminal_fds
from nvprof_wrap.system.storage import machine_failure


class Command(Protocol):  # a subcommand's module
    def add_parser(self, sub: Subcommands, name: str) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


_JOBS = {"run", "experiment"}  # the commands whose work is a job's run (SIGHUP: see main)
_TAKE_A_COMMAND = {"run", "experiment", "verify"}  # the commands that use what follows "--"
# Every subcommand, once: name → its module here (add_parser(sub, name), run(args) -> int), in the order of --help.
# A command whose module does not import is a broken install, and says so with its traceback.
_MODULES = {"report": "report_cmd", "kernels": "kernels", "compare": "compare_cmd", "classify": "classify_cmd",
            "demo": "demo", "run": "run_cmd", "runs": "runs_cmd", "doctor": "doctor", "verify": "verify_cmd",
            "experiment": "experiment_cmd", "summarize": "summarize_cmd"}


# COMMANDS: a command's module is imported when it is asked for, so that a command imports its own stages and not
# every other command's (a job's launchers, the doctor's probes: 20-30 ms of every `report`).
COMMANDS: Mapping[str, Command] = Modules(__name__, _MODULES)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its usage errors in one line (as every other bad input's): its own printed the whole
    usage block (12 lines for `report --steps -1:3`) before the line that says what is wrong. --help prints it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command's, or only the one named (all that parsing its arguments needs;
    its --help is the same)."""
    p: argparse.ArgumentParser = _Parser(
        prog="nvprof-wrap", description="Did my job use the tensor cores, in which precision, for which ops — and if "
        "not, why?", epilog=_exit.GENERAL, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"nvprof-wrap {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")  # its parsers _Parser too (the parent's class)
    for name in [only] if only in _MODULES else _MODULES:
        COMMANDS[name].add_parser(sub, name)
        _examples_last(sub.choices[name])
    return p


def _examples_last(p: argparse.ArgumentParser) -> None:
    """Each command's help ends with its examples: the "examples:" part of its docstring goes after the exit codes."""
    desc, sep, examples = (p.description or "").partition("\nexamples:\n")
    if sep:
        p.description = desc.rstrip()
        p.epilog = f"{p.epilog or ''}\n\nexamples:\n{examples.rstrip()}".lstrip("\n")


def preload(argv: list[str]) -> None:
    """Import the module of the command argv names (nothing for another word): the entry (_entry.py) calls it while
    its own Ctrl-C/SIGTERM handlers still hold, since a command's module is imported on first use (COMMANDS) and
    its import is most of a command's start — a Ctrl-C there was a KeyboardInterrupt traceback (exit -2)."""
    head = argv[:argv.index("--")] if "--" in argv else argv
    command = next((a for a in head if not a.startswith("-")), None)
    if command is not None and command in COMMANDS:
        COMMANDS[command]


_OWN_OPTIONS = {"-h", "--help", "--version"}  # the only options before a command


def _option_before_command(head: list[str]) -> str | None:
    """The error for a command's option given before the command (`nvprof-wrap --width 80 report X`: argparse took
    the option's value for the command and said "invalid choice: '80'"), with the command line that works; None
    where the words before the command are nvprof-wrap's own options (or there is no command)."""
    at = next((i for i, a in enumerate(head) if a in COMMANDS), None)
    before = head[:at] if at is not None else head
    if not before or not before[0].startswith("-") or before[0].split("=", 1)[0] in _OWN_OPTIONS:
        return None
    if at is None:
        return (f"nvprof-wrap: error: {before[0]} is not an option of nvprof-wrap itself and no command follows (one "
                f"of {', '.join(COMMANDS)}); a command's options go after it: nvprof-wrap COMMAND {before[0]} …")
    fixed = " ".join(["nvprof-wrap", head[at], *before, *head[at + 1:]])
    return (f"nvprof-wrap: error: {before[0]} is an option of the command, given before it; options go after the "
            f"command: {fixed if len(fixed) <= 160 else fixed[:159] + '…'}")


def main(argv: list[str] | None = None) -> int:
    """Run the command argv names; its exit code. A Ctrl-C anywhere in it — parsing the command line too, after the
    entry's own handlers are put back — is one line and 130 (the temporary-folder sweep below once took it: a
    KeyboardInterrupt traceback and exit -2 under a full suite's load)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        say("nvprof-wrap: interrupted")
        return 130


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first "--" belongs to the job (or the workload), never to us.
    head, tail = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, None)
    command = next((a for a in head if not a.startswith("-")), None)
    if (early := _option_before_command(head)) is not None:
        say(early)
        return 2
    # only the command's own parser, unless the whole command line's help comes first (`--help report`)
    p = parser(command if command and not {"-h", "--help"} & set(head[:head.index(command)]) else None)
    if tail is not None and command in COMMANDS and command not in _TAKE_A_COMMAND:
        say(f"nvprof-wrap: error: {command} takes nothing after '--' (only run, experiment and verify run a command "
            f"given there), got: {' '.join(tail)[:120] or '(nothing)'}; a PATH that starts with '-' is written ./-NAME")
        return 2
    args = p.parse_args(head)
    args.passthrough = tail
    if args.command is None:
        p.print_help()
        return 2
    # SIGTERM ends a command like Ctrl-C: through every `finally` (temporary folders removed, helper processes
    # stopped), exit 128+15. So does SIGHUP (the terminal closed) for a command that reads; a command that runs a
    # job instead stops printing to the terminal and goes on (launch/job.py: the job is not the terminal's).
    terminals = terminal_fds()
    on_hangup = (lambda *_: leave_terminal(terminals)) if args.command in _JOBS else terminate
    previous: dict[int, Handler] = {}
    try:
        previous.update(end_on((signal.SIGTERM,), terminate))
        previous.update(end_on((signal.SIGHUP,), on_hangup))
        tempdirs.sweep()  # what a command killed by SIGKILL or the OOM killer left in the temporary folder
        for warning in environ.check(args.command):
            say(f"nvprof-wrap: warning: {warning}")
        resolve_format(args)
        return COMMANDS[args.command].run(args)
    except NvprofWrapError as e:
        say(f"nvprof-wrap: error: {e}")
        return e.exit_code
    except KeyboardInterrupt:
        say("nvprof-wrap: interrupted")
        return 130
    except Terminated as e:
        say(f"nvprof-wrap: terminated ({signal.Signals(e.signum).name})")
        return 128 + e.signum
    except BrokenPipeError:  # `nvprof-wrap kernels ... | head`: output cut short, nothing failed
        stdout_gone()
        return 0
    except sqlite3.Error as e:  # SQLite outside the readers and the store's own mapping: one line all the same
        failure = machine_failure(None, e)  # a full TMPDIR under the report's own queries: 74, like the readers'
        if failure is None and "integer overflow" in str(e):  # each number fits in 64 bits, their sum does not
            read = ", ".join(map(str, getattr(args, "paths", None) or ())) or "what was read"
            say(f"nvprof-wrap: error: {read}: times or counts that add up past 64 bits (a damaged capture or "
                "summary); nothing reported")
            return 2
        say(f"nvprof-wrap: error: {failure or f'SQLite: {e}'}")
        return failure.exit_code if failure else 2
    except OSError as e:  # a full disk or an I/O error is the machine's (74); a file gone or a permission changed
        say(f"nvprof-wrap: error: {storage.why(e)}" + (f": {e.filename}" if e.filename else ""))
        return IO_ERROR if storage.machine_failed(e) else 2
    except Exception as e:  # noqa: BLE001 — a bug: one line and where to report it, exit 70 (not 1: a missed gate)
        return internal_error(e)
    finally:
        if args.command in _JOBS:
            _flush_or_leave(terminals)
        restore(previous)


def _flush_or_leave(terminals: tuple[int, ...]) -> None:
    """A job's command keeps the job's exit code even when its terminal hung up before the SIGHUP arrived: what is
    still buffered for it would fail to flush at exit (EIO) and Python would exit 120 instead (seen under load)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            stream.flush()
        except (OSError, ValueError):
            leave_terminal(terminals)
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 - stands for the stream until exit
