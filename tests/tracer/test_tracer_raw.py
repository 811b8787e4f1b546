"""The tracer's raw path (nvprof_wrap/tracer/raw.py, layouts.py, sink.py) on buffers in CUPTI's real layouts.

Ground truth, strongest first: the cupti_activity.h headers found on this machine (field offsets and struct
sizes through gcc's offsetof), the libcupti found here (the record size it steps per kind, asked without a GPU),
and the ctypes mirrors of the headers the fake writes with (tests/fakes/cupti/records.py). Each check against
a header or a library is skipped where none is installed; the mirrors are always checked against layouts.py.
"""
from __future__ import annotations

import ctypes
import glob
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvprof_wrap.tracer import layouts as L
from nvprof_wrap.tracer import raw
from tests._paths import FAKES
from tests.tracer.test_tracer import WORK, captures, only_capture, read, run_job, script


def _fake_modules() -> tuple:
    """The fake's rawlib and records, imported without leaving the fake importable as `cupti` in this process
    (in-process tests elsewhere look for a real cupti-python)."""
    sys.path.insert(0, str(FAKES))
    try:
        from cupti import rawlib, records

        return rawlib, records
    finally:
        sys.path.remove(str(FAKES))
        for name in [m for m in list(sys.modules) if m == "cupti" or m.startswith("cupti.")]:
            if str(getattr(sys.modules[name], "__file__", "")).startswith(str(FAKES)):
                del sys.modules[name]


rawlib, records = _fake_modules()

HEADERS = sorted({os.path.dirname(p) for p in glob.glob("/usr/local/cuda*/include/cupti_activity.h")
                  + glob.glob(f"{sys.prefix}/lib/python3*/site-packages/nvidia/*/include/cupti_activity.h")})
LIBS = sorted({os.path.realpath(p) for p in glob.glob("/usr/local/cuda*/lib*/libcupti.so.*")
               + glob.glob(f"{sys.prefix}/lib/python3*/site-packages/nvidia/*/lib/libcupti.so.*")})
# C field names of the columns layouts.py reads, per struct family
C_NAMES = {"start": "start", "end": "end", "device_id": "deviceId", "context_id": "contextId",
           "stream_id": "streamId", "correlation_id": "correlationId", "name": "name", "grid_x": "gridX",
           "grid_y": "gridY", "grid_z": "gridZ", "block_x": "blockX", "block_y": "blockY", "block_z": "blockZ",
           "registers_per_thread": "registersPerThread", "static_shared": "staticSharedMemory",
           "dynamic_shared": "dynamicSharedMemory", "copy_kind": "copyKind", "src_kind": "srcKind",
           "dst_kind": "dstKind", "bytes": "bytes", "value": "value", "tid": "threadId", "cbid": "cbid",
           "flags": "flags", "timestamp": "timestamp", "id": "id", "object_kind": "objectKind",
           "domain": "domain", "cc_major": "computeCapabilityMajor", "cc_minor": "computeCapabilityMinor",
           "sm_count": "numMultiprocessors", "uuid": "uuid"}
FAMILY = {"Kernel": L.KERNEL_LAYOUT, "Memcpy": L.MEMCPY_LAYOUT, "MemcpyPtoP": L.MEMCPY2_LAYOUT,
          "Memset": L.MEMSET_LAYOUT, "API": L.API_LAYOUT, "Marker": L.MARKER_LAYOUT, "Device": L.DEVICE_LAYOUT}


def layout_of(struct: str) -> L.Layout:
    return FAMILY[struct.rstrip("0123456789")]


def c_field(layout: L.Layout, column: str) -> tuple[str, int]:
    """(C member, extra offset inside it): the marker's thread id is objectId.pt.threadId, 4 bytes in."""
    if layout is L.MARKER_LAYOUT and column == "tid":
        return "objectId", 4
    if layout is L.DEVICE_LAYOUT and column == "device_id":
        return "id", 0
    return C_NAMES[column], 0


# ------------------------------------------------------------------------------- layouts vs the truth

@pytest.mark.parametrize("struct", sorted(records.STRUCTS))
def test_the_layout_table_matches_the_ctypes_mirror_of_each_struct(struct: str) -> None:
    cls, layout = records.STRUCTS[struct], layout_of(struct)
    assert layout.sizes[ctypes.sizeof(cls)] == struct
    for field in layout.fields:
        member, extra = c_field(layout, field.column)
        assert getattr(cls, member).offset + extra == field.offset, (struct, field)
        if not field.dtype.startswith("V"):  # integers are read as array elements: naturally aligned
            assert field.offset % np.dtype(field.dtype).itemsize == 0, (struct, field)


def _offsets_from_header(include: str, structs: list[str]) -> dict[str, int]:
    """'Kernel10.start' -> offset, 'Kernel10' -> size, compiled from the real header with gcc."""
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <cuda.h>", "#include <cupti_activity.h>",
             "int main(void) {"]
    for struct in structs:
        cls, t = records.STRUCTS[struct], f"CUpti_Activity{struct}"
        lines.append(f'printf("{struct} %zu\\n", sizeof({t}));')
        lines += [f'printf("{struct}.{name} %zu\\n", offsetof({t}, {name}));'
                  for name, *_ in cls._fields_ if not name.startswith("_")]
    return {k: int(v) for k, v in (line.split() for line in _compile_and_run(include, lines + ["return 0; }"]))}


def _compile_and_run(include: str, lines: list[str]) -> list[str]:
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"nvw-offsets-{os.getpid()}"
    tmp.mkdir(exist_ok=True)
    (tmp / "o.c").write_text("\n".join(lines))
    cuda_h = next((d for d in [include, *HEADERS, *glob.glob("/usr/local/cuda*/include")]
                   if os.path.exists(f"{d}/cuda.h")), include)
    subprocess.run(["gcc", "-w", f"-I{include}", f"-I{cuda_h}", str(tmp / "o.c"), "-o", str(tmp / "o")],
                   check=True, capture_output=True)
    out = subprocess.run([str(tmp / "o")], check=True, capture_output=True, text=True).stdout.splitlines()
    shutil.rmtree(tmp, ignore_errors=True)
    return out


@pytest.mark.skipif(not HEADERS or shutil.which("gcc") is None, reason="no cupti_activity.h or gcc here")
@pytest.mark.parametrize("include", HEADERS)
def test_the_ctypes_mirrors_match_the_header_found_here(include: str) -> None:
    text = Path(include, "cupti_activity.h").read_text() + Path(include, "cupti_activity_deprecated.h").read_text()
    structs = [s for s in records.STRUCTS if f"}} CUpti_Activity{s};" in text]
    truth = _offsets_from_header(include, structs)
    assert structs and truth
    for struct in structs:
        cls = records.STRUCTS[struct]
        assert truth[struct] == ctypes.sizeof(cls), struct
        for name, *_ in cls._fields_:
            if not name.startswith("_"):
                assert truth[f"{struct}.{name}"] == getattr(cls, name).offset, (include, struct, name)


@pytest.mark.skipif(not LIBS, reason="no libcupti here")
@pytest.mark.parametrize("path", LIBS)
def test_the_libcupti_found_here_steps_records_of_sizes_the_table_knows(path: str) -> None:
    lib = ctypes.CDLL(path)
    fake_bindings = SimpleNamespace()
    try:
        lib = raw.open_library(fake_bindings, path)
        sizes = raw.record_sizes(lib, sorted(L.LAYOUTS))
    except raw.RawUnavailable as e:
        if "status 999" in str(e):  # libcupti 13.4 wants a driver even for this
            pytest.skip(f"{path}: {e}")
        raise
    assert all(L.struct_version(kind, size) for kind, size in sizes.items())
    # and it walks a buffer the fake wrote in that version's layouts exactly as our walk does
    version = {28: "12.9", 130001: "13.0", 130401: "13.4"}.get(raw.api_version(lib))
    if version is None:
        pytest.skip(f"no fake layouts for CUPTI API {raw.api_version(lib)}")
    buf, valid = build(version, mixed_records(50))
    address = ctypes.addressof(buf)
    ours = raw.walk(np.frombuffer(buf, np.uint8), valid, sizes)
    theirs = raw.walk_with_library(lib, address, valid)
    assert sorted(o for v in ours.values() for o in v.tolist()) == [o for o, _ in theirs]


# ----------------------------------------------------------------------- the parser, kind by kind

def kernel_record(i: int, name: str | None = "_Z4gemmv", **over: object) -> SimpleNamespace:
    f = {"kind": 10, "start": 1000 + i, "end": 2000 + i, "device_id": i % 2, "context_id": 3, "stream_id": 7 + i,
         "correlation_id": 100 + i, "name": name, "grid_x": 4, "grid_y": 5, "grid_z": 6, "block_x": 128,
         "block_y": 2, "block_z": 1, "registers_per_thread": 40, "static_shared_memory": 1024,
         "dynamic_shared_memory": 4096}
    return SimpleNamespace(**(f | over))


def api_record(i: int, kind: int = 5) -> SimpleNamespace:
    return SimpleNamespace(kind=kind, cbid=211, start=900 + i, end=950 + i, process_id=1, thread_id=4242,
                           correlation_id=100 + i, return_value=0)


def mixed_records(n: int) -> list[SimpleNamespace]:
    out = [SimpleNamespace(kind=8, id=0, name="NVIDIA H200", compute_capability_major=9,
                           compute_capability_minor=0, num_multiprocessors=132,
                           uuid=SimpleNamespace(bytes=bytes(range(16))))]
    for i in range(n):
        out += [api_record(i), kernel_record(i, f"_Z1kILi{i % 3}EEvv")]
    out += [SimpleNamespace(kind=1, copy_kind=1, src_kind=1, dst_kind=3, flags_=0, bytes=8192, start=5, end=9,
                            device_id=0, context_id=3, stream_id=7, correlation_id=999),
            SimpleNamespace(kind=22, copy_kind=10, src_kind=3, dst_kind=3, flags_=0, bytes=1 << 20, start=6, end=8,
                            device_id=1, context_id=3, stream_id=7, correlation_id=998),
            SimpleNamespace(kind=2, value=7, bytes=2048, start=10, end=12, device_id=0, context_id=3,
                            stream_id=7, correlation_id=997, flags_=0, memory_kind=3)]
    return out


def build(version: str, recs: list[SimpleNamespace]) -> tuple[ctypes.Array, int]:
    old = os.environ.get("FAKE_CUPTI_VERSION")
    os.environ["FAKE_CUPTI_VERSION"] = version
    try:
        buf = (ctypes.c_uint64 * (len(recs) * 40 + 8))()  # 320 bytes a record: more than any struct
        used = 0
        for r in recs:
            used += rawlib.encode(r, ctypes.addressof(buf) + used, STRINGS)
        return buf, used
    finally:
        os.environ.pop("FAKE_CUPTI_VERSION") if old is None else os.environ.__setitem__("FAKE_CUPTI_VERSION", old)


STRINGS = rawlib.Strings()


def sizes_for(version: str) -> dict[int, int]:
    os.environ["FAKE_CUPTI_VERSION"] = version
    try:
        return {k: ctypes.sizeof(rawlib.struct_of(k)) for k in (1, 2, 5, 4, 8, 10, 12, 22)}
    finally:
        del os.environ["FAKE_CUPTI_VERSION"]


def parse(version: str, recs: list[SimpleNamespace]) -> tuple[dict[str, list], raw.Parser]:
    buf, valid = build(version, recs)
    parser = raw.Parser(None, sizes_for(version))
    items, n = parser.parse(ctypes.addressof(buf), valid)
    assert n == len(recs)
    strings = dict(p for it in items if it[0] == "strings" for p in it[1])
    out: dict[str, list] = {}
    for it in items:
        if it[0] == "cols":
            cols = [c.tolist() for c in it[2]]
            if it[1] == "kernel":
                cols[6] = [strings.get(i) for i in cols[6]]
            out.setdefault(it[1], []).extend(zip(*cols))
        elif it[0] == "rows":
            out.setdefault(it[1], []).extend(it[2])
        elif it[0] == "markers":
            out.setdefault("markers", []).extend(
                (f, ts, mid, strings.get(n), strings.get(d), t)
                for f, ts, mid, n, d, t in zip(*(c.tolist() for c in it[1])))
    return out, parser


VERSIONS = ["12.9", "13.0", "13.4"]


@pytest.mark.parametrize("version", VERSIONS)
def test_kernel_and_api_records_parse_to_the_capture_columns(version: str) -> None:
    out, parser = parse(version, mixed_records(40))
    k = out["kernel"]
    assert len(k) == 40 and k[3] == (1003, 2003, 1, 3, 10, 103, "_Z1kILi0EEvv", 4, 5, 6, 128, 2, 1, 40, 1024, 4096)
    assert {row[6] for row in k} == {"_Z1kILi0EEvv", "_Z1kILi1EEvv", "_Z1kILi2EEvv"}
    assert out["runtime"][5] == (905, 955, 105, 4242, 211)
    assert out["memcpy"] == [(5, 9, 0, 7, 999, 8192, 1, 1, 3), (6, 8, 1, 7, 998, 1 << 20, 10, 3, 3)]
    assert out["memset"] == [(10, 12, 0, 7, 997, 2048, 7)]
    assert out["device"] == [(0, "NVIDIA H200", 9, 0, 132, "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f")]
    assert parser.devices_seen == {0, 1} and parser.devices_described == {0} and parser.slow_walks == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_driver_records_and_markers(version: str) -> None:
    pt = SimpleNamespace(pt=SimpleNamespace(process_id=1, thread_id=77))
    marks = [SimpleNamespace(kind=12, flags_=2, timestamp=10, id=1, object_kind=2, object_id=pt, name="step",
                             domain="train"),
             SimpleNamespace(kind=12, flags_=4, timestamp=20, id=1, object_kind=2, object_id=pt, name=None,
                             domain=None),
             SimpleNamespace(kind=12, flags_=1, timestamp=30, id=2, object_kind=3, object_id=pt, name="mark",
                             domain=None)]
    out, _ = parse(version, [api_record(1, kind=4), *marks])
    assert out["driver"] == [(901, 951, 101, 4242, 211)]
    assert out["markers"] == [(2, 10, 1, "step", "train", 77), (4, 20, 1, None, None, 77),
                              (1, 30, 2, "mark", None, -1)]  # object kind 3 (device): no thread


def test_unknown_timestamps_and_null_names() -> None:
    out, _ = parse("13.0", [kernel_record(0, name=None, end=(1 << 64) - 1)])
    assert out["kernel"][0][1] == (1 << 64) - 1 and out["kernel"][0][6] is None  # the writer turns the first into NULL


@pytest.mark.parametrize("pattern", ["alternating", "long runs", "runs of 7", "one, two", "random",
                                     "alternating, then runs"])
def test_the_walk_finds_every_record_whatever_the_order(pattern: str) -> None:
    n = 3000
    rng = np.random.default_rng(17)
    kinds = {"alternating": [i % 2 for i in range(n)], "long runs": [i // 1000 % 2 for i in range(n)],
             "runs of 7": [i // 7 % 2 for i in range(n)], "one, two": [int(i % 3 > 0) for i in range(n)],
             "random": rng.integers(0, 2, n).tolist(),
             "alternating, then runs": [i % 2 if i < 1001 else i // 300 % 2 for i in range(n)]}[pattern]
    recs = [api_record(i) if k else kernel_record(i) for i, k in enumerate(kinds)]
    out, _ = parse("13.4", recs)
    assert sorted(r[5] for r in out["kernel"]) == sorted(100 + i for i, k in enumerate(kinds) if not k)
    assert sorted(r[2] for r in out["runtime"]) == sorted(100 + i for i, k in enumerate(kinds) if k)


def test_a_buffer_that_does_not_add_up_is_walked_by_libcupti() -> None:
    """An unknown kind in the middle: the fast walk gives up, libcupti's walk skips what it cannot read."""
    lib = rawlib.FakeLibcupti({"dropped": 0})
    buf, valid = build("13.0", [kernel_record(0), api_record(0), kernel_record(1)])
    parser = raw.Parser(lib, {10: 216})  # API records not announced: as if a kind appeared unasked
    items, n = parser.parse(ctypes.addressof(buf), valid)
    assert (n, parser.slow_walks, parser.skipped) == (2, 1, 1)
    assert [it[2][5].tolist() for it in items if it[0] == "cols"] == [[100, 101]]


def test_record_sizes_are_asked_of_libcupti_and_checked() -> None:
    lib = rawlib.FakeLibcupti({"dropped": 0})
    os.environ["FAKE_CUPTI_VERSION"] = "future"
    try:
        with pytest.raises(raw.RawUnavailable, match="kind 10 records are 256 bytes"):
            raw.record_sizes(lib, [10])
    finally:
        del os.environ["FAKE_CUPTI_VERSION"]
    assert raw.record_sizes(lib, [10, 5, 12]) == {10: 216, 5: 40, 12: 56}


def test_the_buffer_pool_is_bounded() -> None:
    pool = raw.BufferPool(size=4096, limit=2)
    a, b, c = pool.take(), pool.take(), pool.take()
    assert a and b and a % 8 == 0 and c == 0 and pool.refused == 1
    pool.give_back(a)
    assert pool.take() == a


# --------------------------------------------------------------- whole processes, raw and fallback

@pytest.mark.parametrize("version", VERSIONS)
def test_a_traced_process_reads_raw_buffers_of_each_cupti_version(tmp_path: Path, version: str) -> None:
    out = tmp_path / "run"
    r = run_job(WORK.format(n=5), out, FAKE_CUPTI_VERSION=version, FAKE_CUPTI_RECORDS_PER_BUFFER="3")
    assert (r.returncode, r.stderr) == (0, "")
    cap = only_capture(out)
    struct = {"12.9": "Kernel9", "13.0": "Kernel10", "13.4": "Kernel13"}[version]
    assert cap["meta"]["records"].startswith("raw buffers (CUPTI API ") and struct in cap["meta"]["records"]
    assert len(cap["kernel"]) == 5 and {k["name"] for k in cap["kernel"]} == {"_Z10gemm_kernelILi128EEvPKfS1_Pf"}
    assert {r["name"]: (r["domain"], r["end"] is None) for r in cap["nvtx"]} == \
        {"step": ("train", False), "checkpoint": (None, True)}


@pytest.mark.parametrize("env, why", [
    ({"FAKE_CUPTI": "no_raw"}, "the loaded libcupti was not found in /proc/self/maps"),
    ({"FAKE_CUPTI_VERSION": "future"}, "kind 10 records are 256 bytes, a struct version not checked here"),
    ({"NVPROF_WRAP_CUPTI_RAW": "0"}, "NVPROF_WRAP_CUPTI_RAW=0"),
])
def test_without_raw_buffers_the_record_objects_give_the_same_capture(tmp_path: Path, env: dict, why: str) -> None:
    r = run_job(WORK.format(n=4), tmp_path / "objects", **env)
    assert (r.returncode, r.stderr) == (0, "")
    objects = only_capture(tmp_path / "objects")
    assert objects["meta"]["records"] == f"cupti-python objects (raw buffers not used: {why})"
    assert run_job(WORK.format(n=4), tmp_path / "raw").returncode == 0
    raw_cap = only_capture(tmp_path / "raw")
    for table in ("kernel", "memcpy", "memset", "runtime", "device", "nvtx"):
        assert rows_of(objects, table) == rows_of(raw_cap, table), table


def rows_of(cap: dict, table: str) -> list[str]:
    """A table's rows, sorted, without thread ids (each run is another process)."""
    return sorted(str({k: v for k, v in row.items() if k != "tid"}) for row in cap[table])


PROCESS = {"NVPROF_WRAP_CUPTI_WRITER": "process", "FAKE_CUPTI_RECORDS_PER_BUFFER": "4"}


def test_the_writer_process_writes_the_same_capture(tmp_path: Path) -> None:
    r = run_job(WORK.format(n=6), tmp_path / "proc", **PROCESS)
    assert (r.returncode, r.stderr) == (0, "")
    proc = only_capture(tmp_path / "proc")
    assert proc["meta"]["writer"] == "writer process" and proc["meta"]["status"] == "complete"
    assert run_job(WORK.format(n=6), tmp_path / "inline", FAKE_CUPTI_RECORDS_PER_BUFFER="4").returncode == 0
    inline = only_capture(tmp_path / "inline")
    assert "writer" not in inline["meta"]
    for table in ("kernel", "memcpy", "memset", "runtime", "device", "nvtx"):
        assert rows_of(proc, table) == rows_of(inline, table), table


@pytest.mark.parametrize("how, code", [("os._exit(5)", 5), ("os.kill(os.getpid(), signal.SIGKILL)", -9)])
def test_the_writer_process_keeps_what_it_was_sent_when_the_job_dies(tmp_path: Path, how: str, code: int) -> None:
    body = script("""
    import os, signal, time
    from cupti import cupti as c
    for _ in range(10):
        c._fake_kernel()
    c._fake_wait_delivered()   # 5 buffers of 4 records sent to the writer process
    """, how)
    out = tmp_path / "run"
    r = run_job(body, out, **PROCESS)
    assert r.returncode == code
    cap = _wait_partial(out)
    assert cap["meta"]["status"] == "partial" and (len(cap["runtime"]), len(cap["kernel"])) == (10, 9)


def _wait_partial(out: Path) -> dict:
    import time

    for _ in range(100):  # the writer process commits after its parent is gone
        files = captures(out)
        if files and not Path(str(files[0]) + "-journal").exists():
            cap = read(files[0])
            if len(cap["kernel"]) >= 9:
                return cap
        time.sleep(0.1)
    return read(captures(out)[0])


def test_sigterm_with_the_writer_process_finishes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = run_job(script(WORK.format(n=6), "import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\n"
                       "time.sleep(20)\n"), out, **PROCESS)
    assert r.returncode == -signal.SIGTERM and r.stderr == ""
    cap = only_capture(out)
    assert cap["meta"]["exit"] == "SIGTERM" and len(cap["kernel"]) == 6 and len(cap["nvtx"]) == 2


def test_a_lost_writer_process_is_replaced_by_writing_here(tmp_path: Path) -> None:
    body = """
    import os, signal
    from cupti import cupti as c
    import nvprof_wrap.tracer.cupti_trace as t
    for _ in range(4):
        c._fake_kernel("_Z6beforev")
    c._fake_wait_delivered()
    t._STATE.writer.proc.kill(); t._STATE.writer.proc.wait()
    for _ in range(4):
        c._fake_kernel("_Z5afterv")
    """
    out = tmp_path / "run"
    r = run_job(body, out, **PROCESS)
    assert (r.returncode, r.stderr) == (0, "")
    cap = only_capture(out)
    assert cap["meta"]["writer"].startswith("in this process again (writer process lost:")
    assert int(cap["meta"]["lost_writer_frames"]) == 1
    names = [k["name"] for k in cap["kernel"]]
    assert names.count("_Z5afterv") == 4 and names.count("_Z6beforev") >= 1  # the first buffers were committed


def test_a_fork_child_leaves_the_parents_writer_process_alone(tmp_path: Path) -> None:
    code = """
    import os, sys
    from cupti import cupti as c
    for _ in range(3):
        c._fake_kernel("_Z6parentv")
    c._fake_wait_delivered()
    pid = os.fork()
    if pid == 0:
        sys.exit(0)
    os.waitpid(pid, 0)
    c._fake_kernel("_Z6parentv")
    """
    out = tmp_path / "run"
    r = run_job(code, out, **PROCESS)
    assert (r.returncode, r.stderr) == (0, "")
    caps = {c["meta"].get("fork_child", "0"): c for c in map(read, captures(out))}
    assert len(caps["0"]["kernel"]) == 4 and caps["0"]["meta"]["writer"] == "writer process"
    assert caps["1"]["kernel"] == [] and caps["1"]["meta"]["status"] == "complete"


def test_dropped_records_are_counted_and_said(tmp_path: Path) -> None:
    body = """
    from nvprof_wrap.tracer import raw, cupti_trace
    cupti_trace._POOL.limit = 0   # every buffer refused: CUPTI drops what it cannot place
    from cupti import cupti as c
    for _ in range(3):
        c._fake_kernel()
    """
    out = tmp_path / "run"
    r = run_job(body, out)
    assert r.returncode == 0
    assert r.stderr.splitlines() == [("nvprof-wrap: CUPTI dropped 7 activity records (no buffer was free); "
                                      "the capture misses them")]
    cap = only_capture(out)
    assert cap["meta"]["dropped_records"] == "7" and cap["kernel"] == []


def test_the_writer_turns_column_items_into_rows(tmp_path: Path) -> None:
    """Unknown timestamps (CUPTI_TIMESTAMP_UNKNOWN, above int64) become NULL; kernel name ids become their text;
    raw markers pair across buffers."""
    from nvprof_wrap.tracer.capture_file import Writer

    w = Writer(str(tmp_path), {"format": "nvprof-wrap-cupti"})
    u8, u4 = (lambda *v: np.array(v, np.uint64)), (lambda *v: np.array(v, np.uint32))
    kernel = [u8(10, 20), u8(15, (1 << 64) - 1), u4(0, 0), u4(1, 1), u4(7, 7), u4(1, 2), np.array([1, 0]),
              *[u4(1, 1)] * 6, np.array([16, 16], np.uint16), u4(0, 0), u4(0, 0)]
    w.write([("strings", [(1, "_Z1kv"), (2, "step")]), ("cols", "kernel", kernel),
             ("markers", [u4(2), u8(5), u4(9), np.array([2]), np.array([0]), np.array([77])])])
    w.write([("markers", [u4(4), u8(50), u4(9), np.array([0]), np.array([0]), np.array([77])])])
    w.close({"status": "complete"})
    cap = read(Path(w.final_path))
    assert [(k["start"], k["end"], k["name"]) for k in cap["kernel"]] == [(10, 15, "_Z1kv"), (20, None, None)]
    assert cap["nvtx"] == [{"start": 5, "end": 50, "name": "step", "domain": None, "tid": 77}]


# ------------------------------------------------------- the candidate walk against the stepwise one

NOW = 1_764_000_000_000_000_000  # a CUPTI timestamp of late 2025, in ns


def adversarial_buffer(rng: np.random.Generator, n: int, sizes: dict[int, int], *,
                       lookalikes: float) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """n records of random kinds, every field random, a share of 8-byte slots made to look like record starts
    (a kind word followed by timestamps near NOW), timestamps sometimes 0 or unknown (all ones). Returns the buffer
    and the (offset, kind) chain a walk must find."""
    kinds = sorted(sizes)
    out, chain, pos = [], [], 0
    for _ in range(n):
        kind = int(rng.choice(kinds))
        size = sizes[kind]
        rec = rng.integers(0, 2**63, size // 8, dtype=np.uint64)
        for slot in range(1, size // 8):
            if rng.random() < lookalikes:  # a slot that looks like a record start, with its timestamps after it
                rec[slot] = np.uint64(int(rng.choice(kinds)) | int(rng.integers(0, 2**32)) << 32)
                for after in (1, 2, 3):
                    if slot + after < size // 8:
                        rec[slot + after] = np.uint64(NOW + int(rng.integers(0, 10**9)))
        stamps = raw._STAMPS.get(kind, ())
        how = rng.random()
        for slot in set(stamps):
            rec[slot] = np.uint64(0 if how < 0.05 else 2**64 - 1 if how < 0.1 else NOW + int(rng.integers(0, 10**9)))
        rec[0] = np.uint64(kind | int(rng.integers(0, 2**32)) << 32)
        out.append(rec)
        chain.append((pos, kind))
        pos += size
    return np.concatenate(out).view(np.uint8), chain


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400), lookalikes=st.sampled_from([0.0, 0.02, 0.3, 1.0]),
       version=st.sampled_from(VERSIONS))
def test_the_candidate_walk_finds_exactly_the_chain(seed: int, n: int, lookalikes: float, version: str) -> None:
    """However many slots inside records look like records (Kernel's partitionedGlobalCacheRequested followed by
    its end and completed timestamps does, in every real kernel record), the walk returns the chain the records'
    sizes give from the buffer's start, as the stepwise walk does; a buffer whose chain does not end at its end
    (an unknown kind, a last record cut short) is refused by both."""
    sizes = sizes_for(version)
    rng = np.random.default_rng(seed)
    mem, chain = adversarial_buffer(rng, n, sizes, lookalikes=lookalikes)
    want = {k: np.array([o for o, kind in chain if kind == k]) for k in {kind for _, kind in chain}}
    for tables in (None, raw._Tables(sizes)):
        got = raw.walk(mem, len(mem), sizes, tables)
        assert got is not None and got.keys() == want.keys()
        assert all(np.array_equal(got[k], want[k]) for k in want)
    step = raw._walk_stepwise(mem, len(mem), sizes)
    assert step is not None and all(np.array_equal(step[k], want[k]) for k in want)
    cut = len(mem) - 8
    assert raw.walk(mem, cut, sizes) is None and raw._walk_stepwise(mem, cut, sizes) is None
    unknown = mem.copy()
    unknown.view("<u4")[chain[-1][0] // 4] = 99  # the last record's kind: none the walk knows
    assert raw.walk(unknown, len(mem), sizes) is None and raw._walk_stepwise(unknown, len(mem), sizes) is None


def test_a_real_looking_buffer_is_walked_in_one_run() -> None:
    """Records as a windowed process's buffers hold them (RUNTIME and DRIVER records around each launch, kernels
    with the fields CUPTI fills): one run taken whole, no record stepped alone, as the stepwise walk finds them."""
    recs, cid = [], 0
    for i in range(500):
        for kind in (5, 5, 5, 4, 4, 4, 5):
            cid += 1
            recs.append(SimpleNamespace(kind=kind, cbid=211 if kind == 5 else 307, start=NOW + i * 5000,
                                        end=NOW + i * 5000 + 900, process_id=5, thread_id=4242,
                                        correlation_id=cid, return_value=0))
        recs.append(kernel_record(i, start=NOW + i * 5000 + 1000, end=NOW + i * 5000 + 3000, correlation_id=cid,
                                  partitioned_global_cache_requested=1, partitioned_global_cache_executed=1,
                                  completed=NOW + i * 5000 + 3000, device_id=0, stream_id=7))
    buf, valid = build("13.0", recs)
    sizes = sizes_for("13.0")
    mem = np.frombuffer(buf, np.uint8)
    tables = raw._Tables(sizes)
    got = raw.walk(mem, valid, sizes, tables)
    step = raw._walk_stepwise(mem, valid, sizes)
    assert got.keys() == step.keys() == {4, 5, 10}
    assert all(np.array_equal(got[k], step[k]) for k in got) and len(got[10]) == 500
    assert (tables.runs, tables.stepped) == (1, 0)
