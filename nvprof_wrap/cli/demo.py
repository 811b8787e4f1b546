"""nvprof-wrap demo — reports on real captures bundled with the package (no GPU needed), all recorded on an
NVIDIA H200 (sm_90):

1. keras_reuters_fp16 — the seed's workload: the Keras book's Reuters MLP with floatx float16 (Keras 3, torch
   backend), run with `nvprof-wrap run --backend nsys --annotate keras,torch` (the first 45% of its timeline).
2. torch_ops — PyTorch matmuls, convolutions and attention in fp32, "tf32" (TF32 off), fp16, bf16, fp64, int8 and
   fp8 under Nsight Systems, plus the same script under Nsight Compute, whose tensor-pipe counters confirm
   every verdict.
3. two_children — a parent process whose two child processes ran fp16 matmuls.

examples:
  nvprof-wrap demo
  nvprof-wrap demo --sample keras_reuters_fp16 --wide
  nvprof-wrap demo --format html -o demo.html
  nvprof-wrap demo -o demo.json
"""
from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._args import WIDE_HELP, Subcommands, add_format, add_output, positive, render_options
from nvprof_wrap.cli._write import check_output, put
from nvprof_wrap.pipeline import analyze
from nvprof_wrap.renderers import Named, Reports, render

TITLES = {
    "keras_reuters_fp16": "The seed's Keras Reuters MLP in pure fp16 (floatx float16), annotated per layer and op",
    "torch_ops": "PyTorch ops in seven precisions, with Nsight Compute counters as ground truth",
    "two_children": "A parent whose two child processes ran fp16 matmuls",
}


def add_parser(sub: Subcommands, name: str) -> None:
    p = sub.add_parser(name, help="report on the bundled real H200 captures", description=__doc__,
                       epilog=_exit.READ, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", type=positive, default=10, help="kernels per report (default 10)")
    p.add_argument("--wide", action="store_true", help=WIDE_HELP)
    p.add_argument("--sample", choices=tuple(TITLES), help="only this sample (default: all three)")
    add_format(p)
    add_output(p)


def samples_dir() -> Path:
    return Path(str(resources.files("nvprof_wrap").joinpath("samples")))


def run(args: argparse.Namespace) -> int:
    check_output(args.output)
    names = [args.sample] if args.sample else list(TITLES)
    samples = Reports(tuple(Named(n, TITLES[n], str(samples_dir() / n), analyze(samples_dir() / n)) for n in names))
    put(args, render(args.format, samples, render_options(args, wide=args.wide, limit=args.limit)), "demo")
    return 0
