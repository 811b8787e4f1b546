"""What a reader's ``sniff`` sees of a file: its first 64 KiB (decompressed when gzipped), the text of it, and for an
SQLite file its table names — each computed once, on first use."""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from nvprof_wrap.errors import BadInput
from nvprof_wrap.system.storage import machine_failure
from nvprof_wrap.timeline import recover
from nvprof_wrap.timeline.sql import opened, tables

SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass
class Head:
    path: Path
    raw: bytes  # the first bytes (of the decompressed stream when the file is gzipped)
    size: int  # the file's size on disk
    gz: bool = False

    @property
    def is_sqlite(self) -> bool:
        return self.raw.startswith(SQLITE_MAGIC) and not self.gz

    @cached_property
    def sqlite_tables(self) -> set[str]:
        if not self.is_sqlite:
            return set()
        with recover.readable(self.path), opened(self.path) as conn:  # under a budget (timeline/guard.py)
            try:
                return tables(conn)
            except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
                raise machine_failure(self.path, e) or BadInput(self.path, f"corrupt SQLite file ({e})") from None

    @cached_property
    def binary(self) -> bool:
        return not self.is_sqlite and b"\x00" in self.raw[:4096]

    @cached_property
    def json_start(self) -> bytes:
        """'{' or '[' when the content opens a JSON object / an array of objects, else b''. ('[4242] python@host' is
        ncu's console, not JSON.)"""
        s = self.raw.lstrip(b"\xef\xbb\xbf \t\r\n")
        if s[:1] == b"{" or (s[:1] == b"[" and s[1:].lstrip()[:1] in (b"{", b"]", b"")):
            return s[:1]
        return b""

    @cached_property
    def text(self) -> str:
        return "" if self.is_sqlite or self.binary else self.raw.decode("utf-8-sig", errors="replace")

    @cached_property
    def first_line(self) -> str:
        """The first non-blank line that is not a profiler message (==PID==, ==PROF==)."""
        return next((ln for ln in self.text.splitlines() if ln.strip() and not ln.startswith("==")), "")
