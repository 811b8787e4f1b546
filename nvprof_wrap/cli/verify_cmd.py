"""nvprof-wrap verify [--top N] [-o DIR] [--from FILE] -- CMD ARGS...

Ground truth from hardware counters. Runs CMD under Nsight Compute (children followed, clocks left
alone) collecting only the tensor-pipe metrics this GPU has, on the N kernels with the most GPU time in
an earlier `nvprof-wrap run` of the same command (or every kernel, up to --launch-count launches, when
there is none). Every kernel then gets a verdict "by counters"; the report lists each disagreement with
the name rules. `verify --from FILE [PATH...]` reads an existing `ncu --csv` export instead of running,
and attaches its verdicts to the captures in PATH (a run folder, say).

examples:
  nvprof-wrap verify -- python train.py --steps 20
  nvprof-wrap verify --top 10 --launch-count 200 -- python train.py
  nvprof-wrap verify --from ncu.csv runs/train-fp16
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from nvprof_wrap.classify import counters
from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._output import add_format, add_save, check_output, options, positive, put
from nvprof_wrap.errors import BadInput, ToolMissing
from nvprof_wrap.launch import ncu
from nvprof_wrap.launch.folder import claim
from nvprof_wrap.launch.gpus import list_gpus
from nvprof_wrap.launch.job import run_job
from nvprof_wrap.launch.manifest import read_manifest
from nvprof_wrap.pipeline import analyze
from nvprof_wrap.renderers import RENDERERS
from nvprof_wrap.store import Store


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="measure tensor-core use with Nsight Compute counters", description=__doc__,
                       epilog=_exit.READ, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--top", type=positive, default=20, help="kernels to measure from an earlier run (default 20)")
    p.add_argument("--launch-count", type=positive, default=500, help="at most this many launches are profiled (default 500)")
    p.add_argument("--from", dest="from_csv", type=Path, help="an existing ncu --csv export to read instead (default: run ncu)")
    p.add_argument("--runs", type=Path, default=Path("runs"), help="where earlier runs are looked for (default: runs)")
    p.add_argument("--ncu", help="path of the ncu executable (default: $NVPROF_WRAP_NCU, else ncu on PATH)")
    p.add_argument("-o", "--output", help="verify folder (default runs/verify-NAME-TIMESTAMP)")
    p.add_argument("--limit", type=positive, default=15, help="kernels to list (default 15)")
    p.add_argument("--wide", action="store_true", help="whole kernel names and reasons (default: shortened)")
    add_format(p)
    add_save(p)
    p.add_argument("paths", nargs="*", metavar="PATH", help="with --from: captures to attach the verdicts to")


def earlier_run(cmd: list[str], runs: Path) -> Path | None:
    """The newest run folder whose manifest has this exact command."""
    found = []
    for m in runs.glob("*/manifest.json"):
        try:
            manifest = read_manifest(m)
        except BadInput:  # unreadable, or not a run's: not this command's run
            continue
        if manifest.command == tuple(cmd) and (m.parent / "run.sqlite").is_file():
            found.append((manifest.started or 0, m.parent))
    return max(found)[1] if found else None


def top_kernels(folder: Path, n: int) -> list[str]:
    store = Store(folder / "run.sqlite")
    try:
        return store.top_kernel_names(n)
    finally:
        store.close()


def measure(args: argparse.Namespace, cmd: list[str]) -> tuple[Path, list[Path]]:
    exe = ncu.NCU.require(args.ncu)
    gpus = list_gpus()
    cc = max((g.cc for g in gpus), default=9.0)
    metrics = counters.metrics_for(cc, ncu.query_metrics(exe))
    if not counters.can_decide(metrics):
        raise ToolMissing(f"ncu offers no matrix-instruction count (HMMA with its HFMA2 split, wgmma, IMMA or DMMA) "
                          f"on compute capability {cc}: tensor-pipe cycles alone cannot tell matrix math from HFMA2")
    before = earlier_run(cmd, args.runs)
    names = top_kernels(before, args.top) if before else None
    default = args.runs / f"verify-{Path(cmd[0]).name}-{time.strftime('%Y%m%d-%H%M%S')}"
    folder, lock = claim(Path(args.output or default), numbered=not args.output)
    try:
        argv = ncu.profile_argv(exe, cmd, folder / "ncu", metrics, names, args.launch_count)
        job = run_job(argv, {}, folder, quiet_stdout=args.format != "table", keep_fds=(lock,), chatter=False)
        (folder / "verify.json").write_text(json.dumps({"command": cmd, "ncu_argv": argv, "metrics": metrics,
                                                        "earlier_run": str(before) if before else None,
                                                        "exit_code": job.exit_code}, indent=2))
    finally:
        os.close(lock)
    rep = folder / "ncu.ncu-rep"
    if not rep.is_file():
        raise BadInput(rep, f"Nsight Compute wrote no report (job exit {job.exit_code}); see {folder}/stderr.log")
    csv = ncu.export_csv(exe, rep, folder / "ncu.csv")
    return csv, ([before] if before else [])


def run(args: argparse.Namespace) -> int:
    check_output(args.save, [args.from_csv, *args.paths], into=args.output)
    if args.from_csv:
        csv, attach = args.from_csv, [Path(p) for p in args.paths]
    else:
        if not args.passthrough:
            raise BadInput(None, "nothing to verify: nvprof-wrap verify [options] -- CMD ARGS, or --from FILE")
        csv, attach = measure(args, args.passthrough)
    store = Store()
    try:
        rep = analyze(csv, *attach, store=store)
        if not store.has_counters():
            raise BadInput(csv, "no kernel counters in this export (was it made with ncu --csv?)")
    finally:
        store.close()
    put(args, RENDERERS[args.format].render_report(rep, wide=args.wide, limit=args.limit, **options(args)), "report")
    if rep.disagreements and args.format == "table":
        print(f"nvprof-wrap: {len(rep.disagreements)} kernel(s) where counters and name rules disagree",
              file=sys.stderr)
    return 0
