"""Bounded work from any input, and nothing from a capture reaching the terminal raw (issue 14): nesting, gzip,
long strings, mangled-name bombs, cut names, FIFOs and other non-files, unreadable folders, thousands of skipped
files, impossible durations, content identity, control characters. The pathological inputs are those of
benchmarks/report_pathological_inputs.py (their before/after numbers: docs/reliability.md)."""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.report_pathological_inputs import mangled_bomb
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput
from nvprof_wrap.system import tempdirs
from nvprof_wrap.system.limits import MAX_JSON_DEPTH, MAX_NAME_CHARS, SKIPPED_SHOWN
from nvprof_wrap.text import demangle as demangle_mod
from tests._paths import DATA, FAKE_BIN, H200, PUBLIC, ROOT, RUNS, WILD, fixtures_absent

TC_NAME = "volta_h884gemm_64x64_ldg8_nn"  # cuBLAS fp16 HMMA (Volta): tensor cores


def kernel(name: str = TC_NAME, ts: object = 1, dur: object = 2, dev: int = 0) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"device": dev}}


def gz(path: Path, *pieces: tuple[bytes, int]) -> Path:
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        for data, repeat in pieces:
            f.writelines(comp.compress(data) for _ in range(repeat))
        f.write(comp.flush())
    return path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, out: str, err: str, *words: str) -> None:
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, (code, err)
    for w in words:
        assert w in err, err


# ------------------------------------------------------------------ JSON and gzip
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=12, alphabet=st.characters(
    codec="utf-8", categories=("L", "N", "P", "S", "Zs", "Cc"))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet="ab[{", max_size=4), inner,
                                                                 max_size=4), max_leaves=40)


def _depth(v: object) -> int:
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    return 0


def _through(data: bytes, **limits: int) -> bytes:
    from nvprof_wrap.readers._bounded import BoundedJSON

    stream, out = BoundedJSON(io.BytesIO(data), Path("x.json"), **limits), []
    while piece := stream.read(65536):
        out.append(piece)
    return b"".join(out)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(value=_JSON, chunk=st.integers(1, 24), max_depth=st.integers(1, 6), ascii_only=st.booleans())
def test_the_json_filter_passes_json_unchanged_and_refuses_exactly_past_the_depth(value, chunk, max_depth,
                                                                                   ascii_only):
    """Byte for byte what it was given, whatever the chunking (strings holding brackets, escapes, multi-byte
    characters cut by a chunk's end) — or, past max_depth levels and only then, one BadInput."""
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    if _depth(value) > max_depth:
        with pytest.raises(BadInput, match=f"nested deeper than {max_depth} levels"):
            _through(data, chunk=chunk, max_depth=max_depth)
    else:
        assert _through(data, chunk=chunk, max_depth=max_depth) == data


@settings(max_examples=300, deadline=None, derandomize=True)
@given(value=_JSON, chunk=st.integers(1, 24), limit=st.integers(12, 40))
def test_strings_past_the_limit_are_cut_to_valid_json_prefixes(value, chunk, limit):
    def prefix_of(a: object, b: object) -> None:
        if isinstance(a, str):
            assert isinstance(b, str) and a.startswith(b) and len(b.encode()) <= limit
        elif isinstance(a, list):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                prefix_of(x, y)
        elif isinstance(a, dict):
            for x, y in zip(a.values(), b.values()):
                prefix_of(x, y)
        else:
            assert a == b
    prefix_of(value, json.loads(_through(json.dumps(value).encode(), chunk=chunk, max_string=limit)))


def test_absurd_nesting_is_refused_in_one_line_before_it_costs(capsys, tmp_path):
    """345 bytes of gzip holding 300,000 nested arrays: 6.6 s and a MemoryError at 4 GB before (24 GB without a
    limit); now refused at level 101, in the first chunk."""
    path = gz(tmp_path / "nested.json.gz", (b'{"traceEvents": [', 1), (b"[" * 100_000, 3))
    assert path.stat().st_size < 400
    t = time.time()
    one_line_error(*run(capsys, "report", path), str(path), f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    assert time.time() - t < 5
    deep_ok = {"traceEvents": [kernel()], "args": json.loads("[" * (MAX_JSON_DEPTH - 2) + "]" * (MAX_JSON_DEPTH - 2))}
    (tmp_path / "ok.json").write_text(json.dumps(deep_ok))
    code, out, _ = run(capsys, "report", tmp_path / "ok.json", "--format", "json")
    assert code == 0 and json.loads(out)["launches"] == 1  # 100 levels exactly is still a trace


def report_traced(capsys, path) -> tuple[int, str, str, int]:
    """`report PATH --format json` in this process: (exit code, stdout, stderr, peak bytes Python allocated)."""
    tracemalloc.start()
    try:
        code, out, err = run(capsys, "report", path, "--format", "json")
        return code, out, err, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_gzip_is_streamed_never_read_whole(capsys, tmp_path):
    """A trace followed by 200 MB of spaces, its distributedInfo written last: found in the tail the events' pass
    kept, with Python's allocations staying far below the size of the text (the gzip was read whole before)."""
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 1, "ts": 0, "dur": 1}
    path = gz(tmp_path / "ws.json.gz", (json.dumps({"traceEvents": [launch, kernel()]})[:-1].encode(), 1),
              (b" " * (1 << 20), 200), (b', "distributedInfo": {"rank": 3}}', 1))
    code, out, err, peak = report_traced(capsys, path)
    assert code == 0, err
    d = json.loads(out)
    assert d["launches"] == 1 and d["tensor_cores_used"] is True
    assert [p["label"] for p in d["processes"]] == ["rank 3"]
    assert peak < 60 << 20, peak


def test_one_long_string_costs_linear_time_and_is_cut(capsys, tmp_path):
    """A 64 MiB kernel name (128 MiB took 102 s before: the parser buffered it quadratically): cut at 1 MiB in the
    stream, at MAX_NAME_CHARS as a name, and the capture's notes say both."""
    path = gz(tmp_path / "long.json.gz", (b'{"traceEvents": [{"cat": "kernel", "ts": 1, "dur": 2, "name": "', 1),
              (b"A" * (1 << 20), 64), (b'"}, ' + json.dumps(kernel()).encode() + b"]}", 1))
    t = time.time()
    code, out, err = run(capsys, "report", path, "--format", "json")
    assert code == 0, err
    assert time.time() - t < 20
    d = json.loads(out)
    names = sorted((k["name"] for k in d["kernels"]), key=len)
    assert names[0] == TC_NAME and names[1] == "A" * MAX_NAME_CHARS + "…"
    notes = d["sources"][0]["notes"]
    assert any("1 JSON string(s) longer than 1 MiB were cut" in n for n in notes)
    assert any(f"1 name(s) longer than {MAX_NAME_CHARS:,} characters were cut" in n for n in notes)
    # A string of escaped quotes, left open by every chunk's end: a regular expression that skipped whole strings
    # retried at each quote (quadratic: 124 KB took over 30 s in the fuzzer); now linear.
    (tmp_path / "quotes.json").write_bytes(b'{"traceEvents": [{"cat": "kernel", "ts": 1, "dur": 2, "name": "'
                                           + b'\\"' * (4 << 20) + b'"}]}')
    t = time.time()
    code, out, err = run(capsys, "report", tmp_path / "quotes.json", "--format", "json")
    assert code == 0 and json.loads(out)["kernels"][0]["name"].startswith('"' * 1000), err
    assert time.time() - t < 20


# ------------------------------------------------------------------ demangling
REAL = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"


def test_a_mangled_name_bomb_keeps_its_mangled_name_within_the_budget(capsys, tmp_path, monkeypatch):
    """243 bytes that demangle to 218 MB (3.3 s and 450 MB before; 364 s in the issue's report): the helper is
    stopped at its budget, the mangled name kept, the capture's notes say so; other names still demangle."""
    monkeypatch.setattr(demangle_mod, "over_budget", set())
    demangle_mod.demangle.cache_clear()
    bomb = mangled_bomb(24)
    real = REAL
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": [kernel(bomb), kernel(real)]}))
    t = time.time()
    code, out, err = run(capsys, "report", tmp_path / "t.json", "--format", "json")
    assert code == 0, err
    assert time.time() - t < 10
    d = json.loads(out)
    names = {k["name"] for k in d["kernels"]}
    assert bomb in names
    assert "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, " \
           "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)" in names
    assert any("1 kernel name(s) left mangled" in n for n in d["sources"][0]["notes"])


def test_the_demangling_helper_is_ended_and_reaped_before_the_process_exits(tmp_path):
    """The helper process (names with back-references demangle there, under a budget) ends with the command that
    started it: it had outlived every `report`, killed after it by its parent-death signal — a whole-process timer
    saw it. A hook registered before the helper's runs after it and finds the helper gone."""
    probe = ("import atexit, os, sys\n"
             "from nvprof_wrap.text import demangle as d\n"
             "pid = []\n"
             "def gone():\n"
             "    try:\n"
             "        os.kill(pid[0], 0)\n"
             "    except ProcessLookupError:\n"
             "        print('reaped')\n"
             "    else:\n"
             "        print('alive')\n"
             "atexit.register(gone)\n"
             f"print(d.demangle({REAL!r}))\n"
             "pid.append(d._helper().pid)\n"
             "assert pid[0] > 0\n")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=60,
                         cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.split()
    assert out[-1] == "reaped" and out[0].startswith("void")


def test_real_mangled_names_demangle_as_before(monkeypatch):
    """Every mangled name of the fixtures and samples, through the budgeted path, equals libstdc++'s answer."""
    import cxxfilt

    monkeypatch.setattr(demangle_mod, "over_budget", set())
    demangle_mod.demangle.cache_clear()
    names = set()
    for f in [*PUBLIC.glob("*.nvvp"), *PUBLIC.glob("*.sql"), *RUNS.rglob("*.sqlite")]:
        conn = sqlite3.connect(f"file:{f}?mode=ro&immutable=1", uri=True)
        for table, col in (("StringTable", "value"), ("kernel", "name")):
            try:
                names |= {v for (v,) in conn.execute(f"SELECT {col} FROM {table}") if str(v).startswith("_Z")}
            except sqlite3.OperationalError:
                pass
        conn.close()
    assert len(names) > 80
    assert sum(bool(demangle_mod._BACK_REFERENCE.search(n[2:])) for n in names) > 50  # the helper's share
    for n in names:
        assert demangle_mod.demangle(n) == cxxfilt.demangle(n, external_only=False), n
    assert not demangle_mod.over_budget


# ------------------------------------------------------------------ names, files, folders
def test_names_are_cut_at_the_documented_limit_in_sqlite_captures_and_in_classify(capsys, tmp_path):
    src = next((RUNS / "gemm_cupti").glob("cupti-*.sqlite"))
    cap = tmp_path / "cupti-1.sqlite"
    shutil.copy(src, cap)
    conn = sqlite3.connect(cap)
    conn.execute("UPDATE kernel SET name = ? WHERE rowid = (SELECT MIN(rowid) FROM kernel)", ("x" * 300_000,))
    conn.commit()
    conn.close()
    code, out, err = run(capsys, "report", cap, "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert max(len(k["name"]) for k in d["kernels"]) == MAX_NAME_CHARS + 1
    assert any("name(s) longer than 100,000 characters were cut" in n for n in d["sources"][0]["notes"])
    names = tmp_path / "names.txt"
    names.write_text("y" * 300_000 + "\n" + TC_NAME + "\n")
    code, out, _ = run(capsys, "classify", "--names-file", names, "--format", "json")
    assert code == 0 and [len(c["name"]) for c in json.loads(out)["kernels"]] == [MAX_NAME_CHARS + 1, len(TC_NAME)]


def _report_subprocess(*args: object, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    """In a child, under a timeout: a hang is a failure here, not a stuck test run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **kw.pop("env", {})}
    return subprocess.run([sys.executable, "-m", "nvprof_wrap", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False, **kw)


def test_fifos_sockets_and_devices_are_skipped_not_opened(tmp_path):
    """A FIFO in a capture folder hung `report DIR` forever (opening it waits for a writer)."""
    folder = tmp_path / "caps"
    folder.mkdir()
    (folder / "trace.json").write_text(json.dumps({"traceEvents": [kernel()]}))
    os.mkfifo(folder / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "sock"))
    (folder / "zero").symlink_to("/dev/zero")
    (folder / "dangling").symlink_to(folder / "missing")
    try:
        proc = _report_subprocess("report", folder, "--format", "json", timeout=30)
        assert proc.returncode == 0, proc.stderr
        skipped = {Path(s["path"]).name: s["why"] for s in json.loads(proc.stdout)["skipped"]}
        assert skipped == {"pipe": "not a regular file (a FIFO)", "sock": "not a regular file (a socket)",
                           "zero": "not a regular file (a device)", "dangling": "broken link"}
        proc = _report_subprocess("report", folder / "pipe", timeout=30)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "not a regular file (a FIFO)" in proc.stderr
    finally:
        sock.close()


def unprivileged(argv: list[str]) -> list[str]:
    """File permissions bind root only without the capabilities that bypass them (capsh drops them)."""
    if os.geteuid() != 0:
        return argv
    capsh = shutil.which("capsh")
    if capsh is None:
        pytest.skip("running as root without capsh: permissions cannot be enforced")
    import shlex

    return [capsh, "--drop=cap_dac_override,cap_dac_read_search,cap_fowner", "--", "-c", shlex.join(argv)]


def test_unreadable_subfolders_are_reported_and_an_unreadable_folder_is_one_line(tmp_path):
    folder = tmp_path / "caps"
    (folder / "locked").mkdir(parents=True)
    (folder / "trace.json").write_text(json.dumps({"traceEvents": [kernel()]}))
    (folder / "locked" / "trace2.json").write_text(json.dumps({"traceEvents": [kernel()]}))
    (folder / "locked").chmod(0)
    try:
        cli = [sys.executable, "-m", "nvprof_wrap", "report"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(unprivileged([*cli, str(folder), "--format", "json"]), capture_output=True, text=True,
                              env=env, timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr
        d = json.loads(proc.stdout)
        assert d["launches"] == 1
        assert [(Path(s["path"]).name, s["why"]) for s in d["skipped"]] == [
            ("locked", "folder not read (Permission denied)")]
        proc = subprocess.run(unprivileged([*cli, str(folder / "locked")]), capture_output=True, text=True, env=env,
                              timeout=60, check=False)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert "cannot read the folder (Permission denied)" in proc.stderr
    finally:
        (folder / "locked").chmod(0o755)


def test_five_thousand_skipped_files_are_one_summary_line(capsys, tmp_path):
    (tmp_path / "trace.json").write_text(json.dumps({"traceEvents": [kernel()]}))
    for i in range(5000):
        (tmp_path / f"note{i:04d}.txt").write_text("not a capture\n")
    (tmp_path / "zz-empty.json").write_bytes(b"")
    code, out, _ = run(capsys, "report", tmp_path, "--width", "200")
    assert code == 0
    assert sum(line.startswith("skipped ") for line in out.splitlines()) == SKIPPED_SHOWN
    summary = [line for line in out.splitlines() if "files skipped in all" in line]
    assert len(summary) == 1 and summary[0].endswith("; 1 empty file")
    assert summary[0].startswith("5,001 files skipped in all; besides the above: 4,995 not a profiler capture")
    code, out, _ = run(capsys, "report", tmp_path, "--format", "markdown")
    assert out.count("note0") == SKIPPED_SHOWN and "5,001 files skipped in all" in out
    code, out, _ = run(capsys, "report", tmp_path, "--format", "json")
    assert len(json.loads(out)["skipped"]) == 5001  # scripts still get every entry


# ------------------------------------------------------------------ durations
def test_negative_and_absurd_durations_are_counted_without_their_time(capsys, tmp_path):
    """An Nsight Systems capture with a kernel that ends before it starts and one that lasts 30 days: both still
    count as launches, neither adds or subtracts time (-1.6 ms of kernel time was reported before)."""
    cap = tmp_path / "nsys.sqlite"
    shutil.copy(H200 / "nsys_two_child_processes.sqlite", cap)
    conn = sqlite3.connect(cap)
    k = "CUPTI_ACTIVITY_KIND_KERNEL"
    total, n = conn.execute(f'SELECT SUM("end" - start), COUNT(*) FROM {k}').fetchone()
    a, b = (r[0] for r in conn.execute(f"SELECT rowid FROM {k} ORDER BY rowid LIMIT 2"))
    lost = conn.execute(f'SELECT SUM("end" - start) FROM {k} WHERE rowid IN (?, ?)', (a, b)).fetchone()[0]
    conn.execute(f'UPDATE {k} SET "end" = start - 1600000 WHERE rowid = ?', (a,))
    conn.execute(f'UPDATE {k} SET "end" = start + 30 * 86400 * 1000000000 WHERE rowid = ?', (b,))
    conn.commit()
    conn.close()
    code, out, err = run(capsys, "report", cap, "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["launches"] == n and d["kernel_time_ns"] == total - lost
    assert "2 kernel record(s) without a usable time (missing, starting at or before the clock's zero (CUPTI's " \
           "'not collected'), negative, or longer than 7 days): counted, without their time" in d["sources"][0]["notes"]
    events = [kernel(dur=-1600), kernel(dur=3), kernel(dur=1e13), kernel(dur=None), kernel(ts=None, dur=5)]
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": events}))
    code, out, err = run(capsys, "report", tmp_path / "t.json", "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["launches"] == 5 and d["kernel_time_ns"] == 8000
    assert any(n.startswith("3 kernel record(s) without a usable time") for n in d["sources"][0]["notes"])


@pytest.mark.parametrize("native", ["on", "off"])
def test_kernels_starting_at_the_clocks_zero_are_counted_without_their_time(capsys, tmp_path, monkeypatch, native):
    """CUPTI writes 0 for the times it could not collect; moved to Nsight Systems' session clock such a start is
    negative. A kernel of the H200 capture edited to start at 0 (its end kept), one at -3 days and one with both
    times 0: the report is the one of the capture without those three rows, but for their launches and the note.
    Read as times, the first one ran 4.8 s: the tensor-core share fell from 31.7% to <0.1%, a "host-bound" hint
    appeared, and the time buckets stretched back to 0 (52 of 200 ms, not 57 of 100 ms)."""
    monkeypatch.setenv("NVPROF_WRAP_NATIVE", native)
    k = "CUPTI_ACTIVITY_KIND_KERNEL"
    damaged, cut = tmp_path / "damaged.sqlite", tmp_path / "cut.sqlite"
    for cap in (damaged, cut):
        shutil.copy(H200 / "nsys_torch_ops.sqlite", cap)
    with contextlib.closing(sqlite3.connect(damaged)) as conn:
        rows = [r for (r,) in conn.execute(f'SELECT rowid FROM {k} ORDER BY "end" - start DESC LIMIT 3')]
        conn.execute(f"UPDATE {k} SET start = 0 WHERE rowid = ?", (rows[0],))
        conn.execute(f"UPDATE {k} SET start = -3 * 86400 * 1000000000 WHERE rowid = ?", (rows[1],))
        conn.execute(f'UPDATE {k} SET start = 0, "end" = 0 WHERE rowid = ?', (rows[2],))
        conn.commit()
    with contextlib.closing(sqlite3.connect(cut)) as conn:
        conn.execute(f"DELETE FROM {k} WHERE rowid IN ({', '.join(map(str, rows))})")
        conn.commit()
    (code, out, err), (code2, out2, _) = (run(capsys, "report", cap, "--format", "json") for cap in (damaged, cut))
    assert code == code2 == 0, err
    got, want = json.loads(out), json.loads(out2)
    assert got["launches"] == want["launches"] + 3
    for key in ("kernel_time_ns", "tensor_core_time_fraction", "series_info", "time_budget", "hints"):
        assert got[key] == want[key], key
    assert [{**r, "launches": 0} for r in got["series"]] == [{**r, "launches": 0} for r in want["series"]]
    assert "3 kernel record(s) without a usable time (missing, starting at or before the clock's zero (CUPTI's " \
           "'not collected'), negative, or longer than 7 days): counted, without their time" in \
           got["sources"][0]["notes"]


def test_kineto_kernels_at_ts_0_are_counted_without_their_time(capsys, tmp_path):
    """kineto#109: thousands of `"ts": 0, "dur": 0` kernels in one torch.profiler trace (CUPTI could not collect
    their times). Three kernels of a real vLLM trace so edited: the report is the one of the trace without them, but
    for their launches and the note — before, unsaid, and the time buckets ran from the clock's zero (31 buckets of
    20,000 s, not 43 of 2 ms)."""
    src = json.loads(gzip.decompress((WILD / "kineto-vllm-b200.json.gz").read_bytes()))
    kernels = [e for e in src["traceEvents"] if isinstance(e, dict) and e.get("cat") == "kernel"]
    for e in kernels[:3]:
        e["ts"] = e["dur"] = 0
    (tmp_path / "zero.json").write_text(json.dumps(src))
    src["traceEvents"] = [e for e in src["traceEvents"] if not (isinstance(e, dict) and e.get("cat") == "kernel"
                                                                and e.get("ts") == 0)]
    (tmp_path / "cut.json").write_text(json.dumps(src))
    (code, out, err), (code2, out2, _) = (run(capsys, "report", tmp_path / f, "--format", "json")
                                          for f in ("zero.json", "cut.json"))
    assert code == code2 == 0, err
    got, want = json.loads(out), json.loads(out2)
    assert got["launches"] == want["launches"] + 3
    for key in ("kernel_time_ns", "tensor_core_time_fraction", "series_info", "time_budget"):
        assert got[key] == want[key], key
    assert got["series_info"]["bucket_s"] == 0.002
    assert [{**r, "launches": 0} for r in got["series"]] == [{**r, "launches": 0} for r in want["series"]]
    assert got["sources"][0]["notes"][0].startswith("3 kernel record(s) without a usable time (missing, starting "
                                                    "at or before the clock's zero (CUPTI's 'not collected')")


def test_null_copy_and_set_times_in_a_cupti_capture_are_counted_not_a_traceback(capsys, tmp_path):
    src = RUNS / "ddp_cupti" / "cupti-vm-5269.sqlite"  # 347 copies, 98 sets
    cap = tmp_path / src.name
    shutil.copy(src, cap)
    conn = sqlite3.connect(cap)
    copies = conn.execute("SELECT COUNT(*) FROM memcpy").fetchone()[0]
    conn.execute('UPDATE memcpy SET start = NULL, "end" = NULL')
    conn.execute('UPDATE memset SET "end" = NULL')
    conn.commit()
    conn.close()
    code, out, err = run(capsys, "report", cap, "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert copies and sum(v["count"] for v in d["memcpy"].values()) == copies
    assert all(v["total_ns"] == 0 for v in d["memcpy"].values())
    notes = d["sources"][0]["notes"]
    assert any(n.startswith(f"{copies:,} memcpy record(s) without a usable time") for n in notes)
    assert any(n.startswith("98 memset record(s) without a usable time") for n in notes)


# ------------------------------------------------------------------ identity
def test_files_alike_in_size_head_and_tail_are_two_captures(capsys, tmp_path):
    """The identity was size + the first and last MiB: a second trace differing only in its middle was dropped
    as already read. Now the whole file is hashed."""
    pad = {"ph": "i", "cat": "marker", "name": "p" * 1000}
    def trace(name: str) -> str:
        return json.dumps({"traceEvents": [pad] * 2500 + [kernel(name)] + [pad] * 2500})
    a, b = trace("ampere_sgemm_32x32_sliced1x4_tn"), trace("ampere_sgemm_32x32_sliced1x4_nn")
    assert len(a) == len(b) and a[:1 << 20] == b[:1 << 20] and a[-(1 << 20):] == b[-(1 << 20):]
    (tmp_path / "a.json").write_text(a)
    (tmp_path / "b.json").write_text(b)
    code, out, _ = run(capsys, "report", tmp_path, "--format", "json")
    assert code == 0 and len(json.loads(out)["sources"]) == 2 and json.loads(out)["distinct_kernels"] == 2


# ------------------------------------------------------------------ control characters
HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\x9b31m\u202ename\nnext\tx"


def test_control_characters_in_names_never_reach_the_terminal(capsys, tmp_path):
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": [kernel(HOSTILE), kernel()]}))
    for fmt in ("table", "markdown", "csv", "json"):
        code, out, _ = run(capsys, "report", tmp_path / "t.json", "--format", fmt, "--wide", "--width", "300")
        assert code == 0
        assert not any(c in out for c in "\x1b\x07\x9b\u202e"), fmt
        if fmt in ("table", "csv"):
            assert "evil\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202ename\\nnext\\tx" in out, fmt
        elif fmt == "markdown":  # the same escapes, their backslashes and brackets escaped for Markdown
            assert "evil\\\\x1b\\]0;pwned\\\\x07\\\\x1b\\[2J\\\\x9b31m\\\\u202ename\\\\nnext\\\\tx" in out
    assert HOSTILE in {k["name"] for k in json.loads(out)["kernels"]}  # JSON keeps the exact text, escaped


def test_an_error_naming_a_file_with_a_newline_stays_one_line(capsys, tmp_path):
    bad = tmp_path / "evil\nname\x1b[2J.json"
    bad.write_text("not json at all")
    code, out, err = run(capsys, "report", bad)
    one_line_error(code, out, err, "evil\\nname\\x1b[2J.json")


# ------------------------------------------------------------------ helpers end with their parent
def test_helper_processes_die_with_the_reading_process(tmp_path):
    """A killed `report` left forked workers behind. A process with a forked worker, the demangler's helper and
    a pool worker, killed with SIGKILL: every one of them ends."""
    script = f"""
import os, sys, time, multiprocessing
from concurrent.futures import ProcessPoolExecutor
sys.path.insert(0, {str(ROOT)!r})
from nvprof_wrap.system import fork as _fork
from nvprof_wrap.text import demangle
_fork.cores = lambda: 2
demangle.demangle("_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_15gpu_kernel_implIS1_EEvS2_EUliE_EEviT1_")
worker = _fork.Forked(time.sleep, 300)
pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"), initializer=_fork.pool_worker,
                           initargs=(os.getpid(),))
pool.submit(time.sleep, 300)
time.sleep(1)
print("ready", flush=True)
time.sleep(300)
"""
    import psutil

    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"
    children = psutil.Process(p.pid).children(recursive=True)
    assert len(children) >= 3, children  # the forked worker, the demangler, the pool worker
    p.kill()
    p.wait()
    deadline = time.time() + 10
    while time.time() < deadline and any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children):
        time.sleep(0.1)
    alive = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert not alive, alive


def test_nsys_rep_exports_in_a_read_only_folder_leave_no_temporary_folder(tmp_path):
    folder, tmp = tmp_path / "ro", tmp_path / "tmp"
    folder.mkdir()
    tmp.mkdir()
    rep = folder / "nsys.nsys-rep"
    rep.write_bytes(b"NSYS-FAKE\x00" + json.dumps({"pids": [], "trace": "cuda"}).encode())
    folder.chmod(0o555)
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp),
               "NVPROF_WRAP_NSYS": str(FAKE_BIN / "nsys")}
        proc = subprocess.run(unprivileged([sys.executable, "-m", "nvprof_wrap", "report", str(rep), "--format",
                                            "json"]), capture_output=True, text=True, env=env, timeout=60,
                              check=False)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["tensor_cores_used"] is True
        assert list(tmp.iterdir()) == [] and sorted(p.name for p in folder.iterdir()) == ["nsys.nsys-rep"]
    finally:
        folder.chmod(0o755)


def _per_launch_inputs(tmp_path: Path) -> dict[str, tuple[Path, int]]:
    """(file, the kernel time that must be reported) per reader that adds up launches in Python: one good launch
    of kernel k (5 µs) and two of the same kernel, one that ends before it starts, one that lasts 11 days."""
    from nvprof_wrap.readers import _xplane_schema
    from tests import xspace_build as xb

    out: dict[str, tuple[Path, int]] = {}
    meta = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "Stream #13(Compute)"}}]
    tf = [{"ph": "X", "name": TC_NAME, "pid": 1, "tid": 7, "ts": ts, "dur": dur, "args": {}}
          for ts, dur in ((1, 5), (10, -1.6), (20, 1e12))]
    (tmp_path / "tf.trace.json").write_text(json.dumps({"traceEvents": meta + tf}))
    out["tf-trace-json"] = (tmp_path / "tf.trace.json", 5000)
    planes = xb.h200_jax_step()
    before = sum(e.dur_ns for e in planes[1].lines[0].events)
    planes[1].lines[0].events += [xb.Ev("fusion_12", 200_000, -1_600), xb.Ev("fusion_12", 300_000, 10**15)]
    (tmp_path / "x.xplane.pb").write_bytes(xb.xspace(planes, _xplane_schema.own()))
    out["xplane"] = (tmp_path / "x.xplane.pb", before)
    (tmp_path / "trace.csv").write_text(
        '"Start","Duration","Grid X","Device","Context","Stream","Name"\nms,us,,,,,\n'
        + "".join(f'{i}.0,{d},1,"Tesla V100 (0)",1,7,"{TC_NAME} [{i}]"\n'
                  for i, d in enumerate(("5.0", "-1.6", "1e12"))))
    out["nvprof-csv-trace"] = (tmp_path / "trace.csv", 5000)
    (tmp_path / "pyprof.csv").write_text(
        '"Kernel","Module","Op","Direction","Sil(ns)","TC","FLOPs","Bytes","Device","Stream","Block","Grid"\n'
        + "".join(f'"{TC_NAME}","m","op","fprop","{d}","-","0","0","0","7","1,1,1","1,1,1"\n'
                  for d in ("5000", "-1600", "1e18")))
    out["pyprof-csv"] = (tmp_path / "pyprof.csv", 5000)
    (tmp_path / "ncu.csv").write_text(
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
        '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
        + "".join(f'"{i}","7","python","h","{TC_NAME}","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line '
                  f'profiler metrics","gpu__time_duration.sum","ns","{d}"\n'
                  for i, d in enumerate(("5000", "-1600", "1e18"))))
    out["ncu-csv"] = (tmp_path / "ncu.csv", 5000)
    log = (DATA / "console" / "xplacer_nvprof_gpu_trace_bfs.log").read_text().splitlines(keepends=True)
    plain = tmp_path / "plain.log"
    plain.write_text("".join(log))
    for i, (old, new) in ((38, ("5.0890us", "-1.600us")), (42, ("4.8010us", "  9.9e9s"))):  # two Kernel(...) lines
        assert log[i].startswith("501.") and old in log[i]
        log[i] = log[i].replace(old, new)
    (tmp_path / "console.log").write_text("".join(log))
    out["console-nvprof-gpu-trace"] = (tmp_path / "console.log", -(5089 + 4801))  # relative to plain.log
    return out


@pytest.mark.parametrize("fmt", ["tf-trace-json", "xplane", "nvprof-csv-trace", "pyprof-csv", "ncu-csv",
                                 "console-nvprof-gpu-trace"])
def test_negative_and_absurd_durations_in_readers_that_add_up_in_python(fmt, capsys, tmp_path):
    """The readers that sum launches themselves (TensorBoard trace JSON and XSpace came after issue 14; the
    per-launch CSV and console formats passed times through) took an 11-day launch as kernel time and let a
    negative one subtract from its kernel's. Now each counts both, without their time, and says so."""
    from tests import xspace_build as xb

    path, expected = _per_launch_inputs(tmp_path)[fmt]
    code, out, err = run(capsys, "report", path, "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    if fmt == "console-nvprof-gpu-trace":
        code, plain, err = run(capsys, "report", tmp_path / "plain.log", "--format", "json")
        assert code == 0, err
        expected += json.loads(plain)["kernel_time_ns"]
        assert d["launches"] == json.loads(plain)["launches"]
    else:
        assert d["launches"] == 3 + (len(xb.h200_jax_step()[1].lines[0].events) - 1 if fmt == "xplane" else 0)
    assert d["kernel_time_ns"] == expected
    assert any(n.startswith("2 kernel record(s) without a usable time") for n in d["sources"][0]["notes"]), \
        d["sources"][0]["notes"]


@pytest.mark.parametrize("log", ["xplacer_nvprof_summary_bfs.log", "xplacer_ncu_bfs_graph4096.log",
                                 "xplacer_nvprof_gpu_trace_bfs.log"])
def test_a_programs_endless_line_in_a_console_log_is_not_held(log, capsys, tmp_path, monkeypatch):
    """Console logs and ncu CSV sit among the program's own output, which can hold a line of any length: it was
    read whole (a 2.7 GB line: MemoryError under a 2 GB limit, a traceback). It is cut at the line limit, the
    rest read in pieces and dropped; the profiler's lines read as before."""
    from nvprof_wrap.readers import _csv

    src = (DATA / "console" / log).read_text().splitlines(keepends=True)
    code, plain, err = run(capsys, "report", DATA / "console" / log, "--format", "json")
    assert code == 0, err
    monkeypatch.setattr(_csv, "MAX_LINE_BYTES", 64 << 10)
    long = tmp_path / log
    with open(long, "w") as f:
        f.writelines(src[:-3])
        f.write("x" * (32 << 20) + "\n")  # 32 MiB in one line, among the profiler's last lines
        f.writelines(src[-3:])
    code, out, err, peak = report_traced(capsys, long)
    assert code == 0, err
    assert peak < 16 << 20, f"{peak:,} bytes traced"
    keep = ("launches", "kernel_time_ns")
    assert {k: json.loads(out)[k] for k in keep} == {k: json.loads(plain)[k] for k in keep}


def _terminate_while_reading(target: Path, tmp: Path, signum: int, folders: int,
                             nohup: bool = False) -> subprocess.CompletedProcess:
    """`report target` with its own TMPDIR, sent ``signum`` once ``folders`` temporary folders exist in it (under
    ``nohup``: SIGHUP ignored from the start, as `nohup nvprof-wrap report ...` starts it)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), "NVPROF_WRAP_HISTORY": "off"}
    # an ignored signal stays ignored across exec, any other starts at its default: set ours for the child's start
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN if nohup else signal.SIG_DFL)
    try:
        p = subprocess.Popen([sys.executable, "-m", "nvprof_wrap", "report", str(target), "--format", "json"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGHUP, before)
    deadline = time.time() + 60
    seen = 0  # what the wait saw: a quick read may remove its folder again before a second look
    while time.time() < deadline and p.poll() is None:
        # our folders only: Python's first tempfile.gettempdir() writes and removes a probe file in TMPDIR at
        # start-up, before `report` handles SIGTERM; a signal sent on seeing it ended the process by the signal (-15)
        seen = max(seen, len([p for p in tmp.iterdir() if p.name.startswith(tempdirs.PREFIX) and p.is_dir()]))
        if seen >= folders:
            break
        time.sleep(0.005)
    if seen < folders:  # say what the child was doing: it ended, or it never got that far
        alive = p.poll() is None
        if alive:
            p.kill()
        raise AssertionError(f"no temporary folder after {time.time() - deadline + 60:.1f} s; the child "
                             f"{'was still running (killed)' if alive else f'ended with {p.returncode}'}; its "
                             f"stderr: {p.communicate(timeout=30)[1][-2000:]!r}")
    p.send_signal(signum)
    _, err = p.communicate(timeout=30)
    return subprocess.CompletedProcess(p.args, p.returncode, "", err)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_read_removes_its_temporary_folder(signum, tmp_path):
    """SIGTERM (or a closed terminal's SIGHUP) killed `report` on the spot: the gzipped capture it was unpacking
    stayed in /tmp. Now it ends like Ctrl-C, through its `finally` blocks: the folder goes, one line, 128+N."""
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(tmp_path / "big.sqlite.gz", "wb") as f:  # 1 GiB unpacked (a few MB here), read by nothing else
        f.write(comp.compress(b"SQLite format 3\x00" + bytes(84)))
        f.writelines(comp.compress(bytes(1 << 20)) for _ in range(1024))
        f.write(comp.flush())
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # the child starts with SIGHUP handled by default, as from a terminal: a suite run under nohup passes SIG_IGN
    # down, which `report` keeps (the next test) — that was this test's failure in background CI runs
    proc = _terminate_while_reading(tmp_path / "big.sqlite.gz", tmp, signum, 1)
    assert proc.returncode == 128 + signum, proc.stderr
    assert proc.stderr == f"nvprof-wrap: terminated ({signal.Signals(signum).name})\n"
    assert list(tmp.iterdir()) == []


def test_under_nohup_a_hangup_does_not_end_a_read(tmp_path):
    """`nohup nvprof-wrap report ...`: SIGHUP was set to be ignored before we started; we keep it so — the read goes
    on to its own end (here: the capture is no database, one line, exit 2) instead of ending on the hang-up."""
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(tmp_path / "big.sqlite.gz", "wb") as f:  # 1 GiB unpacked, as above: the hang-up comes mid-read
        f.write(comp.compress(b"SQLite format 3\x00" + bytes(84)))
        f.writelines(comp.compress(bytes(1 << 20)) for _ in range(1024))
        f.write(comp.flush())
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _terminate_while_reading(tmp_path / "big.sqlite.gz", tmp, signal.SIGHUP, 1, nohup=True)
    assert proc.returncode == 2, proc.stderr
    assert "terminated" not in proc.stderr and "big.sqlite.gz" in proc.stderr
    assert list(tmp.iterdir()) == []


@pytest.mark.slow
def test_a_terminated_parallel_read_stops_its_workers_and_removes_their_folders(tmp_path):
    """Two big traces read in parallel (one pool worker each) when `report` gets SIGTERM: the workers stop at once
    (leaving the pool's `with` would have waited for every read), their temporary folders go with them."""
    import psutil

    # benchmarks.generate takes real kernel names from the shared fixtures, else from the repository's captures: a
    # fixtures folder that counts as absent here (an empty one, say) is hidden from it too
    env = {**os.environ, **({"NVPROF_WRAP_FIXTURES": str(tmp_path / "no-fixtures")} if fixtures_absent() else {})}
    for name, seed in (("a.json", "1"), ("b.json", "2")):
        subprocess.run([sys.executable, "-m", "benchmarks.generate", "kineto", "150000", str(tmp_path / name),
                        "--seed", seed], check=True, cwd=ROOT, capture_output=True, env=env)
    folder = tmp_path / "traces"
    folder.mkdir()
    for name in ("a.json", "b.json"):
        (tmp_path / name).rename(folder / name)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    started = time.time()
    proc = _terminate_while_reading(folder, tmp, signal.SIGTERM, 2)
    assert proc.returncode == 143, proc.stderr
    assert time.time() - started < 30
    deadline = time.time() + 10
    while time.time() < deadline and list(tmp.iterdir()):
        time.sleep(0.05)
    assert list(tmp.iterdir()) == []
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(folder) in " ".join(p.info["cmdline"] or [])]
