"""The writer process: the SQLite inserts of a busy traced process done by a helper process, off its GIL.

Inserting a row from Python costs 1–3 µs of the traced process's GIL (binding the values one by one); at
25,000 kernel launches a second that alone would be 5–15% of the job. So once a process delivers a big buffer
(raw.py's items: numpy columns, no per-record objects), its tracer hands the capture file over to a helper
process started from the same interpreter, ``python -S -E -c …`` (no sitecustomize: it is not traced), and
from then on sends each buffer's items down a pipe (pickle; os.write releases the GIL), one frame per buffer.
The helper runs the same capture_file.Writer: one committed transaction per frame.

The helper outlives its parent: when the traced process dies without finishing (SIGKILL, os._exit) the pipe
reaches end-of-file, everything sent is already committed, the file stays .partial. At a normal end the tracer
sends ("close", meta, tail) and waits for ("closed", path). If the helper cannot start or dies, the tracer
writes in its own process again (cupti_trace.Tracer._write). It ignores SIGINT and SIGTERM and sits in its own
session: a Ctrl-C meant for the job must not kill the writer before the job's tracer has flushed.
"""
# ruff: noqa: BLE001, S110
from __future__ import annotations

import json
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any

from nvprof_wrap.tracer.capture_file import Writer
from nvprof_wrap.tracer.items import Item

READY_TIMEOUT_S = 20.0  # a cold numpy import on a busy node can take seconds
CLOSE_TIMEOUT_S = 120.0  # at most one frame is queued (os.write blocks), so this is never reached normally
_HEADER = struct.Struct("<Q")
_INJECT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inject")
_CHILD = ("import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
          "from nvprof_wrap.tracer.sink import main; main(sys.argv[2:])")


class SinkGone(OSError):
    """The writer process cannot be reached (died, or never started); the message says why."""


class ProcessSink:
    """The traced process's end: the same write/close interface as capture_file.Writer."""

    def __init__(self, proc: subprocess.Popen[bytes], to_child: int, from_child: int, partial: str, final: str) -> None:
        self.proc, self.to_child, self.from_child = proc, to_child, from_child
        self.partial_path, self.final_path = partial, final
        self.lock = threading.Lock()
        self.owner: int | None = None
        self.closed = False

    def open(self) -> None:
        """Nothing to do: the file was opened by the writer it was handed over from."""

    def write(self, items: Iterable[Item]) -> bool:
        with self.lock:
            self.owner = threading.get_ident()
            try:
                if self.closed:
                    return False
                _send(self.to_child, ("write", list(items)))
                return True
            finally:
                self.owner = None

    def close(self, meta: dict[str, str], tail: Iterable[Item] = ()) -> str:
        with self.lock:
            if self.closed:
                return self.final_path
            self.closed = True
            _send(self.to_child, ("close", meta, list(tail)))
            reply = _receive(self.from_child, CLOSE_TIMEOUT_S)
            os.close(self.to_child)
            os.close(self.from_child)
            try:
                self.proc.wait(timeout=5)
            except Exception:
                pass
            if not reply or reply[0] != "closed" or not isinstance(reply[1], str):
                raise SinkGone(f"the capture writer process did not finish the file ({reply!r})")
            return reply[1]

    def leak(self) -> None:
        """In a fork child: let go of the parent's pipes (the parent's writer process is not ours)."""
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self.closed = True


def start(partial: str, final: str) -> ProcessSink:
    """Start the writer process on a .partial file nobody else has open; raises SinkGone if it does not answer."""
    to_read, to_child = os.pipe()
    from_child, to_write = os.pipe()
    try:
        import fcntl

        fcntl.fcntl(to_child, fcntl.F_SETPIPE_SZ, 1 << 20)  # fewer wake-ups per 8 MiB buffer
    except Exception:
        pass
    env = {k: v for k, v in os.environ.items()
           if k not in ("NVPROF_WRAP_CUPTI_DIR", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")}
    path = [p for p in sys.path if p and os.path.realpath(p) != os.path.realpath(_INJECT_DIR)]
    try:
        proc = subprocess.Popen(
            [sys.executable, "-S", "-E", "-c", _CHILD, json.dumps(path), str(to_read), str(to_write), partial, final],
            pass_fds=(to_read, to_write), env=env, stdin=subprocess.DEVNULL, start_new_session=True)
    except Exception as e:
        for fd in (to_read, to_child, from_child, to_write):
            os.close(fd)
        raise SinkGone(f"cannot start the capture writer process ({type(e).__name__}: {e})") from e
    os.close(to_read)
    os.close(to_write)
    reply = _receive(from_child, READY_TIMEOUT_S)
    if reply != ("ready",):
        proc.kill()
        os.close(to_child)
        os.close(from_child)
        raise SinkGone(f"the capture writer process did not start ({reply!r})")
    return ProcessSink(proc, to_child, from_child, partial, final)


# -------------------------------------------------------------------------------------------- frames

def _send(fd: int, message: tuple[object, ...]) -> None:
    data = pickle.dumps(message, protocol=5)
    view = memoryview(_HEADER.pack(len(data)) + data)
    try:
        while view:
            view = view[os.write(fd, view):]  # os.write releases the GIL while the pipe is full
    except OSError as e:
        raise SinkGone(f"the capture writer process is gone ({e})") from e


def _read_exactly(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _receive(fd: int, timeout: float | None = None) -> Any:
    """The next message, or None at end-of-file, on timeout or on garbage."""
    try:
        if timeout is not None:
            deadline = time.monotonic() + timeout
            while not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                if time.monotonic() >= deadline:
                    return None
        head = _read_exactly(fd, _HEADER.size)
        if head is None:
            return None
        data = _read_exactly(fd, _HEADER.unpack(head)[0])
        return None if data is None else pickle.loads(data)  # our own frames, from our parent
    except Exception:
        return None


# ------------------------------------------------------------------------------- the writer process

def main(argv: list[str]) -> None:
    """Loop of the writer process: ("write", items) frames until ("close", meta, tail) or end-of-file."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    from_parent, to_parent, partial, final = int(argv[0]), int(argv[1]), argv[2], argv[3]
    writer = Writer(os.path.dirname(partial), {})
    writer.adopt(partial, final)
    _send(to_parent, ("ready",))
    while True:
        message = _receive(from_parent)
        if message is None:  # the traced process ended without closing: all sent is committed, stays .partial
            break
        try:
            if message[0] == "write":
                writer.write(message[1])
            elif message[0] == "close":
                _send(to_parent, ("closed", writer.close(message[1], message[2])))
                break
        except Exception as e:
            try:
                _send(to_parent, ("error", f"{type(e).__name__}: {e}"))
            except Exception:
                pass
            break
    writer.release()
