"""Kernel classification: tensor core yes/no/unknown, precision, family and the reason, from rules as data."""
from nvprof_wrap.classify.engine import RULES_VERSION, classify, classify_many, load_rules

__all__ = ["RULES_VERSION", "classify", "classify_many", "load_rules"]
