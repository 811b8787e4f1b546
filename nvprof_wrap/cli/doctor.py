"""nvprof-wrap doctor — what this machine has: GPUs (compute capability, driver), which profilers were found
and where, which Keras backends are importable; on a GPU it also runs workloads/matmul_probe.py under the best
backend and says whether tensor cores are visible (the positive control: fp16 GEMMs use them from Volta on).

examples:
  nvprof-wrap doctor
  nvprof-wrap doctor --no-probe --format json
"""
from __future__ import annotations

import argparse

from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._args import Subcommands, add_format, add_save, render_options
from nvprof_wrap.cli._write import check_output, put
from nvprof_wrap.pipeline.doctor import PROBE, facts, probe
from nvprof_wrap.renderers import Doctor, render


def add_parser(sub: Subcommands, name: str) -> None:
    p = sub.add_parser(name, help="what GPUs, profilers and Keras backends this machine has", description=__doc__,
                       epilog=_exit.READ, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--no-probe", action="store_true", help="do not run the matmul probe")
    p.add_argument("-o", "--output", default=None,
                   help="run folder for the probe, kept (default: a temporary folder, removed after)")
    add_format(p)
    add_save(p, "the facts")


def run(args: argparse.Namespace) -> int:
    check_output(args.save, into=args.output)
    f = facts()
    if f["gpus"] and not args.no_probe and PROBE.is_file():
        f["probe"] = probe(args.output)
    put(args, render(args.format, Doctor(f), render_options(args)), "doctor facts")
    return 0
