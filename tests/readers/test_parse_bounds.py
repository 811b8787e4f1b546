"""Issue 44: every decompression and parse bounded. A gzip stream is refused as it passes its budget (a summary bomb
was read 1 GiB deep first; blank lines of gzip cost a CSV reader a minute per 256 MiB); JSON nested past the
parser's recursion is one line naming the file, never a RecursionError that ends the whole report (exit 70); a
quoted CSV field holding a line break is one field, as the csv module reads it, in every CSV reader."""
from __future__ import annotations

import csv
import gzip
import io
import json
import sqlite3
from pathlib import Path

import pytest

from benchmarks.report_pathological_inputs import measure_one
from nvprof_wrap import readers
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers import _csv, summary
from nvprof_wrap.system import bounded, limits
from nvprof_wrap.system.limits import MAX_SUMMARY_BYTES
from tests import xspace_build as xb
from tests._paths import H200, PUBLIC, ROOT, RUNS, WILD, fixture_file
from tests.readers.test_bounds import gz

CUPTI = next((RUNS / "gemm_cupti").glob("cupti-*.sqlite"))


def _gzip_of(path: Path, pieces: list[tuple[bytes, int]]) -> Path:
    """A gzip stream of each piece repeated, written without ever holding the whole (test_bounds.gz)."""
    return gz(path, *pieces)


@pytest.fixture(scope="module")
def real_summary(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("summaries")
    assert main(["summarize", str(CUPTI), "-o", str(out)]) == 0
    return next(out.iterdir())


def _one_line_exit_2(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "Traceback" not in err and out == "", err
    return err


# --- 1. gzip budgets -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_gzip_bomb_summary_is_refused_as_it_unpacks(tmp_path):
    """The summary's magic, then 1.2 GiB of spaces (1.2 MB of gzip): refused once 64 MiB are out, in a fresh
    process under 2 GB — it was read whole to 1 GiB first (6.5 s, 1.1 GB)."""
    bomb = _gzip_of(tmp_path / "rank0.summary.json.gz",
                    [(summary.MAGIC + b', "body": ', 1), (b" " * (1 << 20), 1200), (b"null}", 1)])
    r = measure_one(bomb, 60, 2, ROOT)
    assert r["rc"] == 2 and r["stderr_lines"] == 1 and "gzip" in r["last"], r
    assert r["peak_rss_mb"] < 400 and r["wall_s"] < 30, r


def test_a_bomb_beside_good_summaries_is_skipped_without_reading_it_whole(tmp_path, real_summary, capsys):
    folder = tmp_path / "summaries"
    folder.mkdir()
    (folder / real_summary.name).write_bytes(real_summary.read_bytes())
    _gzip_of(folder / "rank1.summary.json.gz",
             [(summary.MAGIC + b', "body": ', 1), (b" " * (1 << 20), MAX_SUMMARY_BYTES // (1 << 20) + 8)])
    assert main(["report", str(folder), "--format", "json"]) == 0
    (skipped,) = json.loads(capsys.readouterr().out)["skipped"]
    assert skipped["path"].endswith("rank1.summary.json.gz")


_BOMB_HEADS = {
    "blank.ncu.csv.gz": b'"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n',
    "spaces.json.gz": b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]',
    "blank.nvprof.csv.gz": b'"Type","Time(%)","Time","Calls","Avg","Min","Max","Name"\n',
    "blank.pyprof.csv.gz": b'"Kernel","Module","Op","Direction","Sil(ns)","TC","FLOPs","Bytes","Device"\n',
    "blank.console.log.gz": b"==PROF== Connected to process 1\n==1== Profiling result:\n",
}


def _bomb(tmp_path: Path, case: str, free: int) -> Path:
    filler = b" " if case.endswith(".json.gz") else b"\n"
    return _gzip_of(tmp_path / case, [(_BOMB_HEADS[case], 1), (filler * (1 << 20), free // (1 << 20) + 8)])


@pytest.mark.parametrize("case", sorted(_BOMB_HEADS))
def test_gzip_that_unpacks_past_the_ratio_is_refused_while_unpacking(tmp_path, capsys, monkeypatch, case):
    """Blank lines or spaces at ~1000x: 256 MiB of them took an ncu CSV 68 s before 'no kernel rows'. Refused past
    the free allowance (lowered here to 1 MiB; 16 MiB of text, 1 GiB of JSON), whatever the reader."""
    monkeypatch.setattr(limits, "GUNZIP_FREE_BYTES", 1 << 20)
    monkeypatch.setattr(limits, "GUNZIP_FREE_JSON_BYTES", 1 << 20)
    bomb = _bomb(tmp_path, case, 1 << 20)
    err = _one_line_exit_2(capsys, ["report", str(bomb), "--format", "json"])
    assert "gzip bomb" in err and str(bomb) in err


@pytest.mark.slow
@pytest.mark.parametrize("case", ["blank.ncu.csv.gz", "spaces.json.gz"])
def test_gzip_bombs_at_the_real_allowance_in_bounded_time_and_memory(tmp_path, case):
    """In a fresh process under 2 GB: refused within 30 s (1 GiB of JSON: 5-11 s; 16 MiB of blank lines: 5-8 s)."""
    bomb = _bomb(tmp_path, case, limits.GUNZIP_FREE_JSON_BYTES if case.endswith(".json.gz") else
                 limits.GUNZIP_FREE_BYTES)
    r = measure_one(bomb, 60, 2, ROOT)
    assert r["rc"] == 2 and r["stderr_lines"] == 1 and "gzip unpacks to more than" in r["last"], r
    assert r["peak_rss_mb"] < 400 and r["wall_s"] < 30, r


def test_real_gzipped_captures_are_within_the_ratio():
    """Every gzipped capture of the tests and the shared fixtures unpacks below the ratio (they are 3-52x)."""
    found = [*RUNS.rglob("*.gz"), *H200.parent.rglob("*.gz")]
    assert found
    for path in found:
        with bounded.open_bytes(path) as f:
            while f.read(1 << 20):
                pass


def test_gunzip_checks_as_bytes_come_out(tmp_path):
    """The budget stops the stream within one read of it, whatever the reader asks for at once."""
    bomb = _gzip_of(tmp_path / "x.gz", [(b"\0" * (1 << 20), 200)])
    with bounded.Gunzip(bomb, limit=8 << 20) as g:
        got = 0
        with pytest.raises(BadInput, match="more than 8.0 MiB"):
            while chunk := g.read(1 << 20):
                got += len(chunk)
    assert got <= 8 << 20


# --- 2. nesting: never RecursionError ------------------------------------------------------------------------


def _deep_summary(path: Path, levels: int = 200_000) -> Path:
    return _gzip_of(path, [(summary.MAGIC + b', "body": ', 1), (b"[", levels), (b"]", levels), (b"}", 1)])


def test_a_deeply_nested_summary_is_skipped_and_the_folder_read(tmp_path, real_summary, capsys):
    """It was RecursionError, exit 70, for the whole folder."""
    folder = tmp_path / "summaries"
    folder.mkdir()
    (folder / real_summary.name).write_bytes(real_summary.read_bytes())
    _deep_summary(folder / "rank1.summary.json.gz")
    assert main(["report", str(folder), "--format", "json"]) == 0
    (skipped,) = json.loads(capsys.readouterr().out)["skipped"]
    assert skipped["path"].endswith("rank1.summary.json.gz") and "nested deeper" in skipped["why"]
    err = _one_line_exit_2(capsys, ["report", str(folder / "rank1.summary.json.gz")])
    assert "nested deeper" in err


@pytest.mark.parametrize("levels", [99, 101, 990, 1100, 100_000])
def test_summary_nesting_at_every_depth_is_read_or_one_line(tmp_path, levels):
    deep = _deep_summary(tmp_path / "x.summary.json.gz", levels)
    with pytest.raises(BadInput):
        summary.load(deep)


def test_a_capture_with_a_deeply_nested_json_field_reads(tmp_path, capsys):
    """A CUPTI capture's argv is JSON in its meta table: 100,000 levels made the reader raise RecursionError."""
    cap = tmp_path / CUPTI.name
    cap.write_bytes(CUPTI.read_bytes())
    with sqlite3.connect(cap) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'argv'", ("[" * 100_000 + "]" * 100_000,))
    conn.close()
    assert main(["report", str(cap), "--format", "json"]) == 0


def test_recursion_in_any_reader_is_bad_input_naming_the_file(tmp_path, monkeypatch):
    """The reader boundary: whatever parser recursed, the file is refused (a folder skips it)."""
    cap = tmp_path / CUPTI.name
    cap.write_bytes(CUPTI.read_bytes())

    def recurse(path, *a):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setitem(readers.READERS, "cupti", recurse)
    with pytest.raises(BadInput, match="nested deeper") as e:
        readers.read(cap)
    assert e.value.path == str(cap)


@pytest.mark.parametrize("levels", [10, 900, 5000, 10**6])
def test_bounded_loads_never_raises_recursion_error(levels):
    for text in ("[" * levels + "]" * levels, '{"a":' * levels + "1" + "}" * levels):
        try:
            bounded.loads(text)
        except ValueError:
            assert levels > 100


# --- 3. CSV: quoted fields holding line breaks ---------------------------------------------------------------


def _with_breaks(src: str, name_col: str, header_first: str) -> tuple[str, int]:
    """The CSV with a line break (and a line a line filter would drop: blank, '==', unquoted) in every other kernel
    name (every row of it), written by the csv module, quoted as ncu quotes. Returns the text and how many names
    changed. Copies ('[CUDA memcpy HtoD]') keep their names: they are told apart by them."""
    rows = list(csv.reader(io.StringIO(src, newline="")))
    out, col, renamed = io.StringIO(), None, {}
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    breaks = ["\nsecond line", "\n\n== not a message", "\nx\n"]
    for row in rows:
        if row and row[0] == header_first:
            col = row.index(name_col)
        elif col is None:  # the profiler's own lines before the header ('==PID== …') stay as they were
            out.write(",".join(row) + "\n")
            continue
        elif len(row) > col and row[col] and not row[col].startswith(("[", "CUDA ")):
            name = row[col]
            if name not in renamed:
                renamed[name] = name + breaks[len(renamed) // 2 % 3] if len(renamed) % 2 == 0 else name
            row = [*row[:col], renamed[name], *row[col + 1:]]
        if row:
            w.writerow(row)
        else:
            out.write("\n")
    return out.getvalue(), sum(k != v for k, v in renamed.items())


def _launches(path: Path) -> tuple[int, int]:
    c = readers.read(path)
    return sum(k.launches for k in c.kernels), len(c.kernels)


@pytest.mark.parametrize("src, name_col, first", [
    (H200 / "ncu_tensor_metrics.csv", "Kernel Name", "ID"),
    (RUNS / "train_counters" / "gpt_fp32.ncu.csv.gz", "Kernel Name", "ID"),
    (PUBLIC / "nanzifan__nvprof-result__print-gpu-summary.csv", "Name", "Type"),
    (PUBLIC / "josiahdavis__profiling-lm__lm.csv", "Kernel", None),
    (RUNS / "gpt_fp32_stats" / "cuda_gpu_kern_sum.csv", "Name", "Time (%)"),
    (WILD / "ncu-sections-numba-t4.csv", "Kernel Name", "ID"),  # rows without a rule are narrower than the header
])
def test_a_line_break_in_a_quoted_kernel_name_loses_no_launch(tmp_path, src, name_col, first):
    """Every CSV reader: the same launches and as many kernels as without the line breaks (an ncu CSV lost rows into
    the names: 71 kernels for 64, wrong names, exit 0)."""
    text = _text_of(src)
    header = next(csv.reader(io.StringIO(text)))
    first = first or header[0]
    plain = tmp_path / ("plain" + src.name.removesuffix(".gz"))
    plain.write_text(text)
    broken_text, changed = _with_breaks(text, name_col, first)
    assert changed >= 1
    broken = tmp_path / ("broken" + src.name.removesuffix(".gz"))
    broken.write_text(broken_text)
    assert readers.detect(broken) == readers.detect(plain)
    assert _launches(broken) == _launches(plain)
    gz = tmp_path / (broken.name + ".gz")
    gz.write_bytes(gzip.compress(broken_text.encode()))
    assert _launches(gz) == _launches(plain)


def _quoted_as_ncu(src: str, header_first: str) -> tuple[list[str], list[int]]:
    """The CSV's lines written quoted as ncu quotes (every field of the header and the rows), and the indexes of the
    rows' lines; the profiler's own lines before the header ('==PID== …') stay as they were."""
    lines, data = [], []
    for row in csv.reader(io.StringIO(src, newline="")):
        if data or (row and row[0] == header_first):
            data.append(len(lines))
            out = io.StringIO()
            csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(row)
            lines.append(out.getvalue())
        else:
            lines.append(",".join(row) + "\n")
    return lines, data


def _with_open_quote(src: str, header_first: str) -> tuple[str, int]:
    """The CSV quoted as ncu quotes, with the closing quote of the last field of a row in the middle of the data
    dropped (a line cut short: where the name is the last field, a name): the csv module reads on over the line
    break, to the next line's first quote. Returns the text and the damaged line's number."""
    lines, data = _quoted_as_ncu(src, header_first)
    at = data[len(data) // 2]
    lines[at] = lines[at].removesuffix('"\n') + "\n"
    return "".join(lines), at + 1


# one real export of each CSV reader, with its header's first field (None: the file's first line is the header)
CSV_EXPORTS = [
    (H200 / "ncu_tensor_metrics.csv", "ID"),
    (RUNS / "train_counters" / "gpt_fp32.ncu.csv.gz", "ID"),
    (PUBLIC / "nanzifan__nvprof-result__print-gpu-summary.csv", "Type"),
    (PUBLIC / "josiahdavis__profiling-lm__lm.csv", None),
    (RUNS / "gpt_fp32_stats" / "cuda_gpu_kern_sum.csv", "Time (%)"),
]


def _text_of(src: Path) -> str:
    raw = src.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()


@pytest.mark.parametrize("src, first", CSV_EXPORTS)
def test_a_quote_left_open_is_refused_naming_its_line(tmp_path, capsys, src, first):
    """Every CSV reader: a quote left open took the next line into the field, up to its first quote, and the rest
    of that line's fields into the row (in an nvprof trace, a copy read as a kernel and the copy after it lost, exit
    0); it is refused, naming the file and the lines."""
    text = _text_of(src)
    damaged, line = _with_open_quote(text, first or next(csv.reader(io.StringIO(text)))[0])
    path = tmp_path / src.name.removesuffix(".gz")
    path.write_text(damaged)
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and f"a quote opened at line {line:,} closes at line {line + 1:,}" in err, err


def test_rows_swallowed_whole_between_two_stray_quotes_are_refused(tmp_path, capsys):
    """nsys stats quotes a name only where it must: a stray quote opening one name and another closing a name three
    rows down leave a row as wide as the header, holding two rows whole — refused; the same lines with a line break
    in a quoted name (no whole row inside) are read."""
    lines = (RUNS / "gpt_fp32_stats" / "cuda_gpu_kern_sum.csv").read_text().splitlines(keepends=True)
    plain = [i for i, line in enumerate(lines) if i and '"' not in line]
    a = next(i for i in plain if {i + 1, i + 2, i + 3} <= set(plain))
    damaged = [*lines]
    cut = damaged[a].rindex(",") + 1
    damaged[a] = damaged[a][:cut] + '"' + damaged[a][cut:]
    damaged[a + 3] = damaged[a + 3].rstrip("\n") + '"\n'
    path = tmp_path / "cuda_gpu_kern_sum.csv"
    path.write_text("".join(damaged))
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert f"a quote opened at line {a + 1:,} closes at line {a + 4:,}, and holds a whole row between" in err, err
    kept = [*lines]
    kept[a] = kept[a][:cut] + '"' + kept[a][cut:].rstrip("\n") + '\nsecond, line"\n'
    path.write_text("".join(kept))
    read = readers.read(path)
    assert sum(k.launches for k in read.kernels) == sum(int(line.split(",")[2]) for line in lines[1:])


@pytest.mark.parametrize("ragged", [False, True])
def test_a_row_over_two_lines_narrower_than_the_header(ragged):
    """A stray quote in an early column closed by a quote in a later column of the next line leaves a row narrower
    than the header: refused where the format writes every row whole, kept where it leaves columns out (ncu)."""
    text = 'a,b,c,name\n1,"2,3,x\n4,5,6",y\n7,8,9,w\n'
    if ragged:
        assert [len(r) for r in _csv.rows(io.StringIO(text), bool, ragged=True)] == [4, 3, 4]
    else:
        with pytest.raises(BadInput, match="a quote opened at line 2 closes at line 3, leaving a row of 3 fields"):
            list(_csv.rows(io.StringIO(text), bool))


@pytest.mark.parametrize("ragged", [False, True])
def test_a_quote_closing_inside_a_field_is_refused(ragged):
    """A quote that closes with more of its field after it (the stray quote above closed by the next line's opening
    quote of "y, z") ended the field there and kept the rest: a row one narrower, which ncu's rows also are —
    refused either way, naming the lines."""
    text = 'a,b,c,name\n1,"2,3,x\n4,5,6,"y, z"\n7,8,9,w\n'
    with pytest.raises(BadInput, match="a quote opened at line 2 closes at line 3 with more of its field after it"):
        list(_csv.rows(io.StringIO(text), bool, ragged=ragged))


@pytest.mark.parametrize("src, first", CSV_EXPORTS)
def test_a_quote_lost_inside_a_line_is_refused_naming_its_line(tmp_path, capsys, src, first):
    """Every CSV reader: a field's closing quote lost in the middle of a line (ncu quotes every field: a kernel
    name's) ended the field at the next field's opening quote and kept the text after it — in ncu's CSV the name
    read `name,<next field>"` and every column after it shifted, exit 0; it is refused, naming the file and line."""
    text = _text_of(src)
    lines, data = _quoted_as_ncu(text, first or next(csv.reader(io.StringIO(text)))[0])
    at = data[len(data) // 2]
    lines[at] = lines[at].replace('",', ",", 1)  # the first field's closing quote
    path = tmp_path / src.name.removesuffix(".gz")
    path.write_text("".join(lines))
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and f"a quote opened at line {at + 1:,} closes at line {at + 1:,} with more" in err, err




def test_an_unclosed_quote_is_one_line_in_bounded_memory(tmp_path, capsys):
    """A quote never closed: the csv module's field limit refuses it, naming the line (not the whole file read)."""
    path = tmp_path / "open.csv"
    text = (H200 / "ncu_tensor_metrics.csv").read_text()
    lines = text.splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + '"9","' + "x\n" * 200_000 + "".join(lines[3:]))
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert "CSV not readable at line" in err and str(path) in err


@pytest.mark.parametrize("edit", [
    lambda body: {**body, "capture": [1, 2]},
    lambda body: {**body, "capture": {**body["capture"], "kernels": ["not a kernel"]}},
    lambda body: {**body, "capture": {**body["capture"], "devices": [body["capture"]["kernels"][0]]}},
    lambda body: {**body, "capture": {**body["capture"], "series": "steps"}},
    lambda body: {**body, "identity": None},
])
def test_a_summary_holding_the_wrong_records_is_one_line(tmp_path, real_summary, capsys, edit):
    """Every record where the model has one must be that record (readers/_validate.py): a capture that was a
    list, or kernels that were text, ended the report with a TypeError (exit 70)."""
    doc = json.loads(gzip.decompress(real_summary.read_bytes()))
    bad = tmp_path / real_summary.name
    bad.write_bytes(gzip.compress(summary.MAGIC + b', "body": ' + json.dumps(edit(doc["body"])).encode() + b"}"))
    err = _one_line_exit_2(capsys, ["report", str(bad), "--format", "json"])
    assert str(bad) in err


def _kernel_field(field: str, value):
    def edit(body):
        kernels = [*body["capture"]["kernels"]]
        kernels[0] = {**kernels[0], field: value}
        return {**body, "capture": {**body["capture"], "kernels": kernels}}
    return edit


@pytest.mark.parametrize("field, value, said", [
    ("launches", True, "expected a number, found True"),  # was 1 launch
    ("device_id", True, "expected a number, found True"),  # was device 1
    ("launches", 1.5, "KernelAgg.launches is not a whole number (1.5)"),  # was 1
    ("name", [1], "expected text, found tuple"),  # was the kernel '(1,)'
])
def test_a_summary_value_of_another_json_type_is_one_line(tmp_path, real_summary, capsys, field, value, said):
    """A summary edited by hand: JSON's true read as 1 (a count, a device), 1.5 launches as 1, a list as the name
    '(1,)' — silently, exit 0. Each is one line naming the file now."""
    doc = json.loads(gzip.decompress(real_summary.read_bytes()))
    bad = tmp_path / real_summary.name
    bad.write_bytes(gzip.compress(summary.MAGIC + b', "body": ' +
                                  json.dumps(_kernel_field(field, value)(doc["body"])).encode() + b"}"))
    err = _one_line_exit_2(capsys, ["report", str(bad), "--format", "json"])
    assert str(bad) in err and said in err, err


@pytest.mark.parametrize("where", ["kernels", "steps"])
def test_numbers_that_add_up_past_64_bits_are_one_line_naming_the_file(tmp_path, real_summary, capsys, where):
    """Each number within int64, their sum past it (two kernels of 2^62 ns; two processes' 2^62 launches in one
    step): the store's SUM refused it as 'SQLite: integer overflow', naming no file."""
    doc = json.loads(gzip.decompress(real_summary.read_bytes()))
    capture = doc["body"]["capture"]
    if where == "kernels":
        for k in capture["kernels"][:2]:
            k["total_ns"] = 1 << 62
    else:
        steps = capture["series"]["steps"]
        twin = {**steps[0], "pid": (steps[0]["pid"] or 0) + 1}
        steps[0]["launches"] = twin["launches"] = 1 << 62
        steps.insert(1, twin)
    bad = tmp_path / real_summary.name
    bad.write_bytes(gzip.compress(summary.MAGIC + b', "body": ' + json.dumps(doc["body"]).encode() + b"}"))
    err = _one_line_exit_2(capsys, ["report", str(bad), "--format", "json"])
    assert str(bad) in err and "past 64 bits" in err


@pytest.mark.parametrize("field, value", [("launches", 10**30), ("kernel_ns", "12"), ("api_ns", [["launch", 10**30]]),
                                          ("api_ns", [["launch", 1, 2]])])
def test_a_summary_step_series_is_validated_like_the_rest(tmp_path, real_summary, capsys, field, value):
    """A step series went to the store unchecked: a number past 64 bits was an OverflowError (exit 70)."""
    doc = json.loads(gzip.decompress(real_summary.read_bytes()))
    doc["body"]["capture"]["series"]["steps"][0][field] = value
    bad = tmp_path / real_summary.name
    bad.write_bytes(gzip.compress(summary.MAGIC + b', "body": ' + json.dumps(doc["body"]).encode() + b"}"))
    capsys.readouterr()
    code = main(["report", str(bad), "--format", "json"])
    err = capsys.readouterr().err
    assert code in (0, 2) and (code == 0 or err.count("\n") == 1), err
    assert code == 2 or field == "kernel_ns"  # "12" is read as the number it says


# --- nvprof CSV: its units row and its rows' widths ---------------------------------------------------------------

NVPROF_TRACE = WILD / "nvprof-gputrace-gtx950.csv"
NVPROF_SUMMARY = PUBLIC / "nanzifan__nvprof-result__print-gpu-summary.csv"


def _edited(tmp_path: Path, src: Path, edit) -> Path:
    lines = src.read_text().splitlines(keepends=True)
    path = tmp_path / src.name
    path.write_text("".join(edit(lines)))
    return path


def _at(lines: list[str], start: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(start))


@pytest.mark.parametrize("src, header", [(NVPROF_TRACE, '"Start"'), (NVPROF_SUMMARY, '"Type"')])
def test_an_nvprof_csv_without_its_units_row_is_refused(tmp_path, capsys, src, header):
    """The units row deleted: its first data row was taken for it (a kernel lost from the summary: 6000 launches)
    and every time read unscaled (the trace's 3.7 us of kernels as 3 ns), exit 0."""
    path = _edited(tmp_path, src, lambda lines: lines[:_at(lines, header) + 1] + lines[_at(lines, header) + 2:])
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and "the row after the header is not its units row" in err, err


@pytest.mark.parametrize("edit, shown", [
    # the file cut inside its last row: the last DtoH copy was lost
    (lambda lines: [*lines[:-1], lines[-1][:lines[-1].index('"GeForce')] + '"GeForce GTX 950 (0)","1"'], "15 fields"),
    # a number written with a thousands separator: the row one wider, its columns shifted — an HtoD copy read as a
    # kernel named '14' on no device
    (lambda lines: [line.replace("4.547474,", "4.547,474,", 1) for line in lines], "18 fields"),
    # a row written with ';' between its fields: one field, the copy lost
    (lambda lines: [*lines[:8], lines[8].replace(",", ";"), *lines[9:]], "1 fields"),
])
def test_an_nvprof_trace_row_of_another_width_is_refused(tmp_path, capsys, edit, shown):
    assert "4.547474," in NVPROF_TRACE.read_text()
    path = _edited(tmp_path, NVPROF_TRACE, edit)
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and f"a row of {shown} where the header has 17" in err, err


@pytest.mark.parametrize("edit, said", [
    # the opening quote of a row's type lost: 'GPU activities"' read as a new table, the rows after it lost (two
    # kernels and the GPU's name: the verdict went from no to unknown)
    (lambda lines: [line.replace('"GPU activities",3.610203', 'GPU activities",3.610203') for line in lines],
     "whose type reads 'GPU activities\"'"),
    # a kernel's time not a number: read as 0 ns (88 ms of 371 lost)
    (lambda lines: [line.replace(",88.081013,", ",U8.081013,") for line in lines], "has a Time of 'U8.081013'"),
    (lambda lines: [line.replace(",88.081013,", ",,") for line in lines], "has a Time of '', not a duration"),
    # a kernel's name unquoted and wrapped onto the next line: that line was taken for the next table's header and
    # every row after it left unread, silently (a tensor-core kernel after it: "not seen")
    (lambda lines: [line.replace('"cuda_compute_flux(int, int*, float*, float*, float*)"', "cuda_compute_fl\nux_kernel")
                    for line in lines], "a line of 1 field(s), 'ux_kernel', among the GPU activities"),
    # times no kernel takes: a comma in a quoted time read as a thousands separator (×10^6), NaN, infinity and 1e300
    # as the tool's own errors, a negative one as 0 ns
    (lambda lines: [line.replace(",268.352834,", ',"268,352834",') for line in lines],
     "has a Time of '268,352834', not a duration"),
    *[(lambda lines, t=t: [line.replace(",268.352834,", f",{t},") for line in lines],
       f"has a Time of '{t}', not a duration") for t in ("nan", "inf", "1e300", "-268.352834")],
    (lambda lines: [line.replace(",6000,44.725000,", ",6000,44.725000,-43.1,") .replace(",43.106000,", ",")
                    for line in lines], "a Min or Max of '-43.1', not a duration"),
])
def test_a_damaged_nvprof_summary_row_is_refused(tmp_path, capsys, edit, said):
    path = _edited(tmp_path, NVPROF_SUMMARY, edit)
    assert path.read_text() != NVPROF_SUMMARY.read_text()
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and said in err, err


def test_the_nvprof_csv_checks_keep_the_real_exports(capsys):
    """The same files undamaged: every row read (the summary's Unified Memory table after its activities, and the
    line 'Total CPU Page faults: 49' after that, are tables of their own)."""
    trace, summary_ = readers.read(NVPROF_TRACE), readers.read(NVPROF_SUMMARY)
    assert sum(k.launches for k in trace.kernels) == 2 and sum(m.count for m in trace.memops) == 6
    assert sum(k.launches for k in summary_.kernels) == 14003 and summary_.devices[0].name == "TITAN Xp"


# --- ncu CSV: a launch's rows ---------------------------------------------------------------------------------------

NCU_FLOPS = ROOT / "tests" / "data" / "ncu_flops" / "ncu_flops.csv"


@pytest.mark.parametrize("edit, said", [
    # a field inserted: the columns after it shifted, a launch named after the host ('127.0.0.1') on no device
    (lambda lines: [lines[0], lines[1].replace('"0","3550",', '"0","x","3550",', 1), *lines[2:]],
     "a row of 16 fields where the header has 15"),
    # a quote lost: the process id read '3550"', a process of its own — the fill kernel's launch counted twice, its
    # time 0
    (lambda lines: [lines[0], lines[1].replace('"0","3550"', '"0",3550"', 1), *lines[2:]],
     "whose ID or process ID is not an integer ('0', '3550\"')"),
    # a launch's ID edited to another's: its metrics mixed into that launch's
    (lambda lines: [('"1",' + line[5:] if line.startswith('"15",') else line) for line in lines],
     "the rows of launch 1 (process 3550) name two kernels"),
])
def test_a_damaged_ncu_launch_row_is_refused(tmp_path, capsys, edit, said):
    path = _edited(tmp_path, NCU_FLOPS, edit)
    assert path.read_text() != NCU_FLOPS.read_text()
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and said in err, err
    assert sum(k.launches for k in readers.read(NCU_FLOPS).kernels) == 21  # the export itself: every launch


TORCH_OPS_NCU = ROOT / "nvprof_wrap" / "samples" / "torch_ops" / "ncu_tensor_metrics.csv"


def _metric_set(metric: str, value: str):
    def one(line: str) -> str:
        head = line.rstrip("\r\n")
        return head[:head.rindex(',"') + 1] + f'"{value}"' + line[len(head):]

    def edit(lines: list[str]) -> list[str]:
        return [one(line) if f'"{metric}"' in line else line for line in lines]
    return edit


@pytest.mark.parametrize("edit, said", [
    # counts no counter holds: -1, NaN, infinity. Read, they made all 24 kernels of the H200's export tensor-core
    # ones (10 are)
    (_metric_set("sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum", "-1"),
     "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum is '-1', which no counter holds"),
    (_metric_set("sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum", "nan"), "is 'nan', which no counter holds"),
    (_metric_set("sm__inst_executed_pipe_tensor_op_gmma.sum", "inf"), "is 'inf', which no counter holds"),
    # cut in the middle of a row: the row without its value was passed over, and the kernels it cut off with it
    # read as none ("no — none of the 4 kernels" where the whole export says yes)
    (lambda lines: [*lines[:len(lines) // 2], lines[len(lines) // 2][:11]], "fields, before its value (the file cut"),
])
def test_an_ncu_export_with_impossible_counts_or_cut_mid_row_is_refused(tmp_path, capsys, edit, said):
    path = _edited(tmp_path, TORCH_OPS_NCU, edit)
    assert path.read_text() != TORCH_OPS_NCU.read_text()
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and said in err, err


def test_an_impossible_count_decides_no_launch() -> None:
    """Whatever reader hands classify/counters such a count (nvprof's metrics, a verify run): unknown, naming it."""
    from nvprof_wrap.classify.counters import launch_verdict
    hmma, hfma2 = "sm__inst_executed_pipe_tensor_op_hmma.sum", "smsp__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"
    assert launch_verdict({hmma: 100.0, hfma2: 0.0}, "9.0").tensor_core == "yes"
    for bad in (-1.0, float("nan"), float("inf")):
        e = launch_verdict({hmma: 100.0, hfma2: bad}, "9.0")
        assert e.tensor_core == "unknown" and e.metric == hfma2 and "never negative or not a number" in e.detail


def test_a_capture_none_of_whose_kernels_has_a_usable_time_says_so_and_shares_nothing(tmp_path, capsys):
    """Every kernel's end before its start (an nsys export, a Kineto trace's every `dur` negative): the kernels were
    counted without their times, and the headline read "0.0% of GPU kernel time" beside a hint that 60% of GPU time
    was copies (the copies' times being the only ones left), or, for Kineto, ncu's advice to add
    gpu__time_duration.sum. Now: the counts, that no kernel has a usable time, and no share of time."""
    path = tmp_path / "nsys.sqlite"
    path.write_bytes((RUNS / "gemm_nsys" / "nsys.sqlite").read_bytes())
    with sqlite3.connect(path) as conn:
        assert conn.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 1000').rowcount > 0
    conn.close()
    trace = tmp_path / "bm.json"
    raw = json.loads(gzip.decompress(
        (PUBLIC / "facebookresearch__HolisticTraceAnalysis__benchmark_result_2869224_1695835535_trace.json.gz")
        .read_bytes()))
    for e in raw["traceEvents"]:
        if e.get("cat") == "kernel":
            e["dur"] = -abs(e.get("dur", 1))
    trace.write_text(json.dumps(raw))
    for capture in (path, trace):
        body = json.loads(_report_json(capsys, capture))
        assert body["kernel_time_ns"] == 0 and body["launches"] > 0
        assert body["message"].endswith("no kernel has a usable time (each missing, negative or longer than a week: "
                                        "a damaged capture?), so no time shares"), body["message"]
        assert "% of GPU kernel time" not in body["message"] and "gpu__time_duration" not in body["message"]
        assert not any("of GPU time is" in h for h in body["hints"]), body["hints"]


def test_a_negative_byte_count_is_counted_without_its_bytes(tmp_path, capsys):
    """A copy's or set's byte count below zero (a damaged capture) was summed into the capture's memory operations;
    the run store then refused itself ("damaged run store … delete it to rebuild it"), naming no file, for a plain
    file read without a store. Its bytes are left out, with a note; everything else is read."""
    path = tmp_path / "nsys.sqlite"
    path.write_bytes((RUNS / "gemm_nsys" / "nsys.sqlite").read_bytes())
    with sqlite3.connect(path) as conn:
        assert conn.execute("UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET bytes = -1").rowcount > 0
    conn.close()
    body = json.loads(_report_json(capsys, path))
    notes = body["sources"][0]["notes"]
    assert "1 copy or set aggregate(s) with a negative byte count: counted without their bytes" in notes, notes
    whole = json.loads(_report_json(capsys, RUNS / "gemm_nsys" / "nsys.sqlite"))
    assert body["launches"] == whole["launches"] and body["kernel_ns"] == whole["kernel_ns"]


def _report_json(capsys, path: Path) -> str:
    capsys.readouterr()
    assert main(["report", str(path), "--format", "json"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("edit", [
    "DELETE FROM StringIds WHERE id = (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1)",
    ("UPDATE StringIds SET value = '' WHERE id = (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL "
     "ORDER BY start LIMIT 1)"),
])
def test_a_kernel_whose_name_the_file_does_not_hold_is_said(tmp_path, capsys, edit):
    """A kernel's name id missing from StringIds (or its string empty): read as '<unnamed kernel>', a kernel of
    unknown kind — its tensor-core work gone from the verdict without a word. Now the notes say how many launches
    and how much kernel time have no name."""
    path = tmp_path / "nsys.sqlite"
    path.write_bytes((RUNS / "gemm_nsys" / "nsys.sqlite").read_bytes())
    with sqlite3.connect(path) as conn:
        assert conn.execute(edit).rowcount == 1
    conn.close()
    body = json.loads(_report_json(capsys, path))
    said = [n for n in body["sources"][0]["notes"] if "have no name in the file" in n]
    unnamed = [k for k in body["kernels"] if k["name"] in ("<unnamed kernel>", "")]
    assert said and unnamed and said[0].startswith(f"{sum(k['launches'] for k in unnamed):,} kernel launch(es)"), said
    whole = json.loads(_report_json(capsys, RUNS / "gemm_nsys" / "nsys.sqlite"))
    assert not [n for n in whole["sources"][0]["notes"] if "have no name" in n]


# --- Kineto JSON: values of another JSON type -----------------------------------------------------------------------

KINETO_GPT = RUNS / "kineto_gpt_bf16" / "vm_11372.pt.trace.json.gz"


def _kineto_edited(tmp_path: Path, edit) -> Path:
    body = json.loads(gzip.decompress(KINETO_GPT.read_bytes()))
    edit(body)
    path = tmp_path / "edited.pt.trace.json"
    path.write_text(json.dumps(body))
    return path


def _first_kernel(body) -> dict:
    return next(ev for ev in body["traceEvents"] if ev.get("cat") == "kernel" and "nvjet" in ev.get("name", ""))


@pytest.mark.parametrize("value", [None, [1], 7])
def test_a_kineto_kernel_name_that_is_not_text_has_no_name(tmp_path, capsys, value):
    """A kernel event's name null, a list or a number was read as the kernel 'None', '[1]' or '7' (str() of it),
    silently; it is a kernel without a name now, and the notes say so."""
    path = _kineto_edited(tmp_path, lambda body: _first_kernel(body).__setitem__("name", value))
    body = json.loads(_report_json(capsys, path))
    assert not [k for k in body["kernels"] if k["name"] in ("None", "[1]", "7")]
    assert any("1 kernel launch(es)" in n and "have no name in the file" in n for n in body["sources"][0]["notes"])


def test_a_kineto_duration_of_true_is_no_time(tmp_path, capsys):
    """JSON's true as a kernel's dur was 1 us (float(True)); now a record without a usable time, counted, noted."""
    path = _kineto_edited(tmp_path, lambda body: _first_kernel(body).__setitem__("dur", True))
    body = json.loads(_report_json(capsys, path))
    assert any(n.startswith("1 kernel record(s) without a usable time") for n in body["sources"][0]["notes"])


@pytest.mark.parametrize("value, said", [({}, "an object"), (None, "null"), (3, "a number")])
def test_trace_events_that_are_not_a_list_are_refused(tmp_path, capsys, value, said):
    """traceEvents an object or null read as no events: "no kernels", exit 0, for a file that says nothing."""
    path = _kineto_edited(tmp_path, lambda body: body.__setitem__("traceEvents", value))
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and f"traceEvents is {said}, not a list of events" in err, err


def test_a_kernel_name_of_null_is_said_not_a_locked_table(tmp_path, capsys):
    """StringIds without its NOT NULL and a kernel's name NULL (a tool's rewrite of an export): the per-step series
    demangled None (AttributeError), and dropping its temporary tables under the cursor still open then raised
    "database table is locked" in its place — exit 2 for the wrong reason. Read now, the name noted as missing."""
    path = tmp_path / "nsys.sqlite"
    path.write_bytes((RUNS / "gemm_nsys" / "nsys.sqlite").read_bytes())
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE kept AS SELECT id, value FROM StringIds")
        conn.execute("DROP TABLE StringIds")
        conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        conn.execute("INSERT INTO StringIds SELECT id, value FROM kept")
        conn.execute("DROP TABLE kept")
        assert conn.execute("UPDATE StringIds SET value = NULL WHERE id = (SELECT demangledName FROM "
                            "CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1)").rowcount == 1
    conn.close()
    body = json.loads(_report_json(capsys, path))
    assert any("kernel launch(es)" in n and "have no name in the file" in n for n in body["sources"][0]["notes"])


CONSOLE_TRACE = ROOT / "tests" / "data" / "console" / "xplacer_nvprof_gpu_trace_bfs.log"


@pytest.mark.parametrize("edit, shown", [
    (lambda line: line + '"', '[CUDA memcpy DtoH]"'),  # a quote appended
    (lambda line: line.replace("         -        1B", "        1B", 1), "py DtoH]"),  # a cell lost: columns shift
])
def test_a_damaged_copy_line_of_a_console_trace_is_refused(tmp_path, capsys, edit, shown):
    """nvprof's console --print-gpu-trace: a '[CUDA memcpy DtoH]' line disturbed by one character was read as a
    kernel (a DtoH copy lost, a kernel of unknown kind more: 16 launches became 17), exit 0."""
    lines = CONSOLE_TRACE.read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if line.endswith("[CUDA memcpy DtoH]"))
    lines[at] = edit(lines[at])
    path = tmp_path / CONSOLE_TRACE.name
    path.write_text("\n".join(lines))
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and f"a copy's or set's name reads {shown!r}" in err, err
    assert sum(k.launches for k in readers.read(CONSOLE_TRACE).kernels) == 16  # the listing itself


def test_a_damaged_copy_row_of_an_nvprof_trace_csv_is_refused(tmp_path, capsys):
    path = _edited(tmp_path, NVPROF_TRACE, lambda lines: [*lines[:-1], lines[-1].rstrip("\n")[:-2] + '""]"\n'])
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and "a copy's or set's name reads" in err, err


@pytest.mark.parametrize("device", [-5, 7])
def test_a_kernel_on_a_device_the_capture_does_not_list_is_said(tmp_path, capsys, device):
    """One kernel's deviceId edited to -5 or 7 in a capture that lists GPUs 0 and 1: the report grew a GPU of one
    launch, silently. The notes now say which launches sit on a device the capture does not include."""
    path = tmp_path / "nsys.sqlite"
    path.write_bytes((RUNS / "gemm_nsys" / "nsys.sqlite").read_bytes())
    with sqlite3.connect(path) as conn:
        assert conn.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = ? WHERE rowid = "
                            "(SELECT MIN(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)", (device,)).rowcount == 1
    conn.close()
    notes = json.loads(_report_json(capsys, path))["sources"][0]["notes"]
    assert f"1 kernel launch(es) on device id(s) {device}, which the capture's GPUs (0, 1) do not include: a " \
           "damaged record?" in notes, notes
    whole = json.loads(_report_json(capsys, RUNS / "gemm_nsys" / "nsys.sqlite"))["sources"][0]["notes"]
    assert not [n for n in whole if "on device id(s)" in n]


def test_a_console_summary_without_its_units_line_is_refused(tmp_path, capsys):
    """nvprof -u ms's console summary writes its times without units and the units line ('%  ms  ms …') under the
    header: that line lost, every time was read as ns — 0.341204 ms of copies as 0 ns, every kernel 0 —, exit 0."""
    lines = CONSOLE_SUMMARY.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.split() == ["%", "ms", "ms", "ms", "ms"])
    path = tmp_path / CONSOLE_SUMMARY.name
    path.write_text("".join(lines[:at] + lines[at + 1:]))
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and "the Time '0.341204' has no unit, and no units line under the header" in err, err
    assert sum(k.launches for k in readers.read(CONSOLE_SUMMARY).kernels) == 16  # the listing itself, read


CONSOLE_SUMMARY = ROOT / "tests" / "data" / "console" / "xplacer_nvprof_summary_bfs.log"


def test_an_ncu_launch_without_its_duration_row_is_counted_without_its_time(tmp_path, capsys):
    """One launch's gpu__time_duration.sum row deleted: its kernel's whole time was dropped (the kernel's other
    launches' too), silently. The launch is counted without its time now, the others keep theirs, and it is said."""
    lines = NCU_FLOPS.read_text().splitlines(keepends=True)
    gone = next(i for i, line in enumerate(lines) if i and line.startswith('"0",') and "gpu__time_duration.sum" in line)
    path = tmp_path / NCU_FLOPS.name
    path.write_text("".join(lines[:gone] + lines[gone + 1:]))
    whole, cut = (json.loads(_report_json(capsys, p)) for p in (NCU_FLOPS, path))
    lost = float(next(csv.reader([lines[gone]]))[-1].replace(",", ""))  # the launch's own duration (ns), "2,432"
    assert cut["launches"] == whole["launches"] and cut["kernel_ns"] == whole["kernel_ns"] - lost
    assert "1 kernel record(s) without a usable time (missing, negative, or longer than 7 days): counted, without " \
           "their time" in cut["sources"][0]["notes"]


def test_two_xspaces_joined_into_one_file_are_refused(tmp_path, capsys):
    """`cat a.xplane.pb b.xplane.pb`: protobuf merges the two messages into one XSpace holding every plane twice,
    and every launch and nanosecond was counted twice (308 launches read as 616), exit 0."""
    src = RUNS / "jax_bf16_xplane" / "vm.xplane.pb"
    path = tmp_path / "vm.xplane.pb"
    path.write_bytes(src.read_bytes() * 2)
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and "holds the plane /device:GPU:0 2 times" in err, err
    assert readers.read(src).kernels  # the profile itself, read


def _two_arrays(gzipped: bytes, dst: Path) -> Path:
    """A gzipped trace with its traceEvents split in two arrays under the same key, one event a line as
    torch.profiler writes them, written to dst (gzipped if it ends .gz)."""
    body = json.loads(gzip.decompress(gzipped))
    events = body.pop("traceEvents")
    half = len(events) // 2
    text = (json.dumps(body)[:-1] + ',\n"traceEvents": [\n' + ",\n".join(json.dumps(e) for e in events[:half])
            + '\n],\n"traceEvents": [\n' + ",\n".join(json.dumps(e) for e in events[half:]) + "\n]}\n").encode()
    dst.write_bytes(gzip.compress(text, 1) if dst.suffix == ".gz" else text)
    return dst


@pytest.mark.parametrize("name", ["two.pt.trace.json", "two.pt.trace.json.gz", "two.trace.json.gz"])
def test_a_trace_with_trace_events_twice_is_refused(tmp_path, capsys, name):
    """traceEvents twice at the top level: both arrays were read as one (8,772 kernels of the public Kineto trace
    split so), where JSON's parsers and Chrome's trace viewer keep the last (8,473) — and nothing said so. The
    same for TensorFlow's trace viewer JSON (its H200 JAX step as TensorBoard writes it: tests/xspace_build.py)."""
    src = xb.trace_json(xb.h200_jax_step()) if name == "two.trace.json.gz" else fixture_file(
        "public/pytorch__kineto__worker0.1623143089861.pt.trace.json.gz").read_bytes()
    path = _two_arrays(src, tmp_path / name)
    assert readers.detect(path) == ("tf-trace-json" if name == "two.trace.json.gz" else "kineto-json")
    err = _one_line_exit_2(capsys, ["report", str(path), "--format", "json"])
    assert str(path) in err and "its top-level object has traceEvents 2 times" in err, err


def test_trace_events_named_inside_events_are_no_second_array(tmp_path, capsys):
    """The key's name in an event's args, as a key and as a value, on the general path (one line: no cut for the
    fast path): the stream holds it three times, the top-level object once — read, every kernel."""
    src = fixture_file("public/pytorch__kineto__worker0.1623143089861.pt.trace.json.gz")
    body = json.loads(gzip.decompress(src.read_bytes()))
    body["traceEvents"][5].setdefault("args", {})["traceEvents"] = "traceEvents"
    path = tmp_path / "one_line.pt.trace.json"
    path.write_text(json.dumps(body))
    got = json.loads(_report_json(capsys, path))
    assert sum(k["launches"] for k in got["kernels"]) == 8772


# --- damaged Kineto traces: what is wrong, said in words ---------------------------------------------------------

MATMUL_TRACE = RUNS / "kineto_matmul_bf16_shapes" / "matmul.pt.trace.json.gz"


def _kineto_list_cat(raw: bytes) -> bytes:
    d = json.loads(gzip.decompress(raw))
    kernel = next(e for e in d["traceEvents"] if e.get("cat") == "kernel")
    kernel["cat"] = ["kernel"]
    return json.dumps(d).encode()


def _kineto_cc_in_words(raw: bytes) -> bytes:
    d = json.loads(gzip.decompress(raw))
    d["deviceProperties"][0]["computeMajor"] = "nine"
    return json.dumps(d).encode()


def _kineto_latin1_name(raw: bytes) -> bytes:
    text = gzip.decompress(raw)
    at = text.index(b'"name": "') + 9
    return text[:at] + "Gerät ".encode("latin-1") + text[at:]


@pytest.mark.parametrize("name, damage, said", [
    ("list_cat.json", _kineto_list_cat, "an event's \"cat\" is a list (['kernel']), not a category name: event {"),
    ("cc_in_words.json", _kineto_cc_in_words, 'deviceProperties[0].computeMajor is "nine", not a number'),
    ("latin1.json", _kineto_latin1_name, "a string holds bytes that are no UTF-8 text (saved in another encoding?)"),
    ("junk.json.gz", lambda raw: raw + b"GARBAGE", "bytes after the end of its gzip stream that are no gzip data"),
])
def test_a_damaged_kineto_trace_is_refused_saying_what_is_wrong(tmp_path, capsys, name, damage, said):
    """A real H200 Kineto trace, damaged as hand edits and transfers damage files: each was refused in one line, exit
    2, but in the parser's words — "TypeError: unhashable type: 'list'", "expected a number, found str 'nine'" (no
    field named), a bytes repr holding '\\n's, "BadGzipFile: Not a gzipped file (b'GA')". The line says what is
    wrong, where."""
    path = tmp_path / name
    path.write_bytes(damage(MATMUL_TRACE.read_bytes()))
    err = _one_line_exit_2(capsys, ["report", str(path), "--store", str(tmp_path / "s.sqlite")])
    assert err.startswith(f"nvprof-wrap: error: {path}: ") and said in err and "\\n" not in err, err


def test_an_nvprof_capture_without_its_string_table_says_so(tmp_path, capsys):
    """A real nvprof capture (a public .nvvp) whose StringTable was dropped: its kernel table is there, but it read
    "not an nvprof, Nsight Systems or nvprof-wrap capture (no kernel table)". A SQLite file of other tables names
    them."""
    path = tmp_path / "timeline.nvvp"
    path.write_bytes((PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp").read_bytes())
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE StringTable")
    db.close()
    err = _one_line_exit_2(capsys, ["report", str(path), "--store", str(tmp_path / "s.sqlite")])
    assert "a CUPTI kernel table without the table of its kernels' names (nvprof's StringTable" in err
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.executescript("CREATE TABLE foo(a); CREATE TABLE bar(b);")
    db.close()
    err = _one_line_exit_2(capsys, ["report", str(other), "--store", str(tmp_path / "s2.sqlite")])
    assert "(no kernel table; its tables: bar, foo)" in err


def test_an_nsys_kernel_time_stored_as_a_float_is_read(tmp_path, capsys):
    """A real H200 nsys export with one kernel's start stored as a float (start + 0.5: a hand-edited or converted
    export) ended the report with "unreadable nsys-sqlite capture (TypeError: 'float' object cannot be interpreted as
    an integer)" — the series' time buckets took the float. The report is the original's, the kernel 0.5 ns shorter
    (1 ns less of kernel time, cut to whole nanoseconds) — the per-step series included."""
    src = RUNS / "gemm_nsys" / "nsys.sqlite"
    path = tmp_path / "nsys.sqlite"
    path.write_bytes(src.read_bytes())
    with sqlite3.connect(path) as db:
        db.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 0.5 "
                   "WHERE rowid = (SELECT MIN(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)")
    db.close()
    reports = []
    for n, capture in enumerate((src, path)):
        capsys.readouterr()
        assert main(["report", str(capture), "--format", "json", "--store", str(tmp_path / f"s{n}.sqlite")]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    whole, edited = reports
    assert edited["kernel_ns"] == whole["kernel_ns"] - 1 and edited["launches"] == whole["launches"]
    assert len(edited["series"]) == len(whole["series"]) > 1
    assert sum(s["kernel_ns"] for s in edited["series"]) == sum(s["kernel_ns"] for s in whole["series"]) - 1


def test_an_nsys_global_pid_stored_as_a_float_is_its_process(tmp_path, capsys):
    """A real H200 nsys export with one kernel's globalPid stored as a float (+ 0.5) ended the report with
    "unsupported operand type(s) for >>: 'float' and 'int'" (the busy time's rows, shifted in Python where the SQL
    shifts the float's whole part): its process, as the SQL takes it."""
    path = tmp_path / "nsys.sqlite"
    path.write_bytes((RUNS / "gemm_nsys" / "nsys.sqlite").read_bytes())
    with sqlite3.connect(path) as db:
        db.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = globalPid + 0.5 WHERE rowid = 5")
    db.close()
    assert main(["report", str(path), "--format", "json", "--store", str(tmp_path / "s.sqlite")]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [(p["pid"], p["launches"]) for p in d["processes"]] == [(868, 96)]


STATS_CSV = RUNS / "gpt_fp32_stats" / "cuda_gpu_kern_sum.csv"


def _stats_cut(tmp_path, text: str) -> Path:
    path = tmp_path / STATS_CSV.name
    path.write_text(text)
    return path


@pytest.mark.parametrize("keep", [10, 40])
def test_an_nsys_stats_csv_cut_short_before_a_rows_name_says_the_row_is_lost(tmp_path, keep):
    """The H200 GPT trainer's `nsys stats --format csv` kernel table, the file cut short inside its third row's
    numbers (no line end after them): the row had been skipped unsaid. The rows before it read as they do, and a
    note says the last row ends before its name."""
    lines = STATS_CSV.read_text().splitlines(keepends=True)
    cut = readers.read(_stats_cut(tmp_path, "".join(lines[:3]) + lines[3][:keep]))
    before = readers.read(_stats_cut(tmp_path, "".join(lines[:3])))
    assert cut.kernels == before.kernels and len(cut.kernels) == 2
    assert f"its last row ends before its name ('{lines[3][:keep]}'): the file was cut short there" in cut.notes[-1]


def test_an_nsys_stats_csv_cut_short_inside_a_name_reads_the_name_as_cut(tmp_path):
    """The same file cut short inside the third row's kernel name ('…_tilesize64x32x8_stage3_w' of
    '…_stage3_warpsize1x4x1_ffma_…'): the stub had read as a whole kernel's name. It is a cut name now ('…': the
    classifier trusts only what the cut cannot hide), and a note says so."""
    lines = STATS_CSV.read_text().splitlines(keepends=True)
    row = lines[3]
    cut = readers.read(_stats_cut(tmp_path, "".join(lines[:3]) + row[:len(row) - 60]))
    stub = row[:len(row) - 60].split(",")[-1]
    assert [k.name for k in cut.kernels if k.name.startswith(stub)] == [stub + "…"] and len(cut.kernels) == 3
    assert "its last row's name ends where the file does (no line end): read as cut" in cut.notes[-1]
    assert readers.read(STATS_CSV).notes == ("summary CSV: no timeline, no idle time",)


@pytest.mark.parametrize("edit, says", [
    (lambda cells: cells[:5], "data row 3 holds 5 of the header's 9 columns: the file is damaged there"),
    (lambda cells: cells[:2] + ["n/a"] + cells[3:], ("data row 3: its 'Instances' or 'Total Time (ns)' is no "
                                                     "number ('n/a',")),
])
def test_a_damaged_nsys_stats_csv_row_is_refused_naming_it(tmp_path, capsys, edit, says):
    """A row narrower than the header inside the file (not at its cut end) had been skipped unsaid, and an Instances
    cell that is no number counted 0 launches: each is one line naming the row, exit 2."""
    lines = STATS_CSV.read_text().splitlines(keepends=True)
    row = next(csv.reader([lines[3]]))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(edit(row))
    path = _stats_cut(tmp_path, "".join(lines[:3]) + out.getvalue() + "".join(lines[4:]))
    assert main(["report", str(path), "--store", str(tmp_path / "s.sqlite")]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
