"""A capture's summary: what reading it gave (model.Capture, its aggregates), kept in a small file, gzipped JSON.

`nvprof-wrap summarize CAPTURE -o DIR` writes one per capture — in a Slurm array, each task summarises its own
rank's capture where it lies — and `nvprof-wrap report DIR` merges them as it merges the captures themselves: the
same report as from the captures (docs/ranks.md). A summary carries the identity of the capture's content and of the
reading (data version, window), so that the capture and its summary are one capture to the store, and a summary
written by another data version, or through another window, is refused instead of mixed in.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import os
import zlib
from pathlib import Path

from nvprof_wrap import model
from nvprof_wrap.errors import BadInput
from nvprof_wrap.readers._bounded import open_json
from nvprof_wrap.readers._head import Head
from nvprof_wrap.system import files
from nvprof_wrap.system.limits import MAX_JSON_STRING_BYTES, MAX_SUMMARY_BYTES
from nvprof_wrap.timeline.window import CUT_KEY, Window

FORMAT = "nvprof-wrap-summary"
MAGIC = b'{"nvprof_wrap_summary": 1'
SUFFIX = ".summary.json.gz"
_CLASSES = {c.__name__: c for c in vars(model).values() if dataclasses.is_dataclass(c) and isinstance(c, type)}
_CLASSES["Device"] = model.Gpu  # the name of model.Gpu in the summaries written before it was the one GPU record


def sniff(head: Head) -> bool:
    return head.raw.startswith(MAGIC)


def write(capture: model.Capture, identity: str, window_key: str | None, out: Path) -> None:
    """The summary of a capture read as identity says (ingest's tagged identity), through window_key, into out —
    written beside and renamed over: a reader never sees half of one."""
    body = json.dumps({"identity": identity, "window": window_key, "capture": _encode(capture)},
                      separators=(",", ":"))
    if len(body) + len(MAGIC) + 12 > MAX_SUMMARY_BYTES:  # it could not be read back (load's bound)
        raise BadInput(None, f"a summary larger than {MAX_SUMMARY_BYTES >> 20} MiB: report the capture itself")
    files.refuse_odd(out, "summary")
    fd, tmp = files.temp_beside(out)
    try:
        with os.fdopen(fd, "wb") as raw, gzip.open(raw, "wt", encoding="utf-8", compresslevel=6) as f:
            f.write(MAGIC.decode() + ', "body": ' + body + "}")
        files.replace(tmp, out, "summary")
    finally:
        tmp.unlink(missing_ok=True)


def load(path: Path) -> tuple[str, str | None, model.Capture]:
    """(identity, window key, capture) of a summary file. Unpacked within MAX_SUMMARY_BYTES, checked as the bytes
    come out, and nested at most MAX_JSON_DEPTH levels (checked in the stream, before the parser): a gzip bomb or
    a nesting bomb is one line, BadInput, never a gigabyte read or a RecursionError."""
    try:
        body = json.loads(_unpacked(path))["body"]
        identity, key = body["identity"], body["window"]
        if not isinstance(identity, str) or not (key is None or isinstance(key, str)):
            raise TypeError("its identity or window is not text")
        capture = _decode(body["capture"])
        if not isinstance(capture, model.Capture):
            raise TypeError(f"it holds {type(capture).__name__}, not a capture")
        return identity, key, capture
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise BadInput(path, f"damaged summary ({type(e).__name__}: {e})") from None


def _unpacked(path: Path) -> bytes:
    """The summary's JSON, read through the bounds: strings are never cut (the size bounds them)."""
    parts, size = [], 0
    try:
        with open_json(path, unpacked=MAX_SUMMARY_BYTES, max_string=MAX_SUMMARY_BYTES) as f:
            while piece := f.read(1 << 16):
                size += len(piece)
                if size > MAX_SUMMARY_BYTES:  # a plain file that sniffs as a summary: the same bound
                    raise BadInput(path, f"a summary larger than {MAX_SUMMARY_BYTES >> 20} MiB: not one "
                                         "nvprof-wrap wrote")
                parts.append(piece)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise BadInput(path, f"unreadable summary ({e})") from None
    return b"".join(parts)


def identity(path: Path) -> str:
    return load(path)[0]


def read(path: Path, window: Window | None = None) -> model.Capture:
    """The summarised capture; refused when it was summarised through another window than the one asked for."""
    _identity, key, capture = load(path)
    asked = window.key if window is not None else None
    if _asked(key) != _asked(asked):  # a capture window's cut is the capture's, not a window asked for
        through = f"through {key}" if key else "whole"
        now = f"through {asked}" if asked else "whole"
        raise BadInput(path, f"summarised {through}, read {now}: report summaries with the window they were "
                             "summarised through (or summarise the capture again)")
    return capture


def _asked(key: str | None) -> str | None:
    """A window's key without a capture window's cut (timeline/window.py Window.key)."""
    if key is None:
        return None
    kept = ";".join(part for part in key.split(";") if not part.startswith(CUT_KEY))
    return kept or None


def _encode(v: object) -> object:
    """The model's records as JSON values: {"_": class name, field: value…}; tuples as lists."""
    if dataclasses.is_dataclass(v):
        return {"_": type(v).__name__, **{f.name: _encode(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, (tuple, list)):
        return [_encode(x) for x in v]
    if isinstance(v, str) and len(v) > MAX_JSON_STRING_BYTES:
        raise BadInput(None, "a name longer than the readers take")
    return v


def _decode(v: object) -> object:
    """_encode's JSON values back to the model's records."""
    if isinstance(v, dict):
        name = v.get("_")
        cls = _CLASSES.get(name) if isinstance(name, str) else None
        if cls is None:
            raise ValueError(f"unknown record {name!r}")
        return cls(**{k: _decode(x) for k, x in v.items() if k != "_"})
    if isinstance(v, list):  # every sequence of the model is a tuple
        return tuple(_decode(x) for x in v)
    return v
