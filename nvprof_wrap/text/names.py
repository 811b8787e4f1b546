"""Shortening demangled C++ kernel names for tables and messages (the whole name stays in --wide, JSON and CSV)."""
from __future__ import annotations

import itertools
import re


def without_parameters(name: str, whole_if_all: bool = False) -> str:
    """The name without its trailing parameter list: 'k<float>(double, float*)' → 'k<float>'. A name that is one
    parenthesised group gives '' (or itself, with whole_if_all)."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        c = name[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return name[:i] if i > 0 or not whole_if_all else name
    return name


def _strip_params(name: str) -> str:
    """Drop the trailing parameter list '(...)' of a demangled function name (a name that is nothing else stays)."""
    return without_parameters(name, whole_if_all=True)


_ANGLES = re.compile(r"([<>])")


def _collapse_templates(name: str, keep_depth: int) -> str:
    if "<" not in name and ">" not in name:
        return name
    out, depth = [], 0
    for c in _ANGLES.split(name):  # a piece between angle brackets at a time, not a character
        if c == "<":
            depth += 1
            if depth == keep_depth + 1:
                out.append("<…")
            if depth > keep_depth:
                continue
        elif c == ">":
            depth -= 1
            if depth == keep_depth:
                out.append(">")
            if depth >= keep_depth:
                continue
        if depth <= keep_depth:
            out.append(c)
    return "".join(out)


# An identifier is tried only where a word starts (and read possessively): at every letter of a 100,000-character name
# without '::' the search would read the rest of the name again, 5 * 10**9 steps (a minute per table); now one pass.
_QUALIFIER = re.compile(r"(?:(?<!\w)[A-Za-z_]\w*+|<unnamed>|\(anonymous namespace\))::")


def shorten(name: str, width: int = 70) -> str:
    """'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, …>(int, …)'
    → 'at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<…>, std::array<…>>'."""
    s = _strip_params(name.strip())
    s = s.removeprefix("void ")
    if len(s) > width:  # namespaces are the least informative part of a long name
        s = _QUALIFIER.sub("", s)
    generic = s.split("<", 1)[0] in ("Kernel", "Kernel2", "device_kernel")  # CUTLASS: the argument is the name
    for depth in (1,) if generic else (1, 0):  # template levels kept
        if len(s) <= width:
            break
        s = _collapse_templates(s, depth)
    if len(s) > width:
        head = width * 2 // 3
        s = s[:head] + "…" + s[-(width - head - 1):]
    return s


def _plain(name: str) -> str:
    s = _strip_params(name.strip()).removeprefix("void ")
    return _QUALIFIER.sub("", s)


def shorten_all(names: list[str], width: int = 70) -> list[str]:
    """shorten() each name, and keep names that differ apart: two kernels never share one short name in a table.

    Where shortening makes two names alike, each shows where it differs from its nearest look-alike: the head of
    the name, then the part from just before the first difference ('sm80_xmma_ge…f32_f32_tn_n_tilesize…'). Names
    alike even so (they differ only past the width, or only in their parameters) are numbered #1, #2, … in table
    order."""
    short = [shorten(n, width) for n in names]
    for idx in _alike(short, names):
        full = [_plain(names[i]) for i in idx]
        nearest = _nearest_prefix(full)
        for i, s in zip(idx, full):
            if len(s) <= width:
                short[i] = s
                continue
            p = nearest.get(s, 0)
            head = s[:max(width // 3, 8)]
            room = width - len(head) - 2
            start = max(len(head), p - room // 3)
            seg = s[start:start + room]
            short[i] = head + ("…" if start > len(head) else "") + seg + ("…" if start + room < len(s) else "")
    count: dict[str, int] = {}
    for idx in _alike(short, names):
        for i in idx:
            base = short[i] if len(short[i]) <= width - 4 else short[i][:width - 5] + "…"
            count[base] = count.get(base, 0) + 1
            short[i] = f"{base} #{count[base]}"
    return short


def _alike(short: list[str], names: list[str]) -> list[list[int]]:
    """Groups of positions whose short names are equal while their whole names are not."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(short):
        groups.setdefault(s, []).append(i)
    return [idx for idx in groups.values() if len({names[i] for i in idx}) > 1]


def _nearest_prefix(strings: list[str]) -> dict[str, int]:
    """For each distinct string, the length of the longest prefix it shares with another one: the other is its
    neighbour in sorted order, so n log n comparisons instead of n * n."""
    alike = sorted(set(strings))
    out = dict.fromkeys(alike, 0)
    for a, b in itertools.pairwise(alike):
        n = _common_prefix_len(a, b)
        out[a], out[b] = max(out[a], n), max(out[b], n)
    return out


def _common_prefix_len(a: str, b: str) -> int:
    """Binary search on slices (compared at C speed): log n steps, not one Python step per character."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


_NUMBERED = re.compile(r"^(.*?\D)\s*\d+$")


def numbered_family(name: str) -> str | None:
    """'step 12' → 'step': the family of ranges that differ only in a trailing number (one per training step);
    None for a name without one. Compare and the op tables merge such ranges into one row."""
    m = _NUMBERED.match(name)
    return m.group(1).rstrip() if m else None

