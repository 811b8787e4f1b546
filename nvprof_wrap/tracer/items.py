"""What the tracer hands its capture writer: the rows of capture_file.SCHEMA's tables and the items that carry them,
and the writer's interface (one in this process, or sink.py's writer process). Types only; standard library only."""
from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

if TYPE_CHECKING:  # the writer never imports numpy: raw.py hands it numpy columns, it only slices them
    from numpy.typing import NDArray

# A row of a table, as SQLite stores it: values straight from CUPTI (ints, names, None, odd objects that
# capture_file._sql_value turns into something storable).
Row: TypeAlias = tuple[Any, ...]
Column: TypeAlias = "NDArray[Any]"  # one field of many records (raw.py), in a table's column order
OpenRange: TypeAlias = tuple[int, str | None, str | None, int | None]  # (start, name, domain, tid)
NvtxRow: TypeAlias = tuple[int, int | None, str | None, str | None, int | None]  # a row of table nvtx
# (device_id, name, cc_major, cc_minor, sm_count, uuid): a row of table device
DeviceRow: TypeAlias = tuple[int, str | None, int | None, int | None, int | None, str | None]
# (flags, id, timestamp, name, domain, tid) of one MARKER record
MarkerValues: TypeAlias = tuple[int, int, int, str | None, str | None, int | None]

# What Writer.write takes (capture_file.Writer's docstring says what each is); pickled as is to the writer process.
Item: TypeAlias = (
    tuple[Literal["rows"], str, list[Row]]
    | tuple[Literal["cols"], str, list[Column]]  # numpy columns in the table's column order
    | tuple[Literal["strings"], list[tuple[int, str]]]  # (id, text) of names the columns hold as ids
    | tuple[Literal["markers"], list[Column]]  # raw NVTX markers, paired into nvtx rows by the writer
    | tuple[Literal["nvtx_state"], dict[int, OpenRange], dict[int, int]]  # open ranges, early ends (a hand-over)
    | tuple[Literal["marker_rows"], list[MarkerValues]]  # cupti-python's markers, paired likewise
)


class CaptureSink(Protocol):
    """Where the tracer sends its items: capture_file.Writer in this process, or sink.ProcessSink."""

    partial_path: str
    final_path: str
    owner: int | None  # thread inside write/close: a signal handler must not re-enter
    lock: threading.Lock  # held around a write; hooks.py holds it across a fork

    def open(self) -> None: ...
    def write(self, items: Iterable[Item]) -> bool: ...
    def close(self, meta: dict[str, str], tail: Iterable[Item] = ()) -> str: ...
    def leak(self) -> None: ...
