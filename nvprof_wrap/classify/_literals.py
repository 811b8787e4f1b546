"""The literal text a regular expression cannot match without: a cheap test before its search.

Most of rules.toml's patterns are alternations led by a look-behind ('(?<![a-z])mha|attention|…'), which the regex
engine tries at every position of a name; a substring test per alternative (`'attention' in name`, a memchr-speed
scan) rules most names out first. needed() reads the pattern's parse tree (the re module's own parser): a run of
consecutive literal characters in a sequence must appear in any match of it; an alternation needs one of its
branches' literals. Only ever a necessary condition: where a name holds one of them, the regex still decides.
"""
from __future__ import annotations

import importlib
from typing import Any

# re's parser (no type stubs: its parse tree is tuples of opcodes and arguments)
_PARSER: Any = importlib.import_module("re._parser")
_OPS: Any = importlib.import_module("re._constants")
_SHORTEST = 2  # a single character is in nearly every name: no use as a test


def needed(pattern: str) -> tuple[str, ...] | None:
    """Strings at least one of which every match of `pattern` holds (sorted), or None when none is known."""
    found = _of_sequence(list(_PARSER.parse(pattern)))
    return tuple(sorted(found)) if found is not None else None


def _better(best: set[str] | None, new: set[str] | None) -> set[str] | None:
    """The more selective of two requirements: the one whose shortest literal is longer."""
    if not new or min(map(len, new)) < _SHORTEST:
        return best
    if best is None or min(map(len, new)) > min(map(len, best)):
        return new
    return best


def _of_sequence(items: list[tuple[Any, Any]]) -> set[str] | None:
    """One requirement of a sequence of items (each one must match, one after the other)."""
    best: set[str] | None = None
    run: list[str] = []
    for op, arg in [*items, (None, None)]:
        if op is _OPS.LITERAL:  # consecutive literals match consecutive characters
            run.append(chr(arg))
            continue
        best = _better(best, {"".join(run)} if run else None)
        run = []
        if op is _OPS.SUBPATTERN and not arg[1] and not arg[2]:  # a group without inline flags
            best = _better(best, _of_sequence(list(arg[3])))
        elif op is _OPS.BRANCH:
            best = _better(best, _of_branches(arg[1]))
    return best


def _of_branches(branches: list[Any]) -> set[str] | None:
    """An alternation's requirement: one of each branch's; None when a branch has none."""
    out: set[str] = set()
    for branch in branches:
        found = _of_sequence(list(branch))
        if found is None:
            return None
        out |= found
    return out
