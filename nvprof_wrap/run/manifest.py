"""A run folder's manifest.json, typed: what ran, under which profiler, on which machine, how it ended.

`run` writes one before the job starts (status "running": a wrapper killed later leaves at least that) and again
when the job ended. ``to_json()`` is the file's content, key for key; ``from_json()`` reads it back, and the
manifests of older versions too (no "status" or "wrapper_pid"); a field of the wrong type is refused in one line
(BadInput), never taken for something it is not. ``read_manifest`` reads a file with the bounds of
docs/reliability.md (size, nesting).
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

from nvprof_wrap.errors import BadInput
from nvprof_wrap.model import Gpu
from nvprof_wrap.system import files
from nvprof_wrap.system.limits import MAX_MANIFEST_BYTES

FORMAT, FORMAT_VERSION = "nvprof-wrap-run", 1
NO_PROFILER = "none"  # the backend of a run without a profiler (launch/none.py): its folder holds no capture


@dataclass(frozen=True)
class CaptureWindow:
    """What `run --capture-steps A:B` / `--capture-after S [--capture-for S]` asks: record only steps A..B-1, or only
    from S seconds after the job started (for a while, or to its end). tracer/window.py keeps it inside the job."""

    kind: str  # "steps" | "seconds"
    start: float
    end: float | None = None  # steps: B; seconds: when it closes, from the job's start (None: at the job's end)

    @property
    def option(self) -> str:
        """The options of `run` that ask for it."""
        if self.kind == "steps":
            return f"--capture-steps {int(self.start)}:{int(self.end or 0)}"
        return f"--capture-after {self.start:g}" + (f" --capture-for {self.end - self.start:g}"
                                                    if self.end is not None else "")

    @property
    def env(self) -> str:
        """$NVPROF_WRAP_CAPTURE (tracer/window.py parse)."""
        if self.kind == "steps":
            return f"steps:{int(self.start)}:{int(self.end or 0)}"
        return f"seconds:{self.start!r}:{'inf' if self.end is None else repr(self.end)}"


@dataclass(frozen=True)
class Host:
    name: str | None = None
    platform: str | None = None
    python: str | None = None
    cpus: int | None = None
    memory_bytes: int | None = None


@dataclass(frozen=True)
class Process:
    """One process of the job's tree, as psutil saw it while the job ran."""

    pid: int
    ppid: int | None = None
    cmdline: tuple[str, ...] = ()
    started: float | None = None
    rank: int | None = None  # the distributed rank its launcher gave it (RANK, SLURM_PROCID, …)


_NOT_WRITTEN = ("recorded", "storage_failed")  # what this process knows of its run, never in the file


@dataclass(frozen=True, kw_only=True)
class Manifest:
    # The fields in the order of the file's keys.
    format: str | None = None  # FORMAT: the mark of a run folder nvprof-wrap made (`run --force` replaces only one)
    version: int | None = None  # of the format (FORMAT_VERSION); None in the manifests of versions before it
    nvprof_wrap: str | None = None  # the version that wrote it
    status: str = "ended"  # "running" until the job ended
    command: tuple[str, ...]
    profiler_argv: tuple[str, ...] = ()
    backend: str
    backend_tool: str | None = None
    backend_version: str | None = None
    gpus: tuple[Gpu, ...] = ()  # the machine's, as nvidia-smi lists them (launch/gpus.py)
    host: Host = field(default_factory=Host)
    rank: int | None = None
    wrapper_pid: int | None = None
    started: float | None = None
    ended: float | None = None
    wall_s: float | None = None
    exit_code: int | None = None
    signal: str | None = None  # the signal the wrapper received and forwarded to the job
    processes: tuple[Process, ...] = ()
    captures: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    # Where the hardware's tensor-pipe activity was sampled, or why not (launch/gpm.py, the nsys GPU metrics).
    hardware: str | None = None
    # The window `run --capture-steps` / `--capture-after` recorded (None: the whole job).
    capture: CaptureWindow | None = None
    # The folder the job's own XLA_FLAGS had XLA dump its compiled HLO to (--xla_dump_to), read as evidence by a
    # report (classify/xla_hlo.py); None when `run` chose the folder (RUN/xla-dump) or there is none.
    xla_dump: str | None = None
    # False when the run's end could not be written (problems say why; exit_code is still the job's). Never in
    # the file: a manifest read back was recorded.
    recorded: bool = True
    # True when it was the machine's storage that failed (disk full, EIO: `run` exits 74, not 2). Never in the file.
    storage_failed: bool = False

    @property
    def ranks(self) -> dict[int, int]:
        """pid → distributed rank, for the processes that had one."""
        return {p.pid: p.rank for p in self.processes if p.rank is not None}

    def to_json(self) -> dict[str, object]:
        out = {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name not in _NOT_WRITTEN
               and not (f.name in ("format", "version", "capture", "xla_dump") and getattr(self, f.name) is None)}
        # (format, version: an older one's keys; capture: only a windowed run's; xla_dump: only the user's own)
        return out if self.recorded else {**out, "recorded": False}

    @classmethod
    def from_json(cls, data: object, path: Path | str | None = None) -> Manifest:
        """Raises BadInput (naming ``path``) for what is not a manifest `run` wrote."""
        try:
            values = _MANIFEST(data)  # _MANIFEST reads into a dict
        except _Wrong as e:
            where = "".join(k if k.startswith("[") else f".{k}" for k in e.where).lstrip(".")
            raise BadInput(path, f"not a run manifest: {where or 'it'} is not {e.what}" if e.what != "present"
                           else f"not a run manifest: no {where!r}") from None
        if "status" not in values:  # written before "status" existed: only once, at the end
            values["status"] = "ended" if values.get("exit_code") is not None else "running"
        return cls(**values)


def read_manifest(path: Path) -> Manifest:
    """The manifest in ``path`` (a manifest.json); BadInput when there is none, it is unreadable, past the size
    limit or not one `run` wrote."""
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            raise BadInput(path, f"a run manifest of more than {MAX_MANIFEST_BYTES >> 20} MiB is not one `run` wrote")
        # a FIFO or device named manifest.json is refused, not opened (a FIFO hung report RUN_DIR)
        data = json.loads(files.read_regular(path, MAX_MANIFEST_BYTES, follow=True).decode(errors="replace"))
    except (OSError, ValueError, RecursionError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
        raise BadInput(path, f"unreadable run manifest ({why})") from None
    return Manifest.from_json(data, path)


def _plain(value: object) -> object:
    """Tuples and dataclasses as the JSON lists and objects they came from."""
    if isinstance(value, Gpu):  # the keys of nvidia-smi's columns (_GPU reads them back)
        return value.as_listed()
    if is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


# ------------------------------------------------------------------ reading, field by field
class _Wrong(Exception):
    """A value that is not what `run` writes: ``where`` (keys and indexes, outermost first), ``what`` it should be."""

    def __init__(self, what: str, where: tuple[str, ...] = ()) -> None:
        super().__init__(what)
        self.what, self.where = what, where

    def inside(self, key: str) -> _Wrong:
        return _Wrong(self.what, (key, *self.where))


Read = Callable[[object], object]
T = TypeVar("T")


def _scalar(check: Callable[[object], bool], what: str) -> Read:
    def read(v: object) -> object:
        if not check(v):
            raise _Wrong(what)
        return v
    return read


def _list_of(read_one: Read) -> Read:
    def read(v: object) -> tuple[object, ...]:
        if not isinstance(v, list):
            raise _Wrong("a list")
        out = []
        for i, x in enumerate(v):
            try:
                out.append(read_one(x))
            except _Wrong as e:
                raise e.inside(f"[{i}]") from None
        return tuple(out)
    return read


def _record(cls: Callable[..., T], kinds: dict[str, Read], required: tuple[str, ...]) -> Callable[[object], T]:
    """An object whose keys read with ``kinds`` into ``cls`` (keys it does not know are ignored; null is absent)."""
    def read(v: object) -> T:
        if not isinstance(v, dict):
            raise _Wrong("an object")
        for key in required:
            if v.get(key) is None:
                raise _Wrong("present", (key,))
        values: dict[str, Any] = {}  # each checked by its reader: what the field of ``cls`` takes
        for key, read_one in kinds.items():
            if v.get(key) is not None:
                try:
                    values[key] = read_one(v[key])
                except _Wrong as e:
                    raise e.inside(key) from None
        return cls(**values)
    return read


_STR = _scalar(lambda v: isinstance(v, str), "a string")
# Numbers as SQLite and datetime take them (an exit code of 10**30 stopped the history's write: OverflowError).
_INT = _scalar(lambda v: isinstance(v, int) and not isinstance(v, bool) and -2**63 <= v < 2**63,
               "an integer")
_NUM = _scalar(lambda v: (isinstance(v, int) and not isinstance(v, bool) and -2**63 <= v < 2**63)
               or (isinstance(v, float) and math.isfinite(v)), "a number")
_STRINGS = _list_of(_STR)
_GPU = _record(Gpu.listed, {"index": _INT, "name": _STR, "compute_capability": _STR, "driver": _STR},
               ("index", "name", "compute_capability", "driver"))
_HOST = _record(Host, {"name": _STR, "platform": _STR, "python": _STR, "cpus": _INT, "memory_bytes": _INT}, ())
_PROCESS = _record(Process, {"pid": _INT, "ppid": _INT, "cmdline": _STRINGS, "started": _NUM, "rank": _INT},
                   ("pid",))
_CAPTURE = _record(CaptureWindow, {"kind": _scalar(lambda v: v in ("steps", "seconds"), '"steps" or "seconds"'),
                                   "start": _NUM, "end": _NUM}, ("kind", "start"))
def _fields(**values: Any) -> dict[str, Any]:
    return values


_MANIFEST = _record(_fields, {
    "format": _STR, "version": _INT, "nvprof_wrap": _STR, "status": _STR, "command": _STRINGS,
    "profiler_argv": _STRINGS, "backend": _STR, "backend_tool": _STR, "backend_version": _STR,
    "gpus": _list_of(_GPU), "host": _HOST, "rank": _INT,
    "wrapper_pid": _INT, "started": _NUM, "ended": _NUM, "wall_s": _NUM, "exit_code": _INT, "signal": _STR,
    "processes": _list_of(_PROCESS), "captures": _STRINGS, "problems": _STRINGS, "hardware": _STR,
    "capture": _CAPTURE, "xla_dump": _STR,
}, ("command", "backend"))
