"""Numbers as people read them, defined once for every renderer and every sentence the report writes: shares as
percents, GPU times in the unit that fits."""
from __future__ import annotations


def pct(x: float | None) -> str:
    """A share with one decimal: 0.4567 → '45.7%'; None → '-'."""
    return "-" if x is None else f"{100 * x:.1f}%"


def pct_or_less(x: float) -> str:
    """As pct, but a share too small for one decimal says so instead of reading as nothing: '<0.1%'."""
    return pct(x) if x >= 0.001 or x == 0 else "<0.1%"


def pct_whole(x: float) -> str:
    """Whole percents for sentences, but never a rounded 100% (or 0%) for what is not all (or none)."""
    text = f"{100 * x:.0f}%"
    if (text == "100%" and x < 1) or (text == "0%" and x > 0):
        return pct(x)
    return text


def duration(ns: float | None) -> str:
    """Nanoseconds in the unit that fits, three significant digits: '1.23 ms', '456 µs', '2,345 s'; None → '-'."""
    if ns is None:
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}" if ns / scale < 100 else f"{ns / scale:,.0f} {unit}"
    return f"{ns:.0f} ns"


def ms(ns: float) -> str:
    """Nanoseconds as milliseconds with two decimals and thousands grouped: '1,234.57 ms'."""
    return f"{ns / 1e6:,.2f} ms"
