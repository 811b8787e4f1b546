"""No import arrow runs back up a layer, and none goes round in a circle: every module under nvprof_wrap/ is read
with ``ast`` and each import of ``nvprof_wrap.*`` it makes (at the top, inside functions, under TYPE_CHECKING alike,
and by name through ``importlib.import_module`` / ``__import__``) must point to its own group or to a lower layer,
and no chain of imports between modules leads back to where it started. The layers are data, below; a module that
fits none fails the test until it is placed. And no module reaches another package's ``_private`` name: a stage uses
another by its public names only."""
from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest

from tests._paths import ROOT

PACKAGE = ROOT / "nvprof_wrap"

# Lowest first. A group is a module or a package (with everything under it). A module may import its own group
# and the groups of lower layers; groups side by side in one layer import each other only where SIDE_BY_SIDE says.
# The folders are the stages in flow order (launch, tracer, readers, pipeline, store, classify, report, renderers,
# cli), layered by what imports what: classify is pure (no store; the counter rules inside) and the readers give each
# launch its counter verdict with it, so it sits below them; the pipeline composes the store, the evidence and the
# report, so it sits above them. timeline (captures opened once, windows, steps, NVTX ranges, series, hardware
# samples) is what the readers read time with: it sits below them and above classify (the series' kernel families).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "_version", "model"),
    ("system",),  # tools, temporary folders, the life line, forked workers, limits
    ("text",),  # demangle, names, sanitize
    # the owner of a run folder: its files' names, the manifest, the lock, the steps' names, Run; what every stage
    # above reads or writes a run folder through (the injected code excepted: it keeps a copy, tests/run checks it)
    ("run",),
    ("classify",),  # names, counters, compiled code and the GPU: pure functions, no store
    ("timeline",),  # the public API of time: the readers, the exporter, the pipeline and the report use it
    # readers, the launcher and the code that runs inside the job's processes, beside each other: readers never
    # import launch (system/tools.py finds nsys for both), launch never imports readers.
    ("readers", "launch", "tracer"),
    ("store",),
    # the why-analyses (time budget, ceilings, achieved FLOPs): pure functions of the report's inputs, no store
    ("analyses",),
    # types, their JSON, build and headline (its core), then hints, gates, health, compare, experiment, jobs
    ("report",),
    # renderers (a Report → text) and export (a Report and its captures → a trace, streamed), side by side
    ("renderers", "export"),
    ("pipeline",),  # ingest, evidence (classify ranked into the store), and compose: the one analyze()
    ("api",),
    ("keras", "magic"),
    ("",),  # the package itself: the public facade; %load_ext loads the magic
    ("cli",),
    ("_entry",),  # the command line's entry: its own signal handlers, then cli
    ("__main__",),
)

SIDE_BY_SIDE: set[tuple[str, str]] = set()

# Narrower than their layer allows: the launcher needs only the bottom (system/tools.py, not readers, for nsys); the
# code injected into the job's processes (the CUPTI tracer, the NVTX annotations) imports only itself, the standard
# library and what it traces with.
ONLY = {
    "run": {"errors", "_version", "model", "system", "text", "run"},
    # pure functions of the report's inputs: never a store, a reader or a capture (analyses/__init__.py)
    "analyses": {"errors", "_version", "model", "system", "text", "classify", "analyses"},
    "launch": {"errors", "_version", "model", "system", "text", "run", "launch"},
    "tracer": {"tracer"},
}
# cuda.bindings: the driver API, a dependency of cupti-python; torch and nvtx: what annotate.py marks steps with;
# keras, tensorflow and jax: what the numerics recorder reads (tracer/numerics_keras.py: the gradients on TensorFlow
# and JAX)
THIRD_PARTY = {"tracer": {"numpy", "cupti", "cuda", "torch", "nvtx", "keras", "tensorflow", "jax"}}

# Arrows that run back up today, in modules being reworked by another hand; each is to go.
KNOWN: set[tuple[str, str]] = set()  # arrows that run back up: none left


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    """Every module of the package (workloads/ is a link to the project's scripts, not a part of it)."""
    found = {}
    for folder, dirs, files in os.walk(PACKAGE):  # links not followed
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "workloads"))
        for f in files:
            if f.endswith(".py"):
                found[_module_name(Path(folder) / f)] = Path(folder) / f
    return found



def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module a `from … import` names, a relative one resolved against the importing module's package."""
    if not node.level:
        return node.module or ""
    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*anchor, *([node.module] if node.module else [])])

MODULES = _modules()


def _is_module(name: str) -> bool:
    """One of MODULES, or a compiled one, by its C source (timeline/_cattr.c: it imports nothing of ours)."""
    return name in MODULES or (ROOT / Path(*name.split("."))).with_suffix(".c").is_file()


def _targets(module: str, path: Path) -> set[str]:
    """The nvprof_wrap modules ``module`` imports: `from nvprof_wrap import report` is nvprof_wrap.report, any other
    name from the package (its __version__ too: that is nvprof_wrap._version's) the package itself."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and _dynamic_import(node):  # importlib.import_module("nvprof_wrap.x")
            name = node.args[0].value
            while name not in MODULES and "." in name:
                name = name.rpartition(".")[0]
            out.add(name)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "nvprof_wrap")
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            if base.split(".")[0] != "nvprof_wrap":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if _is_module(sub):
                    out.add(sub)
                else:
                    out.add(base)
    return out


def _dynamic_import(node: ast.Call) -> bool:
    """An import of one of ours by name: import_module("nvprof_wrap…") or __import__("nvprof_wrap…")."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return (name in ("import_module", "__import__") and bool(node.args) and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str) and node.args[0].value.split(".")[0] == "nvprof_wrap")


def _cycles(arrows: list[tuple[str, str]]) -> list[list[str]]:
    """The import circles among modules (strongly connected groups of two or more, each sorted)."""
    graph: dict[str, set[str]] = {}
    for a, b in arrows:
        if a != b:
            graph.setdefault(a, set()).add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _third_party(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
        out.update(n.split(".")[0] for n in names)
    return out - set(sys.stdlib_module_names) - {"nvprof_wrap", "__future__"}


def _group(module: str) -> str | None:
    """The longest group that names ``module`` or a package above it ("" for the package itself)."""
    rel = module.removeprefix("nvprof_wrap").lstrip(".")
    groups = [g for layer in LAYERS for g in layer if g and (rel == g or rel.startswith(g + "."))]
    if not groups:
        return "" if rel == "" else None
    return max(groups, key=len)


LAYER_OF = {g: i for i, layer in enumerate(LAYERS) for g in layer}


def _allowed(src: str, dst: str) -> bool:
    a, b = _group(src), _group(dst)
    if a in ONLY and b not in ONLY[a]:
        return False
    if a == b:
        return True
    if LAYER_OF[a] == LAYER_OF[b]:
        return (a, b) in SIDE_BY_SIDE
    return LAYER_OF[b] < LAYER_OF[a]


def _arrows() -> list[tuple[str, str]]:
    return sorted((m, t) for m, p in MODULES.items() for t in _targets(m, p))


def test_every_module_has_a_layer():
    assert [m for m in MODULES if _group(m) is None] == []


def test_no_import_runs_back_up_a_layer():
    wrong = [f"{src} -> {dst}" for src, dst in _arrows() if not _allowed(src, dst) and (src, dst) not in KNOWN]
    assert wrong == []


def test_known_exceptions_are_still_there():
    """An exception that is gone comes off the list, so that it cannot come back unnoticed."""
    arrows = set(_arrows())
    assert [k for k in sorted(KNOWN) if k not in arrows or _allowed(*k)] == []


@pytest.mark.parametrize("group", sorted(THIRD_PARTY))
def test_the_injected_code_imports_only_what_it_traces_with(group):
    extra = {m: _third_party(p) - THIRD_PARTY[group] for m, p in MODULES.items() if _group(m) == group}
    assert {m: e for m, e in extra.items() if e} == {}


def test_no_import_goes_round_in_a_circle():
    """Within a group as well as across them (tracer.cupti_trace and tracer.hooks imported each other)."""
    assert _cycles(_arrows()) == []


# The private modules at the top of the package that every layer may import: _version (__version__ is its) and
# _entry (the command line's entry, run by __main__). Any other _name (a module, or a name in one) is its package's
# own: another package imports it, or reaches it through a module it imported, only by a public name. tests/ and
# benchmarks/ are not held to this: a test reaches into the module it tests.
SHARED_PRIVATE = ("nvprof_wrap._version", "nvprof_wrap._entry")


def _package(name: str) -> str:
    """The package of a dotted name under nvprof_wrap: its first folder (readers, timeline …), or "" for a module at
    the top (errors, model, _version …) and the package itself."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else ""


def _private(name: str) -> bool:
    """A part of the dotted name starts with one underscore (a __dunder__ is public), outside SHARED_PRIVATE."""
    for shared in SHARED_PRIVATE:
        if name == shared or name.startswith(shared + "."):  # nvprof_wrap._version.__version__: __version__ is
            name = "nvprof_wrap" + name[len(shared):]  # what is left to judge
    return any(p.startswith("_") and not p.startswith("__") for p in name.split(".")[1:])


def _reached(module: str, path: Path) -> set[str]:
    """The dotted names of nvprof_wrap that ``module`` imports (a module, or a name from one) or reaches through a
    module it imported (``nsys_sqlite._session`` after ``from nvprof_wrap.readers import nsys_sqlite``)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    out, bound = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "nvprof_wrap":
                    out.add(a.name)
                    bound[a.asname or "nvprof_wrap"] = a.name if a.asname else "nvprof_wrap"
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            if base.split(".")[0] != "nvprof_wrap":
                continue
            for a in node.names:
                out.add(f"{base}.{a.name}")
                if _is_module(f"{base}.{a.name}"):
                    bound[a.asname or a.name] = f"{base}.{a.name}"

    def dotted(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return bound.get(node.id)
        if isinstance(node, ast.Attribute):
            base = dotted(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    out.update(d for n in ast.walk(tree) if isinstance(n, ast.Attribute) and (d := dotted(n)) is not None)
    return out


def test_no_module_reaches_another_packages_private_name():
    wrong = sorted(f"{m} -> {name}" for m, p in MODULES.items() for name in _reached(m, p)
                   if _private(name) and _package(name) != _package(m))
    assert wrong == []


def test_the_private_name_check_sees_what_it_must(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from nvprof_wrap.readers import _head, nsys_sqlite\nfrom nvprof_wrap.timeline.window import _STEP\n"
                 "from nvprof_wrap._version import __version__\nimport nvprof_wrap.readers.summary as s\n"
                 "def f():\n    return nsys_sqlite._session, s._x, nsys_sqlite.read, _head.Head\n")
    reached = {n for n in _reached("nvprof_wrap.export.m", f) if _private(n)}
    assert reached == {"nvprof_wrap.readers._head", "nvprof_wrap.readers._head.Head",
                       "nvprof_wrap.timeline.window._STEP", "nvprof_wrap.readers.nsys_sqlite._session",
                       "nvprof_wrap.readers.summary._x"}
    assert not _private("nvprof_wrap._entry") and _private("nvprof_wrap._other")
    assert not _private("nvprof_wrap._version.__version__") and _private("nvprof_wrap._version._x")
    assert _package("nvprof_wrap.readers._head") == "readers" and _package("nvprof_wrap._version") == ""


def test_readers_never_import_the_launcher():
    assert [(s, d) for s, d in _arrows() if _group(s) == "readers" and _group(d) == "launch"] == []


# The command line parses, calls one function of a stage below and renders: it never opens a store (the store
# policy is pipeline/stores.py's) and never does launch work itself (running under ncu: launch/verify.py; the run
# folder's claim: run/lock.py, the job, the GPUs: launch/). What it may call of launch is the launcher's front: the
# backends' table, a RunSpec, execute() and its checks; of run/, a Run's files and manifest.
CLI_MAY_NOT = ("nvprof_wrap.store", "nvprof_wrap.tracer", "nvprof_wrap.launch.job",
               "nvprof_wrap.run.lock", "nvprof_wrap.launch.ncu", "nvprof_wrap.launch.gpus",
               "nvprof_wrap.launch.verify")


def test_the_command_line_opens_no_store_and_does_no_launch_work():
    wrong = [f"{src} -> {dst}" for src, dst in _arrows() if _group(src) == "cli"
             and any(dst == bad or dst.startswith(bad + ".") for bad in CLI_MAY_NOT)]
    assert wrong == []


def test_the_checker_sees_what_it_must():
    """The rules bite (an arrow up, readers and the launcher reaching into each other, the injected code reaching
    into the package), and the walk sees imports inside functions and names imported from the package."""
    assert not _allowed("nvprof_wrap.readers.nsys_rep", "nvprof_wrap.launch.runner")
    assert not _allowed("nvprof_wrap.launch.runner", "nvprof_wrap.readers.nsys_rep")
    assert not _allowed("nvprof_wrap.store", "nvprof_wrap.report")
    assert not _allowed("nvprof_wrap.tracer.raw", "nvprof_wrap.model")
    assert not _allowed("nvprof_wrap.launch.base", "nvprof_wrap")  # the facade: the version is in _version
    assert not _allowed("nvprof_wrap.classify.evidence", "nvprof_wrap.store")  # classify stays pure
    assert not _allowed("nvprof_wrap.report", "nvprof_wrap.pipeline.evidence")  # the pipeline ranks, then builds
    assert not _allowed("nvprof_wrap.text.names", "nvprof_wrap.classify")
    assert not _allowed("nvprof_wrap.timeline.sql", "nvprof_wrap.readers._head")  # time is read below the formats
    assert _allowed("nvprof_wrap.readers.nsys_sqlite", "nvprof_wrap.timeline.sql")
    assert _allowed("nvprof_wrap.cli.run_cmd", "nvprof_wrap.launch.runner")
    assert _allowed("nvprof_wrap.launch.runner", "nvprof_wrap._version")
    assert _allowed("nvprof_wrap.readers.ncu_csv", "nvprof_wrap.classify.counters")
    arrows = set(_arrows())
    assert ("nvprof_wrap.readers.nsys_rep", "nvprof_wrap.system.tools") in arrows
    assert ("nvprof_wrap.pipeline.ingest", "nvprof_wrap.run") in arrows
    assert not _allowed("nvprof_wrap.run.folder", "nvprof_wrap.launch.runner")  # run/ sits below the launcher
    assert not _allowed("nvprof_wrap.run.steps", "nvprof_wrap.classify")  # run/ imports only what is below it
    assert ("nvprof_wrap.tracer.inject.sitecustomize", "nvprof_wrap.tracer.annotate") in arrows  # inside a function
    assert ("nvprof_wrap.launch.runner", "nvprof_wrap._version") in arrows
    assert ("nvprof_wrap", "nvprof_wrap.pipeline") in arrows  # the facade's lazy analyze, inside a function
    assert _cycles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "d")]) == [["a", "b", "c"]]


def test_the_checker_sees_imports_by_name(tmp_path):
    """report.py once loaded the renderers with importlib.import_module("nvprof_wrap.renderers"): an arrow up that
    an ``import`` statement walk does not see."""
    f = tmp_path / "m.py"
    f.write_text("import importlib\nfrom importlib import import_module\n"
                 "def f():\n    importlib.import_module('nvprof_wrap.renderers')\n"
                 "    import_module('nvprof_wrap.cli.demo')\n    __import__('nvprof_wrap.pipeline')\n"
                 "    importlib.import_module('json')\n")
    assert _targets("nvprof_wrap.report", f) == {"nvprof_wrap.renderers", "nvprof_wrap.cli.demo",
                                                 "nvprof_wrap.pipeline"}


def test_a_report_layer_alone_loads_nothing_above_it():
    """At run time too: building a Report loads no renderer (they register its display methods when loaded), and a
    Report's text asked for before any renderer is loaded says what to import instead of importing up."""
    import subprocess
    import textwrap

    code = textwrap.dedent("""
        import sys
        from pathlib import Path
        from nvprof_wrap import report
        from nvprof_wrap.errors import NvprofWrapError
        from nvprof_wrap.pipeline import evidence
        from nvprof_wrap.pipeline.ingest import ingest
        from nvprof_wrap.store import Store
        store = Store()
        skipped = ingest(store, [Path(sys.argv[1])])
        evidence.rank(store)
        rep = report.build(store, skipped)
        # (the report's core, which its __init__ loads: its types, their JSON, build, headline; report.series and
        # report.ranks, the Report's per-step and per-rank types and their build; report.counter_check, verify's;
        # report.communication, the build of the communication analysis)
        core = ("types", "fields", "serialise", "build", "headline", "series", "ranks", "counter_check",
                "communication")
        above = sorted(m for m in sys.modules if m.startswith(("nvprof_wrap.renderers", "nvprof_wrap.pipeline.compose",
                                                               "nvprof_wrap.cli", "nvprof_wrap.report."))
                       and m not in {f"nvprof_wrap.report.{c}" for c in core})
        try:
            str(rep)
        except NvprofWrapError as e:
            print(above, rep.verdict.tensor_cores, e)
        import nvprof_wrap.renderers
        print(str(rep).splitlines()[0])
    """)
    sample = ROOT / "nvprof_wrap" / "samples" / "two_children"
    proc = subprocess.run([sys.executable, "-c", code, str(sample)], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("[] yes ") and "import nvprof_wrap.renderers" in first
    assert second.startswith("Tensor cores used: yes")
