"""A job's log read in pieces (report/health.py pieces_of, lines_of) gives the lines the whole text gives, whatever
the piece size and wherever the pieces end (\\n and \\r both end a line: progress bars); a line is bounded by the
line limit plus one piece (it is cut where it has run past the limit with no end in sight), the rest of it dropped."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from nvprof_wrap.report import health

TOKENS = [b"a", b"loss:", b"\n", b"\r", b"\r\n", b"xx", b"Epoch", b"yyyyyyy", b"iter 3: loss 2.5"]


def _whole(data: bytes) -> list[bytes]:
    lines = re.split(rb"[\r\n]", data)
    if lines and not lines[-1]:
        lines.pop()
    return lines


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=60), st.integers(1, 16), st.integers(1, 16), st.booleans())
def test_lines_read_in_pieces_are_the_whole_texts(tmp_path_factory, tokens, piece, limit, filtered):
    data = b"".join(tokens)
    path = tmp_path_factory.mktemp("log") / "stdout.log"
    path.write_bytes(data)
    keep = (lambda b: b"loss:" in b or b"Epoch" in b) if filtered else None
    old = health.PIECE_BYTES
    health.PIECE_BYTES = piece
    try:
        got = list(health.lines_of(path, keep, limit))
        pieces = list(health.pieces_of(path, limit))
    finally:
        health.PIECE_BYTES = old
    lines = _whole(data)
    if all(len(line) <= limit for line in lines):
        assert got == [line for line in lines if keep is None or keep(line)]
    assert all(len(line) <= limit + piece and any(w.startswith(line) for w in lines) for line in got)
    # the pieces that are not cut lines hold the text whole, in order, each ending at a line's end but the last
    whole = [p for p, cut in pieces if not cut]
    assert all(p.endswith((b"\n", b"\r")) for p in whole[:-1])
    assert all(len(p) == limit for p, cut in pieces if cut)
