"""Run reader stages side by side in forked processes.

SQLite work in threads of one Python process does not scale here: measured on this project's 2-core CI
machine, two threads each joining 1M launches took 0.97 s where one alone took 0.51 s; two forked processes
took 0.51 s each. So the per-launch stages of a big capture (busy time, NVTX attribution slices) run in
forked children that open their own read-only connections and send back their answers: pickled through a pipe,
their big buffers (numpy arrays, pickle.PickleBuffer) beside it in shared memory (Answer). Where fork is missing
(Windows), unsafe (macOS) or there is one core, a stage simply runs in the calling process.
"""
from __future__ import annotations

import functools
import io
import mmap
import os
import pickle
import signal
import time
import warnings
from collections.abc import Callable
from typing import Any

from nvprof_wrap.errors import terminate
from nvprof_wrap.system.lifeline import die_with_parent, end_on, fork_is_safe

_HELD = {signal.SIGINT, signal.SIGTERM}  # the signals held back while a child is forked (Forked)
BIG = 16 << 20  # captures from this size on get forked workers; smaller ones are read faster in one process


_STAY = False  # set in ingest's per-capture worker processes: the cores are already in use


def stay_in_process() -> None:
    global _STAY
    _STAY = True


def pool_worker(parent: int) -> None:
    """Initializer of ingest's per-capture worker processes: they end with the reading process, do not fork
    workers of their own, and end their read on SIGTERM through its ``finally`` blocks (ingest stops them so when
    the reading process is terminated: their temporary folders go too)."""
    die_with_parent(parent)
    stay_in_process()
    end_on((signal.SIGTERM,), terminate)


def can_fork() -> bool:
    """Linux and other Unix with 2+ cores, in a process with no other thread that might be inside SQLite.
    Not macOS: forking a process that loaded Apple's frameworks can crash the child, which is why Python itself
    stopped forking there by default."""
    return not _STAY and cores() > 1 and fork_is_safe()


OVERSUBSCRIBE = 2  # processes per core at most: reading is CPU-bound, more only adds memory and switching


def pool_size(asked: int | None, work: int) -> int:
    """How many processes a pool gets: what was asked (None: one per core), never more than the pieces of work
    (`--jobs 64` for 2 captures started 64 processes) nor OVERSUBSCRIBE per core; at least 1."""
    most = cores() * OVERSUBSCRIBE
    return max(1, min(cores() if asked is None else asked, work, most))


def cores() -> int:
    """The cores this process may run on (its CPU affinity: a container's share, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def fork_quietly() -> int:
    """os.fork() for a helper child (0 in the child, its pid in the parent). Ctrl-C and SIGTERM are the parent's to
    answer: it ends the child (Forked.cancel: SIGTERM), which then ends at once and in silence — SIGINT ignored,
    SIGTERM's default action; a Python handler there raised inside the child's SQLite callbacks and printed
    "Exception ignored in sys.unraisablehook" and a traceback onto the command's stderr. Both signals are held back
    across the fork itself: the child runs Python's after-fork hooks (random's reseeding) inside os.fork(), where
    the parent's handler, inherited, raised Terminated and printed "Exception ignored in: <bound method
    Random.seed …>" (a report cancelled 0.3 s in, 1 run of 7); the parent gets what arrived in between once the
    fork returns, the child a SIGTERM sent to it then."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        with warnings.catch_warnings():  # Python 3.12+ warns about fork() with threads (rich's spinner, the only
            warnings.simplefilter("ignore", DeprecationWarning)  # one allowed): the child runs SQLite only
            pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return pid


OUT_OF_BAND = 1 << 20  # answers whose buffers add up to this many bytes send them through shared memory (Answer)
_ALIGN = 64  # each buffer's offset there: numpy's arrays over it stay aligned
_NOWHERE = pickle.dumps(None, protocol=5)  # the places of an answer's buffers where it has none out of its pickle


class Answer:
    """How a forked child's answer comes back: the pickle through a pipe; its big buffers — numpy arrays, and what a
    child wraps in pickle.PickleBuffer (the compiled passes' columns) — beside it, in an anonymous shared-memory file
    the parent made before the fork (memfd: no name anywhere, gone with the last process holding it). The child
    writes each buffer there once; the parent maps the file and unpickles its arrays over the mapping (private:
    copy-on-write), with no copy. Measured: 16 MB of a slice's kernel columns through the pipe cost more than
    reading them again from SQLite; this way ~0.01 s. Where memfd is missing (not Linux) or the buffers are small,
    everything goes through the pipe, as before."""

    def __init__(self) -> None:
        self.fd = -1
        try:
            self.fd = os.memfd_create("nvprof-wrap-answer", os.MFD_CLOEXEC)
        except (AttributeError, OSError):
            pass

    def dumps(self, value: Any) -> bytes:
        """In the child: the bytes for the pipe — where the buffers went (a pickle of their places), then the answer's
        pickle — the big buffers written to the shared file."""
        buffers: list[pickle.PickleBuffer] = []
        inline = pickle.dumps(value, protocol=5, buffer_callback=buffers.append if self.fd >= 0 else None)
        if not buffers:
            return _NOWHERE + inline
        views = [b.raw() for b in buffers]
        placed, at = [], 0
        for v in views:
            placed.append((at, v.nbytes))
            at += -(-v.nbytes // _ALIGN) * _ALIGN
        try:
            if at < OUT_OF_BAND:
                raise OSError("small: through the pipe")
            os.ftruncate(self.fd, at)
            for (off, n), v in zip(placed, views):
                done = 0
                while done < n:
                    done += os.pwrite(self.fd, v[done:], off + done)
        except OSError:  # small, or no room for them (a full /dev/shm): everything through the pipe
            return _NOWHERE + pickle.dumps(value, protocol=5)
        return pickle.dumps(placed, protocol=5) + inline

    def loads(self, data: bytes) -> Any:
        """In the parent: the answer, its buffers mapped from the shared file."""
        f = io.BytesIO(data)
        placed = pickle.load(f)
        if not placed:
            return pickle.load(f)
        size = max(off + n for off, n in placed)
        whole = memoryview(mmap.mmap(self.fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE))
        # a buffer sent read-only (bytes) comes back read-only: the pickle says so
        return pickle.Unpickler(f, buffers=[whole[off:off + n] for off, n in placed]).load()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # the mapping, where made, holds the memory as long as an array of it lives
            self.fd = -1


class Forked:
    """fn(*args) in a forked child (or here, when forking is not possible, or when the child died without an
    answer); result() returns the value or raises the child's exception."""

    def __init__(self, fn: Callable[..., Any], *args: Any, inline: bool = False) -> None:
        self.pid = 0
        self.fd = -1
        self.fn, self.args = fn, args
        self._done: tuple[bool, Any] | None = None
        self._answer: Answer | None = None
        if inline or not can_fork():
            self._done = _call(fn, args)
            return
        r, w = os.pipe()
        answer = Answer()
        parent = os.getpid()
        try:
            pid = fork_quietly()
        except BaseException:
            os.close(r)
            os.close(w)
            answer.close()
            raise
        if pid == 0:  # the child: never returns into the caller's code
            os.close(r)
            try:
                die_with_parent(parent)
                try:
                    payload = answer.dumps(_call(fn, args))
                except Exception as e:  # noqa: BLE001 - an unpicklable result or error goes back as an error
                    payload = _NOWHERE + pickle.dumps((False, RuntimeError(f"{type(e).__name__}: {e}")))
                with os.fdopen(w, "wb") as f:
                    f.write(payload)
            finally:
                os._exit(0)
        os.close(w)
        self.pid, self.fd, self._answer = pid, r, answer

    def result(self) -> Any:
        if self._done is None:
            # The file object owns the pipe from here on and closes it, also when a signal's exception (Ctrl-C,
            # Terminated) ends the read: cancel() must then not close the number again. It did, and its EBADF
            # replaced the signal: "unreadable nsys-sqlite capture (OSError: [Errno 9] Bad file descriptor)", exit 2.
            fd, self.fd = self.fd, -1
            try:
                with os.fdopen(fd, "rb") as f:
                    data = f.read()
                os.waitpid(self.pid, 0)
                # A worker that died (e.g. killed for memory) sent nothing: do its work here instead.
                self._done = self._answer.loads(data) if data and self._answer is not None else \
                    _call(self.fn, self.args)
            finally:
                if self._answer is not None:
                    self._answer.close()
        ok, value = self._done
        if not ok:
            raise value
        return value


    def cancel(self, grace_s: float = 1.0) -> None:
        """The caller is giving up (an error, Ctrl-C, SIGTERM): end the child and reap it, without its answer.
        result() would wait for the whole of its work, or, for a child that died of the same Ctrl-C, do it again
        here. SIGTERM, which ends the child at once (its default action: the child holds nothing to clean up, only
        its read-only connections and the pipe), SIGKILL after ``grace_s`` should it still be there."""
        if self._done is not None or self.pid <= 0:
            return
        self._done = (False, RuntimeError("cancelled"))
        try:
            os.kill(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
                    break
                time.sleep(0.01)
        except (ChildProcessError, ProcessLookupError):
            pass
        finally:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
            if self._answer is not None:
                self._answer.close()


class Handed:
    """A value a forked worker needs that its parent has only after forking it (the worker starts on what it can do
    without it): given through a pipe made before the fork. In the child, get() waits for the parent's give() (an
    error where the parent closed the pipe without one); in the parent — which runs the work itself where the worker
    died without an answer (Forked.result) — get() returns what it gave. give() at most once, before the worker
    could need more than a pipe's buffer: the value is small (what it holds is sent pickled)."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        self.given: tuple[Any] | None = None

    def forked(self) -> None:
        """In the parent, once the worker is forked (or not at all): the reading end is the worker's."""
        if self.r >= 0:
            os.close(self.r)
            self.r = -1

    def give(self, value: Any) -> None:
        self.given = (value,)
        if self.w < 0:
            return
        fd, self.w = self.w, -1
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(pickle.dumps(value))
        except BrokenPipeError:  # the worker is gone: Forked.result says what became of it
            pass

    def close(self) -> None:
        """In the parent, giving up without a value (the worker's get() raises, it ends)."""
        self.forked()
        if self.w >= 0:
            os.close(self.w)
            self.w = -1

    def get(self) -> Any:
        if self.given is not None:
            return self.given[0]
        if self.w >= 0:  # the child's copy of the writing end: closed, so that a parent that gave up reads as EOF
            os.close(self.w)
            self.w = -1
        with os.fdopen(self.r, "rb") as f:
            self.r = -1
            data = f.read()
        if not data:
            raise RuntimeError("the parent gave up before handing the value over")
        self.given = (pickle.loads(data),)
        return self.given[0]


def alongside(here: Callable[[], Any], others: list[Forked]) -> list[Any]:
    """[here(), *each other's result()]: here() runs in this process while the others run in theirs. However it
    ends, every child is reaped: on an error (or Ctrl-C, SIGTERM) the rest are cancelled, and the error is the one
    raised (a result bound inside a `try` and used by its `finally` turned Ctrl-C into UnboundLocalError)."""
    try:
        return [here(), *(other.result() for other in others)]
    except BaseException:
        for other in others:
            other.cancel()
        raise


def in_waves(here: Callable[[Any], Any], forked: Callable[[Any], Forked], items: list[Any], width: int) -> list[Any]:
    """[the result of each item, in order]: items in waves of ``width`` side by side (the first of a wave by
    here(item) in this process, the rest by forked(item) in children), each wave ended before the next starts, so
    that no more than ``width`` processes hold a piece's memory at once. With one core (or no fork), one by one."""
    width = max(1, width)
    parts: list[Any] = []
    for i in range(0, len(items), width):
        first, *rest = items[i:i + width]
        parts += alongside(functools.partial(here, first), [forked(item) for item in rest])
    return parts


def _call(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
    try:
        return True, fn(*args)
    except Exception as e:  # noqa: BLE001 - the worker's error crosses back to the reading process
        return False, e
