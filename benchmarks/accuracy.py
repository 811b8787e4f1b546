"""How often do kernel-name rules get "did this kernel use tensor cores?" right, on labelled kernels?

    python -m benchmarks.accuracy [--labels DIR] [--format table|markdown|json]

Scores nvprof-wrap's rules (``nvprof_wrap/classify/rules.toml``) and the other tools' published
name lists (``benchmarks/other_tools.py``) against every ``*.tsv`` in the labels folder
(columns ``name<TAB>tensor_core<TAB>source``, tensor_core ``yes`` or ``no``), per label file and
overall (names deduplicated across files).

Counting: TP = said yes, truth yes; FP = said yes, truth no; FN = said no, truth yes; TN = said no,
truth no. "unknown" (nvprof-wrap only) is reported apart and counts as not-a-yes: recall =
TP / (TP + FN + unknown with truth yes); accuracy = (TP + TN) / N, so an unknown is never correct.

``--rebuild-labels`` regenerates the two label files this module owns (``h200_counters.tsv``,
``public_named.tsv``) from the shared fixtures; other ``*.tsv`` files in the folder are left alone.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.other_tools import TOOLS as OTHER_TOOLS

ROOT = Path(__file__).resolve().parents[1]
LABELS_DIR = Path(__file__).resolve().parent / "labels"
DEFAULT_FIXTURES = ROOT.parent / "shared" / "fixtures"
HEADER = ("name", "tensor_core", "source")
TRUTHS = ("yes", "no")


# ---------------------------------------------------------------------------------------------
# Labels
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Label:
    name: str
    truth: str  # "yes" | "no"
    source: str
    file: str  # the label file's name


class LabelError(ValueError):
    pass


def read_labels(path: Path) -> list[Label]:
    """One label file. A header row ``name<TAB>tensor_core<TAB>source`` is optional; blank lines and
    lines starting with ``#`` are skipped. Every other line must have exactly three fields."""
    labels: list[Label] = []
    seen: dict[str, str] = {}
    with open(path, encoding="utf-8", newline="") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip("\r\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            if tuple(fields) == HEADER:
                continue
            if len(fields) != 3:
                raise LabelError(f"{path.name}:{lineno}: expected 3 tab-separated fields, got {len(fields)}")
            name, truth, source = (x.strip() for x in fields)
            if not name:
                raise LabelError(f"{path.name}:{lineno}: empty kernel name")
            if truth not in TRUTHS:
                raise LabelError(f"{path.name}:{lineno}: tensor_core must be yes or no, got {truth!r}")
            if name in seen:
                if seen[name] != truth:
                    raise LabelError(f"{path.name}:{lineno}: {name[:80]!r} labelled both {seen[name]} and {truth}")
                continue
            seen[name] = truth
            labels.append(Label(name, truth, source, path.name))
    return labels


def load_labels(folder: Path = LABELS_DIR) -> dict[str, list[Label]]:
    """Every ``*.tsv`` in ``folder``, by file name (sorted)."""
    files = sorted(folder.glob("*.tsv"))
    if not files:
        raise LabelError(f"no *.tsv label files in {folder}")
    return {p.name: read_labels(p) for p in files}


def merged(labels_by_file: dict[str, list[Label]]) -> list[Label]:
    """All labels, one per name (first file wins); the same name with two truths is an error."""
    out: dict[str, Label] = {}
    for labels in labels_by_file.values():
        for lab in labels:
            prev = out.get(lab.name)
            if prev is None:
                out[lab.name] = lab
            elif prev.truth != lab.truth:
                raise LabelError(f"{lab.name[:80]!r}: {prev.file} says {prev.truth}, {lab.file} says {lab.truth}")
    return list(out.values())


# ---------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------
def nvprof_wrap_rule(name: str) -> str:
    from nvprof_wrap.classify import classify
    return classify(name).tensor_core


def all_tools() -> dict[str, Callable[[str], str]]:
    return {"nvprof-wrap": nvprof_wrap_rule, **OTHER_TOOLS}


@dataclass(frozen=True)
class Mistake:
    name: str
    truth: str
    said: str
    file: str

    @property
    def kind(self) -> str:
        if self.said == "unknown":
            return "unknown"
        return "FP" if self.said == "yes" else "FN"


@dataclass
class Score:
    tool: str
    n: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    unknown_yes: int = 0  # said unknown, truth yes
    unknown_no: int = 0  # said unknown, truth no
    mistakes: list[Mistake] = field(default_factory=list)

    @property
    def unknown(self) -> int:
        return self.unknown_yes + self.unknown_no

    @property
    def precision(self) -> float | None:
        said_yes = self.tp + self.fp
        return self.tp / said_yes if said_yes else None

    @property
    def recall(self) -> float | None:
        truth_yes = self.tp + self.fn + self.unknown_yes
        return self.tp / truth_yes if truth_yes else None

    @property
    def accuracy(self) -> float | None:
        return (self.tp + self.tn) / self.n if self.n else None

    def as_dict(self) -> dict:
        return {"tool": self.tool, "n": self.n, "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
                "unknown": self.unknown, "unknown_truth_yes": self.unknown_yes, "unknown_truth_no": self.unknown_no,
                "precision": self.precision, "recall": self.recall, "accuracy": self.accuracy,
                "mistakes": [{"kind": m.kind, "name": m.name, "truth": m.truth, "said": m.said, "file": m.file}
                             for m in self.mistakes]}


def score(tool: str, rule: Callable[[str], str], labels: Iterable[Label]) -> Score:
    s = Score(tool)
    for lab in labels:
        said = rule(lab.name)
        if said not in ("yes", "no", "unknown"):
            raise ValueError(f"{tool} answered {said!r} for {lab.name[:80]!r}")
        s.n += 1
        if said == "unknown":
            if lab.truth == "yes":
                s.unknown_yes += 1
            else:
                s.unknown_no += 1
        elif said == "yes":
            if lab.truth == "yes":
                s.tp += 1
            else:
                s.fp += 1
        elif lab.truth == "yes":
            s.fn += 1
        else:
            s.tn += 1
        if said != lab.truth:
            s.mistakes.append(Mistake(lab.name, lab.truth, said, lab.file))
    return s


@dataclass
class Scope:
    name: str  # a label file's name, or "overall"
    labels: list[Label]
    scores: list[Score]

    @property
    def n_yes(self) -> int:
        return sum(lab.truth == "yes" for lab in self.labels)


def evaluate(labels_by_file: dict[str, list[Label]],
             tools: dict[str, Callable[[str], str]] | None = None) -> list[Scope]:
    """Scores per label file, then overall (names deduplicated across files)."""
    tools = tools or all_tools()
    scopes = [Scope("overall", merged(labels_by_file), [])]
    scopes += [Scope(fname, labels, []) for fname, labels in labels_by_file.items()]
    cache: dict[tuple[str, str], str] = {}

    def memo(tool: str, rule: Callable[[str], str]) -> Callable[[str], str]:
        def answer(name: str) -> str:
            key = (tool, name)
            if key not in cache:
                cache[key] = rule(name)
            return cache[key]
        return answer

    for scope in scopes:
        scope.scores = [score(tool, memo(tool, rule), scope.labels) for tool, rule in tools.items()]
    return scopes


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------
def short(name: str, width: int = 96) -> str:
    name = " ".join(name.split())
    return name if len(name) <= width else name[: width - 1] + "…"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


_COLS = ("tool", "TP", "FP", "FN", "TN", "unknown", "precision", "recall", "accuracy")


def _row(s: Score) -> list[str]:
    unk = "-" if s.tool != "nvprof-wrap" and not s.unknown else str(s.unknown)
    return [s.tool, str(s.tp), str(s.fp), str(s.fn), str(s.tn), unk, _pct(s.precision), _pct(s.recall),
            _pct(s.accuracy)]


def _scope_title(scope: Scope) -> str:
    return (f"{scope.name}: {len(scope.labels)} labelled kernels "
            f"({scope.n_yes} tensor-core, {len(scope.labels) - scope.n_yes} not)")


def _mistake_line(m: Mistake, with_file: bool) -> str:
    where = f"  [{m.file}]" if with_file else ""
    return f"{m.kind:7} said {m.said:7} truth {m.truth:3}  {short(m.name)}{where}"


def render_table(scopes: list[Scope]) -> str:
    out: list[str] = []
    for scope in scopes:
        rows = [list(_COLS)] + [_row(s) for s in scope.scores]
        widths = [max(len(r[i]) for r in rows) for i in range(len(_COLS))]
        out.append(_scope_title(scope))
        for i, r in enumerate(rows):
            cells = (c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths)))
            out.append("  " + "  ".join(cells))
            if i == 0:
                out.append("  " + "  ".join("-" * w for w in widths))
        out.append("")
    overall = scopes[0]
    out.append("Mistakes (overall; FP = said yes, FN = said no, unknown = no verdict):")
    for s in overall.scores:
        out.append(f"  {s.tool}: {len(s.mistakes)}")
        for m in s.mistakes:
            out.append("    " + _mistake_line(m, with_file=True))
    return "\n".join(out) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(scopes: list[Scope]) -> str:
    out: list[str] = []
    for scope in scopes:
        out.append(f"### {_md_escape(_scope_title(scope))}")
        out.append("")
        out.append("| " + " | ".join(_COLS) + " |")
        out.append("|" + "|".join(["---"] + ["---:"] * (len(_COLS) - 1)) + "|")
        for s in scope.scores:
            out.append("| " + " | ".join(_md_escape(c) for c in _row(s)) + " |")
        out.append("")
    out.append("### Mistakes (overall)")
    out.append("")
    out.append("FP = said yes, truth no; FN = said no, truth yes; unknown = no verdict. Names shortened.")
    out.append("")
    for s in scopes[0].scores:
        out.append(f"**{s.tool}**: {len(s.mistakes)}" + ("" if s.mistakes else " (none)"))
        out.append("")
        for m in s.mistakes:
            out.append(f"- {m.kind} (truth {m.truth}): `{short(m.name)}` — {m.file}")
        if s.mistakes:
            out.append("")
    return "\n".join(out) + "\n"


def render_json(scopes: list[Scope], labels_dir: Path) -> str:
    doc = {"labels_dir": str(labels_dir),
           "scopes": [{"scope": sc.name, "n": len(sc.labels), "n_yes": sc.n_yes,
                       "results": [s.as_dict() for s in sc.scores]} for sc in scopes]}
    return json.dumps(doc, indent=2) + "\n"


# ---------------------------------------------------------------------------------------------
# Building the label files this module owns (--rebuild-labels)
# ---------------------------------------------------------------------------------------------
H200_NCU_SOURCE = "h200 ncu hardware counters (matrix instructions net of HFMA2 > 0 on any launch)"
H200_VERIFIED_SOURCE = "h200 torch_ops (counter-verified by ncu on the same script)"
H200_README_SOURCE = "h200 torch_ops (fixture README truth; this kernel is not in the ncu run)"

# The fixture README's truth for the H200 ops script: these families are tensor-core kernels,
# everything else it ran (cutlass simt, sm80 xmma ffma, ATen elementwise/reduce/RNG/copy,
# cuDNN layout transforms, cuBLASLt split-K reduce) is not.
_H200_TC_FAMILIES = re.compile(
    r"^nvjet_sm90_|^sm90_xmma_|^cudnn_generated_fort_native_sdpa_sm90_|cutlass_80_wmma_tensorop_i")


def _spelling_key(name: str) -> str:
    """Kernel identity across ncu / Nsight Systems / torch.profiler spellings of the same kernel."""
    s = re.sub(r"\bvoid\s+", "", name)
    s = s.replace("at::native::", "at::").replace("templates::cuda::", "templates::")
    s = re.sub(r"\((?:int|unsigned int|unsigned long|long|bool|unsigned char)\)", "", s)
    s = re.sub(r"\{lambda\(([^)]*)\)#(\d+)\}", r"[lambda(\1) (instance \2)]", s)
    s = re.sub(r"(\d+)ul\b", r"\1", s)
    s = s.replace("false", "0").replace("true", "1").replace("<unnamed>::", "").replace("(anonymous namespace)::", "")
    s = re.sub(r"\s+", "", s)
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            return s[:i]
    return s


def build_h200_labels(fixtures: Path) -> list[tuple[str, str, str] | str]:
    from nvprof_wrap.readers import ncu_csv, read

    h200 = fixtures / "h200"
    rows: dict[str, tuple[str, str]] = {}
    measured: dict[str, str] = {}
    for v in ncu_csv.read(h200 / "ncu_tensor_metrics.csv").counters:
        if v.tensor_core not in TRUTHS:
            raise LabelError(f"ncu gives no verdict for {v.name[:80]!r}: {v.detail}")
        rows[v.name] = (v.tensor_core, H200_NCU_SOURCE)
        measured[_spelling_key(v.name)] = v.tensor_core
    by_label = json.loads((h200 / "torch_ops_kernels.json").read_text())
    others = {n for names in by_label.values() for n in names}
    others |= {k.name for k in read(h200 / "nsys_torch_ops.sqlite").kernels}
    others |= {k.name for k in read(h200 / "nsys_two_child_processes.sqlite").kernels}
    others.discard("Memset (Device)")  # a memory operation, not a kernel
    for name in sorted(others):
        if name in rows:
            continue
        readme = "yes" if _H200_TC_FAMILIES.search(name) else "no"
        counter = measured.get(_spelling_key(name))
        if counter is not None and counter != readme:
            raise LabelError(f"README truth {readme} disagrees with ncu {counter} for {name[:80]!r}")
        rows[name] = (readme, H200_VERIFIED_SOURCE if counter is not None else H200_README_SOURCE)
    return [(n, t, s) for n, (t, s) in rows.items()]


_DOC = "naming (documented)"
# First match wins. Each rule is a documented naming convention (or, for whole captures, the GPU /
# precision the capture's README records); names that match none stay unlabelled.
_PUBLIC_NAME_RULES: tuple[tuple[str, str, str], ...] = (
    (r"^sm\d+_xmma_\w*_ffma_", "no", "xmma kernel with ffma math: FP32 FMA on CUDA cores"),
    (r"_xmma_pooling_", "no", "pooling kernel (no matrix multiply)"),
    (r"xmma\w*_execute_split_k_kernel", "no",
     ("xmma split-K reduction after the GEMM (counter-verified on H200: no matrix instruction); in this trace each "
     "runs ~6 us right after its ~92 us '_execute_kernel'")),
    (r"^nccl(?:Dev)?Kernel_", "no", "NCCL communication kernel"),
    (r"^nvjet_", "yes", "cuBLAS nvjet GEMM (Hopper wgmma); the same family has tensor-pipe cycles on the H200 ncu run"),
    (r"MmaTensorOp", "yes", "CUTLASS warp-level MmaTensorOp (tensor-core mma.sync)"),
    (r"\bcutlass_(?:\d+_)?(?:wmma_)?tensorop_", "yes", "CUTLASS OpClassTensorOp kernel (tensorop in the name)"),
    (r"\bcutlass_\d+_simt_", "no",
     "CUTLASS OpClassSimt (CUDA cores); cutlass_80_simt_sgemm has 0 tensor-pipe cycles on H200"),
    (r"^sm\d+_xmma_\w*_tensor\d+x\d+x\d+_", "yes", "xmma kernel with an MMA instruction shape (tensorMxNxK)"),
    (r"_h16816gemm_", "yes", "HMMA m16n8k16 GEMM (h16816)"),
    (r"\bflash::flash_fwd_kernel<", "yes", "FlashAttention-2 forward (CuTe SM80 tensor-core MMA)"),
    (r"^(?:cudnn_(?:infer_|train_)?)?(?:volta|turing|ampere)_s(?:gemm|cudnn)_", "no",
     "cuBLAS/cuDNN s-prefixed kernel: FP32 FFMA (tensor-core variants are named h884/s1688/tf32/xmma)"),
    (r"^(?:volta|turing|ampere)_gcgemm_", "no", "cuBLAS complex FP32 GEMM (FFT convolution)"),
    (r"\bat::native::|^void (?:<unnamed>|\(anonymous namespace\))::softmax_warp_", "no",
     "ATen elementwise / reduction / copy / index kernel (no MMA)"),
    (r"cudnn::(?:ops|engines_precompiled)::(?:nchwToNhwc|nhwcToNchw)Kernel", "no", "cuDNN layout transform"),
    (r"\bcudnn::bn_(?:fw|bw)_", "no", "cuDNN batch-norm kernel"),
    (r"\bcask_cudnn(?:_infer|_train)?::compute\w*OffsetsKernel", "no", "cuDNN offset precomputation"),
    (r"\b(?:at_cuda_detail::)?cub::Device", "no", "CUB sort / scan kernel"),
    (r"\bsplitKreduce_kernel<", "no", "cuBLAS split-K reduction (elementwise sum)"),
    (r"\bgenericReformat::", "no", "TensorRT reformat copy"),
    (r"\bpermutationKernel", "no", "cuTENSOR permutation (copy)"),
    (r"::reduction::kernel::ReduceSplitK<", "no", "CUTLASS split-K reduction"),
)
# Captures in which no kernel can have used tensor cores, whatever it is called.
_PUBLIC_CAPTURE_RULES: dict[str, str] = {
    "josiahdavis__profiling-lm__net.sql": "FP32 PyTorch run on V100 (sm70): Volta tensor cores take FP16 only",
    "josiahdavis__profiling-lm__lm.csv": "FP32 PyTorch run on V100 (sm70): Volta tensor cores take FP16 only",
    "m-goldstein__GPU_ML__timeline.nvvp": "FP32 MXNet run on TITAN V (sm70): Volta tensor cores take FP16 only",
    "pytorch__kineto__worker0.1623143089861.pt.trace.json.gz":
        "FP32 ResNet-50 on V100 (sm70): Volta tensor cores take FP16 only",
    "facebookresearch__param__resnet_kineto.json.gz":
        "FP32 ResNet on RTX 2080 Ti (sm75): Turing tensor cores take FP16/INT only",
    "nanzifan__nvprof-result__print-gpu-summary.csv": "TITAN Xp (Pascal, sm61) has no tensor cores",
}


def public_label(name: str, capture: str) -> tuple[str, str] | None:
    for pattern, truth, why in _PUBLIC_NAME_RULES:
        if re.search(pattern, name):
            return truth, f"{_DOC}: {why}"
    if capture in _PUBLIC_CAPTURE_RULES:
        return "no", f"{_DOC}: {_PUBLIC_CAPTURE_RULES[capture]}"
    return None


def build_public_labels(fixtures: Path) -> list[tuple[str, str, str] | str]:
    """Rows grouped by capture; a bare string is a ``# from ...`` comment line naming the capture."""
    from nvprof_wrap.readers import read

    rows: list[tuple[str, str, str] | str] = []
    seen: dict[str, str] = {}
    for path in sorted((fixtures / "public").iterdir()):
        group: list[tuple[str, str, str]] = []
        for name in sorted({k.name for k in read(path).kernels}):
            got = public_label(name, path.name)
            if got is None:
                continue
            truth, why = got
            if name in seen:
                if seen[name] != truth:
                    raise LabelError(f"{name[:80]!r}: labelled {seen[name]} and {truth}")
                continue
            seen[name] = truth
            group.append((name, truth, why))
        if group:
            rows.append(f"from fixtures/public/{path.name}")
            rows.extend(group)
    return rows


def write_labels(path: Path, rows: list[tuple[str, str, str] | str], comment: str) -> None:
    lines = [f"# {line}" for line in comment.strip().splitlines()]
    lines.append("\t".join(HEADER))
    for row in rows:
        if isinstance(row, str):
            lines.append(f"# {row}")
            continue
        name, truth, source = row
        if any(c in name + source for c in "\t\r\n"):
            raise LabelError(f"tab or newline in {name[:80]!r}")
        lines.append(f"{name}\t{truth}\t{source}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def rebuild_labels(fixtures: Path, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    h200, public = out / "h200_counters.tsv", out / "public_named.tsv"
    write_labels(h200, build_h200_labels(fixtures), """
Kernels run on an NVIDIA H200 (sm_90) by the shared fixture ops script (fixtures/h200).
Truth: ncu matrix instructions net of HFMA2 (nvprof_wrap.classify.counters: HMMA/HGMMA - HFMA2, wgmma, IMMA, DMMA
> 0 on any launch) for the ncu spellings; the same kernels
as Nsight Systems / torch.profiler spell them take that verdict; kernels of the same script that the ncu run
did not include are labelled from the fixture README. Built by: python -m benchmarks.accuracy --rebuild-labels
""")
    write_labels(public, build_public_labels(fixtures), """
Kernels from public captures (fixtures/public) whose truth follows from a documented naming
convention or from the capture's GPU/precision; names no rule covers are left out.
Built by: python -m benchmarks.accuracy --rebuild-labels
""")
    training = out / "h200_training_runs.tsv"
    write_labels(training, build_training_labels(TRAINING_COUNTERS), """
Kernels of PyTorch training steps on an NVIDIA H200 (sm_90, torch 2.11, 2026-11-30, benchmarks/gpu/training_truth.sh):
a GPT trainer in fp32 / bf16 (fused AdamW) / fp16 (AMP), ResNet-50 fp32 and an LSTM language model fp32
(workloads/), each measured with `nvprof-wrap verify` (Nsight Compute). Truth: matrix instructions net of HFMA2
(nvprof_wrap.classify.counters) > 0 on any launch. Raw counters: tests/data/h200_runs/train_counters/*.ncu.csv.gz.
Built by: python -m benchmarks.accuracy --rebuild-labels
""")
    return [h200, public, training]


TRAINING_COUNTERS = ROOT / "tests" / "data" / "h200_runs" / "train_counters"


def build_training_labels(folder: Path) -> list[tuple[str, str, str] | str]:
    """One label per kernel name that the counters decide, from every ncu export in ``folder`` (gzipped)."""
    from nvprof_wrap.readers import ncu_csv

    rows: list[tuple[str, str, str] | str] = []
    seen: dict[str, str] = {}
    for gz in sorted(folder.glob("*.ncu.csv.gz")):
        run = gz.name.removesuffix(".ncu.csv.gz")
        verdicts = ncu_csv.read(gz).counters
        group = []
        for v in sorted(verdicts, key=lambda v: v.name):
            if v.tensor_core not in TRUTHS:
                raise LabelError(f"{gz.name}: ncu gives no verdict for {v.name[:80]!r}: {v.detail}")
            if v.name in seen:
                if seen[v.name] != v.tensor_core:
                    raise LabelError(f"{v.name[:80]!r}: counters disagree between runs")
                continue
            seen[v.name] = v.tensor_core
            group.append((v.name, v.tensor_core, f"ncu counters on H200, {run} (2026-11-30): {v.detail}"))
        if group:
            rows.append(f"from {gz.name}")
            rows.extend(group)
    return rows


# ---------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.accuracy", description=__doc__.split("\n\n")[0])
    ap.add_argument("--labels", type=Path, default=LABELS_DIR, help="folder of *.tsv label files")
    ap.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    ap.add_argument("--rebuild-labels", action="store_true",
                    help="regenerate h200_counters.tsv, public_named.tsv and h200_training_runs.tsv in --labels")
    ap.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES, help="the shared fixtures folder")
    args = ap.parse_args(argv)
    try:
        if args.rebuild_labels:
            for p in rebuild_labels(args.fixtures, args.labels):
                print(f"wrote {p} ({len(read_labels(p))} labels, {p.stat().st_size:,} bytes)", file=sys.stderr)
        scopes = evaluate(load_labels(args.labels))
    except LabelError as e:
        print(f"benchmarks.accuracy: {e}", file=sys.stderr)
        return 2
    if args.format == "json":
        sys.stdout.write(render_json(scopes, args.labels))
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(scopes))
    else:
        sys.stdout.write(render_table(scopes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
