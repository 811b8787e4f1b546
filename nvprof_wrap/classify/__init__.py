"""Kernel classification: tensor core yes/no/unknown, precision, family and the reason, from rules as data.

How to add a rule: a table in rules.toml (``[[verdict]]``, ``[[precision]]`` or ``[[family]]``, first match wins, so
its place in the file matters) with an ``id``, a ``pattern``, the verdict or value, the ``reason`` reports show and
the ``source`` that justifies it; then a labelled kernel name in benchmarks/labels/ that it decides. Editing the
file changes RULES_VERSION, so stored verdicts are recomputed; tests/classify/ check every rule's fields and the
labelled names (benchmarks/accuracy.py: 0 wrong).
"""
from nvprof_wrap.classify.engine import COMMUNICATION_FAMILIES, RULES_VERSION, classify, classify_many, load_rules

__all__ = ["COMMUNICATION_FAMILIES", "RULES_VERSION", "classify", "classify_many", "load_rules"]
