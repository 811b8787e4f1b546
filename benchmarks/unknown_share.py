"""How much GPU time do the name rules leave "unknown", per capture?

    python -m benchmarks.unknown_share [--format markdown] [PATH ...]

With no PATH: the shared fixtures (public/, h200/, wild/ TraceLens B200 trace), this project's H200 runs and the public
captures committed in tests/data/public_mit. Each capture is reported on its own, with evidence from its name rules
and its GPU only (no counters), which is what a user gets from a timeline capture alone.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from nvprof_wrap import report
from nvprof_wrap.errors import BadInput
from nvprof_wrap.pipeline import evidence
from nvprof_wrap.pipeline.ingest import ingest
from nvprof_wrap.store import Store

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "tests" / "data" / "h200_runs"
# the shared fixtures where the tests find them: $NVPROF_WRAP_FIXTURES, else beside the repository
FIXTURES = Path(os.environ.get("NVPROF_WRAP_FIXTURES") or ROOT.parent / "shared" / "fixtures")
DEFAULT = [FIXTURES / "public", FIXTURES / "h200", FIXTURES / "wild" / "kineto-vllm-b200.json.gz",
           RUNS, ROOT / "tests" / "data" / "public_mit"]


def captures(paths: list[Path]) -> list[Path]:
    from nvprof_wrap.readers import expand

    return [p for p, _ in expand([p for p in paths if p.exists()]) if not p.name.endswith((".md", ".ptx", ".log"))]


def label(path: Path) -> str:
    """The capture's name, with its folder where the name alone says little (this project's runs: nsys.sqlite.gz,
    cupti-vm-N.sqlite, vm.xplane.pb in one folder per run)."""
    generic = path.name.startswith(("nsys.sqlite", "cupti-")) or RUNS in path.parents
    return "/".join(path.parts[-2:]) if generic else path.name


def row(path: Path) -> tuple[str, int, int, float, float, str] | None:
    store = Store()
    try:
        ingest(store, [path])
        evidence.rank(store)
        rep = report.build(store)
    except BadInput:
        return None
    finally:
        store.close()
    v = rep.verdict
    if not v.kernel_ns or any(s.format == "ncu-csv" for s in rep.sources):
        return None  # no kernel time (or replayed launches, not a timeline)
    return (label(path), v.kernels, sum(k.tensor_core == "unknown" for k in rep.kernels), v.unknown_ns / v.kernel_ns,
            v.tc_fraction, v.tensor_cores)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.unknown_share", description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--format", choices=("table", "markdown"), default="table")
    args = ap.parse_args(argv)
    rows = [r for r in map(row, captures(args.paths or DEFAULT)) if r]
    head = ("capture", "kernels", "unknown kernels", "unknown share of kernel time", "tensor-core share", "verdict")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] if args.format == "markdown" else []
    for name, n, unk, share, tc, verdict in sorted(rows):
        cells = (f"`{name}`" if args.format == "markdown" else name, str(n), str(unk), f"{100 * share:.1f}%",
                 f"{100 * tc:.1f}%", verdict)
        lines.append("| " + " | ".join(cells) + " |" if args.format == "markdown" else "  ".join(cells))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
