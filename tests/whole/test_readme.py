"""README's commands are the ones CI runs (.ci/run executes README's test command verbatim), and the output README
quotes is what its commands print."""
from __future__ import annotations

import re

from tests._paths import ROOT


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    (command,) = re.findall(r"^TEST_COMMAND='(.+)'$", ci, re.MULTILINE)
    assert command in (ROOT / "README.md").read_text()
    assert 'pytest -m "slow or not slow"' in command and "[test,workloads]" in command


def _quoted_outputs() -> list[tuple[list[str], list[str]]]:
    """Every `$ nvprof-wrap …` line of README's text blocks that is followed by output lines (`...` marks a cut), with
    those lines: README's numbers are what the command prints, never typed in by hand."""
    import shlex

    found: list[tuple[list[str], list[str]]] = []
    for block in re.findall(r"^```text\n(.*?)^```", (ROOT / "README.md").read_text(), re.MULTILINE | re.DOTALL):
        for chunk in re.split(r"^(?=\$ )", block, flags=re.MULTILINE):
            head, *lines = chunk.splitlines() or [""]
            if head.startswith("$ nvprof-wrap ") and (lines := [ln for ln in lines if ln.strip() not in ("", "...")]):
                found.append((shlex.split(head[2:], comments=True)[1:], lines))
    return found


def test_what_readme_quotes_is_what_the_commands_print(monkeypatch, capsys):
    """Issue 45: README's example numbers once differed from what `demo` printed (a 38.1% that demo never said).
    Each quoted command runs here, from the checkout's root, on the real captures it names (bundled samples,
    tests/data), and each line README shows under it is in its output (whitespace aside: terminals wrap)."""
    from nvprof_wrap.cli import main

    quoted = _quoted_outputs()
    assert {argv[0] for argv, _ in quoted} >= {"demo", "report", "compare"}, quoted
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("NVPROF_WRAP_HISTORY", "off")
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setenv("NO_COLOR", "1")
    for argv, lines in quoted:
        assert main(argv) == 0, argv
        printed = " ".join(capsys.readouterr().out.split())
        for line in lines:
            assert " ".join(line.split()) in printed, (argv, line)
