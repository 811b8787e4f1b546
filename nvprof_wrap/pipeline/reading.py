"""Where captures are read: here one by one, in a pool of local processes, or on an existing Dask cluster.

Reading a capture is a pure function of the capture (readers.read: read, aggregate, summarise), and its result, a
model.Capture of aggregates, is small; the merge (the run store, written from this process only) works on those
results. Every way of reading yields the results in the order the captures were given, as they arrive, with a
bounded number in flight (AHEAD per worker): the merge never holds more than that many, however many ranks there
are, and its result is the same whichever way read them.

Dask (`--dask ADDRESS`, or DASK_SCHEDULER_ADDRESS) is used, never run: the cluster is the user's (dask-jobqueue,
a Slurm allocation, a LocalCluster); its workers need nvprof-wrap installed and the captures at the same paths (a
shared filesystem). On Dask the workers also fingerprint the captures (a SHA-256 of each, which on one machine
would read every byte of every rank's capture twice).
"""
from __future__ import annotations

import multiprocessing
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from nvprof_wrap import readers
from nvprof_wrap.errors import BadInput, NvprofWrapError, Terminated, ToolMissing
from nvprof_wrap.model import Capture
from nvprof_wrap.system import fork as _fork
from nvprof_wrap.system import lifeline
from nvprof_wrap.timeline.window import Window

if TYPE_CHECKING:
    from distributed import Client  # optional (the dask extra): seen as Any by the checker either way

AHEAD = 2  # results in flight per worker: enough to keep every worker busy, few enough to bound the merge's memory
ENV_DASK = "DASK_SCHEDULER_ADDRESS"  # Dask's own variable: a shell, notebook or job set up for a cluster has it
LOCAL = ("", "none", "local", "off")  # --dask none: read here even where DASK_SCHEDULER_ADDRESS is set
# What reading one capture gives: its aggregates, or why it could not be read (an error as a value: one bad file
# does not stop the others).
Result = Capture | BadInput | ToolMissing
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True)
class Remote:
    """A capture read elsewhere: its content's fingerprint (None: the store knew it) and the reader's result."""

    identity: str | None
    result: Result


def dask_address(option: str | None) -> str | None:
    """The scheduler to read on: --dask ADDRESS, else DASK_SCHEDULER_ADDRESS; None: read on this machine."""
    address = option if option is not None else os.environ.get(ENV_DASK)
    if address is None or address.strip().lower() in LOCAL:
        return None
    return address.strip()


def read_one(path: Path, window: Window | None = None) -> Result:
    """Read one capture: errors come back as values, so one bad file does not stop the others."""
    try:
        return readers.read(path, window)
    except (BadInput, ToolMissing) as e:
        return e


def _read_in_pool(path: Path, window: Window | None = None) -> Result:
    """read_one in a pool worker; SIGTERM (sent by _stop) ends it after its ``finally`` blocks ran."""
    try:
        return read_one(path, window)
    except Terminated as e:
        os._exit(128 + e.signum)


def _read_on_worker(path: str, window: Window | None, fingerprint: bool) -> Remote:
    """read_one on a Dask worker, fingerprinting the capture there first when the store did not know it. A worker
    that cannot see the file says so, naming its host (the captures must be on a filesystem every worker shares)."""
    import socket

    from nvprof_wrap.store import file_identity

    p = Path(path)
    try:
        identity = file_identity(p) if fingerprint else None
    except OSError as e:
        return Remote(None, BadInput(p, f"cannot be read on the Dask worker on {socket.gethostname()} "
                                        f"({e.strerror}): the workers must see the captures at the same path"))
    return Remote(identity, read_one(p, window))


def locally(paths: list[Path], window: Window | None, workers: int | None,
            progress: Callable[[Path], None] | None) -> Iterator[Result]:
    """The readers' results in the order of ``paths``: in ``workers`` local processes (one per capture), or here
    one by one when workers is 1 or the pool broke (a worker died, e.g. out of memory: the rest is read here)."""
    size = _fork.pool_size(workers, len(paths))  # every local pool is sized here
    if size <= 1:
        for path in paths:
            if progress:
                progress(path)
            yield read_one(path, window)
        return
    # fork: workers need no re-import of __main__ (a REPL or notebook has none to re-import); but not while
    # another thread might be inside SQLite (system/fork.py), nor on macOS
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() and lifeline.fork_is_safe() else "spawn"
    done = 0
    try:
        # Each capture already has its own process here: its reader does not fork workers of its own.
        with ProcessPoolExecutor(size, mp_context=multiprocessing.get_context(method),
                                 initializer=_fork.pool_worker, initargs=(os.getpid(),)) as pool:
            try:
                def submit(path: Path) -> Future[Result]:
                    return pool.submit(_read_in_pool, path, window=window)

                for result in _in_order(paths, submit, size * AHEAD, progress):
                    done += 1
                    yield result
            except GeneratorExit:  # the merge stopped early (a capture refused): the reads under way end, no more
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            except BaseException:  # Ctrl-C, SIGTERM: leaving the `with` would wait for every read
                _stop(pool)
                raise
    except BrokenProcessPool:
        yield from locally(paths[done:], window, 1, progress)


class _Pending(Protocol[T_co]):
    """A result on its way: a concurrent.futures.Future, or a Dask one."""

    def result(self) -> T_co: ...


def _in_order(paths: list[Path], submit: Callable[[Path], _Pending[T]], ahead: int,
              progress: Callable[[Path], None] | None) -> Iterator[T]:
    """submit(path) for each path, at most ``ahead`` unfinished at a time; the results in the order of ``paths``."""
    queue: deque[tuple[Path, _Pending[T]]] = deque()
    todo = iter(paths)
    for path in todo:
        queue.append((path, submit(path)))
        if len(queue) >= ahead:
            break
    while queue:
        path, future = queue.popleft()
        result = future.result()
        nxt = next(todo, None)
        if nxt is not None:
            queue.append((nxt, submit(nxt)))
        if progress:
            progress(path)
        yield result


def _stop(pool: ProcessPoolExecutor, grace_s: float = 10.0) -> None:
    """No more reads: the queued ones cancelled, the running ones ended (SIGTERM: they clean up, then exit). They
    are given ``grace_s`` to do so: if this process ended first, they would get SIGKILL (lifeline.py) mid-cleanup."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # shutdown forgets them
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        try:
            proc.terminate()
        except (OSError, ValueError, AttributeError):
            pass
    deadline = time.monotonic() + grace_s
    for proc in procs:
        try:
            proc.join(max(0.0, deadline - time.monotonic()))
        except (OSError, ValueError, AttributeError, AssertionError):
            pass


def on_dask(address: str, todo: list[tuple[Path, bool]], window: Window | None,
            progress: Callable[[Path], None] | None) -> Iterator[Remote]:
    """Remote results in the order of ``todo`` ((path, fingerprint it)), read on the Dask cluster at ``address``."""
    client = connect(address)
    try:
        workers = same_software(client, address)
        fingerprint = dict(todo)

        def submit(path: Path) -> _Pending[Remote]:
            future: _Pending[Remote] = client.submit(_read_on_worker, str(path), window, fingerprint[path], pure=False)
            return future

        try:
            yield from _in_order([p for p, _ in todo], submit, workers * AHEAD, progress)
        except (OSError, TimeoutError) as e:  # the scheduler or a worker went away mid-read
            raise NvprofWrapError(f"the Dask cluster at {address} stopped answering while reading: {e}") from None
    finally:
        client.close()


# Evaluated on every worker (eval travels by reference: a function of ours would need nvprof-wrap there to arrive):
# None where nvprof-wrap is not importable, else the versions that decide what a reading gives.
_PROBE = ("(lambda u: None if u.find_spec('nvprof_wrap') is None else "
          "(__import__('nvprof_wrap.store', fromlist=['DATA_VERSION']).DATA_VERSION, "
          "__import__('nvprof_wrap.classify', fromlist=['RULES_VERSION']).RULES_VERSION))"
          "(__import__('importlib.util', fromlist=['find_spec']))")


def same_software(client: Client, address: str, wait_s: float = 60.0) -> int:
    """The cluster's workers (how many), each with this nvprof-wrap's data and rules versions; or one line saying
    which workers lack it or read differently (a report mixing versions would be true of neither)."""
    from nvprof_wrap.classify import RULES_VERSION
    from nvprof_wrap.store import DATA_VERSION

    try:
        client.wait_for_workers(1, timeout=wait_s)
    except (TimeoutError, OSError):
        raise NvprofWrapError(f"the Dask cluster at {address} has no workers (waited {wait_s:g} s)") from None
    found = client.run(eval, _PROBE)
    missing = [w for w, v in found.items() if v is None]
    if missing:
        raise ToolMissing(f"nvprof-wrap is not installed on {len(missing)} of the {len(found)} workers of the Dask "
                          f"cluster at {address} (e.g. {missing[0]}): install the same version there")
    here = (DATA_VERSION, RULES_VERSION)
    other = {w: tuple(v) for w, v in found.items() if tuple(v) != here}
    if other:
        w, (data, rules) = next(iter(other.items()))
        raise NvprofWrapError(f"{len(other)} of the {len(found)} Dask workers at {address} run another nvprof-wrap "
                              f"(e.g. {w}: data {data}, rules {rules}; here: data {here[0]}, rules {here[1]}): "
                              "install the same version on the cluster")
    return len(found)


def connect(address: str) -> Client:
    """A client of the user's Dask scheduler, or one line saying why there is none (exit 2)."""
    try:
        from distributed import Client
    except ImportError:
        raise ToolMissing(f"--dask {address} needs dask.distributed on this machine and on the cluster's workers: "
                          "pip install 'nvprof-wrap[dask]'") from None
    try:
        return Client(address, timeout=20, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as e:
        raise NvprofWrapError(f"cannot reach the Dask scheduler at {address} ({type(e).__name__}: "
                              f"{' '.join(str(e).split())[:200]})") from None
