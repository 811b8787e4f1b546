"""`run` has XLA (JAX, TensorFlow) dump what it compiled into the run folder: ``--xla_dump_to=RUN/xla-dump
--xla_dump_hlo_as_text`` appended to the job's XLA_FLAGS. A report reads the optimized HLO to decide the kernels
XLA generated, whose names say nothing (classify/xla_hlo.py). Only under a profiler (`--backend none` reports no
kernel) and unless `--no-xla-dump`; a job whose own XLA_FLAGS already dump somewhere keeps its folder, and the
manifest records it (Manifest.xla_dump)."""
from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from nvprof_wrap.run import Run
from nvprof_wrap.run.manifest import NO_PROFILER

# tsl's flag parser: --name=value, separated by white space (util/command_line_flags.cc)
_DUMP_TO = re.compile(r"--xla_dump_to=(\S+)")


def dump_env(want: bool, backend: str, folder: Path, env: dict[str, str] | None) -> tuple[dict[str, str], str | None]:
    """(what to add to the job's environment, the user's own dump folder to record). ``env``: the job's own
    variables (RunSpec.env), over this process's."""
    if not want or backend == NO_PROFILER:
        return {}, None
    flags = (env or {}).get("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
    own = _DUMP_TO.findall(flags)
    if own:
        value = _unquote(own[-1])  # the last one wins, as in tsl's parser
        # "-": stdout, "sponge": the test outputs folder (xla/debug_options_flags.cc): nothing to read afterwards
        return {}, None if value in ("-", "sponge", "") else os.path.abspath(value)
    target = str(Run(folder).xla_dump_dir.resolve())
    if any(c.isspace() for c in target):
        return {}, None  # XLA_FLAGS is split at white space: a path holding some cannot be passed
    ours = f"--xla_dump_to={target} --xla_dump_hlo_as_text"
    return {"XLA_FLAGS": f"{flags} {ours}" if flags.strip() else ours}, None


def _unquote(value: str) -> str:
    try:
        parts = shlex.split(value)
    except ValueError:
        return value
    return parts[0] if len(parts) == 1 else value
