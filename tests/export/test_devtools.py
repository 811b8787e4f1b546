"""`report --format trace` loaded by a real, independent parser of the Chrome trace-event format: Chrome DevTools'
trace engine, the Performance panel's own parser (Chrome opens trace files with it since chrome://tracing went), as
published on npm (@paulirish/trace_engine, built from the chromium devtools-frontend source). tests/export/
devtools_trace.mjs loads each exported trace with the engine's TraceModel and prints what the engine made of it;
this module holds that to the Report:

- the trace is generic to the engine (no browser events), it logs no complaint, and every slice lies inside the
  trace's bounds as the engine computes them (what the panel shows);
- every thread of the trace is one of the engine's, named by our metadata (process and thread names), and every
  slice on it is placed in the engine's tree (the engine leaves out a slice that crosses the one it starts in);
- kernels per name: launches and total time as the engine reads them equal the Report's, each kernel slice with
  the verdict args (tensor_core, precision, family, reason, evidence, launches) and its colour;
- GPU stream tracks hold no slice inside another; NVTX ranges and steps sit on the CPU threads, nested exactly as
  the engine nests them and as the strict reader (tests/export/_chrome_trace.py) does;
- async (b/e) ranges pair up under the engine's own pairing helper, with their durations.

What the engine does not model: counter tracks ("ph":"C": the Performance panel shows none for a generic trace).
For those this module checks only that the engine keeps every counter event; their tracks and values are checked
by the strict reader (tests/export/test_trace.py).

The engine: NVPROF_WRAP_TRACE_ENGINE (a folder holding the installed package), else npm installs it into a
temporary folder (npm's cache there too). Skipped, with the reason, where node or npm is missing or the install
fails (no registry)."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from nvprof_wrap.cli import main
from nvprof_wrap.export._events import CNAME
from nvprof_wrap.export._timeline import FIRST_NS
from nvprof_wrap.export.trace import export
from nvprof_wrap.pipeline import analyze
from tests._paths import PUBLIC, RUNS
from tests.export._chrome_trace import load
from tests.export.test_trace import SQLITE_CAPTURES, report_per_name, same_kernels

PACKAGE = "@paulirish/trace_engine@0.0.65"
SCRIPT = Path(__file__).with_name("devtools_trace.mjs")
VERDICT_ARGS = {"tensor_core", "precision", "family", "reason", "evidence", "launches"}


@pytest.fixture(scope="session")
def engine(tmp_path_factory) -> Path:
    """The installed package's folder (models/trace/trace.js inside)."""
    given = os.environ.get("NVPROF_WRAP_TRACE_ENGINE")
    if given:
        folder = Path(given)
        for candidate in (folder, folder / "node_modules" / "@paulirish" / "trace_engine"):
            if (candidate / "models" / "trace" / "trace.js").is_file():
                return candidate
        pytest.fail(f"NVPROF_WRAP_TRACE_ENGINE={given} holds no @paulirish/trace_engine")
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("needs node and npm (apt-get install nodejs npm) for Chrome DevTools' trace engine")
    prefix = tmp_path_factory.mktemp("trace_engine")
    env = os.environ | {"npm_config_update_notifier": "false", "npm_config_fund": "false",
                        "npm_config_audit": "false", "npm_config_cache": str(prefix / "npm-cache")}
    try:
        done = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-save", "--ignore-scripts",
                               "--loglevel=error", PACKAGE], cwd=prefix, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm install {PACKAGE} took over 300 s (no registry?)")
    folder = prefix / "node_modules" / "@paulirish" / "trace_engine"
    if done.returncode or not (folder / "models" / "trace" / "trace.js").is_file():
        pytest.skip(f"npm install {PACKAGE} failed (no registry?): {done.stderr.strip()[-400:]}")
    return folder


def devtools(engine: Path, trace: Path) -> dict:
    """What the engine made of a trace file (devtools_trace.mjs's summary)."""
    out = trace.with_name(trace.name + ".devtools.json")
    done = subprocess.run(["node", str(SCRIPT), str(engine), str(trace), str(out)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(out.read_text(encoding="utf-8"))
    assert got["engine"] == PACKAGE.replace("e@", "e ", 1)
    return got


def exported(tmp_path: Path, capture: Path, **window) -> tuple[object, Path]:
    rep = analyze(capture, health=False, **window)
    out = tmp_path / "trace.json"
    with open(out, "w", encoding="utf-8") as f:
        export(rep, f, **window)
    return rep, out


def slices(thread: dict) -> list[dict]:
    return [dict(zip(("name", "cat", "ts", "dur", "depth", "parent", "args", "cname"), row))
            for row in thread["slices"]]


def kernels_of(summary: dict) -> list[dict]:
    return [s for t in summary["threads"] for s in slices(t) if s["cat"] in ("kernel", "Kernel")]


def per_name(kernels: list[dict]) -> dict[str, list[int]]:
    got: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for k in kernels:
        got[k["name"]][0] += 1
        got[k["name"]][1] += round(k["dur"] * 1000)
    return dict(got)


def loaded_whole(summary: dict, trace: Path, kineto: bool = False) -> None:
    """The engine took the trace as a generic one, without complaint, and placed every slice of every thread in
    its trees, inside the trace's bounds; every thread and process is the one our metadata names."""
    assert summary["generic"] is True and summary["complaints"] == []
    lo, hi = summary["bounds"]
    parsed = load(trace, strings=kineto)
    assert {(t["pid"], t["tid"]) for t in summary["threads"]} == \
        {(p, t) for (p, t), s in parsed.slices.items() if s}  # no thread lost
    names = {(p, t): n for p, t, n in summary["threadNames"]}
    for thread in summary["threads"]:
        assert thread["entries"] == len(thread["slices"]), f"the engine left slices out of {thread['name']}"
        assert all(lo - 1e-6 <= s["ts"] and s["ts"] + s["dur"] <= hi + 1e-6 for s in slices(thread))
        if not kineto:  # (Kineto names its own threads, and not every one)
            assert thread["name"] == names[(thread["pid"], thread["tid"])] == \
                parsed.thread_names[(thread["pid"], thread["tid"])]
            assert summary["processes"][str(thread["pid"])] == parsed.process_names[thread["pid"]]
    if not kineto:
        assert round(lo * 1000) >= FIRST_NS  # nothing at ts 0, which the engine takes for no time
    assert summary["counterEvents"] == sum(1 for e in parsed.events if e.get("ph") == "C")


def verdicts_on_kernels(rep, summary: dict) -> None:
    rows = {k.name: k for k in rep.kernels}
    for k in kernels_of(summary):
        args = summary["args"][k["args"]]
        assert VERDICT_ARGS <= set(args), k
        assert args["tensor_core"] == rows[k["name"]].tensor_core and k["cname"] == CNAME[args["tensor_core"]]
        assert args["precision"] == rows[k["name"]].precision and args["family"] == rows[k["name"]].family


def gpu_streams_flat(summary: dict) -> None:
    gpu = [t for t in summary["threads"] if t["name"].startswith("GPU ")]
    assert gpu and all(t["maxDepth"] == 1 for t in gpu)  # one operation at a time on a stream track


@pytest.mark.parametrize("path", SQLITE_CAPTURES, ids=lambda p: p.name)
def test_devtools_reads_the_reports_kernels(tmp_path, engine, path):
    rep, trace = exported(tmp_path, path)
    summary = devtools(engine, trace)
    loaded_whole(summary, trace)
    assert per_name(kernels_of(summary)) == report_per_name(rep)
    assert all(t["name"].startswith("GPU ") for t in summary["threads"] if any(
        s["cat"] == "kernel" for s in slices(t)))
    verdicts_on_kernels(rep, summary)
    gpu_streams_flat(summary)


def _nesting(summary: dict, cat: str) -> set[tuple]:
    """(thread, name, ts, dur, parent's name) of the engine's slices of one category."""
    got = set()
    for t in summary["threads"]:
        rows = slices(t)
        for s in rows:
            if s["cat"] == cat:
                parent = rows[s["parent"]]["name"] if s["parent"] >= 0 else None
                got.add(((t["pid"], t["tid"]), s["name"], round(s["ts"] * 1000), round(s["dur"] * 1000), parent))
    return got


def _strict_nesting(trace: Path, cat: str) -> set[tuple]:
    """The same, from the strict reader's events: each slice's parent the innermost slice of its thread that
    holds it (equal starts: the longer one is the parent)."""
    parsed = load(trace)
    got = set()
    for track, ss in parsed.slices.items():
        stack: list[tuple] = []
        for start, end, ev in sorted(ss, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1][1] <= start:
                stack.pop()
            if ev.get("cat") == cat:
                got.add((track, ev["name"], start, end - start, stack[-1][2]["name"] if stack else None))
            stack.append((start, end, ev))
    return got


@pytest.mark.parametrize("window", [{}, {"steps": (2, 4)}], ids=["whole", "steps 2:4"])
def test_devtools_nests_ranges_and_steps_on_their_threads(tmp_path, engine, window):
    rep, trace = exported(tmp_path, RUNS / "gpt_fp32_nsys_steps" / "nsys.sqlite.gz", **window)
    summary = devtools(engine, trace)
    loaded_whole(summary, trace)
    assert per_name(kernels_of(summary)) == report_per_name(rep)
    verdicts_on_kernels(rep, summary)
    nvtx = _nesting(summary, "nvtx")
    steps = {r for r in nvtx if r[1].startswith("step ")}
    assert len(steps) >= (3 if not window else 2)
    names = {(t["pid"], t["tid"]): t["name"] for t in summary["threads"]}
    assert not any(names[r[0]].startswith("GPU ") for r in nvtx)
    assert any(r[4] is not None for r in nvtx) or window  # ranges inside ranges (the whole run's): a tree with depth
    assert nvtx == _strict_nesting(trace, "nvtx")


def test_devtools_keeps_every_counter_sample(tmp_path, engine):
    for run in ("hw_phases_nsys", "hw_phases_cupti"):
        rep, trace = exported(tmp_path, RUNS / run)
        summary = devtools(engine, trace)
        loaded_whole(summary, trace)  # counterEvents equal the file's C events
        assert summary["counterEvents"] > 100
        assert per_name(kernels_of(summary)) == report_per_name(rep)


def test_devtools_pairs_the_async_ranges(tmp_path, engine):
    """A start/end range and a push/pop range that crosses another become b/e pairs; the engine's pairing helper
    matches each, with its duration."""
    capture = tmp_path / "nsys.sqlite"
    shutil.copy(RUNS / "children_nsys" / "nsys.sqlite", capture)
    with sqlite3.connect(capture) as conn:
        (start, end, gtid), = conn.execute("SELECT start, \"end\", globalTid FROM NVTX_EVENTS WHERE eventType = 59 "
                                           "ORDER BY start LIMIT 1")
        conn.executemany("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid) VALUES (?,?,?,?,?)",
                         [(start + 10, end + 5_000, 60, "start/end range", gtid),
                          (start + 20, end + 7_000, 59, "crossing range", gtid)])
    conn.close()
    rep, trace = exported(tmp_path, capture)
    summary = devtools(engine, trace)
    loaded_whole(summary, trace)
    assert summary["async"]["begins"] == summary["async"]["ends"] == len(summary["async"]["slices"]) == 2
    got = {s[2]: round(s[5] * 1000) for s in summary["async"]["slices"]}
    assert got == {"start/end range": end + 5_000 - start - 10, "crossing range": end + 7_000 - start - 20}
    assert per_name(kernels_of(summary)) == report_per_name(rep)


def test_devtools_reads_a_kineto_trace_written_again(tmp_path, engine):
    rep, trace = exported(tmp_path, RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz")
    summary = devtools(engine, trace)
    loaded_whole(summary, trace, kineto=True)
    same_kernels(per_name(kernels_of(summary)), report_per_name(rep))
    verdicts_on_kernels(rep, summary)


@pytest.mark.parametrize("name", ["GindaChen__nsys-ai__mfu_2gpu_after.sqlite", "NVIDIA__Fuser__report1.sqlite",
                                  "LeiWang1999__memfusion_artifact__report1.sqlite",
                                  pytest.param("facebookresearch__HolisticTraceAnalysis__nccl_data.json.gz",
                                               marks=pytest.mark.slow)])
def test_devtools_reads_other_peoples_captures(tmp_path, engine, name):
    path = PUBLIC / name
    if not path.is_file():
        pytest.skip(f"needs {path} (the shared fixtures)")
    rep, trace = exported(tmp_path, path)
    summary = devtools(engine, trace)
    kineto = name.endswith(".json.gz")
    loaded_whole(summary, trace, kineto=kineto)
    same_kernels(per_name(kernels_of(summary)), report_per_name(rep))
    verdicts_on_kernels(rep, summary)


def test_devtools_reads_the_gzip_the_cli_writes(tmp_path, engine):
    folder = tmp_path / "ddp_cupti"
    shutil.copytree(RUNS / "ddp_cupti", folder)
    out = tmp_path / "run.json.gz"
    assert main(["report", str(folder), "--format", "trace", "-o", str(out)]) == 0
    summary = devtools(engine, out)
    loaded_whole(summary, out)
    assert len({t["pid"] for t in summary["threads"] if t["name"].startswith("GPU ")}) == 2  # both ranks
    assert per_name(kernels_of(summary)) == report_per_name(analyze(folder, health=False))


def test_devtools_engine_finds_a_crossing_slice(tmp_path, engine):
    """The check has teeth: a slice that crosses the one it starts in is left out of the engine's tree."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":10},'
                   '{"ph":"X","name":"b","pid":1,"tid":1,"ts":5,"dur":10}]}')
    summary = devtools(engine, bad)
    (thread,) = summary["threads"]
    assert thread["entries"] == 2 and [s["name"] for s in slices(thread)] == ["a"]

