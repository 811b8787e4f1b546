"""nvprof-wrap classify NAME... | --names-file FILE — the verdict for kernel names, without a capture."""
from __future__ import annotations

import argparse
from pathlib import Path

from nvprof_wrap.classify import classify_many
from nvprof_wrap.cli._output import add_format, emit, options
from nvprof_wrap.demangle import demangle
from nvprof_wrap.errors import BadInput
from nvprof_wrap.renderers import RENDERERS


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="classify kernel names (mangled names are demangled first)", description=__doc__)
    p.add_argument("names", nargs="*", metavar="NAME")
    p.add_argument("--names-file", type=Path, help="one kernel name per line ('-' for standard input)")
    add_format(p)


def _read_names(path: Path) -> list[str]:
    import sys

    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise BadInput(path, f"cannot read ({e.strerror})") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def run(args: argparse.Namespace) -> int:
    names = list(args.names) + (_read_names(args.names_file) if args.names_file else [])
    if not names:
        raise BadInput(None, "give kernel names, or --names-file FILE")
    items = classify_many(demangle(n) for n in names)
    emit(RENDERERS[args.format].render_classifications(items, **options(args)))
    return 0
