"""none: no profiler. The job runs as it is, with only what nvprof-wrap records beside any job — its log, its
manifest, its training health (metrics.jsonl) and, with --numerics, its numbers (tracer/numerics.py): for machines
without a GPU or a profiler (a collapse in fp16 is debugged on a CPU as well). `auto` never picks it; the report of
its run folder says it holds no profiler capture instead of refusing it."""
from __future__ import annotations

from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.launch.base import Plan, RunSpec
from nvprof_wrap.model import Gpu
from nvprof_wrap.run.manifest import NO_PROFILER

NAME = NO_PROFILER


class NoProfiler:
    name = NAME
    silence: str | None = "--backend none runs the job without a profiler: it records no capture"

    def find(self, explicit: str | None = None) -> str | None:
        return None

    def version(self, exe: str | None = None) -> str:
        return "no profiler"

    def usable(self, gpus: list[Gpu], spec: RunSpec) -> bool:
        return False  # asked for by name only

    def looked_for(self, gpus: list[Gpu]) -> str:
        return "nothing (--backend none profiles nothing)"

    def plan(self, spec: RunSpec, folder: Path, gpus: list[Gpu]) -> Plan:
        if spec.capture is not None:
            raise BadInput(None, f"{spec.capture.option}: --backend none records no capture to window; leave the "
                                 "capture window out, or choose a profiler")
        return Plan(self.name, list(spec.command), {}, tool=None, version=self.version())

    def collect(self, folder: Path, spec: RunSpec) -> list[str]:
        return []


BACKEND = NoProfiler()
