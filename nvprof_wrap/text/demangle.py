"""Demangle C++ kernel names (nvprof, ncu and CUPTI hand them over mangled), each distinct name once, within a
budget.

A mangled name can refer back to earlier parts of itself (substitutions S…_, template parameters T…_): 243
bytes whose template arguments double per level demangle to 218 MB, and a few more levels to more memory than
the machine has. Names without such references cannot grow (at most ~12 characters per byte) and are
demangled here, in microseconds. Names with them go to a helper process (forked once, reused for every name)
that gets DEMANGLE_SECONDS and DEMANGLE_MEMORY_BYTES per name and returns at most DEMANGLE_MAX_CHARS; past any
of those the helper is killed, the mangled name is kept, and ``over_budget`` remembers it so that the capture's
notes can say so (readers/_validate.py). After DEMANGLE_MAX_OVERRUNS such names, names with references are
kept mangled without trying. Real names (the fixtures: 193 mangled names, up to 24 references) take
microseconds each.
"""
from __future__ import annotations

import atexit
import os
import re
import resource
import select
import shutil
import signal
import struct
import subprocess
import sys
from functools import lru_cache
from typing import Any

from nvprof_wrap.system.fork import fork_quietly
from nvprof_wrap.system.lifeline import die_with_parent, fork_is_safe
from nvprof_wrap.system.limits import (
    DEMANGLE_MAX_CHARS,
    DEMANGLE_MAX_OVERRUNS,
    DEMANGLE_MEMORY_BYTES,
    DEMANGLE_SECONDS,
    MAX_NAME_CHARS,
)


@lru_cache(maxsize=1)
def _cxxfilt() -> Any:
    """cxxfilt — libstdc++'s __cxa_demangle called in-process: no subprocess per name —, or None where it cannot be
    loaded. Imported for the first mangled name, not with this module: 4.7 ms of every command's start-up (-X
    importtime), and most captures (Nsight Systems', Kineto's) hold their names demangled already."""
    try:
        import cxxfilt
    except Exception:  # noqa: BLE001 - pragma: no cover - depends on the machine
        return None
    return cxxfilt


_MANGLED = re.compile(r"_Z[\w.$]+")
_BACK_REFERENCE = re.compile(r"[ST][0-9A-Z]*_|fp[0-9]*_|fL")
over_budget: set[str] = set()  # mangled names kept as they are: demangling them went past the budget


@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The demangled name; the name itself when it is not mangled, cannot be demangled, or is over budget."""
    if not name.startswith("_Z"):
        return name
    if len(name) > MAX_NAME_CHARS or not _MANGLED.fullmatch(name):
        return name
    if _cxxfilt() is None:
        return _cplusfilt(name)
    if not _BACK_REFERENCE.search(name[2:]):
        return _in_process(name)
    if len(over_budget) >= DEMANGLE_MAX_OVERRUNS:  # a capture full of name bombs: stop paying for them
        over_budget.add(name)
        return name
    helper = _helper()
    out = helper.demangle(name)
    if out is None and not helper.ran_out:  # the helper had died before this name (not by it): once more
        out = _helper().demangle(name)
    if out is None:
        over_budget.add(name)
        return name
    return out


def _in_process(name: str) -> str:
    try:
        return str(_cxxfilt().demangle(name, external_only=False))
    except Exception:  # noqa: BLE001 - cxxfilt raises its own InvalidName; any failure keeps the raw name
        return name


def _cplusfilt(name: str) -> str:
    exe = shutil.which("c++filt")
    if exe is None:
        return name
    try:
        out = subprocess.run([exe, name], capture_output=True, text=True, check=False, timeout=DEMANGLE_SECONDS)
    except subprocess.TimeoutExpired:
        over_budget.add(name)
        return name
    result = out.stdout.strip()
    if len(result) > DEMANGLE_MAX_CHARS:
        over_budget.add(name)
        return name
    return result or name


# ---------------------------------------------------------------- the helper process
_FRAME = struct.Struct("!BI")  # status (0 ok, 1 failed, 2 too long), length
_HELPER_CODE = "import sys; from nvprof_wrap.text.demangle import _serve; _serve(0, 1)"


class _Helper:
    """One process that demangles names sent through a pipe, killed and replaced when a name overruns."""

    def __init__(self) -> None:
        self.pid, self.to_child, self.from_child = 0, -1, -1
        self.proc: subprocess.Popen[bytes] | None = None
        self.ran_out = False  # the last name overran its budget (rather than finding the helper dead)

    def _start(self) -> None:
        if fork_is_safe():
            down_r, down_w = os.pipe()
            up_r, up_w = os.pipe()
            parent = os.getpid()
            pid = fork_quietly()  # Ctrl-C and SIGTERM are the parent's: it kills this child when it is done
            if pid == 0:  # the child: never returns
                try:
                    os.close(down_w)
                    os.close(up_r)
                    _serve(down_r, up_w, parent)
                finally:
                    os._exit(0)
            os.close(down_r)
            os.close(up_w)
            self.pid, self.to_child, self.from_child = pid, down_w, up_r
        else:  # another thread might hold a lock the child would need: a fresh interpreter instead
            proc = subprocess.Popen([sys.executable, "-c", _HELPER_CODE], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": _package_parent()})
            assert proc.stdin is not None and proc.stdout is not None  # both PIPE
            self.proc, self.pid = proc, proc.pid
            self.to_child, self.from_child = proc.stdin.fileno(), proc.stdout.fileno()

    def demangle(self, name: str) -> str | None:
        if not self.pid:
            self._start()
        data = name.encode()
        self.ran_out = False
        try:
            os.write(self.to_child, _FRAME.pack(0, len(data)) + data)
        except OSError:
            self.stop()
            return None
        self.ran_out = True
        try:
            head = _read_exactly(self.from_child, _FRAME.size, DEMANGLE_SECONDS)
            status, size = _FRAME.unpack(head)
            body = _read_exactly(self.from_child, size, DEMANGLE_SECONDS)
        except (OSError, TimeoutError, struct.error):
            self.stop()  # over time, out of memory, or dead: the next name gets a fresh helper
            return None
        return body.decode("utf-8", errors="replace") if status == 0 else name if status == 1 else None

    def stop(self) -> None:
        if not self.pid:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.proc is not None:
            self.proc.wait()
            for pipe in (self.proc.stdin, self.proc.stdout):  # both PIPE (_start)
                if pipe is not None:
                    pipe.close()
        else:
            os.waitpid(self.pid, 0)
            os.close(self.to_child)
            os.close(self.from_child)
        self.pid, self.proc = 0, None


def _read_exactly(fd: int, n: int, timeout: float) -> bytes:
    chunks, got = [], 0
    while got < n:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise TimeoutError
        piece = os.read(fd, n - got)
        if not piece:
            raise OSError("helper ended")
        chunks.append(piece)
        got += len(piece)
    return b"".join(chunks)


def _serve(inp: int, out: int, parent: int | None = None) -> None:
    """The helper's loop: a name in, its demangled form (or a status) out, until the pipe closes."""
    die_with_parent(parent)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (_address_space() + DEMANGLE_MEMORY_BYTES,) * 2)
    except (ValueError, OSError):
        pass
    while True:
        try:
            head = _read_exactly(inp, _FRAME.size, 1e9)
        except OSError:
            return
        name = _read_exactly(inp, _FRAME.unpack(head)[1], 1e9).decode()
        try:
            text = _cxxfilt().demangle(name, external_only=False)
            reply = (2, b"") if len(text) > DEMANGLE_MAX_CHARS else (0, text.encode())
        except Exception:  # noqa: BLE001 - InvalidName, or MemoryError under the limit
            reply = (1, b"")
        os.write(out, _FRAME.pack(reply[0], len(reply[1])) + reply[1])


def _address_space() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _package_parent() -> str:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.pathsep.join([here, *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])])


_HELPER: _Helper | None = None


def _helper() -> _Helper:
    global _HELPER, _HELPER_OWNER, _AT_EXIT
    if _HELPER is None or _HELPER_OWNER != os.getpid():  # a forked reader gets a helper of its own
        _HELPER, _HELPER_OWNER = _Helper(), os.getpid()
        if not _AT_EXIT:
            atexit.register(_stop_at_exit)
            _AT_EXIT = True
    return _HELPER


def _stop_at_exit() -> None:
    """The helper ended and reaped as the process that started it exits — not left for its parent-death signal to
    kill after the command has returned (a whole-process timer or a process-group wait saw it outlive `report`). A
    forked reader inherits this hook: there it ends only a helper of the reader's own."""
    if _HELPER is not None and _HELPER_OWNER == os.getpid():
        _HELPER.stop()


_HELPER_OWNER = 0
_AT_EXIT = False
