"""What `report --steps A:B` keeps of a real capture, and what it costs: the project's H200 GPT trainer capture
(tests/data/h200_runs/gpt_fp32_nsys_steps: fp32, 30 steps, Nsight Systems) reported whole and through steps 10 to
19, each `report --format json` a fresh process, interleaved in each round.

    python -m benchmarks report_steps [--quick]      # the same capture; --quick: one round

The figures a reader compares are the report's own (launches, kernel time, tensor-core share, GPU idle): a window of
the steady state leaves out start-up, so its idle share is the steps' own; the report times show what the window
costs against reading the whole capture.
"""
from __future__ import annotations

import json

from benchmarks.suite.machine import ROOT
from benchmarks.suite.measure import Measured, measure, report_cmd, values
from benchmarks.suite.types import Case, Figure, Result, Role, RunArgs

NAME = "report_steps"
MEASURES = ("what report --steps 10:20 keeps of a real H200 capture (launches, kernel time, tensor-core share, GPU "
            "idle) and its report time, against the whole capture")
FLOOR = "the same capture reported whole (no --steps)"
ANCHOR = "none: no other tool reads these captures by the job's own steps"
CAPTURE = ROOT / "tests" / "data" / "h200_runs" / "gpt_fp32_nsys_steps"
STEPS = "10:20"


def run(args: RunArgs) -> Result:
    variants: dict[str, tuple[Role, list[str]]] = {
        "whole capture": ("floor", report_cmd(CAPTURE)),
        f"`--steps {STEPS}`": ("measured", [*report_cmd(CAPTURE), "--steps", STEPS])}
    got: dict[str, list[Measured]] = {label: [] for label in variants}
    for _ in range(args.rounds):
        for label, (_, cmd) in variants.items():
            got[label].append(measure(cmd, keep_stdout=True))
    cases = []
    for label, (role, _) in variants.items():
        reports = [json.loads(m.stdout) for m in got[label]]
        if any(r != reports[0] for r in reports):
            raise RuntimeError(f"{label}: the rounds' reports differ")
        d = reports[0]
        (dev,) = d["devices"]  # one H200
        secs, _ = values(got[label])
        cases.append(Case(label, (
            Figure("launches", role, "launches", (float(d["launches"]),)),
            Figure("kernel time", role, "ms", (round(d["kernel_time_ns"] / 1e6, 1),)),
            Figure("tensor-core share", role, "%", (round(100 * d["tensor_core_time_fraction"], 2),)),
            Figure("GPU idle", role, "%", (round(100 * dev["idle_share"], 2),),
                   note=f"of the {dev['span_ns'] / 1e9:.2f} s from first to last kernel"),
            Figure("report", role, "s", secs))))
    return args.result(tuple(cases), case_header="H200 GPT trainer, fp32, 30 steps, Nsight Systems")
