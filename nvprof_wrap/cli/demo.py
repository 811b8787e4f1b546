"""nvprof-wrap demo — the report on real captures bundled with the package (no GPU needed).

The samples were recorded on an NVIDIA H200: a PyTorch script running matmuls, convolutions and attention in
fp32, tf32, fp16, bf16, fp64, int8 and fp8 under Nsight Systems; the same script under Nsight Compute with the
tensor-pipe counters (which confirm the verdicts); and a parent process whose two children ran fp16 matmuls.
"""
from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from nvprof_wrap.cli import report_cmd


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="report on the bundled real H200 captures", description=__doc__)
    p.add_argument("--limit", type=int, default=15)
    p.add_argument("--wide", action="store_true")
    from nvprof_wrap.cli._output import add_format

    add_format(p)


def samples_dir() -> Path:
    return Path(str(resources.files("nvprof_wrap").joinpath("samples")))


def run(args: argparse.Namespace) -> int:
    args.paths, args.store = [samples_dir()], None
    if args.format == "table":
        print(f"nvprof-wrap demo: report on the real H200 captures in {args.paths[0]}\n")
    return report_cmd.run(args)
