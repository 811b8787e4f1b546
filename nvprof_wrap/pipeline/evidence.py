"""Every kind of evidence about a run's kernels, gathered and ranked in one place.

``prepare(store, triton_cache, xla_dumps)`` classifies each distinct kernel name once (cached per rules version),
looks up compiled code (Triton's PTX, XLA's optimized HLO) for the names the rules leave unknown, reads the FLOPs of
XLA's kernels from its dump (temp.t_op_flops), and ranks names,
compiled code, hardware counters, the GPU and the hardware's sampled tensor-pipe activity (classify/rank.py) into one
verdict per (capture, device, kernel name) — the store's ``temp.t_verdicts`` that the report reads. Work is per
distinct name and GPU generation, never per launch.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from nvprof_wrap.classify import counters as counters_mod
from nvprof_wrap.classify import hardware, static, xla_flops, xla_hlo
from nvprof_wrap.classify.engine import RULES_VERSION, classify, classify_many
from nvprof_wrap.classify.rank import decide
from nvprof_wrap.model import Classification
from nvprof_wrap.store import Store
from nvprof_wrap.store.queries import VERDICT_COLUMNS


def classify_pending(store: Store) -> int:
    """Classify each kernel name not yet classified under the current rules; returns how many."""
    names = store.names_to_classify(RULES_VERSION)
    store.add_classifications(classify_many(names, side_by_side=True), RULES_VERSION)
    return len(names)


def attach_static(store: Store, dirs: Iterable[Path] | None = None, xla_dirs: Iterable[Path] = ()) -> int:
    """Compiled code for kernels the name rules leave unknown: Triton cache PTX (``dirs``; None: the usual cache)
    and XLA's optimized HLO (``xla_dirs``: --xla_dump_to folders); returns how many kernels were found."""
    classify_pending(store)
    names = store.unknown_names(RULES_VERSION)
    if not names:
        return 0
    verdicts = static.scan(names, None if dirs is None else list(dirs))
    xla = list(xla_dirs)
    if xla:
        verdicts += xla_hlo.scan(names - {v.name for v in verdicts}, xla)
    store.add_static(verdicts)
    return len(verdicts)


class XlaDumps(NamedTuple):
    """What XLA's dump folders a report was given hold: how many modules of optimized HLO, and which modules' CUDA
    graphs ran library calls (cuBLAS, cuDNN) that no FLOPs could be placed on, their dump lacking the thunk files
    (classify/xla_flops.py per_graph_node)."""

    modules: int
    without_thunks: tuple[str, ...] = ()


def attach_flops(store: Store, xla_dirs: Iterable[Path] = ()) -> XlaDumps | None:
    """FLOPs of the kernels XLA generated and of cuBLAS's for its GEMM custom calls (classify/xla_flops.py) into
    the store's temp.t_op_flops, beside the recorded ops' (op_flops): per capture and process, a kernel's FLOPs per
    launch × its launches there (a custom call's: per execution inside XLA's thunk ranges, or at its node of a CUDA
    graph). Returns what the dumps hold (XlaDumps), None without a dump folder."""
    dirs = list(xla_dirs)
    store.write_xla_flops([])  # a store kept between reports keeps no figure of a dump this report is not given
    if not dirs:
        return None
    kernels = store.launches_by_process()
    figures = xla_flops.scan({name for _c, _p, name, _n, _t in kernels}, dirs)
    rows = xla_flops.per_capture(figures, kernels, store.launches_in_xla_ranges()) if figures else []
    # cuBLAS's kernels of XLA's custom calls: inside XLA's thunk ranges, or at their node of its CUDA graphs
    without: list[str] = []
    rows += xla_flops.per_thunk(dirs, store.launches_in_xla_thunks(), store.launches_in_xla_graphs(), without)
    store.write_xla_flops([(cid, r.pid, r.op, r.name, r.precision, r.flops, r.launches, r.total_ns)
                           for cid, r in rows])
    return XlaDumps(sum(1 for _ in xla_hlo.dump_files(dirs)), tuple(sorted(without)))


def rank(store: Store) -> None:
    """One verdict per (capture, device, kernel name) into the store's temp.t_verdicts."""
    classify_pending(store)
    names = store.classifications(RULES_VERSION)
    counters, compiled = store.counter_evidence(), store.static_evidence()
    if counters:  # a kernel the counter tool and the timeline spell apart is one kernel (classify/counters.alike)
        alike = counters_mod.alike(counters, store.timeline_kernel_names())
        counters.update({name: counters[theirs] for name, theirs in alike.items()})
    sampled = store.hardware_evidence()
    cache: dict[tuple[str, float | None, str | None, tuple[str, str] | None], tuple[object, ...]] = {}
    out: list[tuple[object, ...]] = []
    for r in store.kernel_gpus():
        cc = r["ma"] + (r["mi"] or 0) / 10 if r["ma"] is not None else None
        hw = sampled.get((r["capture_id"], r["device_id"], r["name"]))
        seen = hardware.judge(hw["samples"], hw["interval_ns"], hw["tensor"], hw["source"], hw["hmma"], hw["imma"],
                              hw["dfma"]) if hw else None
        key = (r["name"], cc, r["gpu"], seen)
        if key not in cache:
            row = names.get(r["name"])
            c = classify(r["name"]) if row is None else Classification(
                row["name"], row["tensor_core"], row["precision"] or "", row["family"], row["reason"],
                row["rule"] or "")
            code = compiled.get(r["name"])
            v = decide(c, cc, counters.get(r["name"]), code[:2] if code else None, r["gpu"], seen,
                       static_precision=code[2] if code else "")
            cache[key] = tuple(getattr(v, col) for col in VERDICT_COLUMNS)
        out.append((r["capture_id"], r["device_id"], r["name"], *cache[key]))
    store.write_verdicts(out)


def prepare(store: Store, triton_cache: Iterable[Path] | None = None,
            xla_dumps: Iterable[Path] = ()) -> XlaDumps | None:
    """All of the above, in order: the store is then ready for report.build. Returns attach_flops's XlaDumps."""
    xla = list(xla_dumps)
    attach_static(store, triton_cache, xla)
    modules = attach_flops(store, xla)
    rank(store)
    return modules
