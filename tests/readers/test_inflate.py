"""readers/_bounded.py inflate_to, the zlib unpacking of a gzipped trace read in parts: byte for byte what
gunzip_to (gzip.GzipFile) writes, the same refusals, and every damaged file raising what the caller falls back on."""
from __future__ import annotations

import gzip
import zlib

import pytest

from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers._bounded import gunzip_to, inflate_to
from nvprof_wrap.system import limits
from tests._paths import ROOT

GZIPS = sorted((ROOT / "tests" / "data").rglob("*.gz"))
assert GZIPS, "tests/data holds no gzip file: the comparison below would test nothing"
DAMAGED = (OSError, EOFError, zlib.error)


@pytest.mark.parametrize("src", GZIPS[:6], ids=lambda p: p.parent.name)
def test_unpacks_what_gzip_unpacks(tmp_path, src):
    a, b = tmp_path / "a", tmp_path / "b"
    assert inflate_to(src, a, 1 << 40) == gunzip_to(src, b, 1 << 40) == b.stat().st_size
    assert a.read_bytes() == b.read_bytes()


def test_members_one_after_another_and_zero_padding(tmp_path):
    src = tmp_path / "m.gz"
    src.write_bytes(gzip.compress(b'{"a": 1,') + gzip.compress(b' "b": 2}') + b"\0" * 10)
    assert inflate_to(src, tmp_path / "out", 1 << 20) == 16
    assert (tmp_path / "out").read_bytes() == b'{"a": 1, "b": 2}'


def test_past_the_limit_is_none_and_no_file(tmp_path):
    src = tmp_path / "big.gz"
    src.write_bytes(gzip.compress(b" " * (4 << 20)))
    assert inflate_to(src, tmp_path / "out", 1 << 20) is None
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("damage", ["cut", "flipped", "garbage after", "not gzip"])
def test_a_damaged_gzip_raises_what_the_caller_catches_and_leaves_no_file(tmp_path, damage):
    good = gzip.compress(bytes(range(256)) * 4096)
    bad = {"cut": good[:len(good) // 2], "flipped": good[:40] + bytes(b ^ 0xFF for b in good[40:60]) + good[60:],
           "garbage after": good + b"PK\3\4 junk", "not gzip": b"plain text, no gzip"}[damage]
    src = tmp_path / "bad.gz"
    src.write_bytes(bad)
    with pytest.raises(DAMAGED):
        gunzip_to(src, tmp_path / "ref", 1 << 30)
    with pytest.raises(DAMAGED):
        inflate_to(src, tmp_path / "out", 1 << 30)
    assert not (tmp_path / "out").exists()


def test_a_gzip_bomb_is_refused_as_it_unpacks(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "GUNZIP_FREE_JSON_BYTES", 1 << 20)
    src = tmp_path / "bomb.json.gz"
    src.write_bytes(gzip.compress(b" " * (64 << 20)))  # ~1000x
    with pytest.raises(BadInput, match="gzip bomb"):
        inflate_to(src, tmp_path / "out", 1 << 40)
    assert not (tmp_path / "out").exists()
