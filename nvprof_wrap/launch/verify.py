"""`verify`'s run: the command under Nsight Compute (children followed, clocks left alone), collecting the given
tensor-pipe metrics on the given kernels (or every kernel, up to a launch count), in a verify folder of its own with
a record of what ran (verify.json) and the CSV export the readers take. Which metrics and which kernels is decided
above this layer (pipeline/verify.py: the counter rules and an earlier run's store)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.launch import ncu
from nvprof_wrap.launch.job import run_job
from nvprof_wrap.run import Run, claim, names, read_manifest
from nvprof_wrap.system import files


def earlier_run(cmd: list[str], runs: Path) -> Path | None:
    """The newest run folder whose manifest has this exact command (and a run store to rank its kernels)."""
    found = []
    for m in runs.glob(f"*/{names.MANIFEST}"):
        run = Run(m.parent)
        try:
            manifest = read_manifest(m)
        except BadInput:  # unreadable, or not a run's: not this command's run
            continue
        if manifest.command == tuple(cmd) and run.store_file.is_file():
            found.append((manifest.started or 0, run.folder))
    return max(found)[1] if found else None


def measure(exe: str, cmd: list[str], folder: Path, numbered: bool, metrics: list[str], names: list[str] | None,
            launch_count: int, earlier: Path | None, quiet_stdout: bool) -> Path:
    """Run ``cmd`` under ncu in ``folder`` (claimed: new or empty; ``numbered`` takes the next free name) and
    return the CSV export of its report. BadInput when Nsight Compute wrote no report."""
    folder, lock = claim(folder, numbered=numbered)
    run = Run(folder)
    try:
        argv = ncu.profile_argv(exe, cmd, run.ncu_output, metrics, names, launch_count)
        job = run_job(argv, {}, folder, quiet_stdout=quiet_stdout, keep_fds=(lock,), chatter=False)
        files.write_whole(run.verify_file, json.dumps(
            {"command": cmd, "ncu_argv": argv, "metrics": metrics, "earlier_run": str(earlier) if earlier else None,
             "exit_code": job.exit_code}, indent=2).encode(), "verify record")
    finally:
        os.close(lock)
    rep = run.ncu_report
    if not rep.is_file():
        raise BadInput(rep, f"Nsight Compute wrote no report (job exit {job.exit_code}); see {run.stderr_log}")
    return ncu.export_csv(exe, rep, run.ncu_csv)
