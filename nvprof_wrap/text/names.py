"""Shortening demangled C++ kernel names for tables and messages (the whole name stays in --wide, JSON and CSV)."""
from __future__ import annotations

import itertools
import re
from typing import NamedTuple


def without_parameters(name: str, whole_if_all: bool = False) -> str:
    """The name without its trailing parameter list: 'k<float>(double, float*)' → 'k<float>'. A name that is one
    parenthesised group gives '' (or itself, with whole_if_all)."""
    if not name.endswith(")"):
        return name
    # From bracket to bracket, leftwards (str.rfind): a parameter list of hundreds of characters is not walked one
    # character at a time in Python (1,496 generated names: 6 ms → 1.3 ms; the HTML's kernel table and the
    # classification's precision both take it). Each kind of bracket is searched for again only left of the one last
    # found, which stays the nearest one until it is passed: every character is read at most once per kind (linear,
    # as the loop was, on a name of 100,000 ')' too).
    depth = 0
    close, open_ = name.rfind(")"), name.rfind("(")
    while True:
        if close > open_:
            depth += 1
            close = name.rfind(")", 0, close)
        elif open_ >= 0:
            depth -= 1
            if depth == 0:
                return name[:open_] if open_ > 0 or not whole_if_all else name
            open_ = name.rfind("(", 0, open_)
        else:
            return name


def _strip_params(name: str) -> str:
    """Drop the trailing parameter list '(...)' of a demangled function name (a name that is nothing else stays)."""
    return without_parameters(name, whole_if_all=True)


_ANGLES = re.compile(r"([<>])")


def _collapse_templates(name: str, keep_depth: int) -> str:
    """The name with template arguments deeper than keep_depth levels folded: 'a<b<c>>' at 1 → 'a<b<…>>'."""
    if "<" not in name and ">" not in name:
        return name
    if len(name) > _VECTOR_FROM and _SPARE not in name:
        return _collapse_vectorised(name, keep_depth)
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


_VECTOR_FROM = 4096  # longer names: one numpy pass (a bracket-heavy 100k-character name took 50 ms in the loop)
_SPARE = "\ue000"  # a private-use character standing for '<…' in the vectorised pass


def _collapse_vectorised(name: str, keep_depth: int) -> str:
    """_collapse_templates' loop as array arithmetic, equal to it: a character stays where the bracket depth after
    it is at most keep_depth, and a '<' that opens level keep_depth + 1 becomes '<…'."""
    from nvprof_wrap.system import blas  # noqa: F401 - first: numpy with one BLAS thread

    # isort: split
    import numpy as np

    codes = np.frombuffer(name.encode("utf-32-le"), dtype=np.uint32).copy()
    opens = codes == ord("<")
    after = np.cumsum(opens.astype(np.int64) - (codes == ord(">")))
    folded = opens & (after == keep_depth + 1)
    codes[folded] = ord(_SPARE)
    kept: bytes = codes[(after <= keep_depth) | folded].tobytes()  # numpy's indexing is untyped: Any
    return kept.decode("utf-32-le").replace(_SPARE, "<…")


# An identifier is tried only where a word starts (and read possessively): at every letter of a 100,000-character name
# without '::' the search would read the rest of the name again, 5 * 10**9 steps (a minute per table); now one pass.
_QUALIFIER = re.compile(r"(?:(?<!\w)[A-Za-z_]\w*+|<unnamed>|\(anonymous namespace\))::")


def shorten(name: str, width: int = 70) -> str:
    """'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, …>(int, …)'
    → 'at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<…>, std::array<…>>'."""
    s = _strip_params(name.strip())
    s = s.removeprefix("void ")
    if len(s) > width and "::" in s:  # namespaces are the least informative part of a long name
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
    return _QUALIFIER.sub("", s) if "::" in s else s  # every qualifier ends in '::'


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



class Wrapper(NamedTuple):
    pattern: re.Pattern[str]  # what is kept is its group "name"
    tag: str  # marks an unwrapped name where another row would otherwise print alike
    source: str  # where the wrapper comes from, and a capture that has it


def _wrapper(pattern: str, tag: str, source: str) -> Wrapper:
    return Wrapper(re.compile(pattern), tag, source)


# Wrappers a framework puts around the name that matters in op and range names: tables show what is inside (the
# whole name stays in --wide, JSON and CSV). The first that matches applies.
OP_WRAPPERS: tuple[Wrapper, ...] = (
    _wrapper(r"^autograd::engine::evaluate_function: (?P<name>.+)$", "autograd: ",
             "PyTorch torch/csrc/autograd/engine.cpp: thread_main wraps every backward node in RECORD_FUNCTION("
             "\"autograd::engine::evaluate_function: \" + node name); every torch.profiler / Kineto capture of a "
             "backward pass (tests/data/h200_runs/kineto_gpt_bf16, samples/keras_reuters_fp16)"),
    _wrapper(r"^torch::autograd::(?P<name>(?:AccumulateGrad\b|CppNode<|GraphRoot\b).*)$", "torch::autograd::",
             "PyTorch torch/csrc/autograd/functions/accumulate_grad.h, custom_function.h: these C++ nodes' name() "
             "carries the namespace ('torch::autograd::AccumulateGrad'; HTA's traces, kineto-deepseek-train-h800)"),
    _wrapper(r"^Optimizer\.step#(?P<name>.+)$", "Optimizer.step#",
             "PyTorch torch/optim/optimizer.py profile_hook_step: record_function(f\"Optimizer.step#{class}.step\")"),
    _wrapper(r"^Optimizer\.zero_grad#(?P<name>.+)$", "Optimizer.zero_grad#",
             "PyTorch torch/optim/optimizer.py zero_grad: record_function(f\"Optimizer.zero_grad#{class}.zero_grad\")"),
    _wrapper(r"^## (?P<name>.+) ##$", "## ",
             "the PyTorch profiler recipe's and torchrec train_pipelines.py's record_function(\"## forward ##\") "
             "convention (HTA's traces, kineto-hta-trace-diff-a100)"),
    # XLA's GPU runtime names its NVTX ranges as TraceMe encodes them (tsl/profiler/lib/traceme_encode.h: 'name#k=v,
    # …#'): the unique id that ends each thunk's said nothing a reader could use, and a cut in the middle kept it and
    # lost the op ('Thu…uffer_1#', 'Thunk:#…lo_op=custom-call.1,…94967298#'); the JAX op and the HLO op are kept
    _wrapper(r"^Thunk:#(?:name=|hlo_op=)?(?P<name>[^#]*?)(?:,unique_hlo_op_id=\d+)?#$", "Thunk: ",
             "XLA's GPU thunks as NVTX ranges ('Thunk:#name=jit(dot)/dot_general,hlo_op=custom-call.1,"
             "unique_hlo_op_id=4294967298#'): nsys captures of JAX (tests/data/xla_dump/jax_mnist_eval.nsys.sqlite.gz, "
             "benchmarks/gpu/numerics_jax.sh's Keras-on-JAX runs)"),
    _wrapper(r"^XlaModule:#hlo_module=(?P<name>[^,#]+)(?:,program_id=\d+)?#$", "XlaModule: ",
             "XLA's compiled programs as NVTX ranges ('XlaModule:#hlo_module=jit_train_step,program_id=287814#'), "
             "the outer ranges of nsys captures of JAX (benchmarks/gpu/numerics_jax.sh's Keras-on-JAX runs)"),
)


def unwrapped(name: str) -> tuple[str, str]:
    """(the name without its framework wrappers, the outermost one's tag) — (name, "") for a name in none. A wrapper
    inside another goes too ('autograd::engine::evaluate_function: torch::autograd::AccumulateGrad')."""
    tags = []
    for _ in range(len(OP_WRAPPERS)):
        found = next(((w, m) for w in OP_WRAPPERS if (m := w.pattern.match(name))), None)
        if found is None:
            break
        tags.append(found[0].tag)
        name = found[1].group("name")
    return name, tags[0] if tags else ""


def inner(name: str) -> str:
    """The name without its framework wrapper (OP_WRAPPERS)."""
    return unwrapped(name)[0]


def middle(text: str, width: int) -> str:
    """The text in ``width`` characters, cut in the middle: the head says what kind of thing it is, the tail (two
    thirds) which one — 'gradient_tape/model_1/conv2_block2_2_conv/Conv2D' → 'gradient_t…ck2_2_conv/Conv2D'."""
    if len(text) <= width:
        return text
    if width < 2:
        return "…"[:width]
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def shorten_ops(names: list[str], width: int) -> list[str]:
    """Op and range names for a table column ``width`` wide: unwrapped (OP_WRAPPERS) and cut in the middle, and
    never two alike unless the whole names are. Where two still print alike: an unwrapped one shows its wrapper's
    tag; then names of one pattern ('replica_4/…/layer_13/…') keep the parts where they differ; then each shows the
    part around where it differs from its nearest look-alike; then #1, #2, … in table order. Deterministic."""
    inner = [unwrapped(n) for n in names]
    short = [middle(s, width) for s, _ in inner]
    full = [s for s, _ in inner]
    for idx in _alike(short, names):
        for i in idx:
            s, tag = inner[i]
            full[i] = tag + s
            short[i] = middle(full[i], width)
    shapes: dict[int, dict[int, str]] = {}  # every row still alike another, by its number of tokens
    for i in sorted(i for idx in _alike(short, names) for i in idx):
        shapes.setdefault(len(_TOKEN.findall(full[i])), {})[i] = full[i]
    for texts in shapes.values():
        for i, cell in _differences(texts, width).items():
            short[i] = cell
    for idx in _alike(short, names):
        nearest = _nearest_prefix([full[i] for i in idx])
        for i in idx:
            short[i] = _around(full[i], nearest.get(full[i], 0), width)
    count: dict[str, int] = {}
    for idx in _alike(short, names):
        for i in idx:
            base = middle(short[i], max(width - 3, 1))
            count[base] = count.get(base, 0) + 1
            short[i] = f"{base} #{count[base]}"
    return short


_TOKEN = re.compile(r"[A-Za-z]+|\d+|[^A-Za-z\d]")


def _differences(texts: dict[int, str], width: int) -> dict[int, str]:
    """Texts of one pattern (as many words, numbers and marks each) shown by what differs between them, each with
    the two tokens before it, the first token and the end: 'replica_4/bert…/layer_13/self_attention/…/dropout' →
    'replica_4…layer_13…3/dropout'. {} when they are not of one pattern or that does not fit."""
    tokens = {i: _TOKEN.findall(t) for i, t in texts.items()}
    if len({len(t) for t in tokens.values()}) != 1:
        return {}
    n = len(next(iter(tokens.values())))
    vary = [j for j in range(n) if len({t[j] for t in tokens.values()}) > 1]
    for context in (2, 1, 0):
        keep = {0} | {k for j in vary for k in range(j - context, j + 1)}
        cells = {i: _kept(t, keep, max(width // 4, 4)) for i, t in tokens.items()}
        if all(len(c) <= width for c in cells.values()) and len(set(cells.values())) == len(set(texts.values())):
            return cells
    return {}


def _kept(tokens: list[str], keep: set[int], tail: int) -> str:
    """The tokens kept, and the last ones up to ``tail`` characters, with one '…' for each run of others."""
    end, room = len(tokens), tail
    while end > 0 and len(tokens[end - 1]) <= room:
        end -= 1
        room -= len(tokens[end])
    out, gap = [], False
    for j, tok in enumerate(tokens):
        if j in keep or j >= end:
            out.append(("…" if gap else "") + tok)
            gap = False
        else:
            gap = True
    return "".join(out) + ("…" if gap else "")


def _around(text: str, at: int, width: int) -> str:
    """The text in ``width`` characters showing its head, its tail and the part from just before ``at`` (where it
    differs from a look-alike): 'FSDP::pre_forward (blocks.21._checkpoint_wrapped_module)' →
    'FSDP::…(blocks.21._che…d_module)'."""
    if len(text) <= width:
        return text
    head, tail = max(width // 5, 1), max(width // 4, 1)
    room = width - head - tail - 2
    if room < 3:
        return middle(text, width)
    start = min(max(head, at - room // 3), len(text) - tail - room)
    if start <= head:
        return middle(text, width)
    return text[:head] + "…" + text[start:start + room] + "…" + text[len(text) - tail:]


# what one demangler writes and another leaves out: a qualifier (`at::native::`, `<unnamed>::`, `(anonymous
# namespace)::`), the type cast of a template's number (`(int)8`, `(unsigned long)3`, `(at::native::NormType)1`), a
# number's suffix (`32u`, `1ul`), a lambda's spelling (`{lambda(float)#1}`, `[lambda(float) (instance 1)]`), a
# function template's parameters (concrete types, or `T1`), `void`, `const` (`const T&`, `T const&`), spacing
_QUALIFIER = re.compile(r"(?:\b[A-Za-z_]\w*|<unnamed>|\(anonymous namespace\))::")
_CAST = re.compile(r"\([A-Za-z_][\w ]*\)\s*(?=-?\d)")  # (int)8, (unsigned long)3, an enum's (NormType)1
_TRUTH = re.compile(r"\b(?:true|false)\b")
_SUFFIX = re.compile(r"\b(\d+)[uUlL]+\b")
_LAMBDA = re.compile(r"\{lambda\(([^(){}]*)\)#(\d+)\}|\[lambda\(([^()\[\]]*)\) \(instance (\d+)\)\]")
_VOID = re.compile(r"\b(?:void|const)\b\s*")  # a return type; const on either side of its type
_SPACE = re.compile(r"\s+")
_PUNCT_SPACE = re.compile(r"\s*([^\w\s])\s*")


def spelling(name: str) -> str:
    """The name as two demanglers' spellings of one kernel both give it. Nsight Compute writes PyTorch's 'void
    at::vectorized_elementwise_kernel<8, at::CUDAFunctor_add<c10::Half>, std::array<char *, 3>>(int, T2, T3)' where
    Nsight Systems, for the same kernel of the same job, writes 'void at::native::vectorized_elementwise_kernel<(int)8,
    at::native::CUDAFunctor_add<c10::Half>, std::array<char *, (unsigned long)3>>(int, T2, T3)' (fixtures/h200: 13 of
    the ncu export's 24 names), and the PyTorch profiler (Kineto) 'void at::native::vectorized_elementwise_kernel<4,
    at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*,
    1ul>)', its lambdas '{lambda(float)#1}' for ncu's '[lambda(float) (instance 1)]'. So the spelling has no
    qualifiers, number casts or suffixes, no 'void' or 'const', one lambda spelling, no function template's
    parameters (what follows a '>': concrete types in one spelling, T1, T2 in another's — template_parameters gives
    them, for parameters_agree) and no spacing around punctuation. Kernels of one capture can share a spelling (two
    namespaces' kernels, a template's overloads): classify/counters.alike uses it only where they do not."""
    return "".join(_pieces(_spelled(name))[0])


def template_parameters(name: str) -> list[list[str]]:
    """The parameters of each function template in the name (each parenthesized group after a '>', in order), each
    as spelling writes its type."""
    return _pieces(_spelled(name))[1]


def parameters_agree(ours: list[list[str]], theirs: list[list[str]]) -> bool:
    """Whether two spellings' template parameters (template_parameters) can be one kernel's: as many groups, and in
    each the same types, but where one writes a template's own names ('T2*', 'TensorInfo<T1,T3>': Nsight's spelling
    of what the profiler writes as the types themselves), each standing for any type — a parameter pack ('T3...')
    for the rest of its group. An 'int' for a 'long' is another kernel (PyTorch changed its index type between
    versions: another build's kernel)."""
    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs):
        for i in range(max(len(a), len(b))):
            x, y = a[i] if i < len(a) else None, b[i] if i < len(b) else None
            if (x or "").endswith("...") or (y or "").endswith("..."):
                break
            if x is None or y is None:
                return False
            if x != y and not (_fits(x, y) or _fits(y, x)):
                return False
    return True


_PLACEHOLDER = re.compile(r"(?<!\w)T\d+(?!\w)")


def _fits(general: str, concrete: str) -> bool:
    """Whether a parameter written with a template's own names ('T2*', 'TensorInfo<T1,T3>') can be the concrete
    one ('long*', 'TensorInfo<float,unsigned int>'): each name stands for any type."""
    if not _PLACEHOLDER.search(general):
        return False
    pattern = ".+?".join(re.escape(part) for part in _PLACEHOLDER.split(general))
    return re.fullmatch(pattern, concrete) is not None


def _spelled(name: str) -> str:
    plain = _TRUTH.sub(lambda m: "1" if m.group() == "true" else "0", _CAST.sub("", _QUALIFIER.sub("", name)))
    plain = _LAMBDA.sub(lambda m: f"lambda({m.group(1) or m.group(3) or ''})#{m.group(2) or m.group(4)}",
                        _SUFFIX.sub(r"\1", plain))
    return _PUNCT_SPACE.sub(r"\1", _SPACE.sub(" ", _VOID.sub("", plain))).strip()


def _pieces(text: str) -> tuple[list[str], list[list[str]]]:
    """(text without each parenthesized group that follows a '>', nested groups and all; each such group's
    top-level parameters). A plain function's parameters stay: they are one type list in every spelling."""
    out: list[str] = []
    groups: list[list[str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "(" and out and out[-1] == ">":
            depth, j, cut = 0, i, [i + 1]
            while j < n:
                c = text[j]
                depth += (c in "(<[{") - (c in ")>]}")
                if c == "," and depth == 1:
                    cut.append(j + 1)
                j += 1
                if depth == 0:
                    break
            inner = [text[a:b - 1] for a, b in zip(cut, [*cut[1:], j])]
            groups.append([] if inner == [""] else inner)
            i = j
            continue
        out.append(ch)
        i += 1
    return out, groups
