"""The command line's entry (`nvprof-wrap`, `python -m nvprof_wrap`): Ctrl-C or SIGTERM while the command line is
still being imported (a second or so on a busy machine) ends it with one line and 128+signal — nothing is made yet
to clean up. It was a KeyboardInterrupt traceback, or a death by SIGTERM with no line. cli.main() then puts its own
handlers in place; the command's module (imported on first use, cli.COMMANDS) is imported before that, under these.
Only the standard library is imported before the handlers are set."""
import os
import signal
from types import FrameType


def _before_main(signum: int, _frame: FrameType | None) -> None:
    os.write(2, b"nvprof-wrap: interrupted\n" if signum == signal.SIGINT else b"nvprof-wrap: terminated (SIGTERM)\n")
    os._exit(128 + signum)


def main() -> int:
    previous = {s: signal.signal(s, _before_main) for s in (signal.SIGINT, signal.SIGTERM)}
    import sys

    from nvprof_wrap.cli import main as cli_main
    from nvprof_wrap.cli import preload

    preload(sys.argv[1:])  # the command's own module, imported on first use: under these handlers too

    try:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        return cli_main()
    except KeyboardInterrupt:  # between Python's handler put back and cli.main's own catch (a few bytecodes)
        os.write(2, b"nvprof-wrap: interrupted\n")
        return 130
