"""The outer-ranges table of a run whose outermost level is one range holding every kernel (issue 45: "Keras' outer
ranges give a single row"): a row at 100% says nothing, and the level below it is the framework ops table, so every
format says so in one line instead (renderers/_rows.py lone_scope). Real H200 captures: a Keras fit whose
'optimizer step 0' range encloses all 320 'train batch N' ranges, and a Keras run annotated with --annotate keras,
whose outer level has many ranges and keeps its table. JSON keeps every scope row as before."""
from __future__ import annotations

import json

from nvprof_wrap.cli import main
from tests._paths import RUNS, run_copy

LONE = RUNS / "keras_steps_fp16_cupti"
LAYERS = RUNS / "keras_fp16_cupti_ops"
TITLE = "Outer ranges (layers / modules)"


def report(capsys, path, *argv: str) -> str:
    assert main(["report", str(path), *argv]) == 0
    return capsys.readouterr().out


def section(text: str, title: str = TITLE) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    start = lines.index(title)
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def test_one_range_holding_every_kernel_is_one_line_that_points_at_the_level_below(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    doc = json.loads(report(capsys, LONE, "--format", "json"))
    assert [(s["op"], s["share"]) for s in doc["scopes"]] == [("optimizer step 0", 1.0)]  # JSON as before
    assert {o["op"] for o in doc["ops"]} >= {"optimizer step 0", "train batch 0", "train batch 319"}
    body = section(report(capsys, LONE))
    line = ("  one range holds every kernel: optimizer step 0 (53 kernels, 34,205 launches, 96.5 ms); the ranges "
            "inside it are the framework ops above (each launch's innermost range)")
    assert body == [TITLE, line]
    md = report(capsys, LONE, "--format", "markdown")
    assert f"## {TITLE}\n\n- one range holds every kernel: optimizer step 0 \\(53 kernels, 34,205 launches, " \
           "96\\.476 ms\\)" in md
    page = report(capsys, LONE, "--format", "html")
    assert f"<h2>{TITLE}</h2>\n<p>one range holds every kernel: optimizer step 0 (53 kernels, 34,205 launches, " \
           "96.5 ms)" in page


def test_an_outer_level_of_several_ranges_keeps_its_table(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "120")
    body = section(report(capsys, run_copy(LAYERS, tmp_path)))
    assert body[1].startswith("op / range") and len(body) > 10
    assert any(line.startswith("keras:dense (Dense)") for line in body)
    assert not any("one range holds every kernel" in line for line in body)
