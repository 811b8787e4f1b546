"""Nsight Systems: children followed, CUDA/NVTX/cuBLAS/cuDNN traced, no CPU sampling; its .nsys-rep reports are
exported to SQLite once the job ended."""
from __future__ import annotations

import os
from pathlib import Path

from nvprof_wrap.errors import ToolMissing
from nvprof_wrap.launch.base import Plan, RunSpec, rank, window_env
from nvprof_wrap.model import Gpu
from nvprof_wrap.run import Run, names
from nvprof_wrap.system import environ, tools

TRACE = "cuda,nvtx,cublas,cudnn"
# For measuring what nsys' options cost (benchmarks/h200_window.sh G): --trace's value instead of TRACE, and more
# `nsys profile` options (shell words) before the job's command. Not needed for any report.
TRACE_VAR, EXTRA_VAR = "NVPROF_WRAP_NSYS_TRACE", "NVPROF_WRAP_NSYS_EXTRA"


class Nsys:
    name = "nsys"
    silence: str | None = None

    def find(self, explicit: str | None = None) -> str | None:
        return tools.find_nsys(explicit)

    def version(self, exe: str | None = None) -> str:
        exe = exe or self.find()
        return tools.tool_version(exe) if exe else "unknown"

    def usable(self, gpus: list[Gpu], spec: RunSpec) -> bool:
        return self.find(spec.nsys) is not None

    def looked_for(self, gpus: list[Gpu]) -> str:
        return f"nsys (Nsight Systems: install it, or point --nsys / ${tools.NSYS_VAR} at it)"

    def plan(self, spec: RunSpec, folder: Path, gpus: list[Gpu]) -> Plan:
        nsys = self.find(spec.nsys)
        if nsys is None:
            raise ToolMissing(f"nsys not found (looked at --nsys, ${tools.NSYS_VAR}, PATH, "
                              "/opt/nvidia/nsight-systems*, /usr/local/cuda*/bin and the copy inside Nsight Compute)")
        metrics = gpu_metrics_args(nsys, spec.gpu_metrics_hz) if spec.hardware else []
        window, env = capture_args(spec)
        # --cuda-graph-trace=node: each kernel of a CUDA graph recorded (nsys' default records the graph's launch
        # only, and XLA runs a JAX step as a graph: readers/_nsys_graphs.py)
        argv = [nsys, "profile", f"--trace={os.environ.get(TRACE_VAR) or TRACE}", "--sample=none", "--cpuctxsw=none",
                "--cuda-graph-trace=node", *metrics, *window, *environ.words(EXTRA_VAR), "--force-overwrite=true",
                "--output", str(Run(folder).nsys_output(rank())), *spec.command]
        return Plan(self.name, argv, env, tool=nsys, version=self.version(nsys))

    def collect(self, folder: Path, spec: RunSpec) -> list[str]:
        """Nsight Systems writes .nsys-rep; each is exported to SQLite next to it."""
        problems = []
        for rep in sorted(folder.glob(f"*{names.NSYS_REPORTS[0]}")):
            try:
                tools.nsys_export(rep, self.find(spec.nsys) or "nsys", rep.with_suffix(names.EXPORT))
            except Exception as e:  # noqa: BLE001 - reported in the manifest, the run's other captures still count
                problems.append(f"{rep.name}: {e}")
        # a raw stream nsys left: its import failed or stopped (nsys deletes it after a clean one); kept, and said
        for raw in sorted(folder.glob("*.qdstrm")):
            tool = Path(self.find(spec.nsys) or "nsys").parent / "QdstrmImporter"
            problems.append(f"{raw.name}: nsys did not finish turning its raw stream into a report ({names.STDERR_LOG} "
                            f"has nsys' errors); kept — import it again with `{tool} --input-file {raw}`")
        return problems


def capture_args(spec: RunSpec) -> tuple[list[str], dict[str, str]]:
    """nsys' own capture range for the run's window, and the job's environment for it: steps through
    cudaProfilerApi (the job calls cuProfilerStart/Stop where its steps begin: tracer/window.py; the stop on a helper
    thread, as nsys holds its caller ~3 s) ending with "stop" — the job runs on to its end, nsys records no more (its
    default, stop-shutdown, would end the job); seconds through
    --delay / --duration, counted by nsys from the job's start."""
    capture = spec.capture
    if capture is None:
        return [], {}
    if capture.kind == "steps":
        return ["--capture-range=cudaProfilerApi", "--capture-range-end=stop"], window_env(spec, "profiler-aside")
    # --kill=none: at the end of --duration nsys sends the job SIGTERM by default (measured on the H200: exit 143)
    duration = [f"--duration={capture.end - capture.start:g}", "--kill=none"] if capture.end is not None else []
    return [f"--delay={capture.start:g}", *duration], window_env(spec, "self")


def gpu_metrics_args(nsys: str, hz: int) -> list[str]:
    """--gpu-metrics-devices (the job's GPUs) and its frequency, where this nsys can sample a GPU of this machine
    (Turing and newer; `nsys profile --gpu-metrics-devices=help` lists them): the hardware's tensor-pipe activity
    lands in the capture (GPU_METRICS). The frequency trades per-kernel resolution for file size: 10 kHz (nsys'
    default) is 100 µs samples; 50 kHz made a 413 MB export of 40 nanoGPT iterations."""
    listed = tools.gpu_metrics_devices(nsys)
    if not listed or not any(line.split(":")[0].strip().isdigit() for line in listed):
        return []
    which = "cuda-visible" if any(line.strip().startswith("cuda-visible") for line in listed) else "all"
    return [f"--gpu-metrics-devices={which}", f"--gpu-metrics-frequency={int(hz)}"]


BACKEND = Nsys()
