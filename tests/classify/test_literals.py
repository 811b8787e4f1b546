"""classify/_literals.py: the strings a rule cannot match without, tested before its search (classify/engine.py)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvprof_wrap.classify import load_rules
from nvprof_wrap.classify._literals import needed
from nvprof_wrap.classify.engine import MATRIX_RULE, Rule, _first, matrix_math, may_communicate, needs_of


@pytest.mark.parametrize(("pattern", "needs"), [
    ("attention", ("attention",)),
    ("(?<![a-z])mha|attention", ("attention", "mha")),
    ("^(?:bmm|gemm)_\\w+_sm1\\d\\d[af]?$", ("_sm1",)),  # the most selective: '_sm1' over {bmm, gemm}
    ("^(?:bmm|gemm)_\\w+", ("bmm", "gemm")),  # {bmm, gemm} over '_'
    ("^nvjet_sm1[0-2]\\d", ("nvjet_sm1",)),
    ("a(?:bc|de)fgh", ("fgh",)),
    ("x(?:bcd|de)", ("bcd", "de")),
    ("cutlass::half_t", ("cutlass::half_t",)),
    ("(?:abc)?def?", ("de",)),  # the optional group and 'f?' are not needed
    ("gemm|\\d+", None),  # a branch without a literal: anything may match
    ("[ab]c", None),  # one character: no use as a test
    ("(?i:abc)", None),  # a group with its own flags: not read
    ("a|", None),
])
def test_needed_strings(pattern, needs):
    assert needed(pattern) == needs


def test_every_rule_has_a_test_and_it_holds_on_every_real_name():
    """Every rule of rules.toml gets strings (the speed-up holds for all of them); on every distinct kernel name of
    the real captures each rule that matches the name finds one of its strings there — and _first picks the rule
    that searching every pattern in order picks."""
    from benchmarks.generate import real_names

    rules = load_rules()
    names = [n.lower() for n in real_names()]
    assert len(names) >= 50
    for table in (rules.verdict, rules.precision, rules.family):
        for rule, needs in zip(table, needs_of(table)):
            assert needs, rule.id
            for name in names:
                if rule.pattern.search(name):
                    assert any(s in name for s in needs), (rule.id, name)
        for name in names:
            assert _first(table, name) == _searched(table, name)
    assert [matrix_math(n) for n in names] == [_matrix_searched(n) for n in names]
    assert 10 <= sum(map(matrix_math, names)) < len(names)
    assert [may_communicate(n) for n in names] == [_communication_searched(n) for n in names]
    assert 1 <= sum(map(may_communicate, names)) < len(names)


def _communication_searched(name: str) -> bool:
    """engine.may_communicate as a search of every communication family's pattern."""
    rules = load_rules()
    return any(r.pattern.search(name.lower()) for r in rules.family if r.value in rules.communication)


def _matrix_searched(name: str) -> bool:
    """The time budget's matrix-math test (engine.matrix_math) as a search of the rule's pattern."""
    return next(r for r in load_rules().verdict if r.id == MATRIX_RULE).pattern.search(name.lower()) is not None


def _searched(table: tuple[Rule, ...], lowered: str) -> Rule | None:
    return next((r for r in table if r.pattern.search(lowered)), None)


_RULES = load_rules()
_TABLES = (_RULES.verdict, _RULES.precision, _RULES.family)
_PIECES = sorted({s for table in map(needs_of, _TABLES) for needs in table for s in needs or ()}
                 | {"_", "<", ">", "::", "(", ")", "void ", "sm90", "f16", "x", "0", "1"})


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=10))
def test_first_rule_as_searching_every_rule(parts):
    """Names made of the rules' own strings (where a test could wrongly skip a rule): the same first rule."""
    name = "".join(parts)
    rules = load_rules()
    for table in (rules.verdict, rules.precision, rules.family):
        assert _first(table, name) == _searched(table, name)
    assert matrix_math(name) == _matrix_searched(name) and matrix_math(name.upper()) == matrix_math(name)
    assert may_communicate(name) == _communication_searched(name)


def test_rules_without_strings_are_searched_whatever_the_name_holds():
    """A rule whose pattern needs no string (needed() is None) is searched in every name — beside rules that need
    some, and in a table where none does (no automaton then): the first match in order, as searching every rule."""
    import re

    def rule(i: str, pattern: str) -> Rule:
        return Rule(i, re.compile(pattern), "yes")

    mixed = (rule("a", "attention"), rule("b", "gemm|\\d+"), rule("c", "[ab]c"), rule("d", "xmma"))
    bare = (rule("e", "[ab]c"), rule("f", "\\d+"))
    assert [needs is None for needs in needs_of(mixed)] == [False, True, True, False]
    assert needs_of(bare) == (None, None)
    for name in ("attention_42", "sm90_xmma_7", "xmma_only", "ac", "nothing", "", "gemm", "ßattention"):
        assert _first(mixed, name) == _searched(mixed, name), name
        assert _first(bare, name) == _searched(bare, name), name
    assert _first(mixed, "xmma_only").id == "d" and _first(mixed, "nothing") is None
    assert _first(bare, "x9").id == "f" and _first(bare, "bc").id == "e"


@pytest.mark.parametrize("name", [
    "gemm\udcff_sm90_xmma",  # a lone surrogate (bytes a capture could not decode, kept by surrogateescape)
    "\x00gemm_hmma",
    "ß" * 10 + "volta_h884gemm",
    "🙂 attention",
    "Ｇemm_fullwidth",
    "İgemm_hmma",  # its lower case is one character longer: the scan reads the lowered name the regexes read
    "x" * 10_000 + "_hmma_gemm",
])
def test_odd_names_get_the_first_rule_searching_every_rule_gives(name):
    """Names the automaton could read otherwise than the regex engine (not ASCII, NUL, long): the same first rule in
    every table as searching each rule's pattern in order."""
    lowered = name.lower()
    for table in _TABLES:
        assert _first(table, lowered) == _searched(table, lowered)
