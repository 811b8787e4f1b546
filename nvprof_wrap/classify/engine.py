"""Apply ``rules.toml`` to kernel names: one short function, first match wins per table."""
from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache, reduce
from importlib import resources
from operator import itemgetter, or_
from typing import Any, cast

import ahocorasick

from nvprof_wrap.classify._literals import needed
from nvprof_wrap.model import Classification
from nvprof_wrap.system.fork import Forked, can_fork, cores
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
    cut: str = ""  # verdict rules: why nothing a console can cut off after this rule's match changes its verdict
    # … once the visible part surely matches this too (rules.toml `cut_when`); None: once the rule's own match is seen
    cut_when: re.Pattern[str] | None = None


@dataclass(frozen=True)
class Rules:
    version: str
    verdict: tuple[Rule, ...]
    precision: tuple[Rule, ...]
    family: tuple[Rule, ...]
    communication: frozenset[str] = frozenset()  # families the time split counts as communication (NCCL's way)
    warmup: frozenset[str] = frozenset()  # families of a JAX/XLA job's warm-up (readers/_xla_warmup.py)


def _lowered(pattern: str) -> str:
    """A case-insensitive pattern as one for lower-case text: its letters lowered, escapes (\\S, \\d…) kept."""
    return re.sub(r"\\.|[A-Z]", lambda m: m.group() if m.group().startswith("\\") else m.group().lower(), pattern)


def _compile(table: list[dict[str, str]], value_key: str) -> tuple[Rule, ...]:  # rules.toml's [[…]] tables
    """Rules match case-insensitively. They run on the lower-cased name without re.IGNORECASE, which keeps the
    regex engine's literal-prefix search: 0.13 s instead of 0.33 s for every rule on the 546 distinct names of
    the real captures (the same matches; tests/classify/test_classify.py checks it on them)."""
    rules = []
    for entry in table:
        value = entry[value_key]
        if value_key == "tensor_core" and value not in _VERDICTS:
            raise ValueError(f"rule {entry['id']}: tensor_core must be one of {_VERDICTS}")
        when = entry.get("cut_when")
        rules.append(Rule(entry["id"], re.compile(_lowered(entry["pattern"])), value,
                          entry.get("reason", ""), entry.get("source", ""), entry.get("cut", ""),
                          re.compile(_lowered(when)) if when else None))
    return tuple(rules)


@lru_cache(maxsize=1)
def load_rules() -> Rules:
    raw = resources.files("nvprof_wrap.classify").joinpath("rules.toml").read_bytes()
    data = tomllib.loads(raw.decode())
    # The content hash is part of the version so that any edit re-classifies cached names.
    version = f"{data['version']}+{hashlib.sha256(raw).hexdigest()[:8]}"
    return Rules(version, _compile(data["verdict"], "tensor_core"),
                 _compile(data["precision"], "precision"), _compile(data["family"], "family"),
                 frozenset(f["family"] for f in data["family"] if f.get("communication")),
                 frozenset(f["family"] for f in data["family"] if f.get("warmup")))


RULES_VERSION = load_rules().version


def may_communicate(name: str) -> bool:
    """Whether a communication family's pattern matches the name: a cheap first look (one search per such rule,
    and none where the name lacks every string the rule needs: _first) before classify() settles it — classify()
    is the whole rule table, 24 ms on a 100,000-character name. 1,496 names of a generated export: 0.05 s searched,
    0.01 s so."""
    return _first(_communication_rules(), name.lower()) is not None


@lru_cache(maxsize=1)
def _communication_rules() -> tuple[Rule, ...]:
    """The communication families' rules, in a table of their own (kept: needs_of holds its strings by its id)."""
    rules = load_rules()
    return tuple(r for r in rules.family if r.value in rules.communication)
COMMUNICATION_FAMILIES = load_rules().communication
WARMUP_FAMILIES = load_rules().warmup
MATRIX_RULE = "matrix-family-undecided"  # rules.toml: the words that name a matrix-math kernel (GEMM, attention, conv)


def matrix_math(name: str) -> bool:
    """Whether a kernel's name says it does matrix math (GEMM, attention, convolution, RNN) — rules.toml's matrix
    family rule, whatever the verdict: 'volta_sgemm_128x64_nn' is matrix math on CUDA cores. The time budget
    (analyses/budget.py) splits matrix math from the rest with it. A name holding none of the strings the rule
    needs is not searched (_first: 1,496 distinct names of a generated export took 0.042 s searched, 0.011 s so)."""
    return _first(_matrix_rule(), name.lower()) is not None


@lru_cache(maxsize=1)
def _matrix_rule() -> tuple[Rule, ...]:
    """The matrix family rule alone in a table of its own, kept (needs_of holds a table's needed strings by id)."""
    return (next(r for r in load_rules().verdict if r.id == MATRIX_RULE),)


@dataclass(frozen=True)
class _Needles:
    """A table's needed strings (needs_of), found in a name by one scan of it: an Aho-Corasick automaton of every
    rule's strings, each string's value its bit; a rule is searched where its bits meet the name's. 1,496 names of
    a generated export (~300 characters each): the verdict table's 235 strings found in 0.011 s, where a substring
    test per string took 0.083 s."""
    needs: tuple[tuple[str, ...] | None, ...]
    masks: tuple[int, ...]  # each rule's strings' bits; _ANY for a rule searched whatever the name holds
    automaton: Any  # ahocorasick.Automaton (no type stubs); None where no rule needs a string

    def held(self, lowered: str) -> int:
        """The bits of the strings the name holds, and _ANY's."""
        if self.automaton is None:
            return _ANY
        return reduce(or_, map(_VALUE, self.automaton.iter(lowered)), _ANY)


_ANY = 1  # the bit every name holds: a rule without needed strings is always searched; the strings' bits follow it


_VALUE = itemgetter(1)  # an automaton's match: (where it ends, the string's bit)


def _needles(rules: tuple[Rule, ...]) -> _Needles:
    """A table's _Needles: worked out on its first use, not on import — parsing every pattern again costs ~10 ms,
    paid only by a command that classifies; kept with the table, whose id is the key."""
    held = _NEEDED.get(id(rules))
    if held is not None and held[0] is rules:
        return held[1]
    needs = tuple(needed(r.pattern.pattern) for r in rules)
    bits = {s: 2 << i for i, s in enumerate(sorted({s for n in needs if n for s in n}))}
    automaton = None
    if bits:
        automaton = ahocorasick.Automaton()
        for s, bit in bits.items():
            automaton.add_word(s, bit)
        automaton.make_automaton()
    masks = tuple(_ANY if n is None else reduce(or_, (bits[s] for s in n), 0) for n in needs)
    made = _Needles(needs, masks, automaton)
    _NEEDED[id(rules)] = (rules, made)
    return made


# a table's rules → (the table, its _Needles): kept with the table, whose id is the key
_NEEDED: dict[int, tuple[tuple[Rule, ...], _Needles]] = {}


def needs_of(rules: tuple[Rule, ...]) -> tuple[tuple[str, ...] | None, ...]:
    """Each rule's strings one of which every match of its pattern holds (classify/_literals.py; None: none known)."""
    return _needles(rules).needs


def _first(rules: tuple[Rule, ...], lowered: str) -> Rule | None:
    """The first rule matching a lower-cased name (_compile); a rule whose needed strings the name lacks is not
    searched (a search scans the whole name for its first character's every place; finding which of the table's
    strings the name holds scans it once: _Needles)."""
    needles = _needles(rules)
    held = needles.held(lowered)
    for r, mask in zip(rules, needles.masks):
        if mask & held and r.pattern.search(lowered):
            return r
    return None


# '(vllm::Fp8KVCacheDataType)0', '(at::native::ADAM_MODE)1', '(bool)0': an enum or literal cast in a template
# argument names a type that is not the data the kernel computes on.
_CAST = re.compile(r"\((?:[A-Za-z_][\w:]*)\)-?\d+")


_GROUP = re.compile(r"\([^()]*\)")  # an innermost parenthesised group


def _bare(head: str) -> str:
    """A name without any parenthesised group: the parameter lists of functions named inside its template arguments
    ('normal_kernel<…>(const at::TensorBase &, double, double, T1)', '[lambda(float) (instance 1)]') are not the
    kernel's math type — PyTorch's fp32 RNG kernel named 'double' there read as fp64."""
    while True:
        bare = _GROUP.sub("", head)
        if bare == head:
            return bare
        head = bare


def _precision(rules: Rules, name: str) -> str:
    """The data type a name states: the math type before scalar arguments, nested parameter lists and enum casts;
    the whole name only when those say nothing."""
    text = _CAST.sub("", name)
    head = without_parameters(text)
    tried = [_bare(head), head, text]
    rule = next((r for t in dict.fromkeys(tried) if (r := _first(rules.precision, t.lower()))), None)
    return rule.value if rule else ""


CUT = ("…", "...")  # how profilers end a name they cut to fit a column (nsys stats, nvprof, torch tables)
# Names that are none: the readers' stand-in for a kernel the capture names not at all, and a number or an address
# where a name belongs (a string table's id whose text the capture lacks). No rule can match them, and the default
# reason's "the name carries no evidence" hinted at generated kernels: the reason says what happened instead. (nsys'
# lost name, model.LOST_NAME_KERNEL, has a rule of its own: rules.toml's name-lost.)
_NO_NAME = {"", "<unnamed kernel>"}
_NUMBER_NAME = re.compile(r"[+-]?(?:\d+|0[xX][0-9a-fA-F]+)")
# A rule matches a cut name's visible part surely when its first match there ends two or more characters before the
# cut (the rules' look-aheads read at most two characters), or, for a match at the very end, when it matches with each
# of these completions (a one- or two-character look-ahead holds for letters, digits, underscores, brackets and spaces
# alike); a '$'-anchored match never does, nor a match that needs a hidden character.
_TAILS = ("a", "0", "_", "<", "(", " ", "ed")
# A kernel's own qualified name, as demangled: identifiers, '::', the anonymous namespace spellings.
_QUALIFIED = re.compile(r"(?:\(anonymous namespace\)|<unnamed>|[a-z_$][\w$]*|::)+")


def _surely(pattern: re.Pattern[str], visible: str) -> bool:
    m = pattern.search(visible)
    if m is None:
        return False
    return m.end() <= len(visible) - 2 or all(pattern.search(visible + tail) for tail in _TAILS)


def _whole_names(lowered: str) -> list[int]:
    """Where the prefixes of a (lower-cased) cut name end that end where a kernel's own qualified name ends, outermost
    first: the kernel's name when '<' or '(' follows it, then — while a template bracket follows — the name of its
    first template argument (a wrapper such as cutlass::device_kernel<…> names the kernel class there). [] when the
    cut falls inside the kernel's own name."""
    ends: list[int] = []
    pos = 5 if lowered.startswith("void ") else 0
    while (m := _QUALIFIED.match(lowered, pos)) and m.end() < len(lowered):
        ends.append(m.end())
        if lowered[m.end()] != "<":
            break
        pos = m.end() + 1
    return ends


def _cut_verdict(rules: Rules, visible: str, lowered: str) -> tuple[Rule | None, str, str]:
    """The rule that decides a cut name and why what is hidden cannot change it — or None and '' when it can — and
    what the visible part says.

    The first rule the visible part surely matches gives the verdict, if no rule tried before it with another verdict
    can match in the hidden part: (1) every rule up to it says 'no'; (2) it carries a `cut` reason (rules.toml: its
    match shows what would decide otherwise, e.g. an xmma convolution's operand types) and the visible part surely
    matches its `cut_when` pattern where it has one (the part of the name that reason rests on); or (3) the kernel's
    own name is whole — only template arguments or parameters are hidden — and the rules give that name alone (or,
    for a wrapper that decides nothing, the name of its first template argument) the same verdict."""
    rule = next((r for r in rules.verdict if _surely(r.pattern, lowered)), None)
    if rule is None or rule.value == "unknown":
        return None, "", "unknown"
    seen = rule.value
    for r in rules.verdict:
        if r.value != "no":
            break
        if r is rule:
            return rule, "every rule tried before this one says 'no' too", seen
    if rule.cut and (rule.cut_when is None or _surely(rule.cut_when, lowered)):
        return rule, rule.cut, seen
    for end in _whole_names(lowered):
        decided = _first(rules.verdict, lowered[:end])
        if decided is not None and decided.value != "unknown":
            if decided.value != rule.value:
                return None, "", seen
            head = (visible if len(visible) == len(lowered) else lowered)[:end]
            shown = head if len(head) <= 80 else "…" + head[-79:]
            return rule, (f"the kernel's own name ('{shown}') is whole and says '{decided.value}' by itself: only "
                          "template arguments or parameters are hidden"), seen
    return None, "", seen


def classify(name: str) -> Classification:
    """Classify one demangled kernel name. Pure: the same name always gets the same answer.

    A name cut short by the profiler ('sm80_xmma_gemm_f32f32_…') is classified on what is visible; a verdict the
    hidden part could overturn (a '_ffma_' further on turns 'xmma' into CUDA cores) becomes 'unknown' (_cut_verdict
    says when it cannot)."""
    bare = name.strip()
    if bare in _NO_NAME or _NUMBER_NAME.fullmatch(bare):
        said = "the capture holds no name for this kernel" if bare in _NO_NAME else \
            f"its name is a number ('{bare[:40]}'): an id whose text the capture lacks, not a kernel's name"
        return Classification(name, "unknown", "", "other",
                              f"{said} — nothing to classify it by; counters can decide (nvprof-wrap verify)",
                              "no-name")
    rules = load_rules()
    long = len(name) > MAX_CLASSIFIED_CHARS  # read only its start, as a name the profiler cut (limits.py)
    mark = next((m for m in CUT if name.endswith(m)), "") if not long else ""
    visible = name[:MAX_CLASSIFIED_CHARS] if long else name[:len(name) - len(mark)]
    lowered = visible.lower()
    if long or mark:
        verdict, why_kept, seen = _cut_verdict(rules, visible, lowered)
    else:
        verdict, why_kept = _first(rules.verdict, lowered), ""
    family, precision = _first(rules.family, lowered), _precision(rules, visible)
    if (long or mark) and verdict is None:
        why = (f"name longer than {MAX_CLASSIFIED_CHARS:,} characters: its first {MAX_CLASSIFIED_CHARS:,} say "
               f"'{seen}', but the rest may hold evidence that changes it") if long else \
            (f"name cut short (by a console table's width, or a file cut off there): use --format csv (nsys stats "
             f"--format csv, ncu --csv give whole names) — the visible part says '{seen}', but the hidden part may "
             "hold evidence that changes it")
        return Classification(name, "unknown", precision, family.value if family else "other", why, "cut-name")
    tensor_core = verdict.value if verdict else "unknown"
    if precision == "tf32" and tensor_core == "no":
        precision = "fp32"  # TF32 is a tensor-core math mode: off them the data is fp32 (a split-K reduction, say)
    reason = verdict.reason if verdict else _DEFAULT_REASON
    if why_kept:
        reason += f" (the name is cut, but what is hidden cannot change this: {why_kept})"
    return Classification(
        name=name,
        tensor_core=tensor_core,
        precision=precision,
        family=family.value if family else "other",
        reason=reason,
        rule=verdict.id if verdict else "",
    )


def classify_many(names: Iterable[str], *, side_by_side: bool = False, beside: int = 0) -> list[Classification]:
    """Classify distinct names once each, in input order. Names classified before in this process (a reader
    classifies its capture's names while its series' worker runs: timeline/series.Ahead) are not classified again.
    side_by_side: the names not classified yet are shared out between this process and forked workers (_shared), on
    the cores that `beside` processes of the caller's own, running meanwhile, leave free (the report's evidence
    once the captures are read: none; a reader while its series' worker runs: classify_meanwhile)."""
    done = _done()
    seen: dict[str, Classification | None] = {}
    for n in names:
        if n not in seen:
            seen[n] = done.get(n)
    todo = [n for n, c in seen.items() if c is None]
    for c in _shared(todo, beside) if side_by_side else map(classify, todo):
        seen[c.name] = c
    got = cast(dict[str, Classification], seen)  # every name classified now
    if len(done) + len(got) > MAX_DONE:
        done.clear()
    done.update(got)
    return list(got.values())


PER_WORKER = 500  # names from which classifying side by side takes one more process. Measured on 2 cores, a
# generated nsys export's 1,496 names (73 µs each): the report's evidence 0.155 → 0.105 s, the whole report of 2M
# launches 1.32-1.45 → 1.28-1.31 s (8 rounds interleaved), of 100k launches without the series 0.60-0.62 → 0.56-0.57
# s. Below ~1,000 names (two parts) not timed: a fork, the answer's pickle and the wait are then a larger share


def classify_meanwhile(names: Iterable[str]) -> list[Classification]:
    """classify_many for a reader while its series' worker runs (timeline/series.Ahead's meanwhile): side by side on
    the cores that worker leaves — on 2 cores, here alone."""
    return classify_many(names, side_by_side=True, beside=1)


def _shared(names: list[str], beside: int = 0) -> list[Classification]:
    """classify() of each name, the list cut into one part per PER_WORKER names (at most one per core left by the
    caller's `beside` other processes): the first classified here, each other one in a forked worker
    (system/fork.py; here where forking is not possible)."""
    parts = min(cores() - beside, len(names) // PER_WORKER) if can_fork() else 1
    if parts < 2:
        return [classify(n) for n in names]
    size = -(-len(names) // parts)
    workers = [Forked(_classified, names[i:i + size]) for i in range(size, len(names), size)]
    try:
        got = _classified(names[:size])
        for w in workers:
            got += w.result()
    except BaseException:  # Ctrl-C, SIGTERM or a worker's error: the others are ended, not waited for
        for w in workers:
            w.cancel()
        raise
    return got


def _classified(names: list[str]) -> list[Classification]:
    return [classify(n) for n in names]


MAX_DONE = 100_000  # names kept classified in a process at most (~0.5 KB each): past it, the memo starts over
# the rules' table → what classify gave each name under it (kept with the table, as _NEEDED's strings)
_DONE: list[tuple[Rules, dict[str, Classification]]] = []


def _done() -> dict[str, Classification]:
    rules = load_rules()
    if not _DONE or _DONE[0][0] is not rules:
        _DONE[:] = [(rules, {})]
    return _DONE[0][1]
