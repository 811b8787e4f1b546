import os
import signal
import sys


def _before_main(signum: int, _frame) -> None:
    """Ctrl-C or SIGTERM while the command line is still being imported (a second or so on a busy machine): nothing
    is made yet to clean up, so one line and 128+signal at once (it was a KeyboardInterrupt traceback, or a death by
    SIGTERM with no line). main() puts its own handlers in place."""
    os.write(2, b"nvprof-wrap: interrupted\n" if signum == signal.SIGINT else b"nvprof-wrap: terminated (SIGTERM)\n")
    os._exit(128 + signum)


_previous = {s: signal.signal(s, _before_main) for s in (signal.SIGINT, signal.SIGTERM)}

from nvprof_wrap.cli import main

for _signum, _handler in _previous.items():
    signal.signal(_signum, _handler)
sys.exit(main())
