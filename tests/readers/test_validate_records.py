"""readers/_validate.py checks a tuple of flat records (a long series' step kernels) all at once: the result must be
what checking them one by one gives — kept as they are when sound, cleaned or refused as before when not."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import nvprof_wrap
from nvprof_wrap.model import StepKernel
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


def _at_once(capture):
    try:
        return _validate.validate(capture)
    except ValueError as e:
        return e


def test_a_real_series_is_kept_as_it_is(capture):
    clean = _validate.validate(capture)
    assert clean.series.kernels is capture.series.kernels  # not rebuilt record by record
    assert clean == _one_by_one(capture)


@pytest.mark.parametrize("field, value", [
    ("launches", -1), ("launches", 2**63), ("launches", None), ("launches", True), ("launches", 1.0),
    ("launches", "3"), ("total_ns", -5), ("name", "a\x00b"), ("name", "k" * (MAX_NAME_CHARS + 1)), ("name", None),
    ("name", b"bytes"), ("pid", None), ("pid", -(2**63)), ("pid", 2**64), ("step", "7"),
])
@pytest.mark.parametrize("at", [0, -1])
def test_one_damaged_step_kernel_is_what_checking_each_gives(capture, field, value, at):
    kernels = list(capture.series.kernels)
    kernels[at] = dataclasses.replace(kernels[at], **{field: value})
    damaged = dataclasses.replace(capture, series=dataclasses.replace(capture.series, kernels=tuple(kernels)))
    got, want = _at_once(damaged), _one_by_one(damaged)
    if isinstance(want, ValueError):
        assert isinstance(got, ValueError) and str(got) == str(want)
    else:
        assert got == want


def test_a_record_of_another_class_among_them_is_refused(capture):
    kernels = (*capture.series.kernels, capture.kernels[0])
    damaged = dataclasses.replace(capture, series=dataclasses.replace(capture.series, kernels=kernels))
    with pytest.raises(ValueError, match="not StepKernel"):
        _validate.validate(damaged)
    assert isinstance(_one_by_one(damaged), ValueError)


def test_an_empty_or_lone_tuple_is_fine():
    assert _validate._all_as_is((), StepKernel) is False
    assert _validate._all_as_is((StepKernel(None, 0, "k", 1, 2),), StepKernel) is True
    assert _validate._all_as_is((StepKernel(None, 0, "k", -1, 2),), StepKernel) is False
