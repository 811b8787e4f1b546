"""nvprof-wrap classify NAME... | --names-file FILE — the verdict for kernel names, without a capture.

examples:
  nvprof-wrap classify nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_ffma
  nvprof-wrap classify _Z17volta_h884gemm_64x64_ldg8_nn
  cut -f1 names.txt | nvprof-wrap classify --names-file - --format json
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from nvprof_wrap.classify import classify_many
from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._args import Subcommands, add_format, add_output, render_options
from nvprof_wrap.cli._write import check_output, put
from nvprof_wrap.errors import BadInput
from nvprof_wrap.renderers import Classifications, render
from nvprof_wrap.system.limits import MAX_NAME_CHARS
from nvprof_wrap.text.demangle import demangle


def add_parser(sub: Subcommands, name: str) -> None:
    p = sub.add_parser(name, help="classify kernel names (mangled names are demangled first)", description=__doc__,
                       epilog=_exit.READ, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", metavar="NAME")
    p.add_argument("--names-file", type=Path,
                   help="one kernel name per line ('-' for standard input; default: the NAMEs given)")
    add_format(p)
    add_output(p)


def _read_names(path: Path) -> list[str]:
    """One name per line, each cut at MAX_NAME_CHARS (the rest of a longer line is skipped, never held)."""
    import io
    import sys

    from nvprof_wrap.readers import not_a_file

    why = None if str(path) == "-" else not_a_file(path)
    if why:  # /dev/zero, a FIFO: never read (a line would never end)
        raise BadInput(path, "no such file" if why == "broken link" else why)
    try:
        with (io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace") if str(path) == "-" else
              open(path, encoding="utf-8", errors="replace")) as f:
            return [n for n in (_cut(line, f).strip() for line in iter(lambda: f.readline(MAX_NAME_CHARS), "")) if n]
    except OSError as e:
        raise BadInput(path, f"cannot read ({e.strerror})") from None


def _cut(line: str, f: TextIO) -> str:
    if len(line) < MAX_NAME_CHARS or line.endswith("\n"):
        return line
    while (rest := f.readline(MAX_NAME_CHARS)) and not rest.endswith("\n"):
        pass  # the remainder of an over-long line
    return line + "…"


def run(args: argparse.Namespace) -> int:
    check_output(args.output, [args.names_file])
    names = list(args.names) + (_read_names(args.names_file) if args.names_file else [])
    if not names:
        raise BadInput(None, "give kernel names, or --names-file FILE")
    items = classify_many(demangle(n if len(n) <= MAX_NAME_CHARS else n[:MAX_NAME_CHARS] + "…") for n in names)
    put(args, render(args.format, Classifications(tuple(items)), render_options(args)), "classification")
    return 0
