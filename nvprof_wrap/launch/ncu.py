"""Nsight Compute for `verify`: where it is (NCU), which metrics this GPU has, the profiling command, the CSV
export. Not a `run` backend: it replays kernels to read their counters, it does not trace a job."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from nvprof_wrap.errors import BadInput, ToolMissing
from nvprof_wrap.system import files, tools

_BASE = re.compile(r"^\s*([a-z0-9_]+__[a-z0-9_]+)", re.MULTILINE)


class Ncu:
    name = "ncu"

    def find(self, explicit: str | None = None) -> str | None:
        return tools.find_ncu(explicit)

    def require(self, explicit: str | None = None) -> str:
        exe = self.find(explicit)
        if exe is None:
            raise ToolMissing(f"ncu (Nsight Compute) not found: looked at --ncu, ${tools.NCU_VAR}, PATH, "
                              "/opt/nvidia/nsight-compute/* and /usr/local/cuda*/bin")
        return exe

    def version(self, exe: str | None = None) -> str:
        exe = exe or self.find()
        return tools.tool_version(exe) if exe else "unknown"


NCU = Ncu()


def query_metrics(ncu: str) -> set[str] | None:
    """Base metric names ncu offers for the GPU in this machine (None when it cannot say)."""
    try:
        out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = set(_BASE.findall(out.stdout))
    return names or None


_ANONYMOUS = re.compile(r"\(anonymous namespace\)::|<unnamed>::")


def base_function(name: str) -> str:
    """'void at::native::foo<float, 4>(int, float*)' → 'foo': what ncu's --kernel-name-base function matches. An
    anonymous namespace ('(anonymous namespace)::' in Nsight Systems', the PyTorch profiler's and the CUPTI tracer's
    spelling, '<unnamed>::' in ncu's) is a qualifier like any other (it had read as where the name ends: '')."""
    s = _ANONYMOUS.sub("", name).removeprefix("void ")
    depth, cut = 0, len(s)
    for i, c in enumerate(s):  # cut at the first '(' or '<' outside any nesting: params and templates go
        if c in "<(" and depth == 0:
            cut = i
            break
    return s[:cut].rsplit("::", 1)[-1].strip()


def profile_argv(ncu: str, cmd: list[str], out_stem: Path, metrics: list[str], names: list[str] | None,
                 launch_count: int) -> list[str]:
    argv = [ncu, "--target-processes", "all", "--clock-control", "none", "--metrics", ",".join(metrics),
            "--force-overwrite", "--export", str(out_stem)]
    bases = sorted({re.escape(b) for b in map(base_function, names or []) if b})
    if bases:  # names of no function (none left): every kernel, not none ('^()$')
        argv += ["--kernel-name-base", "function", "--kernel-name", f"regex:^({'|'.join(bases)})$"]
    argv += ["--launch-count", str(launch_count), *cmd]
    return argv


def export_csv(ncu: str, report: Path, out: Path) -> Path:
    """ncu --import REPORT --csv (long format, one row per kernel × metric) into OUT."""
    with files.open_file(out, "w", "Nsight Compute export") as f:
        proc = subprocess.run([ncu, "--import", str(report), "--csv", "--print-units", "base"], stdout=f,
                              stderr=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        raise BadInput(report, f"ncu --import failed (exit {proc.returncode}): {proc.stderr.strip()[-200:]}")
    return out
