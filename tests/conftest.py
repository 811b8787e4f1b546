"""Where the tests find the shared fixtures, and what happens without them.

The public, H200 and wild captures lie in ../shared/fixtures beside the repository (or where $NVPROF_WRAP_FIXTURES
points); tests/_paths.py is the one place that knows where, for the tests and for this file. A clean clone has no
such folder (a folder without public/, h200/ or wild/ counts as none): every test that reads from it is skipped with a
reason naming the folder, and the rest run. A test needs the fixtures when it is marked ``needs_fixtures``, asks for the
``fixtures`` fixture, is parametrized with a path inside the folder, or names FIXTURES / PUBLIC / H200 / WILD in its
code — its body, the fixtures it uses, the functions of its module it calls, the lambdas it is parametrized with (found
from the code, so that a new test cannot forget the mark). Tests that reach the folder only through a subprocess (the
fake nvprof, benchmarks.generate) carry the mark. CI has the folder and runs them all.
"""
from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest

from tests._paths import FIXTURES, ROOT, fixtures_absent

_NAMES = {"FIXTURES", "PUBLIC", "H200", "WILD", "CAPTURES", "SEEDS", "NCU_CSV"}
# Traced test jobs run on tests/fakes/cupti, the stand-in for cupti-python: without this the tracer would first try
# its ctypes binding on a real libcupti where the machine has one (and, with no GPU, be refused by CUPTI).
# tests/tracer/test_ccupti.py drives that binding on the real library.
os.environ.setdefault("NVPROF_WRAP_CUPTI_BINDING", "python")


def _names(fn, seen: set | None = None) -> set[str]:
    """Global names a function's code uses, through nested code and the module functions it calls (a decorated one,
    functools.cache say, through the function it wraps)."""
    seen = set() if seen is None else seen
    fn = inspect.unwrap(fn) if callable(fn) else fn
    if fn in seen or not hasattr(fn, "__code__"):
        return set()
    seen.add(fn)
    out: set[str] = set()
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        out |= set(code.co_names)
        stack += [c for c in code.co_consts if hasattr(c, "co_names")]
    for name in list(out):
        callee = fn.__globals__.get(name)
        if callable(callee) and getattr(callee, "__module__", None) == fn.__module__:
            out |= _names(callee, seen)
    return out


def _needs_fixtures(item: pytest.Item) -> bool:
    if item.get_closest_marker("needs_fixtures") or "fixtures" in getattr(item, "fixturenames", ()):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    if any(str(v).startswith((str(FIXTURES), "public/", "h200/", "wild/")) for v in params.values()):
        return True
    fns = [getattr(item, "function", None), *(v for v in params.values() if callable(v))]
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        fns += [d.func for d in defs]
    return any(_names(fn) & _NAMES or _uses_a_fixture_path(fn) for fn in fns if fn is not None)


def _uses_a_fixture_path(fn) -> bool:
    """A global of the test's module that is a path into the fixtures (CAPTURE = H200 / "…") and that the test
    (or what it calls) uses."""
    for name in _names(fn):
        value = fn.__globals__.get(name)
        values = value if isinstance(value, (list, tuple, set, frozenset)) else \
            value.values() if isinstance(value, dict) else (value,)
        if any(isinstance(v, Path) and str(v).startswith(str(FIXTURES)) for v in values):
            return True
    return False


# The user's own run histories (store/history.py's default place, and $NVPROF_WRAP_HISTORY as the session found it):
# the tests never write to them. pytest_configure points the session at throwaway ones; pytest_sessionfinish fails
# the session when a row of this repository's or this session's folders appeared in a real one anyway (a subprocess
# given an environment without NVPROF_WRAP_HISTORY and with the real HOME, say).
_REAL_HISTORIES: dict[Path, set] = {}
_SCRATCH: list[Path] = []  # the throwaway history folder, removed when the session ends


def _history_rows(path: Path) -> set:
    """(folder, recorded_at) of every row, read-only (never creates nor migrates the file); empty when none."""
    import sqlite3

    if not path.is_file():
        return set()
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            return set(conn.execute("SELECT folder, recorded_at FROM runs").fetchall())
        finally:
            conn.close()
    except sqlite3.Error:
        return set()


def pytest_configure(config: pytest.Config) -> None:
    import tempfile

    from nvprof_wrap.store import history

    real = {history.default_path()}
    if os.environ.get("NVPROF_WRAP_HISTORY") not in (None, "", "off"):
        real.add(Path(os.environ["NVPROF_WRAP_HISTORY"]))
    _REAL_HISTORIES.update({p: _history_rows(p) for p in real})
    # Every command the tests run, in-process or in a subprocess that inherits the environment, records into a
    # throwaway history; XDG_DATA_HOME too, for code that asks for the default place.
    scratch = Path(tempfile.mkdtemp(prefix="nvprof-wrap-hist-"))
    _SCRATCH.append(scratch)
    os.environ["NVPROF_WRAP_HISTORY"] = str(scratch / "h.sqlite")
    os.environ["XDG_DATA_HOME"] = str(scratch / "data")
    config.addinivalue_line("markers", "needs_fixtures: reads ../shared/fixtures (skipped when the folder is absent)")
    # A suite started in the background by a non-interactive shell (`cmd &`, nohup) inherits SIGINT ignored, and so
    # does every process it starts: the Ctrl-C tests then saw no Ctrl-C at all (7 failed so). Handled here instead,
    # the processes the tests start begin with it at its default, as from a terminal.
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session when a test wrote into a real history (rows of other sessions, elsewhere, are not ours)."""
    base = str(session.config._tmp_path_factory.getbasetemp()) if hasattr(session.config, "_tmp_path_factory") \
        else None
    ours = tuple(p for p in (str(ROOT), base, tempfile_root()) if p)
    leaked = []
    for path, before in _REAL_HISTORIES.items():
        leaked += [f"{path}: {folder}" for folder, _ in _history_rows(path) - before
                   if str(folder).startswith(ours)]
    if _WROTE:  # tests that wrote into tests/data or the bundled samples (pytest_runtest_protocol below)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"ERROR: {len(_WROTE)} test(s) wrote into the repository's data; the first: "
                                f"{_WROTE[0]}", red=True)
    if leaked:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        msg = ("the tests wrote into the user's run history (give the subprocess NVPROF_WRAP_HISTORY from "
               "os.environ): " + "; ".join(leaked[:5]))
        if reporter is not None:
            reporter.write_line(f"ERROR: {msg}", red=True)
        else:
            print(f"ERROR: {msg}")


def pytest_unconfigure(config: pytest.Config) -> None:
    """The throwaway history folder goes once the session (and its check above) is done."""
    import shutil

    for scratch in _SCRATCH:
        shutil.rmtree(scratch, ignore_errors=True)


def tempfile_root() -> str | None:
    """This session's scratch history folder: rows of its paths are ours too."""
    hist = os.environ.get("NVPROF_WRAP_HISTORY")
    return str(Path(hist).parent) if hist else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    why = fixtures_absent()
    if why is None:
        return
    skip = pytest.mark.skip(reason=f"needs the shared fixtures folder {FIXTURES} ({why}; CI has it; "
                                   "set NVPROF_WRAP_FIXTURES to use another)")
    for item in items:
        if _needs_fixtures(item):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return FIXTURES


# The repository's own data a test may read but never write (a run folder's report keeps its run store inside the
# folder: a test that reports one of these folders in place left run.sqlite and its -wal/-shm there, which later
# tests then found among the captures). Their files are listed before and after every test.
_READ_ONLY = (ROOT / "tests" / "data", ROOT / "nvprof_wrap" / "samples")
_WROTE: list[str] = []  # the tests that wrote there, each with what it wrote


def _files_under(roots: tuple[Path, ...]) -> set[str]:
    found: set[str] = set()
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            found.update(os.path.join(folder, f) for f in files if not f.endswith((".pyc", ".pyo")))
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    before = _files_under(_READ_ONLY)
    yield
    added = sorted(_files_under(_READ_ONLY) - before)
    if added:
        for f in added:  # ours to remove: the test wrote them
            try:
                os.remove(f)
            except OSError:
                pass
        reporter = item.config.pluginmanager.get_plugin("terminalreporter")
        msg = f"{item.nodeid} wrote into the repository's data: {', '.join(added[:5])}"
        _WROTE.append(msg)
        if reporter is not None:
            reporter.write_line(f"ERROR: {msg}", red=True)


@pytest.fixture
def classified(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every name classify is called on from now on, in order, with nothing classified before in this process
    (classify_many's memo emptied)."""
    from nvprof_wrap.classify import engine

    calls: list[str] = []
    real = engine.classify

    def counted(name: str):
        calls.append(name)
        return real(name)

    monkeypatch.setattr(engine, "classify", counted)
    monkeypatch.setattr(engine, "_DONE", [])
    return calls
