"""Apply ``rules.toml`` to kernel names: one short function, first match wins per table."""
from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from nvprof_wrap.model import Classification
from nvprof_wrap.system.limits import MAX_CLASSIFIED_CHARS
from nvprof_wrap.text.names import without_parameters

_VERDICTS = ("yes", "no", "unknown")
_DEFAULT_REASON = ("no rule matched: the name carries no evidence either way "
                   "(generated kernels such as triton_tem_* or gemm_fusion_dot* need counters: nvprof-wrap verify)")


@dataclass(frozen=True)
class Rule:
    id: str
    pattern: re.Pattern[str]
    value: str  # verdict, precision or family
    reason: str = ""
    source: str = ""


@dataclass(frozen=True)
class Rules:
    version: str
    verdict: tuple[Rule, ...]
    precision: tuple[Rule, ...]
    family: tuple[Rule, ...]


def _lowered(pattern: str) -> str:
    """A case-insensitive pattern as one for lower-case text: its letters lowered, escapes (\\S, \\d…) kept."""
    return re.sub(r"\\.|[A-Z]", lambda m: m.group() if m.group().startswith("\\") else m.group().lower(), pattern)


def _compile(table: list[dict], value_key: str) -> tuple[Rule, ...]:
    """Rules match case-insensitively. They run on the lower-cased name without re.IGNORECASE, which keeps the
    regex engine's literal-prefix search: 0.13 s instead of 0.33 s for every rule on the 546 distinct names of
    the real captures (the same matches; tests/classify/test_classify.py checks it on them)."""
    rules = []
    for entry in table:
        value = entry[value_key]
        if value_key == "tensor_core" and value not in _VERDICTS:
            raise ValueError(f"rule {entry['id']}: tensor_core must be one of {_VERDICTS}")
        rules.append(Rule(entry["id"], re.compile(_lowered(entry["pattern"])), value,
                          entry.get("reason", ""), entry.get("source", "")))
    return tuple(rules)


@lru_cache(maxsize=1)
def load_rules() -> Rules:
    raw = resources.files("nvprof_wrap.classify").joinpath("rules.toml").read_bytes()
    data = tomllib.loads(raw.decode())
    # The content hash is part of the version so that any edit re-classifies cached names.
    version = f"{data['version']}+{hashlib.sha256(raw).hexdigest()[:8]}"
    return Rules(version, _compile(data["verdict"], "tensor_core"),
                 _compile(data["precision"], "precision"), _compile(data["family"], "family"))


RULES_VERSION = load_rules().version


def _first(rules: tuple[Rule, ...], lowered: str) -> Rule | None:
    """The first rule matching a lower-cased name (_compile)."""
    return next((r for r in rules if r.pattern.search(lowered)), None)


# '(vllm::Fp8KVCacheDataType)0', '(at::native::ADAM_MODE)1', '(bool)0': an enum or literal cast in a template
# argument names a type that is not the data the kernel computes on.
_CAST = re.compile(r"\((?:[A-Za-z_][\w:]*)\)-?\d+")


def _precision(rules: Rules, name: str) -> str:
    """The data type a name states: the math type before scalar arguments and enum casts."""
    text = _CAST.sub("", name)
    rule = _first(rules.precision, without_parameters(text).lower()) or _first(rules.precision, text.lower())
    return rule.value if rule else ""


CUT = ("…", "...")  # how profilers end a name they cut to fit a column (nsys stats, nvprof, torch tables)


def _trusted_when_cut(rules: Rules, verdict: Rule | None) -> bool:
    """A cut name's verdict holds only if the hidden part cannot change it: first match wins, so it holds when
    the rule that matched and every rule before it say 'no' (a hidden match of an earlier rule is a 'no' too)."""
    if verdict is None:
        return False
    for rule in rules.verdict:
        if rule.value != "no":
            return False
        if rule is verdict:
            return True
    return False


def classify(name: str) -> Classification:
    """Classify one demangled kernel name. Pure: the same name always gets the same answer.

    A name cut short by the profiler ('sm80_xmma_gemm_f32f32_…') is classified on what is visible, and a verdict
    the hidden part could overturn (a '_ffma_' further on turns 'xmma' into CUDA cores) becomes 'unknown'."""
    rules = load_rules()
    long = len(name) > MAX_CLASSIFIED_CHARS  # read only its start, as a name the profiler cut (limits.py)
    visible = name[:MAX_CLASSIFIED_CHARS] if long else name
    cut, lowered = long or name.endswith(CUT), visible.lower()
    verdict = _first(rules.verdict, lowered)
    if cut and not _trusted_when_cut(rules, verdict):
        family, precision = _first(rules.family, lowered), _precision(rules, visible)
        seen = verdict.value if verdict else "unknown"
        why = (f"name longer than {MAX_CLASSIFIED_CHARS:,} characters: its first {MAX_CLASSIFIED_CHARS:,} say "
               f"'{seen}', but the rest may hold evidence that changes it") if long else \
            (f"name cut by the profiler: the visible part says '{seen}', but the hidden part may hold "
             "evidence that changes it (export the full names: nsys stats --format csv)")
        return Classification(name, "unknown", precision, family.value if family else "other", why, "cut-name")
    tensor_core = verdict.value if verdict else "unknown"
    precision = _precision(rules, visible)
    if precision == "tf32" and tensor_core == "no":
        precision = "fp32"  # TF32 is a tensor-core math mode: off them the data is fp32 (a split-K reduction, say)
    family = _first(rules.family, lowered)
    return Classification(
        name=name,
        tensor_core=tensor_core,
        precision=precision,
        family=family.value if family else "other",
        reason=verdict.reason if verdict else _DEFAULT_REASON,
        rule=verdict.id if verdict else "",
    )


def classify_many(names: Iterable[str]) -> list[Classification]:
    """Classify distinct names once each, in input order."""
    seen: dict[str, Classification] = {}
    for n in names:
        if n not in seen:
            seen[n] = classify(n)
    return list(seen.values())
