"""Builds XSpace files (and the TensorBoard trace JSON of the same events) in the structure TensorFlow's and XLA's
CUPTI collector writes (cupti_collector.cc): a host plane, one plane per GPU with its device stats, one line per
stream named "Stream #N(...)", derived lines beside them, event metadata holding the kernel names, stats holding
kernel_details / memcpy_details and the launching op (tf_op, hlo_op, hlo_module, annotation as references to stat
metadata, as the collector stores them). Kernel names are real ones, from the H200 captures in
nvprof_wrap/samples; the HLO names follow XLA's naming (fusion.12 → kernel fusion_12, cuBLAS through custom-call).
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field

NVJET_BF16 = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
FFMA_FP32 = ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4"
             "_execute_kernel__5x_cublas")
CUTLASS_SIMT = "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)"


@dataclass
class Ev:
    name: str
    start_ns: int
    dur_ns: int
    stats: dict = field(default_factory=dict)  # str values become references, as the collector stores them


@dataclass
class Line:
    id: int
    name: str
    events: list[Ev]


@dataclass
class Plane:
    name: str
    lines: list[Line]
    stats: dict = field(default_factory=dict)  # plane stats: int values


def h200_jax_step() -> list[Plane]:
    """One JAX training step on an H200: a bf16 GEMM (cuBLAS through custom-call.3), an fp32 GEMM that cuBLAS ran on
    CUDA cores (custom-call.4), an XLA fusion, copies in and out; an "XLA Ops" line repeating the kernels."""
    mod = {"hlo_module": "jit_train_step", "program_id": 7}
    kernels = [Ev(NVJET_BF16, 1_000, 50_000,
                  {"hlo_op": "custom-call.3", **mod, "kernel_details": "regs:168 grid:132,1,1"}),
               Ev("fusion_12", 52_000, 4_000, {"hlo_op": "fusion.12", **mod, "kernel_details": "regs:32 grid:528,1,1"}),
               Ev(FFMA_FP32, 57_000, 30_000, {"hlo_op": "custom-call.4", **mod, "kernel_details": "regs:128"}),
               Ev(NVJET_BF16, 90_000, 48_000, {"hlo_op": "custom-call.3", **mod})]
    copies = [Ev("MemcpyH2D", 0, 900, {"memcpy_details": "kind_src:pinned kind_dst:device size:4096 dest:0 async:1"}),
              Ev("MemcpyD2H", 140_000, 700, {"memcpy_details": "size:512 dest:0 async:1"})]
    derived = [Ev(e.stats["hlo_op"], e.start_ns, e.dur_ns) for e in kernels]
    gpu = Plane("/device:GPU:0", [Line(13, "Stream #13(Compute)", kernels),
                                  Line(14, "Stream #14(MemcpyH2D,MemcpyD2H)", copies),
                                  Line(-559038734, "XLA Ops", derived)],
                {"compute_cap_major": 9, "compute_cap_minor": 0, "core_count": 132})
    host = Plane("/host:CPU", [Line(1, "python3", [Ev("PjitFunction(train_step)", 0, 150_000)])])
    return [host, gpu]


def xspace(planes: list[Plane], S, errors: tuple[str, ...] = ()) -> bytes:
    """Serialized XSpace; S holds the message classes (readers/_xplane_schema.py: ours or TensorFlow's)."""
    space = S.XSpace(hostnames=["h200-test"], errors=list(errors))
    for pid, p in enumerate(planes):
        plane = space.planes.add(id=pid, name=p.name)
        stat_ids: dict[str, int] = {}

        def stat_id(name: str, plane=plane, stat_ids=stat_ids) -> int:
            if name not in stat_ids:
                stat_ids[name] = len(stat_ids) + 1
                plane.stat_metadata[stat_ids[name]].id = stat_ids[name]
                plane.stat_metadata[stat_ids[name]].name = name
            return stat_ids[name]

        for k, v in p.stats.items():
            plane.stats.add(metadata_id=stat_id(k), int64_value=v)
        names: dict[str, int] = {}
        for ln in p.lines:
            line = plane.lines.add(id=ln.id, display_id=ln.id, name=ln.name, timestamp_ns=1_000_000)
            for e in ln.events:
                if e.name not in names:
                    names[e.name] = len(names) + 1
                    plane.event_metadata[names[e.name]].id = names[e.name]
                    plane.event_metadata[names[e.name]].name = e.name
                ev = line.events.add(metadata_id=names[e.name], offset_ps=e.start_ns * 1000,
                                     duration_ps=e.dur_ns * 1000)
                for k, v in e.stats.items():
                    if isinstance(v, str):
                        ev.stats.add(metadata_id=stat_id(k), ref_value=stat_id(v))
                    else:
                        ev.stats.add(metadata_id=stat_id(k), int64_value=v)
    return space.SerializeToString()


def trace_json(planes: list[Plane]) -> bytes:
    """The same events as TensorBoard's trace viewer JSON (xplane_to_trace_events): a process per plane, a thread
    per line, times in µs, stats as args; no "cat" field. Gzipped, as <host>.trace.json.gz."""
    events: list[dict] = []
    for pid, p in enumerate(planes, start=1):
        events.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": p.name}})
        for ln in p.lines:
            tid = ln.id & 0xFFFFFFFF
            events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": ln.name}})
            events += [{"ph": "X", "pid": pid, "tid": tid, "ts": (1_000_000 + e.start_ns) / 1000,
                        "dur": e.dur_ns / 1000, "name": e.name, "args": {k: str(v) for k, v in e.stats.items()}}
                       for e in ln.events]
    doc = {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": events}
    return gzip.compress(json.dumps(doc).encode())
