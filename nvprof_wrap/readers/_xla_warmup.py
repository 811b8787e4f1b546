"""A JAX job's warm-up in an Nsight Systems capture, found by the capture's own time structure.

XLA compiles a program on its first call and autotunes it there: it runs candidate GEMM kernels
(``gemm_fusion_dot_general_1`` …), buffer checks (``RedzoneAllocatorKernelImpl``), timers (``DelayKernel``) and
output comparisons (``xla_fp_comparison``) — on the H200, 228 ms of jax's MNIST example's 490 ms of kernels, and 38%
of its GPU time in the autotuner's buffer checks alone (benchmarks/gpu/jax_captures.sh). None of it is the program's
work. XLA marks each execution of a compiled program with an NVTX range (run/steps.py XLA_MODULE_PREFIX); the
program executed most often is the training step, and what the GPU ran before its first execution is warm-up:
left out of the capture's kernels, copies and busy time, and kept apart (Capture.warmup) for the report to say.
``--with-warmup`` (timeline/window.py Window.warmup) keeps it in.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable

from nvprof_wrap.model import PROGRAMS, KernelAgg, OpAgg, WarmupAgg, merge_kernels
from nvprof_wrap.run import steps
from nvprof_wrap.timeline import window

_LIKE = steps.XLA_MODULE_PREFIX + "%"


def first_execution(conn: sqlite3.Connection, have: set[str], ranges_sql: str | None) -> tuple[str, int] | None:
    """(the steps' program, the start of its first execution), or None: no XLA ranges, or no program executed twice.
    The steps' program: where the capture marks its steps otherwise (Keras's batches, a job's 'step N'), the one XLA
    executed most often inside them (timeline/window.py Marked.program) — a capture cut around an epoch's end holds
    more executions of Keras's validation program than of its train step, and everything before the validation's
    first had been warm-up (98.5% of a convnet's kernel time); else the program XLA executed most often."""
    if ranges_sql is None or "StringIds" not in have:
        return None
    # XLA registers its range names (StringIds): a capture of anything but a JAX/XLA job has none — one look at the
    # strings, not a scan of every range
    if conn.execute("SELECT 1 FROM StringIds WHERE value LIKE ? LIMIT 1", (_LIKE,)).fetchone() is None:
        return None
    counts: dict[tuple[str, int], int] = {}
    first: dict[tuple[str, int], int] = {}
    for name, start in conn.execute(f"SELECT name, s FROM ({ranges_sql}) WHERE name LIKE ?", (_LIKE,)):
        program = steps.xla_execution(name or "")
        if program is not None and isinstance(start, int):
            counts[program] = counts.get(program, 0) + 1
            first[program] = min(start, first.get(program, start))
    # one program (module and id), as the steps count it (timeline/window.py): a JAX job also runs small programs of
    # one primitive (jit_broadcast_in_dim) under several ids, more often in all than its step
    best = max(counts, key=lambda p: (counts[p], -first[p]), default=None)
    marked = window.marked_steps(conn.execute(f"SELECT name, tid, s, e FROM ({ranges_sql}) WHERE "
                                              f"{window.step_filter()}"))
    if marked.source not in (None, steps.XLA_EXECUTIONS) and marked.program:
        module, _, number = marked.program.split(PROGRAMS)[0].rpartition("#")
        best = (module, int(number)) if (module, int(number)) in counts else best
    return (best[0], first[best]) if best is not None and counts[best] > 1 else None


# XLA's ranges around compiling and autotuning (TSL's NVTX domain): a kernel launched inside one is warm-up,
# whenever the program is compiled (a later jit call compiles mid-run: jax's MNIST example compiles its accuracy
# function after the first epoch)
_COMPILING = ("XlaCompile:", "XlaPass:", "XlaPassPipeline:", "XlaAutotun")


def compiling(range_name: str | None) -> bool:
    """Whether a range is XLA compiling or autotuning: a compile or pass range, or an autotuner candidate's
    execution (an XlaModule range without a program_id)."""
    name = range_name or ""
    return name.startswith(_COMPILING) or (name.startswith(steps.XLA_MODULE_PREFIX) and steps.xla_program(name) is None)


def split(kernels: tuple[KernelAgg, ...], ops: tuple[OpAgg, ...], program: str,
          warmup_name: Callable[[str], bool]) -> tuple[tuple[KernelAgg, ...], tuple[OpAgg, ...], tuple[WarmupAgg, ...]]:
    """(kernels, ops, warm-up) after the steady state's start: the launches made inside XLA's compile and autotune
    ranges (ops) and the autotuner's own kernels (``warmup_name``: rules.toml's warmup families) moved to warm-up."""
    warm_ops = [o for o in ops if compiling(o.scope) or compiling(o.op)]
    moved: dict[tuple[int | None, str], list[int]] = {}
    for o in warm_ops:
        m = moved.setdefault((o.pid, o.name), [0, 0])
        m[0] += o.launches
        m[1] += o.total_ns or 0
    out: list[KernelAgg] = []
    warm: list[WarmupAgg] = []
    for k in sorted(kernels, key=lambda k: -k.launches):  # a process's launches taken from its busiest device first
        take = moved.get((k.pid, k.name))
        if warmup_name(k.name):
            warm.append(WarmupAgg(k.pid, k.device_id, k.name, k.launches, k.total_ns, program))
            continue
        if take and take[0] > 0:
            n, ns = min(take[0], k.launches), min(take[1], k.total_ns or 0)
            take[0] -= n
            take[1] -= ns
            warm.append(WarmupAgg(k.pid, k.device_id, k.name, n, ns, program))
            if n < k.launches:
                out.append(KernelAgg(k.pid, k.device_id, k.name, k.launches - n,
                                     None if k.total_ns is None else k.total_ns - ns))
            continue
        out.append(k)
    kept_ops = tuple(o for o in ops if not (compiling(o.scope) or compiling(o.op) or warmup_name(o.name)))
    return merge_kernels(out), kept_ops, tuple(warm)
