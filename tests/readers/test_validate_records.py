"""readers/_validate.py checks a long series' step kernels column by column (model.StepKernels) and other tuples of
flat records all at once: the result must be what checking each row as its record gives — kept as they are when
sound, cleaned or refused as before when not."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import nvprof_wrap
from nvprof_wrap.model import StepKernel, StepKernels
from nvprof_wrap.readers import _validate, nsys_sqlite
from nvprof_wrap.system.limits import MAX_NAME_CHARS
from nvprof_wrap.timeline import series

SAMPLE = Path(nvprof_wrap.__file__).parent / "samples" / "torch_ops" / "nsys_torch_ops.sqlite"


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """The bundled real torch capture, its series measured at any size."""
    mp = pytest.MonkeyPatch()
    mp.setenv(series.ENV_MAX, "-1")
    try:
        got = nsys_sqlite.read(SAMPLE)
    finally:
        mp.undo()
    assert got.series is not None and len(got.series.kernels) > 10
    return got


def _one_by_one(capture):
    """validate() with the all-at-once check off: each record on its own, as before it."""
    mp = pytest.MonkeyPatch()
    mp.setattr(_validate, "_all_as_is", lambda rows, cls: False)
    try:
        return _validate.validate(capture)
    except ValueError as e:
        return e
    finally:
        mp.undo()


def _row_by_row(rows):
    """The reference for a series' step kernels: each row checked as the StepKernel record it is (_clean, field by
    field), as validate() checked them before they were held as columns; a ValueError where any row is refused."""
    try:
        return [_validate._clean(r) for r in rows]
    except ValueError as e:
        return e


def _with(capture, kernels):
    return dataclasses.replace(capture, series=dataclasses.replace(capture.series, kernels=kernels))


def test_a_real_series_is_kept_as_it_is(capture):
    clean = _validate.validate(capture)
    assert clean.series.kernels is capture.series.kernels  # not rebuilt column by column
    assert list(clean.series.kernels.rows()) == _row_by_row(capture.series.kernels.rows())
    assert clean == _one_by_one(capture)
    assert StepKernels.of(capture.series.kernels.rows()) == capture.series.kernels  # columns <-> rows


@pytest.mark.parametrize("field, value", [
    ("launches", -1), ("launches", 2**63), ("launches", None), ("launches", True), ("launches", 1.0),
    ("launches", "3"), ("total_ns", -5), ("name", "a\x00b"), ("name", "k" * (MAX_NAME_CHARS + 1)), ("name", None),
    ("name", b"bytes"), ("pid", None), ("pid", -(2**63)), ("pid", 2**64), ("step", "7"), ("step", None),
    ("total_ns", 2.5), ("pid", float("nan")),
])
@pytest.mark.parametrize("at", [0, -1])
def test_one_damaged_step_kernel_is_what_checking_each_row_gives(capture, field, value, at):
    rows = list(capture.series.kernels.rows())
    rows[at] = dataclasses.replace(rows[at], **{field: value})
    want = _row_by_row(rows)
    try:
        got = _validate.validate(_with(capture, StepKernels.of(rows)))
    except ValueError as e:
        assert isinstance(want, ValueError), f"refused: {e}"
        return
    assert not isinstance(want, ValueError), f"kept, where a row is refused: {want}"
    assert list(got.series.kernels.rows()) == want
    cut = field == "name" and value == "k" * (MAX_NAME_CHARS + 1)
    assert any("were cut" in n for n in got.notes) == cut


@pytest.mark.parametrize("column, value", [
    ("name", (10**6,)), ("name", (-1,)), ("launches", [1]), ("pid", (None, None)), ("names", ["k"]),
])
def test_columns_that_do_not_hold_together_are_refused(capture, column, value):
    """A column longer or shorter than the others, a name index outside names, a list where a tuple belongs (a
    summary edited by hand): refused, never stored."""
    k = capture.series.kernels
    col = getattr(k, column)
    changed = value if isinstance(value, list) or column == "pid" else value + col[1:]
    with pytest.raises(ValueError, match="StepKernels"):
        _validate.validate(_with(capture, dataclasses.replace(k, **{column: changed})))


def test_step_kernels_one_record_each_are_refused(capture):
    """A series whose kernels are StepKernel records one by one (a summary of an older version): refused, naming
    what it holds."""
    with pytest.raises(ValueError, match="not StepKernels"):
        _validate.validate(_with(capture, tuple(capture.series.kernels.rows())))


def test_an_empty_or_lone_tuple_is_fine():
    assert _validate._all_as_is((), StepKernel) is False
    assert _validate._all_as_is((StepKernel(None, 0, "k", 1, 2),), StepKernel) is True
    assert _validate._all_as_is((StepKernel(None, 0, "k", -1, 2),), StepKernel) is False
