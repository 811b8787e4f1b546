"""Real captures reshaped the way people and tools reshape files — another layout of the same format, a byte-order
mark, another text encoding, two files joined, indentation lost in a paste — read as they are or refused in one line
that names what happened; never a different answer with exit 0."""
from __future__ import annotations

import gzip
import json
import re
import shutil
import sqlite3
import textwrap
from contextlib import closing
from pathlib import Path

import pytest

from nvprof_wrap.classify import classify
from nvprof_wrap.cli import main
from nvprof_wrap.model import LOST_NAME_KERNEL
from nvprof_wrap.readers import console_nvprof
from tests._paths import ROOT, RUNS, fixture_file

KINETO_GPT = RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz"


def _report(capsys, path: Path) -> dict:
    capsys.readouterr()
    assert main(["report", str(path), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _kernels(report: dict) -> list[tuple[str, int, int, str]]:
    return sorted((k["name"], k["launches"], k["total_ns"], k["tensor_core"]) for k in report["kernels"])


def test_a_trace_in_the_array_form_is_read_as_its_object_form(tmp_path, capsys):
    """The Trace Event Format's array form (the events as the top-level list, as Chrome's and other tools' traces
    are written) of a real torch.profiler trace: its events had been looked for under "traceEvents" and the trace
    read as "no kernels", exit 0. Its kernels now read as the object form's, one by one."""
    body = json.loads(gzip.decompress(KINETO_GPT.read_bytes()))
    path = tmp_path / "events.json"
    path.write_text(json.dumps(body["traceEvents"]))
    whole, array = _report(capsys, KINETO_GPT), _report(capsys, path)
    assert array["verdict"] == whole["verdict"] == "yes"
    assert array["launches"] == whole["launches"] > 0 and array["kernel_ns"] == whole["kernel_ns"]
    assert _kernels(array) == _kernels(whole)


NSYS_STATS_TEXTS = ["wild/nsys-stats-console-flashattn-rtx4070.md", "wild/nsys-stats-console-gcn.txt",
                    "wild/nsys-stats-console-trt-jetson-orin.txt", "wild/nsys-stats-tables-laplace-a100-h100-readme.md",
                    "wild3/nsys-stats-cs336-trainstep-plain.txt", "wild3/nsys-stats-nvtx-name-cs336-forward.txt",
                    "wild3/nsys-stats-nvtx-name-cs336-trainstep.txt", "wild3/nsys-stats-table-vllm-deepseek-r1-b200.md",
                    "wild3/nsys-stats-table-vllm-llama70b-h100.txt", "wild3/nsys-stats-table-vllm-qwen7b-b200.md",
                    "wild3/vllm-docs-profiling-nsys-stats-h100.md"]


def _header(line: str) -> bool:
    return bool(re.match(r"\s*(\|\s*)?Time ?\(%\)", line))


PASTES = {
    # every line's indentation lost (a paste into a form, a code block re-indented): each row loses its own
    "indentation stripped": lambda lines: [line.lstrip(" ") for line in lines],
    # the selection started at the header's first visible character: its one leading blank lost
    "header's leading blank lost": lambda lines: [line.lstrip(" ") if _header(line) else line for line in lines],
    # the columns' blanks turned into tabs (an editor's "tabify", a spreadsheet's copy)
    "blanks turned into tabs": lambda lines: [re.sub(r" {2,}", "\t", line) for line in lines],
}


@pytest.mark.parametrize("paste", PASTES)
@pytest.mark.parametrize("rel", NSYS_STATS_TEXTS)
def test_nsys_stats_tables_pasted_out_of_line_read_as_they_were_printed(tmp_path, capsys, rel, paste):
    """nsys stats' console tables are cut by the columns of their dashes line. A paste that moved the rows against
    their header (each row's indentation stripped: a number's digits cut into two columns — 'Instances 3360' read as
    336013, 519,029 launches as 4,973,412 and the verdict's 73.7% as 46.9%, exit 0) or the header against its dashes
    ('no kernel row in it', exit 2) now reads as the table nsys printed, kernel by kernel."""
    src = fixture_file(rel)
    path = tmp_path / src.name
    path.write_text("".join(PASTES[paste](src.read_text().splitlines(keepends=True))))
    whole, pasted = _report(capsys, src), _report(capsys, path)
    assert (pasted["verdict"], pasted["launches"], pasted["kernel_ns"]) == \
        (whole["verdict"], whole["launches"], whole["kernel_ns"])
    assert _kernels(pasted) == _kernels(whole)


TEXT_EXPORTS = ["public/nanzifan__nvprof-result__print-gpu-summary.csv", "public/josiahdavis__profiling-lm__lm.csv",
                "wild/nvprof-gputrace-gtx950.csv", "wild3/nvprof-metrics-csv-fa2-gtx1060.csv",
                "wild/ncu-metrics-cutlass-a100.csv", "tests/data/ncu_flops/ncu_flops.csv",
                "tests/data/h200_runs/gpt_fp32_stats/cuda_gpu_kern_sum.csv",
                "tests/data/console/xplacer_nvprof_summary_bfs.log", "wild/nsys-stats-console-gcn.txt"]


def _export(rel: str) -> Path:
    return ROOT / rel if rel.startswith("tests/") else fixture_file(rel)


@pytest.mark.parametrize("rel", TEXT_EXPORTS)
def test_a_text_export_with_a_byte_order_mark_is_read_as_without(tmp_path, capsys, rel):
    """A UTF-8 byte-order mark (Excel's "CSV UTF-8", PowerShell's Set-Content -Encoding utf8) before a CSV
    export: its header's first column was read with the mark in it — "pyprof CSV without Kernel, Sil(ns) and
    Device columns" (they are there), "not a profiler capture this tool reads". Read as the export itself now."""
    src = _export(rel)
    path = tmp_path / src.name
    path.write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    whole, marked = _report(capsys, src), _report(capsys, path)
    assert (marked["verdict"], marked["launches"], marked["kernel_ns"]) == \
        (whole["verdict"], whole["launches"], whole["kernel_ns"])
    assert _kernels(marked) == _kernels(whole)


@pytest.mark.parametrize("rel", TEXT_EXPORTS)
def test_utf16_text_is_refused_as_what_it_is(tmp_path, capsys, rel):
    """Windows PowerShell's `>` writes UTF-16: a console listing or CSV saved so was "binary file of an unknown
    format". One line now says what it is and how to save it as UTF-8."""
    src = _export(rel)
    path = tmp_path / src.name
    path.write_bytes(src.read_text(encoding="utf-8").encode("utf-16"))
    capsys.readouterr()
    assert main(["report", str(path), "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err
    assert "UTF-16 text (as Windows PowerShell's > and Out-File write it): save it as UTF-8" in err, err


@pytest.mark.parametrize("rel", ["public/nanzifan__nvprof-result__print-gpu-summary.csv",
                                 "public/josiahdavis__profiling-lm__lm.csv", "wild/nvprof-gputrace-gtx950.csv",
                                 "wild3/nvprof-metrics-csv-fa2-gtx1060.csv",
                                 "tests/data/h200_runs/gpt_fp32_stats/cuda_gpu_kern_sum.csv"])
def test_two_csv_exports_joined_into_one_file_are_refused(tmp_path, capsys, rel):
    """`cat a.csv b.csv`: the second header was read as a kernel named after its column ('Kernel', 'Name': the
    verdict no → unknown) and every launch counted twice, or the second table dropped unsaid, exit 0. One line
    now, naming the file."""
    src = _export(rel)
    path = tmp_path / src.name
    path.write_bytes(src.read_bytes() * 2)
    capsys.readouterr()
    assert main(["report", str(path), "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err
    assert "its header row comes again after" in err and "two exports (or two processes' output)" in err, err
    assert _report(capsys, src)["launches"] > 0  # the export itself, read


NVPROF_SUMMARIES = ["wild/nvprof-summary-tf1-2xk80.txt", "wild3/nvprof-summary-mxnet-14725-v100-lstm.txt",
                    "tests/data/console/xplacer_nvprof_summary_bfs.log"]


def _grouped_calls(line: str) -> str:
    """A summary row with its Calls count grouped by commas ('136024' → '136,024')."""
    m = console_nvprof._SUMMARY_ROW.match(line)
    if m is None:
        return line
    return line[:m.start(3)] + f"{int(m.group(3)):,}" + line[m.end(3):]


SUMMARY_EDITS = {
    "the section's title capitalised": lambda lines: [ln.replace("GPU activities:", "GPU Activities:") for ln in lines],
    "Calls grouped by commas": lambda lines: [_grouped_calls(ln) for ln in lines],
}


@pytest.mark.parametrize("rel, edit", [(rel, edit) for rel in NVPROF_SUMMARIES for edit in SUMMARY_EDITS
                                       if not (edit == "Calls grouped by commas" and "xplacer" in rel)])  # < 1,000
def test_an_nvprof_summary_edited_by_hand_reads_as_printed(tmp_path, capsys, rel, edit):
    """nvprof's console summary with 'GPU Activities:' (its first row shares the title's line: the table's
    largest kernel, 20.96 s of an MXNet LSTM's, was dropped — 11.5 s read) or its Calls grouped by commas (every
    row of 1,000 calls or more dropped: 48 launches of 535,711 read, 'none of the 9 kernels'), exit 0 and unsaid.
    Both read as printed now."""
    src = _export(rel)
    path = tmp_path / src.name
    path.write_text("".join(SUMMARY_EDITS[edit](src.read_text().splitlines(keepends=True))))
    assert path.read_text() != src.read_text()  # the edit met a row
    whole, edited = _report(capsys, src), _report(capsys, path)
    assert (edited["verdict"], edited["launches"], edited["kernel_ns"]) == \
        (whole["verdict"], whole["launches"], whole["kernel_ns"])
    assert _kernels(edited) == _kernels(whole)


def test_a_line_of_an_nvprof_summary_that_is_no_row_is_said(tmp_path, capsys):
    """A line inside the summary's table that is no row (a row damaged in a paste) was skipped unsaid, and the
    kernel it named with it; the rest is read, and a note says how many lines were not and shows the first."""
    src = _export("wild3/nvprof-summary-mxnet-14725-v100-lstm.txt")
    lines = src.read_text().splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if console_nvprof._SUMMARY_ROW.match(ln) and "GPU activities" not in ln)
    damaged = lines[at].replace("%", " per cent", 1)
    path = tmp_path / src.name
    path.write_text("".join(lines[:at] + [damaged] + lines[at + 1:]))
    whole, cut = _report(capsys, src), _report(capsys, path)
    assert cut["distinct_kernels"] == whole["distinct_kernels"] - 1
    notes = [n for s in cut["sources"] for n in s["notes"]]
    assert f"nvprof summary: 1 line(s) inside its table are no row this reader knows (first: " \
           f"{damaged.strip()[:79]!r}" in " ".join(notes).replace("…'", "'"), notes


@pytest.mark.parametrize("reshape, said", [
    (lambda text: "".join(textwrap.fill(ln, 80, drop_whitespace=False, replace_whitespace=False) + "\n"
                          for ln in text.splitlines()),
     "its ==PROF== lines name 14 profiled launches, its sections 1 — the others' sections are missing or broken"),
    (lambda text: text * 2, "its ==PROF== lines name 14 profiled launches, its sections 28 — sections repeated"),
])
def test_ncu_console_text_whose_sections_do_not_match_its_profiled_launches_is_said(tmp_path, capsys, reshape, said):
    """ncu's console text hard-wrapped at 80 columns (a terminal's or a mail's fold) read as 1 launch of the 14 its
    ==PROF== lines name — 'none of the 1 kernels', exit 0 —, and pasted twice as 28. The count ncu printed is
    held against the sections read, and a difference said."""
    src = fixture_file("wild/ncu-console-gcn.txt")
    path = tmp_path / src.name
    path.write_text(reshape(src.read_text()))
    whole, reshaped = _report(capsys, src), _report(capsys, path)
    assert whole["launches"] == 14 and not [n for s in whole["sources"] for n in s["notes"] if "==PROF==" in n]
    notes = [n for s in reshaped["sources"] for n in s["notes"]]
    assert any(said in n for n in notes), notes


@pytest.mark.parametrize("rel", ["wild/nvprof-summary-tf1-2xk80.txt",
                                 "tests/data/console/xplacer_nvprof_summary_bfs.log"])
def test_an_nvprof_summary_pasted_twice_is_counted_once(tmp_path, capsys, rel):
    """The same console summary twice in one text (pasted twice into an issue): every launch and nanosecond was
    counted twice, unsaid. nvprof prints one summary a process: a table that repeats an earlier one row for row is
    counted once, and said."""
    src = _export(rel)
    text = src.read_text()
    text += "" if text.endswith("\n") else "\n"
    path = tmp_path / src.name
    path.write_text(text + "\n" + text)
    whole, twice = _report(capsys, src), _report(capsys, path)
    assert (twice["verdict"], twice["launches"], twice["kernel_ns"]) == \
        (whole["verdict"], whole["launches"], whole["kernel_ns"])
    assert _kernels(twice) == _kernels(whole)
    assert "nvprof summary: 1 table(s) repeat an earlier one row for row (the same summary pasted twice?): counted " \
           "once" in [n for s in twice["sources"] for n in s["notes"]]


@pytest.mark.parametrize("rel, table", [("tests/data/h200_runs/gemm_nsys/nsys.sqlite", "TARGET_INFO_GPU"),
                                        ("public/m-goldstein__GPU_ML__timeline.nvvp", "CUPTI_ACTIVITY_KIND_DEVICE")])
def test_a_capture_whose_gpu_table_is_empty_says_so(tmp_path, capsys, rel, table):
    """The table of GPUs emptied (an export trimmed by hand): the GPU was lost unsaid — a K20c's verdict went
    no → unknown with no word why. It is said now, as a table dropped already was."""
    src = _export(rel)
    path = tmp_path / src.name
    shutil.copyfile(src, path)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(f"DELETE FROM {table}")
        conn.commit()
    whole, emptied = _report(capsys, src), _report(capsys, path)
    assert whole["gpus"] and not emptied["gpus"] and emptied["launches"] == whole["launches"]
    assert f"an empty {table} table: GPU models unknown" in [n for s in emptied["sources"] for n in s["notes"]]


@pytest.mark.parametrize("after", ["Epoch 2/20 - loss: 0.4431 - acc: 0.8812", "user@host:~$ ls"])
def test_the_programs_output_after_an_nvprof_summary_is_no_part_of_a_kernels_name(tmp_path, capsys, after):
    """A log whose GPU-activities table is followed at once, at the first column, by other output (the program's,
    a prompt: `--print-gpu-summary` prints no API calls after it): the table's last row, 402 characters, was taken
    for a row a console had broken at its width and the text joined to its kernel's name, unsaid. A console breaks
    every line at its width; this log holds lines up to 955 characters, so the row was whole: the text is no part
    of the name, and is said as a line of the table that is no row."""
    src = fixture_file("wild/nvprof-summary-tf1-2xk80.txt")
    lines = src.read_text().splitlines(keepends=True)
    table = lines[:next(i for i, ln in enumerate(lines) if "API calls:" in ln)]
    cut, glued = tmp_path / "cut.txt", tmp_path / "glued.txt"
    cut.write_text("".join(table))
    glued.write_text("".join(table) + after + "\n")
    whole, got = _report(capsys, cut), _report(capsys, glued)
    assert _kernels(got) == _kernels(whole) and got["launches"] == whole["launches"] == 535_711
    notes = [n for s in got["sources"] for n in s["notes"]]
    assert f"nvprof summary: 1 line(s) inside its table are no row this reader knows (first: {after!r})" in \
        " ".join(notes), notes


@pytest.mark.parametrize("lost", ["string dropped", "a number"])
def test_a_kernel_the_capture_names_not_at_all_says_so(tmp_path, capsys, lost):
    """A kernel whose name's string is gone from the capture (StringIds edited), or whose name is a number (an id
    in place of its text): unknown, as before, but its reason said "the name carries no evidence either way
    (generated kernels such as triton_tem_*…)" — a hint at generated code where the capture lost the name."""
    src = fixture_file("h200/nsys_torch_ops.sqlite")
    path = tmp_path / src.name
    shutil.copy(src, path)
    with closing(sqlite3.connect(path)) as conn:
        nid, = conn.execute("SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1 "
                            "ORDER BY COUNT(*) DESC LIMIT 1").fetchone()
        if lost == "string dropped":
            conn.execute("DELETE FROM StringIds WHERE id = ?", (nid,))
        else:
            conn.execute("UPDATE StringIds SET value = '48213' WHERE id = ?", (nid,))
        conn.commit()
    whole, got = _report(capsys, src), _report(capsys, path)
    assert got["launches"] == whole["launches"] and got["distinct_kernels"] == whole["distinct_kernels"]
    nameless = [k for k in got["kernels"] if k["name"] not in {k["name"] for k in whole["kernels"]}]
    assert len(nameless) == 1 and nameless[0]["tensor_core"] == "unknown", nameless
    said = "the capture holds no name for this kernel" if lost == "string dropped" else \
        "its name is a number ('48213'): an id whose text the capture lacks"
    assert nameless[0]["reason"].startswith(said) and "nvprof-wrap verify" in nameless[0]["reason"], nameless
    # nsys' own lost name keeps its rule (rules.toml name-lost), which says more than this
    assert classify(LOST_NAME_KERNEL).rule == "name-lost"


def _as_begin_end(events: list, drop_ends: int = 0, cats: tuple[str, ...] = ("kernel",),
                  named_ends: bool = True) -> list:
    """Each complete event of cats as a begin (B) and an end (E) event on its thread, the last drop_ends ends left
    out; named_ends False: the ends carry no category (the format does not ask for one)."""
    out: list = []
    for e in events:
        if isinstance(e, dict) and e.get("cat") in cats and e.get("ph") == "X":
            begin = {k: v for k, v in e.items() if k != "dur"}
            end = {"ph": "E", "pid": e["pid"], "tid": e["tid"], "ts": e["ts"] + e["dur"]}
            out += [{**begin, "ph": "B"}, {**end, "cat": e["cat"]} if named_ends else end]
        else:
            out.append(e)
    ends = [i for i, e in enumerate(out) if isinstance(e, dict) and e.get("ph") == "E"]
    return [e for i, e in enumerate(out) if i not in set(ends[len(ends) - drop_ends:])] if drop_ends else out


@pytest.mark.parametrize("drop_ends", [0, 3])
def test_kineto_kernels_written_as_begin_and_end_events_are_read_once(tmp_path, capsys, drop_ends):
    """The Trace Event Format gives a duration by a complete event (X, as torch.profiler writes) or by a begin (B)
    and an end (E) event: a real trace's kernels rewritten as B/E pairs read every launch twice, none with its time
    (the verdict yes → unknown). Each pair is one kernel now, of the begin's name and the time between them (the
    end's ts, written here as ts + dur in floating point, can be under 1 ns off: 1 ns a launch at most); a begin
    whose end is missing is a launch without its time, said."""
    body = json.loads(gzip.decompress(KINETO_GPT.read_bytes()))
    body["traceEvents"] = _as_begin_end(body["traceEvents"], drop_ends)
    path = tmp_path / "begin_end.json"
    path.write_text(json.dumps(body))
    whole, got = _report(capsys, KINETO_GPT), _report(capsys, path)
    assert got["launches"] == whole["launches"] > 0 and got["verdict"] == whole["verdict"] == "yes"
    notes = [n for s in got["sources"] for n in s["notes"]]
    if not drop_ends:
        near = [(name, n, tc) for name, n, _ns, tc in _kernels(got)] == \
            [(name, n, tc) for name, n, _ns, tc in _kernels(whole)]
        assert near and all(abs(a[2] - b[2]) <= a[1] for a, b in zip(_kernels(got), _kernels(whole)))
        assert abs(got["kernel_ns"] - whole["kernel_ns"]) <= whole["launches"]
        assert not [n for n in notes if "without a usable time" in n], notes
    else:
        assert got["kernel_ns"] < whole["kernel_ns"]
        assert any(n.startswith("3 kernel record(s) without a usable time") for n in notes), notes


@pytest.mark.parametrize("named_ends", [True, False])
def test_kineto_copies_and_sets_written_as_begin_and_end_events_are_read_once(tmp_path, capsys, named_ends):
    """Copies and sets as begin/end pairs were read as two of each, none timed (the copies' time was 0); the ends
    may name no category (the format does not ask for one): each pair is one copy or set, of the time between."""
    body = json.loads(gzip.decompress(KINETO_GPT.read_bytes()))
    cats = ("kernel", "gpu_memcpy", "gpu_memset")
    assert {e.get("cat") for e in body["traceEvents"] if isinstance(e, dict)} >= set(cats)
    body["traceEvents"] = _as_begin_end(body["traceEvents"], cats=cats, named_ends=named_ends)
    path = tmp_path / "begin_end.json"
    path.write_text(json.dumps(body))
    whole, got = _report(capsys, KINETO_GPT), _report(capsys, path)
    assert got["launches"] == whole["launches"] > 0 and got["verdict"] == whole["verdict"] == "yes"
    for direction, m in whole["memcpy"].items():
        assert got["memcpy"][direction]["count"] == m["count"] > 0
        assert abs(got["memcpy"][direction]["total_ns"] - m["total_ns"]) <= m["count"]  # ts + dur in floats
    split = {r["category"]: r for r in whole["time_split"]}
    assert {r["category"]: r["count"] for r in got["time_split"]} == {c: r["count"] for c, r in split.items()}
    assert abs(got["kernel_ns"] - whole["kernel_ns"]) <= whole["launches"]
    assert not [n for s in got["sources"] for n in s["notes"] if "without a usable time" in n]
