"""Shortening demangled C++ kernel names for tables and messages (the whole name stays in --wide, JSON and CSV)."""
from __future__ import annotations

import re


def _strip_params(name: str) -> str:
    """Drop the trailing parameter list '(...)' of a demangled function name."""
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
                return name[:i] if i > 0 else name
    return name


def _collapse_templates(name: str, keep_depth: int) -> str:
    out, depth = [], 0
    for c in name:
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


_QUALIFIER = re.compile(r"(?:[A-Za-z_]\w*|<unnamed>|\(anonymous namespace\))::")


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
