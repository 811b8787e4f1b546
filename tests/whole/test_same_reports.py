"""Every report stays byte for byte what it was (issue 24, D5): each capture this project has, in each format that
benchmarks/same_reports.py renders, is hashed and compared with tests/data/golden/reports.sha256.

Inputs, as benchmarks/same_reports.py gathers them: the bundled samples, tests/data/h200_runs and h100_runs, the
console logs and the MIT traces of tests/data (always), and the shared fixtures' public/, h200/ and wild/ (when they
are here; without them that test is skipped with the reason). The golden file holds both sets; an input without a
line in it, or a line without its input, fails. Each input is copied into a temporary folder under its same_reports name
(<folder>__<name>) and rendered by same_reports.render: `report` as table (COLUMNS=120, NO_COLOR), json, csv,
markdown and html, and `kernels --format json`, the exit code and stderr included. Each report's JSON is also checked
against the JSON Schema made from the types (nvprof_wrap/json.schema.json, renderers/_documents.py), the
kernels' JSON too.

What would differ from one machine to another, and how it does not:
- the temporary folder. Each input is named relative to it (the command runs there, on `inputs/<name>`): an absolute
  path puts the folder's length into the 120-column table (a note naming the file wraps elsewhere when the folder is
  longer, measured), which no replacement afterwards can undo. Any absolute form left in an output (plain,
  JSON-, HTML- or Markdown-escaped) is replaced by {INPUTS}; there is none today. An output that still names a
  temporary folder fails.
- the package version in the HTML page's footer (`nvprof-wrap 0.1.0 ·`): replaced by {VERSION}, so a release is no
  change of a report. Nothing else in the outputs depends on the machine, the time or the run: rendered twice,
  every output is the same.

After a change meant to change reports (only then), regenerate the golden file and commit it with the change:

    PYTHONPATH=$PWD python3 -m tests.whole.test_same_reports --regenerate

(where the shared fixtures are, CI has them; `--keep-shared` keeps the golden lines of the fixtures' reports when
they are not). To see what changed: benchmarks/same_reports.py in the checkout before and after, then --compare.
"""
from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import jsonschema
import pytest

import nvprof_wrap
from benchmarks import same_reports
from tests._paths import DATA, FIXTURES, H100_RUNS, H200, PUBLIC, ROOT, RUNS, WILD, fixtures_absent

GOLDEN = DATA / "golden" / "reports.sha256"
SCHEMA_FILE = ROOT / "nvprof_wrap" / "json.schema.json"
REGENERATE = "PYTHONPATH=$PWD python3 -m tests.whole.test_same_reports --regenerate"
ENV = {"COLUMNS": "120", "NO_COLOR": "1", "NVPROF_WRAP_HISTORY": "off"}  # as same_reports.render sets them
SHARED_PREFIXES = ("public__", "h200__", "wild__")  # <folder>__: the shared fixtures' folders
SYSTEM_TEMP = {tempfile.gettempdir(), os.path.realpath(tempfile.gettempdir())}  # before a test points it elsewhere
_MD_SPECIAL = "\\`*_{}[]()#+-.!|~"  # what the Markdown report escapes with a backslash (after HTML-escaping)


def own_sources() -> list[Path]:
    """The inputs that come with the repository, as same_reports.gather lists them."""
    return [*(ROOT / "nvprof_wrap" / "samples").iterdir(), *RUNS.iterdir(),
            *(p for p in H100_RUNS.iterdir() if p.is_dir()),
            *(DATA / "console").glob("*.log"),
            *(DATA / "public_mit").glob("*.gz")]


def shared_sources() -> list[Path]:
    """The inputs of the shared fixtures (their README.md left out, as same_reports.gather does)."""
    return [p for folder in (PUBLIC, H200, WILD) for p in sorted(folder.iterdir()) if p.name != "README.md"]


def input_name(src: Path) -> str:
    return f"{src.parent.name}__{src.name}"


def copy_inputs(sources: list[Path], inputs: Path) -> list[str]:
    """Copy each source once into inputs/ under its same_reports name (a folder keeps its shape), without the run
    stores that earlier reports left in run folders (tests/data/**/run.sqlite, a cache: .gitignore): a copied store
    keeps what its first report saw, the run folder's old path included."""
    inputs.mkdir(parents=True, exist_ok=True)
    for src in sources:
        if src.is_dir():
            shutil.copytree(src, inputs / input_name(src), ignore=shutil.ignore_patterns("run.sqlite*"))
        else:
            shutil.copy2(src, inputs / input_name(src))
    return sorted(input_name(s) for s in sources)


def report_names(inputs: list[str]) -> list[str]:
    return sorted(f"{name}.{kind}" for name in inputs for kind in same_reports.KINDS)


def _markdown(text: str) -> str:
    s = html.escape(text, quote=False)
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in s)


def normalise(text: str, folder: Path) -> str:
    """The output with the temporary folder (in each form an output can carry it) and the package version made
    fixed tokens."""
    forms = set()
    for path in {str(folder), str(folder.resolve())}:
        forms |= {path, json.dumps(path)[1:-1], html.escape(path), html.escape(path, quote=False), _markdown(path)}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, "{INPUTS}")
    return text.replace(f"nvprof-wrap {nvprof_wrap.__version__}", "nvprof-wrap {VERSION}")


def render(names: list[str], base: Path) -> dict[str, str]:
    """Render every input of base/inputs into base/out through same_reports.render, from base (so that each input is
    named inputs/<name>); the sha256 of each output, normalised. The caller sets ENV and the working folder."""
    assert Path.cwd().resolve() == base.resolve(), "render runs from the folder that holds inputs/"
    out = base / "out"
    same_reports.render([Path("inputs") / name for name in names], out)
    hashes, leaks = {}, []
    temp_roots = {str(base), str(base.resolve()), *(os.path.join(t, "") for t in SYSTEM_TEMP)}  # "/tmp/", not "/tmp"
    for path in sorted(out.iterdir()):
        text = normalise(path.read_text(), base / "inputs")
        # a capture's own record of the GPU machine's paths (the job's command line there) is the same everywhere
        recorded = text.replace("/tmp/steps28/", "").replace("/tmp/win27/", "").replace("/tmp/s41/", "") \
            .replace("/tmp/s43/", "").replace("/tmp/snjax/", "").replace("/tmp/sgg/", "") \
            .replace("/tmp/fv_mfu_training.py", "")  # the public nsys-ai capture's own command line
        leaks += [f"{path.name}: {root}" for root in sorted(temp_roots) if root in recorded]
        hashes[path.name] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert not leaks, ("outputs name a temporary folder, which differs from machine to machine (normalise it in "
                       f"this test, or find what prints it): {leaks[:10]}")
    return hashes


def schema_errors(out: Path) -> list[str]:
    """Each `report --format json` and `kernels --format json` output of out/ that does not validate against
    nvprof_wrap/json.schema.json (whose oneOf takes each document by its `schema`)."""
    check = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    bad = []
    for path in sorted(out.glob("*.json")):
        stdout = path.read_text().split("--- stdout\n", 1)[1]
        if not stdout.strip():  # no report (an error)
            continue
        error = next(iter(check.iter_errors(json.loads(stdout))), None)
        if error is not None:
            bad.append(f"{path.name}: {error.message} at {list(error.absolute_path)}")
    return bad


def read_golden() -> dict[str, str]:
    if not GOLDEN.is_file():
        return {}
    rows = [ln.split(None, 1) for ln in GOLDEN.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    return {name: digest for digest, name in rows}


def write_golden(hashes: dict[str, str]) -> None:
    head = ("# sha256 of every report of benchmarks/same_reports.py, normalised; tests/whole/test_same_reports.py.\n"
            f"# After a change meant to change reports: {REGENERATE}\n")
    GOLDEN.write_text(head + "".join(f"{hashes[name]}  {name}\n" for name in sorted(hashes)))


def is_shared(name: str) -> bool:
    return name.startswith(SHARED_PREFIXES)


def differences(golden: dict[str, str], got: dict[str, str], out: Path) -> str:
    lines = []
    for name in sorted(set(golden) | set(got)):
        if name not in got:
            lines.append(f"  {name}: in the golden file, not rendered (its input is gone?)")
        elif name not in golden:
            lines.append(f"  {name}: rendered, not in the golden file (a new input?)")
        elif golden[name] != got[name]:
            lines.append(f"  {name}: sha256 {golden[name][:12]}… in the golden file, {got[name][:12]}… now")
    if not lines:
        return ""
    return (f"{len(lines)} of {len(set(golden) | set(got))} reports differ from {GOLDEN.relative_to(ROOT)}:\n"
            + "\n".join(lines[:60]) + ("\n  …" if len(lines) > 60 else "")
            + f"\nThe outputs as rendered now: {out}. To see what changed, run benchmarks/same_reports.py in the "
              "checkout before and after and compare (--compare). After a change meant to change these reports "
              f"(only then): {REGENERATE}, and commit {GOLDEN.relative_to(ROOT)} with the change.")


@pytest.fixture
def rendering(tmp_path, monkeypatch):
    """tmp_path as the working folder, with same_reports' environment (restored afterwards: render sets it too),
    and the commands' own temporary folders inside it."""
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def gathered(tmp_path_factory) -> list[str]:
    """What same_reports.gather copies (the shared fixtures' inputs too, where they are): this test follows it."""
    return sorted(p.name for p in same_reports.gather(tmp_path_factory.mktemp("gathered") / "inputs"))


def test_the_golden_file_has_a_line_for_every_report_of_the_repositorys_own_inputs_and_no_other(gathered):
    own = sorted(input_name(s) for s in own_sources())
    assert set(own) <= set(gathered) and all(is_shared(n) for n in set(gathered) - set(own))
    golden = read_golden()
    assert golden, f"no golden file {GOLDEN}: {REGENERATE}"
    assert sorted(n for n in golden if not is_shared(n)) == report_names(own), REGENERATE


def test_the_golden_file_has_a_line_for_every_report_of_the_shared_fixtures_and_no_other(gathered):
    shared = sorted(input_name(s) for s in shared_sources())  # PUBLIC, H200, WILD: skipped without them
    assert sorted(n for n in gathered if is_shared(n)) == shared
    assert sorted(n for n in read_golden() if is_shared(n)) == report_names(shared), REGENERATE


def test_reports_of_the_samples_and_tests_data_are_unchanged(rendering):
    names = copy_inputs(own_sources(), rendering / "inputs")
    got = render(names, rendering)
    golden = {name: digest for name, digest in read_golden().items() if not is_shared(name)}
    assert len(got) == len(names) * len(same_reports.KINDS)
    assert not schema_errors(rendering / "out")
    message = differences(golden, got, rendering / "out")
    if message:
        pytest.fail(message, pytrace=False)


@pytest.mark.slow
def test_reports_of_the_shared_fixtures_are_unchanged(rendering):
    names = copy_inputs(shared_sources(), rendering / "inputs")  # PUBLIC, H200, WILD: skipped without them
    got = render(names, rendering)
    golden = {name: digest for name, digest in read_golden().items() if is_shared(name)}
    assert not schema_errors(rendering / "out")
    message = differences(golden, got, rendering / "out")
    if message:
        pytest.fail(message, pytrace=False)


def regenerate(keep_shared: bool) -> int:
    """Write the golden file from this checkout's reports (a change of a report is then the commit's to show)."""
    why = fixtures_absent()
    if why is not None and not keep_shared:
        print(f"the shared fixtures folder {FIXTURES} is not usable ({why}): regenerate where it is (CI has it), or "
              "pass --keep-shared to keep the golden file's lines for its reports", file=sys.stderr)
        return 2
    old = read_golden()
    hashes = {}
    saved = {key: os.environ.get(key) for key in ENV}
    with tempfile.TemporaryDirectory(prefix="nvprof-wrap-golden-") as tmp:
        here = Path.cwd()
        try:
            os.environ.update(ENV)
            for part, sources in (("own", own_sources), ("shared", shared_sources)):
                if part == "shared" and why is not None:
                    hashes.update({n: d for n, d in old.items() if is_shared(n)})
                    continue
                base = Path(tmp) / part
                names = copy_inputs(sources(), base / "inputs")
                os.chdir(base)
                hashes.update(render(names, base))
                os.chdir(here)
        finally:
            os.chdir(here)
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    write_golden(hashes)
    changed = sorted(n for n in set(old) | set(hashes) if old.get(n) != hashes.get(n))
    print(f"{GOLDEN.relative_to(ROOT)}: {len(hashes)} reports, {len(changed)} changed")
    for name in changed[:60]:
        print(f"  {name}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Regenerate tests/data/golden/reports.sha256 from this checkout.")
    parser.add_argument("--regenerate", action="store_true", required=True)
    parser.add_argument("--keep-shared", action="store_true",
                        help="without the shared fixtures: keep the golden file's lines for their reports")
    sys.exit(regenerate(parser.parse_args().keep_shared))
