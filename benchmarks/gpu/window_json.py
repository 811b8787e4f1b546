"""Issue 27: what a windowed run's JSON report says of its window (benchmarks/gpu/capture_window.sh K, L)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

report = json.loads(Path(sys.argv[1]).read_text())
capture = report.get("capture") or {}
steps = [row["step"] for row in report.get("series") or []]
print("window", sys.argv[2], "launches", report["launches"], "steps", len(steps), steps[:1], steps[-1:],
      "per step", [row["launches"] for row in report.get("series") or []][-3:],
      {k: capture.get(k) for k in ("open_step", "close_step", "held_s", "stopped_aside", "stop_s", "job_steps")})
print("headline", sys.argv[2], " | ".join(report.get("headline") or []))
