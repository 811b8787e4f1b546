"""The environment variables a user sets for nvprof-wrap, each read and checked here: one line naming the
variable and what it takes, instead of a traceback deep in a reader (COLUMNS=abc was an internal error, exit 70).

Two kinds: the terminal's own (COLUMNS, TMPDIR) are ignored when they make no sense, as Python's
shutil.get_terminal_size, tempfile and Rich do — another program set them for every program, and a report must
not fail for it — with a warning line; nvprof-wrap's own (NVPROF_WRAP_*) are the user's intent, so a value that
cannot be used refuses the command (BadInput, exit 2) before any work. The tracer's variables, which `run` sets
for the job's processes, are not the user's and are read in tracer/.
"""
from __future__ import annotations

import os
import shlex
import sys
import tempfile
from collections.abc import Callable

from nvprof_wrap.errors import BadInput

MAX_WIDTH = 10_000  # columns: wider is no terminal (COLUMNS=99999999999 made Rich allocate until MemoryError)
MIN_WIDTH = 40  # columns rendered at least: at COLUMNS=1 every character of the verdict stood on a line of its own
# (the terminal wraps lines of 40 to a narrower window; a table cut to 1 column cannot be read at any width)


def _whole(lo: int, hi: int) -> Callable[[str], object]:
    def parse(text: str) -> int:
        value = int(text.strip())  # ValueError: not a whole number
        if not lo <= value <= hi:
            raise ValueError
        return value
    return parse


def _words(text: str) -> list[str]:
    return shlex.split(text)  # ValueError: an unbalanced quote, a lone backslash at the end


# name → (parse, what it takes). Each parse raises ValueError for a value it cannot use.
OWN: dict[str, tuple[Callable[[str], object], str]] = {
    "NVPROF_WRAP_NSYS_EXTRA": (_words, "extra nsys profile arguments, quoted as in a shell"),
    "NVPROF_WRAP_SERIES_MAX_LAUNCHES": (_whole(-1, 1 << 62), "a whole number of launches (-1: no limit)"),
}
# The commands that use each of our variables (None: every command): a `report` never runs nsys, so a broken
# NVPROF_WRAP_NSYS_EXTRA left in the shell must not refuse it.
USED_BY: dict[str, frozenset[str] | None] = {
    "NVPROF_WRAP_NSYS_EXTRA": frozenset({"run", "experiment", "verify", "doctor"}),
    "NVPROF_WRAP_SERIES_MAX_LAUNCHES": None,
}
TERMINAL: dict[str, tuple[Callable[[str], object], str]] = {
    "COLUMNS": (_whole(1, MAX_WIDTH), f"a width in columns, 1 to {MAX_WIDTH}"),
}


def value(name: str, default: object = None) -> object:
    """The variable's value as its parser makes it; ``default`` when unset or empty. A value that does not parse
    is BadInput for our own variables, ``default`` for the terminal's (check() warned about it)."""
    text = os.environ.get(name, "")
    if not text.strip():
        return default
    parse, takes = OWN.get(name) or TERMINAL[name]
    try:
        return parse(text)
    except ValueError:
        if name in TERMINAL:
            return default
        raise BadInput(None, f"${name}={_shown(text)}: expected {takes}") from None


def width(fallback: int = 120) -> int:
    """Columns to render for: $COLUMNS when it is a width, else the terminal's, else ``fallback`` (never
    shutil.get_terminal_size, which takes any number in $COLUMNS); never fewer than MIN_WIDTH."""
    columns = value("COLUMNS")
    if not isinstance(columns, int):  # unset (its parser makes a width an int)
        stdout = sys.__stdout__  # None where Python started without one
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout is not None else 0
        except (AttributeError, OSError, ValueError):
            columns = 0
    return max(MIN_WIDTH, min(columns, MAX_WIDTH)) if columns > 0 else fallback


def words(name: str) -> list[str]:
    """A variable of words (``_words``) as a list; [] when unset."""
    got = value(name, [])
    return [str(w) for w in got] if isinstance(got, list) else []


def native_off() -> bool:
    """Whether NVPROF_WRAP_NATIVE turns the compiled passes off (0, off, no): timeline/native.py's and the Kineto
    reader's loop (readers/_kineto_rows.py); the Python and SQL paths then run."""
    return os.environ.get("NVPROF_WRAP_NATIVE", "").lower() in ("0", "off", "no")


def whole(name: str, default: int) -> int:
    """A variable of a whole number (``_whole``); ``default`` when unset."""
    got = value(name, default)
    return got if isinstance(got, int) else default


def check(command: str | None = None) -> list[str]:
    """Every variable checked before a command starts: BadInput for the first of ours that `command` uses (every one
    without a command) and that cannot be used; the warnings for the terminal's that are ignored (and for a TMPDIR
    that is no folder: Python's tempfile then uses /tmp, as it would anyway)."""
    for name in OWN:
        users = USED_BY.get(name)
        if command is None or users is None or command in users:
            value(name)
    warnings = [f"${name}={_shown(os.environ[name])} ignored: expected {takes}" for name, (_p, takes) in
                TERMINAL.items() if os.environ.get(name, "").strip() and value(name) is None]
    tmp = os.environ.get("TMPDIR")
    if tmp and not (os.path.isdir(tmp) and os.access(tmp, os.W_OK | os.X_OK)):
        warnings.append(f"$TMPDIR={_shown(tmp)} is not a writable folder: temporary files go to "
                        f"{tempfile.gettempdir()}")
    return warnings


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
