"""Output plumbing shared by subcommands: --format, --width, -o FILE, colour on a TTY unless NO_COLOR."""
from __future__ import annotations

import argparse
import errno
import os
import shutil
import sqlite3
import stat
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from nvprof_wrap.errors import BadInput, CannotWrite, NvprofWrapError
from nvprof_wrap.renderers import RENDERERS
from nvprof_wrap.store import Store
from nvprof_wrap.text.sanitize import clean

FORMATS = tuple(RENDERERS)


# -o FILE / --save FILE without --format: the format its extension names; any other extension gets the table text
BY_EXTENSION = {".html": "html", ".htm": "html", ".json": "json", ".csv": "csv", ".md": "markdown",
                ".markdown": "markdown", ".txt": "table"}


def add_format(p: argparse.ArgumentParser, formats: tuple[str, ...] = FORMATS) -> None:
    p.add_argument("--format", choices=formats, default=None,
                   help="output format (default: the one the extension of the output FILE names — .html, .json, "
                        ".csv, .md, .txt —, else table)")
    p.set_defaults(formats_allowed=formats)
    p.add_argument("--width", type=int, default=None, help="table width (default: the terminal's, or $COLUMNS)")


def add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", type=Path, default=None,
                   help="run store to keep the aggregates in (default: RUN_DIR/run.sqlite for a run folder made by "
                        "'nvprof-wrap run', else in memory)")


def add_window(p: argparse.ArgumentParser) -> None:
    p.add_argument("--window", metavar="START:END", default=None,
                   help="steady state: only what the GPU did from START to END seconds after the capture's first GPU "
                        "activity, e.g. 30:90 (default: the whole capture)")
    p.add_argument("--steps", metavar="A:B", default=None,
                   help="steady state: only training steps A to B-1 — NVTX ranges 'step N', torch.profiler's "
                        "ProfilerStep#N, or Keras batches with --annotate keras (default: every step)")


def window_args(args: argparse.Namespace) -> dict:
    """analyze()'s window= and steps= from --window / --steps."""
    from nvprof_wrap.readers._window import parse

    return {"window": parse(args.window, "--window") if getattr(args, "window", None) else None,
            "steps": parse(args.steps, "--steps", integer=True) if getattr(args, "steps", None) else None}


def options(args: argparse.Namespace) -> dict:
    width = args.width or int(os.environ.get("COLUMNS") or 0) or shutil.get_terminal_size((120, 24)).columns
    color = sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb" \
        and output_file(args) is None  # never colour in a file
    return {"width": width, "color": color}


def emit(text: str) -> None:
    """Write a rendered report to stdout. A reader that went away (`| head`) stops the printing, not the
    command: stdout is pointed at /dev/null, so that neither this nor Python's flush at exit fails, and the
    command ends with the exit code it would have had. A stdout that cannot take it (`> /dev/full`, a closed
    stdout) is CannotWrite, after stdout is pointed at /dev/null the same way: `run` says it and goes on with the
    job's code, the other commands exit 2 with that line."""
    out = sys.stdout
    if out is None:
        raise CannotWrite("stdout", "is closed: nothing was printed (-o FILE writes to a file)")
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        stdout_gone()
    except (OSError, ValueError) as e:
        stdout_gone()
        why = "disk full" if getattr(e, "errno", None) == errno.ENOSPC else getattr(e, "strerror", None) or e
        raise CannotWrite("stdout", f"cannot write the output ({why})") from None


def stdout_gone() -> None:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def say(line: str) -> None:
    """One line on stderr, its control characters shown escaped (sanitize.py): messages carry file and kernel
    names. A closed stderr is not an error."""
    try:
        print(clean(line), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


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


def add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", type=Path, default=None, metavar="FILE",
                   help="write the output to FILE instead of stdout, in the format its extension names unless "
                        "--format says: -o report.html (default: stdout)")
    p.set_defaults(output_file="output")


def add_save(p: argparse.ArgumentParser, what: str = "the report") -> None:
    """For a command whose -o names its folder (run, experiment, doctor, verify): --save FILE is their -o FILE."""
    p.add_argument("--save", type=Path, default=None, metavar="FILE",
                   help=f"write {what} to FILE instead of stdout, in the format its extension names unless --format "
                        "says: --save report.html (default: stdout)")
    p.set_defaults(output_file="save")


def output_file(args: argparse.Namespace) -> Path | None:
    """The FILE that -o (or --save) names, for the commands that print: None for stdout."""
    dest = getattr(args, "output_file", None)
    return getattr(args, dest, None) if dest else None


def resolve_format(args: argparse.Namespace) -> None:
    """--format wins; else the extension of the output FILE (BY_EXTENSION); else table. An extension naming a
    format the command does not write is refused. -o - (or --save -) is stdout."""
    dest = getattr(args, "output_file", None)
    if dest and str(getattr(args, dest, None)) == "-":
        setattr(args, dest, None)
    if not hasattr(args, "formats_allowed") or args.format is not None:
        return
    target = output_file(args)
    fmt = BY_EXTENSION.get(target.suffix.lower(), "table") if target is not None else "table"
    if fmt not in args.formats_allowed:
        raise BadInput(target, f"this command does not write {fmt} (its formats: {', '.join(args.formats_allowed)}); "
                               "give --format")
    args.format = fmt


def put(args: argparse.Namespace, text: str, what: str = "output") -> None:
    """A command's rendered output to its -o / --save FILE, else stdout."""
    deliver(text, output_file(args), f"{args.format} {what}")


def deliver(text: str, path: Path | None, what: str = "output") -> None:
    """To stdout, or to `path` with one line on stderr saying where."""
    if path is None:
        emit(text)
        return
    write_text(path, text)
    say(f"nvprof-wrap: wrote the {what} to {path}")


# The files of a run folder that are the run's own (besides its captures): an output never replaces one.
RUN_FILES = {"manifest.json": "the manifest", "manifest.json.tmp": "the manifest", "run.sqlite": "the run store",
             "stdout.log": "a log", "stderr.log": "a log", "metrics.jsonl": "the metrics",
             ".nvprof-wrap.lock": "the lock file", "verify.json": "the record of the verify run"}


def check_output(path: Path | None, inputs: Iterable[Path | str | None] = (), into: Path | str | None = None) -> None:
    """Refuse a FILE that cannot or must not be written, before the work, not after it: a folder; a missing
    folder; one of the command's ``inputs`` (the same file, or a capture inside an input folder); a file a run
    folder owns (its manifest, run store, logs, captures); a file inside ``into``, the run folder the command is
    about to fill. One line each (BadInput, exit 2); nothing is written."""
    if path is None:
        return
    real = Path(os.path.realpath(path))
    if into is not None and _inside(real, Path(into)):
        raise BadInput(path, f"is inside the run folder {into} that this command fills: every file there is the "
                             "run's; write the output elsewhere")
    if path.is_dir():
        raise BadInput(path, "is a directory: name the file to write")
    if not path.parent.is_dir():
        raise BadInput(path, f"cannot write: the folder {path.parent} does not exist")
    for given in inputs:
        if given is None or str(given) == "-":
            continue
        given = Path(given)
        if _same(path, given):
            raise BadInput(path, f"is the input {given}: the output would replace it; write it to another file")
        if given.is_dir() and _inside(real, given) and _capture(real):
            raise BadInput(path, f"is a capture read from {given}: the output would replace it; write it to "
                                 "another file")
    for folder in real.parents:
        what = _owned(folder, real)
        if what:
            raise BadInput(path, f"is {what} of the run folder {folder}: writing it would break the run; write the "
                                 "output elsewhere")


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _inside(real: Path, folder: Path) -> bool:
    try:
        return real.is_relative_to(os.path.realpath(folder))
    except (OSError, ValueError):
        return False


def _capture(real: Path) -> bool:
    """An existing regular file that reads as a capture (its content, as the readers detect it)."""
    from nvprof_wrap.readers import detect

    try:
        if not stat.S_ISREG(os.stat(real).st_mode):
            return False
        detect(real)
        return True
    except (OSError, BadInput):
        return False


def _owned(folder: Path, real: Path) -> str | None:
    """What ``real`` is to ``folder`` when ``folder`` is a run folder (one with a manifest.json) and the file is
    the run's: "the manifest", "a capture", …; else None."""
    try:
        if not (folder / "manifest.json").is_file():
            return None
    except OSError:
        return None
    rel = real.relative_to(folder)
    if len(rel.parts) == 1:
        name = rel.name
        base = name.removesuffix("-journal").removesuffix("-wal").removesuffix("-shm")
        if name in RUN_FILES or base in RUN_FILES:
            return RUN_FILES.get(name) or RUN_FILES[base]
        if base != name:
            return "a SQLite side file"
    from nvprof_wrap.launch.manifest import read_manifest

    try:
        named = set(read_manifest(folder / "manifest.json").captures)
    except (OSError, NvprofWrapError):
        named = set()
    return "a capture" if str(rel) in named or _capture(real) else None


def write_text(path: Path, text: str) -> None:
    """Whole or not at all where ``path`` is absent or a regular file: written beside it, then renamed over it.
    Anything else is written through, never replaced: a device (/dev/null), a FIFO, a symlink (/dev/stdout; its
    target is written)."""
    data = text.encode("utf-8", errors="replace")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise BadInput(path, f"cannot write ({e.strerror or e})") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise BadInput(path, "is a directory: name the file to write")
    if mode is not None and not stat.S_ISREG(mode):
        _write_through(path, data)
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as e:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise CannotWrite(path, f"cannot write ({_why(e)})") from None


def _write_through(path: Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as e:
        raise CannotWrite(path, f"cannot write ({_why(e)})") from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as e:
        raise CannotWrite(path, f"cannot write ({_why(e)})") from None
    finally:
        os.close(fd)


def _why(e: OSError) -> str:
    return "disk full" if e.errno == errno.ENOSPC else e.strerror or str(e)


def open_store(args: argparse.Namespace, paths: list[Path]) -> Store:
    """--store FILE; else a run folder's own run.sqlite (which then holds exactly the folder's captures) when it
    can be written; else one in memory. A --window / --steps report keeps its aggregates in memory, unless --store
    says otherwise: a run folder's store holds the whole captures."""
    if args.store:
        return checked(Store(args.store))
    if getattr(args, "window", None) or getattr(args, "steps", None):
        return Store()
    if len(paths) == 1 and os.path.isfile(paths[0] / "manifest.json") and os.access(paths[0], os.W_OK) \
            and not bundled(paths[0]):
        store = paths[0] / "run.sqlite"
        if not os.path.exists(store) or os.access(store, os.W_OK):
            return checked(Store(store, mirror=paths[0]))
        say(f"nvprof-wrap: warning: {store} is read-only: reading the captures in memory instead")
    return Store()


def bundled(path: Path) -> bool:
    """Inside the installed package (the bundled samples): never written to, whatever its permissions say."""
    package = Path(__file__).resolve().parents[1]
    try:
        return Path(path).resolve().is_relative_to(package)
    except OSError:
        return False


def checked(store: Store) -> Store:
    """Say so when a damaged run store had to be set aside and rebuilt from the captures."""
    if store.rebuilt_from is not None:
        say(f"nvprof-wrap: warning: {store.path} was damaged; kept it as {store.rebuilt_from} and rebuilt it "
            "from the captures")
    return store


def add_gates(p: argparse.ArgumentParser) -> None:
    """CI gates (analysis/gates.py): exit 1 with one line when the report falls short."""
    p.add_argument("--min-tensor-core-share", type=_fraction, metavar="F", default=None,
                   help="fail (exit 1) unless at least this fraction of GPU kernel time ran on tensor cores, e.g. 0.3 "
                        "(default: no gate)")
    p.add_argument("--expect-precision", type=_precisions, metavar="P,Q", default=(),
                   help="fail (exit 1) unless tensor-core kernels ran in each of these precisions, e.g. fp16,bf16 "
                        "(default: no gate)")


def _fraction(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= x <= 1:
        raise argparse.ArgumentTypeError(f"a fraction between 0 and 1, got {text} (30% is 0.3)")
    return x


_KNOWN_PRECISIONS = ("fp16", "bf16", "tf32", "fp32", "fp64", "fp8", "fp4", "int8", "fp32 (3xTF32)")


def _precisions(text: str) -> tuple[str, ...]:
    got = tuple(p.strip() for p in text.split(",") if p.strip())
    bad = [p for p in got if p not in _KNOWN_PRECISIONS]
    if bad or not got:
        raise argparse.ArgumentTypeError(f"unknown precision {', '.join(bad) or text!r} (choose from "
                                         f"{', '.join(_KNOWN_PRECISIONS)})")
    return got


def gates(args: argparse.Namespace, report) -> list[dict]:
    """Each gate given, with its threshold, the measured value and whether it passed (analysis/gates.py)."""
    from nvprof_wrap.report.gates import evaluate

    return evaluate(report, getattr(args, "min_tensor_core_share", None), getattr(args, "expect_precision", ()))


def gate(args: argparse.Namespace, report, results: list[dict] | None = None) -> int:
    """0 when every gate given is met; else 1, after one line per shortfall on stderr."""
    found = [g["message"] for g in (gates(args, report) if results is None else results) if not g["passed"]]
    for line in found:
        say(f"nvprof-wrap: gate failed: {line}")
    return 1 if found else 0


def positive(text: str) -> int:
    """--limit and friends: a whole number of at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def record_history(folder: Path, report) -> None:
    """Remember a run folder's report in the run history (store/history.py); never fails the command."""
    from nvprof_wrap.launch.manifest import read_manifest
    from nvprof_wrap.store import history

    try:
        manifest = read_manifest(folder / "manifest.json").to_json() if (folder / "manifest.json").is_file() else None
        history.record(folder, report, manifest)
    except (OSError, NvprofWrapError, sqlite3.Error) as e:
        say(f"nvprof-wrap: warning: the run history was not updated ({e})")


class reading:
    """A rich spinner on stderr naming the file being read, shown only when reading takes over ``after_s`` seconds
    and stderr is a terminal (never in a pipe, a file or CI logs). Use: ``with reading() as update: update(path)``."""

    def __init__(self, after_s: float = 2.0) -> None:
        self.after_s, self.text, self.status, self.timer = after_s, "reading the captures", None, None
        self.lock = threading.Lock()

    def __enter__(self):
        if sys.stderr.isatty():
            self.timer = threading.Timer(self.after_s, self._show)
            self.timer.daemon = True
            self.timer.start()
        return self.update

    def _show(self) -> None:
        from rich.console import Console

        with self.lock:
            if self.timer is not None:
                self.status = Console(stderr=True).status(self.text)
                self.status.start()

    def update(self, path) -> None:
        with self.lock:
            self.text = f"reading {getattr(path, 'name', path)}"
            if self.status is not None:
                self.status.update(self.text)

    def __exit__(self, *exc) -> None:
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            if self.status is not None:
                self.status.stop()
