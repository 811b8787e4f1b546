"""analyze()'s arguments checked where they come in: one BadInput line naming the argument and what it takes
(steps='10:20' reached the window code as the characters '1' and '0'; workers='many' was a TypeError from the
pool). Generous where the meaning is plain: the command line's own 'A:B' for steps and window, a list for a tuple."""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Literal, cast, overload

from nvprof_wrap.errors import BadInput
from nvprof_wrap.timeline import window


def _refuse(name: str, takes: str, value: object) -> BadInput:
    shown = repr(value)
    return BadInput(None, f"{name}= takes {takes}; got {shown if len(shown) <= 80 else shown[:77] + '...'}")


@overload
def span(value: object, name: str, integer: Literal[True]) -> tuple[int, int] | None: ...
@overload
def span(value: object, name: str, integer: Literal[False]) -> tuple[float, float] | None: ...
def span(value: object, name: str, integer: bool) -> tuple[int, int] | tuple[float, float] | None:
    """steps=(A, B) / window=(start_s, end_s), or 'A:B' as on the command line; None: none."""
    if value is None:
        return None
    example = "(10, 20) or '10:20'" if integer else "(30, 90.5) or '30:90.5'"
    takes = f"{'two whole numbers' if integer else 'two numbers of seconds'} 0 <= start < end, e.g. {example}"
    if isinstance(value, str):
        try:
            value = window.parse(value, name, integer)
        except BadInput:
            raise _refuse(name, takes, value) from None
    if not isinstance(value, (tuple, list)) or len(value) != 2 or not all(_number(v, integer) for v in value) \
            or not 0 <= value[0] < value[1]:
        raise _refuse(name, takes, value)
    return (int(value[0]), int(value[1])) if integer else (float(value[0]), float(value[1]))


def _number(v: object, integer: bool) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return float(v).is_integer() if integer else math.isfinite(v)


def workers(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _refuse("workers", "a whole number of processes, 1 or more (1: read here, one by one), or None", value)
    return value


def flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise _refuse(name, "True or False", value)
    return value


def address(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _refuse("dask", "a Dask scheduler address such as 'tcp://host:8786', or None", value)
    return value


def callback(value: object) -> Callable[[Path], None] | None:
    if value is not None and not callable(value):
        raise _refuse("progress", "a function called with each capture's path, or None", value)
    return cast("Callable[[Path], None] | None", value)  # a callable: what it takes is the caller's to get right
