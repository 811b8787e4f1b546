"""The hardware's own tensor-pipe activity, sampled by the launcher during the job: NVML GPM (GPU Performance
Monitoring, Hopper and newer; nvidia-ml-py) read every ``interval_s`` from a thread of the launcher's own process,
never from the job's. Each sample is the share of SM time spent in each pipe over the interval that ends at its
timestamp (``nvmlGpmMetricsGet`` between two consecutive ``nvmlGpmSampleGet``): ANY_TENSOR_UTIL, HMMA, IMMA, DFMA,
DMMA and SM_UTIL, 0-100.

The samples go to ``gpm.jsonl`` in the run folder, one JSON object per line: ``{"device": NVML index, "uuid",
"pci", "t0_ns", "t_ns"}`` (the interval in ns of a monotonic clock placed in Unix time once, at the start: the
clock every capture's start is mapped to) and the metrics by short name (``sm``, ``tensor``, ``hmma``, ``imma``,
``dfma``, ``dmma``; a metric the driver refuses is absent). The first line is a header: ``{"gpm": 1,
"interval_s", "devices": [...]}``. Where there is no sampler (no nvidia-ml-py, a GPU older than Hopper, MIG, no
permission, a driver without GPM) ``available()`` says why in one line and the run goes on without it.

``python -m nvprof_wrap.launch.gpm OUT [--interval S] [--for S]`` samples on its own (benchmarks use it beside a
job run another way)."""
from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from types import ModuleType

from nvprof_wrap.run import names
from nvprof_wrap.system import files

FILE = names.GPM
DEFAULT_INTERVAL_S = 0.1
# NVML_GPM_METRIC_* ids (nvml.h) → the short names of gpm.jsonl and the run store
METRICS = {"sm": 2, "tensor": 5, "dfma": 6, "hmma": 7, "dmma": 8, "imma": 9}


def _nvml() -> ModuleType:  # nvidia-ml-py ships no types: what it holds is Any to the checker
    import pynvml  # nvidia-ml-py

    module: ModuleType = pynvml
    return module


def _visible(nvml: ModuleType, count: int) -> list[int]:
    """The NVML indices of the GPUs the job can use: CUDA_VISIBLE_DEVICES' (indices or GPU-/MIG- UUIDs), else all."""
    spec = os.environ.get("CUDA_VISIBLE_DEVICES")
    if spec is None or not spec.strip():
        return list(range(count)) if spec is None else []
    uuids = {}
    for i in range(count):
        with contextlib.suppress(Exception):  # a GPU NVML cannot describe is not sampled
            u = nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetHandleByIndex(i))
            uuids[u.decode() if isinstance(u, bytes) else u] = i
    out = []
    for tok in (t.strip() for t in spec.split(",")):
        if tok.isdigit() and int(tok) < count:
            out.append(int(tok))
        elif tok.startswith("GPU-"):
            out += [i for u, i in uuids.items() if u.startswith(tok)]
        else:  # MIG-… or junk: CUDA stops at the first entry it cannot use
            break
    return list(dict.fromkeys(out))


def available(devices: list[int] | None = None) -> tuple[list[int], str | None]:
    """The NVML indices GPM can sample for this job, and None; or [] and why not, in words."""
    try:
        nvml = _nvml()
    except ImportError:
        return [], "no nvidia-ml-py (pip install nvidia-ml-py) to read the GPU's performance monitor"
    try:
        nvml.nvmlInit()
    except Exception as e:  # noqa: BLE001 - NVMLError and friends: no driver, no permission
        return [], f"NVML did not start ({e})"
    try:
        count = nvml.nvmlDeviceGetCount()
        wanted = _visible(nvml, count) if devices is None else devices
        if not wanted:
            return [], "no GPU is visible to the job"
        ok, why = [], []
        for i in wanted:
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            if _mig(nvml, h):
                why.append(f"GPU {i} is in MIG mode (GPM samples a whole GPU)")
                continue
            try:
                supported = nvml.nvmlGpmQueryDeviceSupport(h).isSupportedDevice
            except Exception as e:  # noqa: BLE001 - a driver without GPM
                why.append(f"GPU {i}: the driver has no GPM ({e})")
                continue
            if not supported:
                why.append(f"GPU {i} has no GPM (Hopper and newer have it)")
                continue
            ok.append(i)
        return ok, None if ok else "; ".join(why)
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def _mig(nvml: ModuleType, handle: object) -> bool:
    try:
        return bool(nvml.nvmlDeviceGetMigMode(handle)[0])
    except Exception:  # noqa: BLE001 - no MIG on this GPU
        return False


class Sampler:
    """Samples GPM on ``devices`` every ``interval_s`` into ``path`` until stop(); start() and stop() from the
    launcher's thread. Never raises into the launcher: a failure mid-run ends the sampling with a note."""

    def __init__(self, path: Path, devices: list[int], interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.path, self.devices, self.interval_s = Path(path), devices, interval_s
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="nvprof-wrap-gpm", daemon=True)
        self.samples = 0
        self.problem: str | None = None

    def start(self) -> Sampler:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=10)

    def _run(self) -> None:
        try:
            self._sample()
        except Exception as e:  # noqa: BLE001 - the sampler never fails the run
            self.problem = f"GPM sampling stopped after {self.samples} samples: {type(e).__name__}: {e}"

    def _sample(self) -> None:
        nvml = _nvml()
        nvml.nvmlInit()
        try:
            handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in self.devices]
            ids = []
            for h in handles:
                u = nvml.nvmlDeviceGetUUID(h)
                try:
                    pci = nvml.nvmlDeviceGetPciInfo(h).busId
                except Exception:  # noqa: BLE001
                    pci = b""
                ids.append((u.decode() if isinstance(u, bytes) else u, pci.decode() if isinstance(pci, bytes) else pci))
            bufs = [[nvml.nvmlGpmSampleAlloc(), nvml.nvmlGpmSampleAlloc()] for _ in handles]
            with files.open_file(self.path, "w", "GPM samples", buffering=1) as out:
                out.write(json.dumps({"gpm": 1, "interval_s": self.interval_s,
                                      "devices": [{"device": i, "uuid": u, "pci": p}
                                                  for i, (u, p) in zip(self.devices, ids)]}) + "\n")
                # One clock for every sample: monotonic, placed in Unix time once (a clock step during the run moves
                # no sample), the time every capture's start is mapped to.
                unix0, mono0 = time.time_ns(), time.monotonic_ns()

                def now_ns() -> int:
                    return unix0 + time.monotonic_ns() - mono0

                prev = []
                for h, b in zip(handles, bufs):
                    nvml.nvmlGpmSampleGet(h, b[0])
                    prev.append(now_ns())
                nxt = time.monotonic() + self.interval_s
                while not self.stopped.wait(max(0.0, nxt - time.monotonic())):
                    nxt += self.interval_s
                    for k, (h, b) in enumerate(zip(handles, bufs)):
                        nvml.nvmlGpmSampleGet(h, b[1])
                        now = now_ns()
                        row = {"device": self.devices[k], "t0_ns": prev[k], "t_ns": now, **_metrics(nvml, b[0], b[1])}
                        out.write(json.dumps(row) + "\n")
                        b.reverse()  # this sample is the next interval's start
                        prev[k] = now
                        self.samples += 1
            for b in bufs:
                for s in b:
                    nvml.nvmlGpmSampleFree(s)
        finally:
            nvml.nvmlShutdown()


def _metrics(nvml: ModuleType, s1: object, s2: object) -> dict[str, float]:
    get = nvml.c_nvmlGpmMetricsGet_t()
    get.version = nvml.NVML_GPM_METRICS_GET_VERSION
    get.numMetrics = len(METRICS)
    get.sample1, get.sample2 = s1, s2
    for k, metric in enumerate(METRICS.values()):
        get.metrics[k].metricId = metric
    nvml.nvmlGpmMetricsGet(get)
    return {name: round(get.metrics[k].value, 3) for k, name in enumerate(METRICS)
            if get.metrics[k].nvmlReturn == 0}


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="python -m nvprof_wrap.launch.gpm", description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_S)
    p.add_argument("--for", dest="seconds", type=float, default=None, help="stop after this long (default: SIGTERM)")
    args = p.parse_args(argv)
    devices, why = available()
    if not devices:
        print(f"gpm: no sampler: {why}", file=sys.stderr)
        return 2
    s = Sampler(args.out, devices, args.interval).start()
    import signal

    signal.signal(signal.SIGTERM, lambda *_: s.stopped.set())
    try:
        s.stopped.wait(args.seconds)
    except KeyboardInterrupt:
        pass
    s.stop()
    if s.problem:
        print(f"gpm: {s.problem}", file=sys.stderr)
    print(f"gpm: {s.samples} samples of {devices} in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
