"""No module of the package but run/ spells a run folder's file name or parses a step's name: every module under
nvprof_wrap/ is read with ``ast`` and its string constants (docstrings and other lone strings, which are prose, left
out) are searched for the names of run/names.py and the step names of run/steps.py.

The single exception is the code injected into the job's processes (tracer/): it imports only itself (the layering
test), so it keeps its own copy of what it writes into the run folder (windows.jsonl, its capture names) and of the
step names it tells apart live; the tests at the end check that each copy equals run/'s.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from nvprof_wrap.run import names, steps
from tests._paths import ROOT

PACKAGE = ROOT / "nvprof_wrap"
OWNERS = ("run", "tracer")  # run/ owns the names; tracer/ keeps checked copies (below)

FILE_NAMES = (names.MANIFEST, names.MANIFEST_TMP, names.LOCK, names.STDOUT_LOG, names.STDERR_LOG, names.METRICS,
              names.GPM, names.WINDOWS, names.STORE, names.VERIFY, names.REPORT_HTML, names.NCU_REPORT, names.NCU_CSV,
              names.NVPROF)
# A file name as a whole word of a string: 'manifest.json', 'RUN/manifest.json', 'run.sqlite-wal', not 'xgpm.jsonl'.
_FILE = re.compile("|".join(rf"(?<![\w.]){re.escape(n)}(?!\w)" for n in FILE_NAMES))
# Step names: a constant that is a step mark's prefix or template, or a pattern (regular expression, SQL) of one.
STEP_PREFIXES = {*steps.OWN_PREFIXES, "optimizer step ", "train batch ", *steps.LAYER_PREFIXES, *steps.LIKE,
                 steps.STEP, steps.PROFILER_STEP, steps.OPTIMIZER_STEP, steps.KERAS_BATCH}
_STEP_PATTERN = re.compile(r"(?:step |ProfilerStep#|optimizer step |train batch )\)?\(\\d|"
                           r"(?:LIKE|GLOB) '(?:step|ProfilerStep|optimizer step|train batch)")


def _prose(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are statements of their own (docstrings and the like)."""
    return {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}


def spelled(source: str) -> list[tuple[int, str]]:
    """(line, string) of each constant of ``source`` that spells a run file's name or a step name's pattern."""
    tree = ast.parse(source)
    prose = _prose(tree)
    inside_f = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in prose:
            continue
        s = node.value
        # (a part of an f-string equal to a prefix is text: f"step {n}" of a log's step, not a mark's name)
        if _FILE.search(s) or _STEP_PATTERN.search(s) or (s in STEP_PREFIXES and id(node) not in inside_f):
            out.append((node.lineno, s))
    return out


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "workloads" not in p.relative_to(PACKAGE).parts
                  and p.relative_to(PACKAGE).parts[0] not in OWNERS)


def test_no_module_outside_run_spells_a_run_file_name_or_a_step_pattern():
    found = {f"{p.relative_to(ROOT)}:{line}": s for p in _modules() for line, s in spelled(p.read_text())}
    assert found == {}


@pytest.mark.parametrize("source", [
    'x = folder / "manifest.json"',
    'x = f"{folder}/stderr.log"',
    'SKIP = {"run.sqlite-wal", "gpm.jsonl"}',
    'p.add_argument("--x", help="default: RUN_DIR/run.sqlite")',
    'STEP = re.compile(r"^(?:step |ProfilerStep#)(\\d+)$")',
    'sql = "s GLOB \'step [0-9]*\'"',
    'like = ("optimizer step %",)',
    'OPT = re.compile(r"^optimizer step (\\d+)$")',
    'prefix = "ProfilerStep#"',
    'tag = "keras:"',
])
def test_the_scan_sees_what_it_must(source):
    assert spelled(source)


@pytest.mark.parametrize("source", [
    '"""A docstring may say manifest.json and \'step N\'."""',
    'def f():\n    """stderr.log, ProfilerStep#N"""',
    'x = f"step {first}"',  # a log's step, in words
    'x = "the manifest"',
    'x = "no NVTX \'step N\' ranges"',
    'x = "xgpm.jsonl"',
    'HEAD = ("ms/step", "step (median)")',
])
def test_the_scan_leaves_prose_alone(source):
    assert spelled(source) == []


# ----------------------------------------------------------------------- the injected code's copies, checked

def test_the_tracer_writes_the_window_record_run_names():
    from nvprof_wrap.tracer import window

    assert window.FILE == names.WINDOWS


def test_the_numerics_recorder_writes_the_files_run_names_and_reads_the_variable_run_sets(tmp_path):
    from nvprof_wrap.launch import runner
    from nvprof_wrap.run import Run
    from nvprof_wrap.tracer import numerics

    assert numerics.FILE == names.NUMERICS and runner.NUMERICS_ENV == numerics.ENV
    name = Path(numerics.Writer(str(tmp_path), 1000).path).name
    assert names.NUMERICS_FILE.fullmatch(name) and names.not_a_capture(name)
    (tmp_path / name).write_text("{}\n")
    (tmp_path / "nsys.nsys-rep").write_text("")
    assert Run(tmp_path).captures() == ["nsys.nsys-rep"]  # the records are the run's own, not a capture


def test_the_tracer_tells_steps_apart_as_run_names_them():
    from nvprof_wrap.tracer import annotate, window

    # the live count's last source is a JAX job's jitted calls, which the capture holds as XLA's executions
    assert window.SOURCES == (*steps.SOURCES, steps.XLA_EXECUTIONS)
    assert window._STEP_NAME.pattern == steps.PATTERNS[steps.OWN].pattern
    assert annotate.STEP_NAME == steps.OPTIMIZER_STEP
    assert annotate.BATCH_NAME == steps.KERAS_BATCH


def test_the_cupti_tracer_names_its_captures_as_run_expects(tmp_path):
    from nvprof_wrap.tracer import capture_file

    partial, final = capture_file._claim_path(str(tmp_path), names.CUPTI.format(host="vm", pid=4826))
    for path in (partial, final):
        assert names.CAPTURE_NAMES["cupti"].fullmatch(Path(path).name)
    assert Path(final).name == "cupti-vm-4826.sqlite"
