"""XLA's own evidence for the kernels it generates (``gemm_fusion_dot_3``, ``loop_add_fusion``, ``wrapped_convert``):
their names say nothing of precision, but XLA's optimized HLO (``--xla_dump_to=DIR --xla_dump_hlo_as_text``) says what
each fusion computes.

A kernel launched for the HLO instruction ``%gemm_fusion_dot.3`` is named ``gemm_fusion_dot_3`` (XLA's
SanitizeFunctionName turns '.' and '-' into '_'). XLA launches one kernel for identical fusions: the module's
``thunk_sequence.txt`` names the kernel each thunk launches, and its ``thunk_metadata.txt`` the HLO instruction of each
thunk id, so ``%gemm_fusion_dot.18`` may run as ``gemm_fusion_dot_12``. Both ways are read.

For a fusion: the ``dot`` / ``convolution`` instructions of its computation (and of the computations that one
calls), each judged by its operands' element types and its ``operand_precision`` / ``algorithm`` (xla_hlo.toml, first
rule that matches); a fusion without any is elementwise or reduction work on CUDA cores ("no"). A kernel name that
different modules (or dots) answer differently is "unknown", saying so.
"""
from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from nvprof_wrap.classify.static import StaticVerdict, bounded_files
from nvprof_wrap.errors import BadInput
from nvprof_wrap.system import files
from nvprof_wrap.system.limits import MAX_HLO_BYTES, MAX_HLO_DEPTH, MAX_HLO_ENTRIES, MAX_HLO_FILES, MAX_HLO_TOTAL_BYTES

SOURCE = "xla-dump"
SUFFIX = "after_optimizations.txt"
# module_0042.jit_update.sm_9.0a_gpu_after_optimizations.txt -> module_0042.jit_update (the thunk files' prefix)
_MODULE = re.compile(r"(.+?)\.(?:sm_\S+?_)?(?:gpu_)?after_optimizations\.txt$")
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%([\w.\-]+)\s*\(")
_DEFINED = re.compile(r"^[ \t]+(?:ROOT[ \t]+)?%([\w.\-]+)[ \t]*=", re.MULTILINE)
_INSTRUCTION = re.compile(r"^\s+(?:ROOT\s+)?%([\w.\-]+)\s*=\s*")
_ELEMENT = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")
_OPCODE = re.compile(r"\s*([\w\-]+)\(")
_OPERAND = re.compile(r"%([\w.\-]+)(?:#(\d+))?")  # '%fusion.1#1': element 1 of its tuple
_CALLS = re.compile(r"(?:calls|to_apply|body|condition)=(%[\w.\-]+(?:,\s*%[\w.\-]+)*)")
_FUSION_KIND = re.compile(r"\bkind=(k\w+)")
_BACKEND_KIND = re.compile(r'"fusion_backend_config":\{.*?"kind":"([^"]+)"')
_TARGET = re.compile(r'custom_call_target="([^"]+)"')
_PRECISION = re.compile(r"operand_precision=\{([^}]*)\}")
_ALGORITHM = re.compile(r"\balgorithm=(\w+)")
_SEQUENCE = re.compile(r"^(\d+):\s+(\w+)\s+\[[^\]\n]*\]\s+(\S+)", re.MULTILINE)
_ANNOTATION = re.compile(r'profile_annotation:\s*"([^"]*)"')
_THUNK_ID = re.compile(r"thunk_id:\s*(\d+)")
_MAX_NESTING = 8  # fusions call fusions (Triton's nested GEMM fusions: 2 levels); deeper is not followed
_GEMM_TARGETS = ("__cublas$gemm", "__cublas$lt$matmul", "__cudnn$conv", "__cudnn$fmha")


@dataclass(frozen=True)
class Rule:
    id: str
    operands: tuple[str, ...]
    algorithms: tuple[str, ...] | None  # None: any
    precisions: tuple[str, ...] | None
    tensor_core: str
    precision: str
    reason: str
    source: str
    needs_counters: bool


@dataclass(frozen=True)
class Answer:
    """What one HLO instruction computes, as a verdict."""

    tensor_core: str
    precision: str
    detail: str


@cache
def rules() -> tuple[Rule, ...]:
    data = tomllib.loads(resources.files("nvprof_wrap.classify").joinpath("xla_hlo.toml").read_text())
    return tuple(Rule(r["id"], tuple(r["operands"]),
                      tuple(r["algorithms"]) if "algorithms" in r else None,
                      tuple(r["precisions"]) if "precisions" in r else None,
                      r["tensor_core"], r.get("precision", ""), r["reason"], r["source"],
                      bool(r.get("needs_counters", False))) for r in data["rule"])


def kernel_name(hlo_name: str) -> str:
    """The name XLA gives the kernel of an HLO instruction (llvm_ir::SanitizeFunctionName)."""
    return hlo_name.replace(".", "_").replace("-", "_")


@dataclass(frozen=True)
class Instr:
    name: str
    element: str | None  # the result's element type; None for a tuple
    dims: tuple[int, ...] | None  # the result's dimensions; None for a tuple or a dynamic shape
    opcode: str
    operands: tuple[str, ...]
    attrs: str
    # a tuple's first element's dimensions: a cuBLAS custom call's result (its second is the workspace)
    first: tuple[int, ...] | None = None
    elements: tuple[tuple[int, ...] | None, ...] = ()  # a tuple's elements' dimensions (None: not static)
    element_types: tuple[str, ...] = ()  # a tuple's elements' element types
    picks: tuple[int | None, ...] = ()  # per operand, the element of its tuple it names ('%fusion.1#1'), else None

    def _operand(self, i: int, comp: dict[str, Instr]) -> tuple[Instr | None, int | None]:
        """Operand i's instruction (None: not in comp) and the element of its tuple it names (None: the whole)."""
        return (comp.get(self.operands[i]) if i < len(self.operands) else None,
                self.picks[i] if i < len(self.picks) else None)

    def operand_type(self, i: int, comp: dict[str, Instr]) -> str | None:
        """The element type of operand i (of the tuple element it names, where it names one), or None."""
        got, pick = self._operand(i, comp)
        if got is None or pick is None:
            return got.element if got is not None else None
        return got.element_types[pick] if pick < len(got.element_types) else None

    def operand_dims(self, i: int, comp: dict[str, Instr]) -> tuple[int, ...] | None:
        """The dimensions of operand i (of the tuple element it names, where it names one), or None."""
        got, pick = self._operand(i, comp)
        if got is None or pick is None:
            return got.dims if got is not None else None
        return got.elements[pick] if pick < len(got.elements) else None


def _close(text: str, start: int) -> int:
    """The index just past the parenthesis that closes the one at ``start`` (or the end of ``text``)."""
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _instr(line: str) -> Instr | None:
    m = _INSTRUCTION.match(line)
    if not m:
        return None
    pos = m.end()
    dims: tuple[int, ...] | None = None
    first: tuple[int, ...] | None = None
    elements: tuple[tuple[int, ...] | None, ...] = ()
    types: tuple[str, ...] = ()
    if line.startswith("(", pos):  # a tuple shape
        end = _close(line, pos)
        found = list(_ELEMENT.finditer(line, pos + 1, end - 1))
        elements = tuple(tuple(int(d) for d in e.group(2).split(",") if d)
                         if re.fullmatch(r"[0-9,]*", e.group(2)) else None for e in found)
        types = tuple(e.group(1) for e in found)
        first = elements[0] if elements and _ELEMENT.match(line, pos + 1) else None
        element, pos = None, end
    else:
        e = _ELEMENT.match(line, pos)
        element = e.group(1) if e else None
        if e and re.fullmatch(r"[0-9,]*", e.group(2)):  # not a dynamic one ('<=128'): its FLOPs are unknown
            dims = tuple(int(d) for d in e.group(2).split(",") if d)
        space = line.find(" ", pos)
        pos = len(line) if space < 0 else space
    op = _OPCODE.match(line, pos)
    if not op:
        return None
    end = _close(line, op.end() - 1)
    refs = _OPERAND.findall(line, op.end(), end - 1)
    return Instr(m.group(1), element, dims, op.group(1), tuple(name for name, _k in refs), line[end:], first,
                 elements, types, tuple(int(k) if k else None for _n, k in refs))


class Module:
    """One module's optimized HLO: its computations' instructions, by name."""

    def __init__(self, text: str) -> None:
        self.computations: dict[str, dict[str, Instr]] = {}
        self.where: dict[str, str] = {}  # instruction -> its computation
        self.entry: str | None = None  # the ENTRY computation: its instructions run once an execution
        current: dict[str, Instr] | None = None
        name = ""
        for line in text.splitlines():
            if not line:
                continue
            if line[0] != " ":
                c = _COMPUTATION.match(line)
                if c:
                    name, current = c.group(1), {}
                    self.computations[name] = current
                    if line.startswith("ENTRY"):
                        self.entry = name
                elif line.startswith("}"):
                    current = None
                continue
            if current is None:
                continue
            i = _instr(line)
            if i is not None:
                current[i.name] = i
                self.where[i.name] = name

    def answer(self, hlo_name: str) -> Answer | None:
        """What the instruction ``hlo_name`` computes, or None when it is no fusion or GEMM custom call."""
        comp = self.where.get(hlo_name)
        if comp is None:
            return None
        ins = self.computations[comp][hlo_name]
        if ins.opcode == "custom-call":
            t = _TARGET.search(ins.attrs)
            if t is None or not t.group(1).startswith(_GEMM_TARGETS):
                return None
            return _judge([(ins, self.computations[comp])], f"XLA custom call {hlo_name} ({t.group(1)})")
        if ins.opcode != "fusion":
            return None
        kind = _BACKEND_KIND.search(ins.attrs) or _FUSION_KIND.search(ins.attrs)
        what = f"XLA fusion {hlo_name} ({kind.group(1) if kind else 'fusion'})"
        dots = self._dots(ins, 0, set())
        if not dots:
            return Answer("no", "", f"{what}: no dot or convolution inside (elementwise / reduction on CUDA cores)")
        return _judge(dots, what)

    def dots(self, hlo_name: str) -> list[tuple[Instr, dict[str, Instr]]] | None:
        """The dots and convolutions one launch of the fusion ``hlo_name`` runs, each with its computation; None
        when it is no fusion."""
        comp = self.where.get(hlo_name)
        ins = self.computations[comp][hlo_name] if comp is not None else None
        return self._dots(ins, 0, set()) if ins is not None and ins.opcode == "fusion" else None

    def _dots(self, ins: Instr, depth: int, seen: set[str]) -> list[tuple[Instr, dict[str, Instr]]]:
        """The dots and convolutions in the computations ``ins`` calls, with the computation each is in."""
        out: list[tuple[Instr, dict[str, Instr]]] = []
        for group in _CALLS.findall(ins.attrs):
            for callee, _element in _OPERAND.findall(group):
                comp = self.computations.get(callee)
                if comp is None or callee in seen or depth >= _MAX_NESTING:
                    continue
                seen.add(callee)
                for i in comp.values():
                    if i.opcode in ("dot", "convolution", "scaled-dot"):
                        out.append((i, comp))
                    elif _CALLS.search(i.attrs):
                        out.extend(self._dots(i, depth + 1, seen))
        return out


def _judge(dots: list[tuple[Instr, dict[str, Instr]]], what: str) -> Answer:
    answers = {_dot(d, comp) for d, comp in dots}
    if len(answers) == 1:
        a = answers.pop()
        return Answer(a.tensor_core, a.precision, f"{what}: {a.detail}")
    return Answer("unknown", "", f"{what}: its dots differ: " + "; ".join(sorted(a.detail for a in answers)))


def _dot(d: Instr, comp: dict[str, Instr]) -> Answer:
    """One dot's verdict: the first rule its operand types, precision and algorithm match."""
    types = [d.operand_type(i, comp) for i in range(min(2, len(d.operands)))]
    p = _PRECISION.search(d.attrs)
    precisions = tuple(x.strip().lower() for x in p.group(1).split(",")) if p else ("default",)
    a = _ALGORITHM.search(d.attrs)
    algorithm = a.group(1) if a else ""
    said = f"{d.opcode} %{d.name} of {' × '.join(t or '?' for t in types)}" + (
        f", algorithm={algorithm}" if algorithm else "") + (f", operand_precision={{{p.group(1)}}}" if p else "")
    if len(types) < 2 or None in types:
        return Answer("unknown", "", f"{said}: operand types not found")
    for r in rules():
        if (all(t in r.operands for t in types) and (r.algorithms is None or algorithm in r.algorithms)
                and (r.precisions is None or all(x in r.precisions for x in precisions))):
            check = " (what XLA allows; to be confirmed with hardware counters)" if r.needs_counters else ""
            return Answer(r.tensor_core, r.precision, f"{said}: {r.reason}{check} [xla_hlo.toml {r.id}]")
    return Answer("unknown", "", f"{said}: no rule in xla_hlo.toml for it")


def _read(path: Path, budget: int) -> str | None:
    """A regular file's text (never a link, FIFO or device; at most MAX_HLO_BYTES), or None."""
    try:
        data = files.read_regular(path, min(MAX_HLO_BYTES, budget))
    except (BadInput, OSError):
        return None
    return data.decode("utf-8", "replace")


def _launched(folder: Path, prefix: str, budget: int) -> dict[str, set[str]]:
    """Kernel name -> the HLO instructions whose thunks launch it (the module's thunk files), if XLA wrote them."""
    seq = _read(folder / f"{prefix}.thunk_sequence.txt", budget)
    meta = _read(folder / f"{prefix}.thunk_metadata.txt", budget)
    if not seq or not meta:
        return {}
    thunks = _thunk_hlo(meta)
    out: dict[str, set[str]] = {}
    for index, kind, kernel in _SEQUENCE.findall(seq):
        hlo = thunks.get(int(index))
        if hlo and kind in ("kKernel", "kCustomKernel"):
            out.setdefault(kernel, set()).add(hlo)
    return out


def _thunk_hlo(meta: str) -> dict[int, str]:
    """thunk_metadata.txt's thunk id → its HLO instruction (the thunk's profile annotation)."""
    out: dict[int, str] = {}
    for block in meta.split("thunk_metadata {")[1:]:
        a, i = _ANNOTATION.search(block), _THUNK_ID.search(block)
        if a and i:
            out[int(i.group(1))] = a.group(1)
    return out


def dump_files(dirs: Iterable[Path]) -> Iterable[Path]:
    """The optimized-HLO texts under ``dirs`` (bounded: static.bounded_files)."""
    return bounded_files(dirs, lambda n: n.endswith(SUFFIX), MAX_HLO_FILES, MAX_HLO_ENTRIES, MAX_HLO_DEPTH)


def modules(names: set[str], dirs: Iterable[Path]) -> Iterator[tuple[str, Module, dict[str, set[str]]]]:
    """Each dumped module that launches some of ``names``: (its prefix, 'module_0042.jit_update'; its HLO; kernel
    name -> the HLO instructions that launch it), within the dumps' byte budget."""
    budget = MAX_HLO_TOTAL_BYTES
    for path in dump_files(dirs):
        m = _MODULE.match(path.name)
        text = _read(path, budget) if m else None
        if text is None or m is None:
            continue
        budget -= len(text)
        # The thunk files say which instructions launch each kernel; without them, the instruction of that name.
        launched = _launched(path.parent, m.group(1), budget) or _defined(text, names)
        wanted = {k: ops for k, ops in launched.items() if k in names}
        if wanted:
            yield m.group(1), Module(text), wanted


def scan(names: set[str], dirs: Iterable[Path]) -> list[StaticVerdict]:
    """Verdicts for those of ``names`` (kernel names) that XLA's dumps in ``dirs`` generated."""
    # kernel -> (tensor_core, precision) -> {detail: modules}: only verdicts disagreeing make a kernel unknown
    found: dict[str, dict[tuple[str, str], dict[str, set[str]]]] = {}
    for prefix, module, wanted in modules(names, dirs):
        for kernel, ops in sorted(wanted.items()):
            for op in sorted(ops):
                a = module.answer(op)
                if a is not None:
                    found.setdefault(kernel, {}).setdefault((a.tensor_core, a.precision), {}).setdefault(
                        a.detail, set()).add(prefix)
    out = []
    for kernel, answers in sorted(found.items()):
        if len(answers) == 1:
            (verdict, precision), details = next(iter(answers.items()))
            # the instruction the kernel is named after first (XLA names a shared kernel after one of them)
            detail, where = min(details.items(), key=lambda d: (kernel_name(d[0].split()[2]) != kernel, d[0]))
            more = sum(len(m) for m in details.values()) - 1
            out.append(StaticVerdict(kernel, verdict, f"{detail} (HLO of {min(where)}"
                                     + (f", and {more} more instruction(s) alike)" if more else ")"),
                                     SOURCE, precision))
        else:
            detail = "XLA's modules answer differently: " + "; ".join(
                f"{min(min(d.values()))}: {min(d)}" for _, d in sorted(answers.items()))
            out.append(StaticVerdict(kernel, "unknown", detail, SOURCE))
    return out


def _defined(text: str, names: set[str]) -> dict[str, set[str]]:
    """Kernel name -> the HLO instructions defined in ``text`` whose sanitized name it is, for ``names``."""
    out: dict[str, set[str]] = {}
    for m in _DEFINED.finditer(text):
        kernel = kernel_name(m.group(1))
        if kernel in names:
            out.setdefault(kernel, set()).add(m.group(1))
    return out


def by_program(programs: set[int], dirs: Iterable[Path]) -> dict[int, tuple[str, Module, Path]]:
    """The dumped modules of ``programs`` (the number of a dump's prefix, 'module_226266.jit_dot': the program_id
    of XLA's execution ranges), each with its prefix and folder, within the dumps' byte budget; the first of a number
    wins."""
    out: dict[int, tuple[str, Module, Path]] = {}
    budget = MAX_HLO_TOTAL_BYTES
    for path in dump_files(dirs):
        m = _MODULE.match(path.name)
        number = re.match(r"module_(\d+)\.", path.name)
        if m is None or number is None or int(number.group(1)) not in programs or int(number.group(1)) in out:
            continue
        text = _read(path, budget)
        if text is None:
            continue
        budget -= len(text)
        out[int(number.group(1))] = (m.group(1), Module(text), path.parent)
    return out


# one line of thunk_sequence_after_thunk_passes.txt: '    004: kCublasLtMatmul [prev=003 (1) | …] kCublasLtMatmul'
_COMMAND = re.compile(r"^([ \t]*)(\d+):[ \t]+(\w+)[ \t]+\[[^\]\n]*\][ \t]*(\S*)", re.MULTILINE)
KERNEL_COMMANDS = ("kKernel", "kCustomKernel")


@dataclass(frozen=True)
class Command:
    """One command of an XLA command buffer: its thunk's kind, the kernel it launches (kKernel, kCustomKernel; else
    the kind again, as XLA writes it) and its HLO instruction (thunk_metadata.txt's profile annotation), if named."""

    kind: str
    kernel: str
    hlo: str | None


def command_buffers(folder: Path, prefix: str) -> list[tuple[Command, ...]]:
    """The module's command buffers (its CUDA graphs), each its commands in order — a graph's node n is command n —,
    from the thunk files XLA writes after its thunk passes; commands nested in a command (a loop's body) are not the
    graph's nodes and are left out. [] where the files are not there."""
    seq = _read(folder / f"{prefix}.thunk_sequence_after_thunk_passes.txt", MAX_HLO_TOTAL_BYTES)
    meta = _read(folder / f"{prefix}.thunk_metadata.txt", MAX_HLO_TOTAL_BYTES)
    if not seq or not meta:
        return []
    hlo = _thunk_hlo(meta)
    out: list[list[Command]] = []
    level: int | None = None  # the indent of the open buffer's commands; None: no buffer open
    for indent, index, kind, kernel in _COMMAND.findall(seq):
        if not indent:
            level = None
            if kind == "kCommandBuffer":
                out.append([])
                level = -1
            continue
        if level is None:
            continue
        if level == -1:
            level = len(indent)
        if len(indent) == level:
            out[-1].append(Command(kind, kernel or kind, hlo.get(int(index))))
    return [tuple(b) for b in out if b]
