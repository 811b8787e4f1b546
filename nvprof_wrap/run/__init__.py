"""The owner of a run: the run folder that `nvprof-wrap run -o DIR` writes and `report DIR` reads.

- names.py: the names of its files (the only place they are spelled), the captures each backend writes, ranks;
- folder.py: ``Run(folder)``, one typed object for a run folder (where each file is, its manifest, its lock, its
  ranks, its row of the run history), and finding runs among paths;
- manifest.py: the manifest (what ran, how it ended), typed, read and checked;
- lock.py: claiming a folder for a run (its lock, ``--force``);
- steps.py: the names of a job's step marks ('step N', 'ProfilerStep#N', 'optimizer step N', …);
- protocol.py: what the other stages see of a run (typing.Protocol).

It sits low (errors, model, system below it): the launcher, the readers, the store, the pipeline and the command
line all import it; the code injected into the job's processes (tracer/) does not, and keeps a copy of what it
writes (tests/run/test_run_folder.py checks the copies).
"""
from __future__ import annotations

from nvprof_wrap.model import Gpu  # the machine's GPUs a manifest records
from nvprof_wrap.run import names, steps
from nvprof_wrap.run.folder import HistoryRow, Run, is_run, rank_folders, run_of, runs_inside
from nvprof_wrap.run.lock import claim, held
from nvprof_wrap.run.manifest import CaptureWindow, Manifest, read_manifest
from nvprof_wrap.run.protocol import JobRecord, RunFiles, RunRow

__all__ = ["CaptureWindow", "Gpu", "HistoryRow", "JobRecord", "Manifest", "Run", "RunFiles", "RunRow", "claim",
           "held", "is_run", "names", "rank_folders", "read_manifest", "run_of", "runs_inside", "steps"]
