"""Opening SQLite captures honestly (timeline/recover.py, system/storage.py): a capture with writes pending beside it
(a hot rollback journal, a WAL with commits) reads as SQLite recovers it — never the interrupted write, never
without the WAL's commits — on a private copy, the user's files unchanged; a full TMPDIR is IOFailure (exit 74),
never "corrupt" and never skipped. Every hostile capture is built here from a real one copied into tmp_path."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvprof_wrap import readers
from nvprof_wrap.cli import main
from nvprof_wrap.errors import BadInput, IOFailure
from nvprof_wrap.system import tempdirs
from nvprof_wrap.timeline import recover
from tests._paths import PUBLIC, ROOT, RUNS

NSYS = RUNS / "ddp_nsys" / "nsys.sqlite"  # two GPUs, 3,098 launches
CUPTI = RUNS / "ddp_cupti" / "cupti-vm-5269.sqlite"
NVPROF = PUBLIC / "m-goldstein__GPU_ML__timeline.nvvp"
# An interrupted write that changes what a report says: every launch but a few moved to another device, or half of
# them gone.
WRITES = {
    "nsys": (NSYS, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1 - deviceId WHERE rowid > 26"),
    "cupti": (CUPTI, "UPDATE kernel SET device_id = 3 WHERE rowid > 26"),
    "nvprof": (NVPROF, "DELETE FROM CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL WHERE _id_ % 2 = 0"),
}
# Commits left in a WAL, and what they make of the launches per device: every launch twice, or moved to the next
# device (nvprof's tables have a key column: no plain copy of their rows).
DOUBLE = {"nsys": "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL",
          "cupti": "INSERT INTO kernel SELECT * FROM kernel",
          "nvprof": "UPDATE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL SET deviceId = deviceId + 1"}
AFTER = {"nsys": lambda d, n: (d, 2 * n), "cupti": lambda d, n: (d, 2 * n), "nvprof": lambda d, n: (d + 1, n)}
# the nvprof capture is one of the shared fixtures (public/): its cases skip, saying why, where they are absent
FORMATS = ["cupti", pytest.param("nvprof", marks=pytest.mark.needs_fixtures), "nsys"]


# Written after the interrupted write, in its transaction: enough pages to spill the page cache into the file.
SPILL = ("CREATE TABLE spill AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) "
         "SELECT i, randomblob(200) FROM n")


def _child(db: Path, setup: str, *sqls: str) -> None:
    """Run sqls on db in a process that dies (os._exit) right after: what a killed writer leaves beside the file."""
    code = (f"import os, sqlite3\nc = sqlite3.connect({str(db)!r}, isolation_level=None)\n{setup}\n"
            + "".join(f"c.execute({sql!r})\n" for sql in sqls) + "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def interrupted(src: Path, folder: Path, sql: str) -> Path:
    """A copy of src with a write interrupted before its commit: part of it in the file (a tiny page cache spills
    it there), the rest of the truth in the hot journal beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    db = Path(shutil.copy(src, folder / "x.sqlite"))
    _child(db, "c.execute('PRAGMA cache_size=2'); c.execute('BEGIN')", sql, SPILL)
    assert (folder / "x.sqlite-journal").read_bytes()[:8] == recover.JOURNAL_MAGIC
    return db


def uncheckpointed(src: Path, folder: Path, sql: str) -> Path:
    """A copy of src with a committed write that lives only in its WAL (no checkpoint ran)."""
    folder.mkdir(parents=True, exist_ok=True)
    db = Path(shutil.copy(src, folder / "x.sqlite"))
    _child(db, "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')", sql)
    assert (folder / "x.sqlite-wal").stat().st_size > 32
    return db


def committed(db: Path, folder: Path) -> Path:
    """The oracle: the file set copied and opened by SQLite itself (which recovers it), left without side files."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in db.parent.iterdir():
        if f.name.startswith(db.name) and not f.name.endswith("-shm"):
            shutil.copy(f, folder / f.name)
    with sqlite3.connect(folder / db.name, isolation_level=None) as conn:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    return folder / db.name


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    return {f.name: (hashlib.sha256(f.read_bytes()).hexdigest(), f.stat().st_mtime_ns)
            for f in sorted(folder.iterdir())}


def content(capture) -> tuple:
    """What a capture says, without where it was read from."""
    return dataclasses.replace(capture, path="", notes=tuple(n.replace(str(Path(capture.path).parent), "")
                                                             for n in capture.notes))


def per_device(capture) -> dict:
    out: dict = {}
    for k in capture.kernels:
        out[k.device_id] = out.get(k.device_id, 0) + k.launches
    return out


def immutable_view(db: Path) -> dict | str:
    """What the reading before this fix saw: the file alone (immutable=1 ignores the side files) — launches per
    device, or a refusal ("database disk image is malformed": the half-written pages)."""
    tmp = Path(tempfile.mkdtemp(dir=db.parent.parent))
    shutil.copy(db, tmp / db.name)
    try:
        return per_device(readers.read(tmp / db.name))
    except BadInput as e:
        return e.why
    finally:
        shutil.rmtree(tmp)


def my_recover_folders() -> list[str]:
    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(f"{tempdirs.PREFIX}recover-")
            and f"-{os.getpid()}-" in n]


@pytest.fixture(params=["compiled", "python"])
def native(request, monkeypatch):
    """Both paths of the reader: the compiled helper's (where it is built) and the Python and SQL's."""
    if request.param == "python":
        monkeypatch.setenv("NVPROF_WRAP_NATIVE", "off")
    return request.param


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_interrupted_write_is_read_rolled_back(fmt, native, tmp_path):
    src, sql = WRITES[fmt]
    db = interrupted(src, tmp_path / "capture", sql)
    before = snapshot(db.parent)
    truth = readers.read(committed(db, tmp_path / "oracle"))
    assert immutable_view(db) != per_device(truth)  # the file alone holds part of the interrupted write
    got = readers.read(db)
    assert content(got) == content(truth)
    assert content(truth) == content(readers.read(Path(shutil.copy(src, tmp_path / "original.sqlite"))))
    assert snapshot(db.parent) == before  # the user's files: same bytes, same times, nothing added
    assert my_recover_folders() == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_commits_only_in_the_wal_are_read(fmt, native, tmp_path):
    src = WRITES[fmt][0]
    db = uncheckpointed(src, tmp_path / "capture", DOUBLE[fmt])
    before = snapshot(db.parent)
    truth = readers.read(committed(db, tmp_path / "oracle"))
    once = per_device(readers.read(src))
    assert per_device(truth) == dict(AFTER[fmt](d, n) for d, n in once.items())
    assert immutable_view(db) == once  # what was read before: the WAL's commits lost
    assert content(readers.read(db)) == content(truth)
    assert snapshot(db.parent) == before
    assert my_recover_folders() == []


def test_forked_workers_and_attribution_slices_read_the_recovered_copy(tmp_path, monkeypatch):
    """A big capture is read by forked workers that reopen it (busy time, NVTX attribution slices): they must open
    the copy too. BIG lowered so that this small capture takes that path."""
    from nvprof_wrap.readers import cupti_sqlite
    from nvprof_wrap.timeline import busy
    monkeypatch.setattr(busy, "BIG", 0)
    monkeypatch.setattr(cupti_sqlite, "BIG", 0)
    for name, (src, sql) in WRITES.items():
        if name == "nvprof":
            continue
        db = interrupted(src, tmp_path / name, sql)
        before = snapshot(db.parent)
        assert content(readers.read(db)) == content(readers.read(committed(db, tmp_path / f"{name}-oracle")))
        assert snapshot(db.parent) == before


def test_the_command_reads_a_folder_with_a_hot_journal_and_a_wal_as_committed(tmp_path, capsys):
    run, oracle = tmp_path / "run", tmp_path / "oracle"
    interrupted(NSYS, run, WRITES["nsys"][1])
    uncheckpointed(CUPTI, tmp_path / "w", DOUBLE["cupti"])
    for f in (tmp_path / "w").iterdir():
        if not f.name.endswith("-shm"):
            shutil.copy(f, run / f.name.replace("x.sqlite", "y.sqlite"))
    for name in ("x.sqlite", "y.sqlite"):
        committed(run / name, oracle)
    before = snapshot(run)
    outs = []
    for folder in (run, oracle):
        # --sum: the folder's two captures are of different jobs; what is tested is how each is read
        assert main(["kernels", str(folder), "--format", "json", "--sum",
                     "--store", str(tmp_path / f"{folder.name}.db")]) == 0
        out, err = capsys.readouterr()
        assert "skipped" not in err
        outs.append(out)
    assert outs[0] == outs[1]
    assert snapshot(run) == before


def test_a_wal_of_another_capture_is_refused_in_one_line(tmp_path, capsys):
    other = uncheckpointed(NSYS, tmp_path / "other", DOUBLE["nsys"])
    folder = tmp_path / "capture"
    folder.mkdir()
    db = Path(shutil.copy(RUNS / "gemm_nsys" / "nsys.sqlite", folder / "x.sqlite"))
    shutil.copy(other.parent / "x.sqlite-wal", folder / "x.sqlite-wal")
    before = snapshot(folder)
    assert main(["report", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(db) in err and "x.sqlite-wal" in err and "recover" in err
    assert snapshot(folder) == before


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_a_side_file_that_is_not_a_regular_file_is_refused_not_followed(kind, tmp_path, capsys):
    db = interrupted(NSYS, tmp_path / "elsewhere", WRITES["nsys"][1])
    folder = tmp_path / "capture"
    folder.mkdir()
    target = Path(shutil.copy(db, folder / "x.sqlite"))
    side = folder / "x.sqlite-journal"
    {"fifo": lambda: os.mkfifo(side), "folder": side.mkdir,
     "symlink": lambda: side.symlink_to(db.parent / "x.sqlite-journal")}[kind]()
    assert main(["report", str(target)]) == 2  # a FIFO must not block the read
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "x.sqlite-journal beside it is not a regular file" in err


def test_a_journal_left_committed_is_no_pending_write(tmp_path):
    """A journal whose header is zeroed (journal_mode=PERSIST after its commit) holds nothing to roll back: the
    capture is read in place, no copy made."""
    db = Path(shutil.copy(NSYS, tmp_path / "x.sqlite"))
    (tmp_path / "x.sqlite-journal").write_bytes(bytes(4096))
    (tmp_path / "x.sqlite-wal").write_bytes(b"")
    assert recover.pending(db) == []
    assert content(readers.read(db)) == content(readers.read(NSYS))


# --- the machine failing: a full TMPDIR -----------------------------------------------------------------------------

@pytest.fixture
def small_tmpdir(tmp_path):
    """A 8 MiB tmpfs: made full, or nearly (room for Python's probe of TMPDIR, none for a copy). Needs root (CI)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
                                           check=False, capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path, leave: int) -> None:
    free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
    with open(folder / "fill", "wb") as f:
        try:
            f.write(bytes(max(0, free - leave)))
        except OSError:
            pass


def report(args: list[str], tmpdir: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, TMPDIR=str(tmpdir), PYTHONPATH=str(ROOT), NO_COLOR="1")
    env.pop("SQLITE_TMPDIR", None)
    # --sum: the run folders here hold captures of different jobs; what is tested is how each is read
    return subprocess.run([sys.executable, "-m", "nvprof_wrap", "report", "--sum", *args], env=env, check=False,
                          capture_output=True, text=True, timeout=120)


def _sqlite_temp_tables(folder: Path) -> Path:
    return Path(shutil.copy(NSYS, folder / "a.sqlite"))  # its per-step series is built in SQLite temp tables


def _gzipped(folder: Path) -> Path:
    return Path(shutil.copy(RUNS / "gpt_fp32_nsys" / "nsys.sqlite.gz", folder / "a.sqlite.gz"))


def _journal(folder: Path) -> Path:
    db = interrupted(NSYS, folder.parent / "j", WRITES["nsys"][1])
    for f in db.parent.iterdir():
        f.rename(folder / f.name.replace("x.sqlite", "a.sqlite"))
    return folder / "a.sqlite"


@pytest.mark.parametrize("make, leave", [(_sqlite_temp_tables, 0), (_gzipped, 24 << 10), (_journal, 24 << 10)],
                         ids=["sqlite-temp-store", "gunzip", "recovery-copy"])
def test_a_full_tmpdir_is_74_never_corrupt_never_skipped(make, leave, small_tmpdir, tmp_path):
    """Before: 'corrupt or unexpected SQLite content (database or disk is full)' / 'corrupt gzip file ([Errno 28]
    ...)' / the interrupted write read as committed — and beside another capture, skipped with exit 0."""
    folder = tmp_path / "run"
    folder.mkdir()
    capture = make(folder)
    shutil.copy(RUNS / "gemm_cupti" / "cupti-vm-4574.sqlite", folder / "b.sqlite")
    before = snapshot(folder)
    fill(small_tmpdir, leave)
    for target in (capture, folder):
        done = report([str(target)], small_tmpdir)
        assert done.returncode == 74, (done.returncode, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert f"{capture}: temporary space full in TMPDIR={small_tmpdir}: free space or set TMPDIR" in done.stderr
    assert snapshot(folder) == before
    (small_tmpdir / "fill").unlink()  # space freed: the same files read
    assert report([str(folder), "--format", "json"], small_tmpdir).returncode == 0


# --- a property: any damage to a capture or what lies beside it -----------------------------------------------------

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
SEED = RUNS / "gemm_nsys" / "nsys.sqlite"


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    """The seed as it is, with a hot journal, with commits in its WAL: {name: folder}."""
    base = tmp_path_factory.mktemp("variants")
    plain = base / "plain"
    plain.mkdir()
    shutil.copy(SEED, plain / "x.sqlite")
    sql = "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 2 WHERE rowid > 3"
    return {"plain": plain, "journal": interrupted(SEED, base / "journal", sql).parent,
            "wal": uncheckpointed(SEED, base / "wal", DOUBLE["nsys"]).parent}


def _damage(data: bytes, draw) -> bytes:
    how = draw(st.sampled_from(["none", "truncate", "flip", "random"]))
    if how == "truncate":
        return data[:draw(st.integers(0, len(data)))]
    if how == "flip" and data:
        b = bytearray(data)
        for _ in range(draw(st.integers(1, 6))):
            i = draw(st.integers(0, len(b) - 1))
            b[i] ^= draw(st.integers(1, 255))
        return bytes(b)
    if how == "random":
        return draw(st.binary(max_size=4096))
    return data


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_any_damage_to_a_capture_or_its_side_files_reads_as_sqlite_recovers_it_or_is_one_line(
        data, variants, tmp_path_factory):
    """Each case reads exactly what SQLite itself recovers from the same files (the oracle), or is refused in one
    line (BadInput, IOFailure) exactly when that cannot be read; never another exception, never a changed input,
    never a temporary folder left."""
    draw = data.draw
    source = variants[draw(st.sampled_from(sorted(variants)))]
    folder = tmp_path_factory.mktemp("case")
    for f in source.iterdir():
        if not f.name.endswith("-shm"):
            shutil.copy(f, folder / f.name)
    sides = {"-journal": variants["journal"], "-wal": variants["wal"]}
    for suffix, lender in sides.items():  # a side file of the other variants, of nothing, or damaged
        pick = draw(st.sampled_from(["keep", "borrow", "drop"]))
        if pick == "borrow":
            shutil.copy(lender / f"x.sqlite{suffix}", folder / f"x.sqlite{suffix}")
        elif pick == "drop":
            (folder / f"x.sqlite{suffix}").unlink(missing_ok=True)
    victim = folder / draw(st.sampled_from(sorted(f.name for f in folder.iterdir())))
    victim.write_bytes(_damage(victim.read_bytes(), draw))
    db = folder / "x.sqlite"
    before = snapshot(folder)
    try:
        truth = content(readers.read(committed(db, tmp_path_factory.mktemp("oracle"))))
    except (BadInput, sqlite3.DatabaseError):
        truth = None
    try:
        got = content(readers.read(db))
    except (BadInput, IOFailure) as e:
        assert "\n" not in str(e) and str(db) in str(e)
        got = None
    assert snapshot(folder) == before
    assert my_recover_folders() == []
    if got is not None:
        assert got == truth


def test_the_machines_failures_are_told_apart_from_bad_input(tmp_path, monkeypatch):
    """system/storage.py: full, over quota and I/O errors (OS or SQLite, also after crossing a fork's pickle) are
    IOFailure naming the capture; anything else stays the caller's to judge (None)."""
    import errno
    import pickle

    from nvprof_wrap.system.storage import machine_failure
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    cap = tmp_path / "c.sqlite"
    full = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "nvprof-wrap-gz-x" / "c"))
    assert str(machine_failure(cap, full)) == \
        f"{cap}: temporary space full in TMPDIR={tmp_path}: free space or set TMPDIR"
    quota = OSError(errno.EDQUOT, "Disk quota exceeded", "/elsewhere/out.sqlite")
    assert "disk full writing /elsewhere/out.sqlite" in str(machine_failure(cap, quota))
    assert "I/O error on /dev/sdz" in str(machine_failure(cap, OSError(errno.EIO, "Input/output error", "/dev/sdz")))
    assert machine_failure(cap, OSError(errno.EACCES, "Permission denied")) is None
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("SELECT * FROM nowhere")
    except sqlite3.Error as e:
        assert machine_failure(cap, e) is None
    disk = sqlite3.OperationalError("database or disk is full")
    disk.sqlite_errorcode = 13
    for e in (disk, pickle.loads(pickle.dumps(disk)), sqlite3.OperationalError("database or disk is full")):
        failure = machine_failure(cap, e)
        assert isinstance(failure, IOFailure) and failure.exit_code == 74 and f"TMPDIR={tmp_path}" in str(failure)
    ioerr = sqlite3.OperationalError("disk I/O error")
    ioerr.sqlite_errorcode = 10 | (3 << 8)  # SQLITE_IOERR_WRITE: the extended code keeps the primary in its low byte
    assert "I/O error while reading" in str(machine_failure(cap, ioerr))


def test_new_commits_in_a_wal_are_read_again_not_taken_from_the_store(tmp_path, capsys):
    """Commits that land only in the WAL leave the capture's size, mtime and inode as they were: the store must not
    answer with the aggregates it kept of the capture before them."""
    db = uncheckpointed(NSYS, tmp_path / "run", "CREATE TABLE extra(x)")
    store = tmp_path / "store.db"

    def launches() -> int:
        assert main(["report", str(db), "--format", "json", "--store", str(store)]) == 0
        return json.loads(capsys.readouterr().out)["launches"]

    first = launches()
    st = db.stat()
    _child(db, "c.execute('PRAGMA wal_autocheckpoint=0')", DOUBLE["nsys"])
    assert (db.stat().st_size, db.stat().st_mtime_ns, db.stat().st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    assert launches() == 2 * first
