"""README's commands are the ones CI runs: .ci/run executes README's test command verbatim."""
from __future__ import annotations

import re

from tests._paths import ROOT


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    (command,) = re.findall(r"^TEST_COMMAND='(.+)'$", ci, re.MULTILINE)
    assert command in (ROOT / "README.md").read_text()
    assert 'pytest -m "slow or not slow"' in command and "[test,workloads]" in command
