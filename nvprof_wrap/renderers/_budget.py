"""The section "Time budget of a step" (analyses/budget.py): a short block of lines in the terminal and Markdown, a
stacked bar with its legend on the HTML page — each drawn from the report's JSON form (docs/json.md
"time_budget"), so a page made from JSON read back shows it too."""
from __future__ import annotations

from typing import Any

from nvprof_wrap.analyses import budget
from nvprof_wrap.analyses.achieved import HOW, HOW_JAX, NONE_IN_DUMP
from nvprof_wrap.model import PROGRAMS
from nvprof_wrap.renderers._frame import t as _t
from nvprof_wrap.renderers._shapes import Lines, Shown
from nvprof_wrap.run.steps import XLA_EXECUTIONS
from nvprof_wrap.text.units import duration, pct

TITLE = "Time budget of a step"
SHORT = {**budget.SHORT,  # in the section's own lines, under "GPU busy" and "GPU idle, the host": longer
         "other_math": "matrix math on CUDA cores", "math_unknown": "matrix math (tensor cores unknown)",
         "api_launch": "launching", "api_sync": "copies and waits", "api_alloc": "allocating",
         "api_other": "other CUDA calls", "outside_cuda": "outside CUDA calls", "idle_unknown": "host not recorded"}
CLASS = {
    "tensor_core": "c-tc", "other_math": "c-om", "math_unknown": "c-unk", "other_kernels": "c-cuda",
    "communication": "c-comm", "copy_htod": "c-h2d", "copy_dtoh": "c-d2h", "copy_dtod": "c-d2d",
    "copy_other": "c-mem", "memset": "c-mset", "api_launch": "c-il", "api_sync": "c-is", "api_alloc": "c-ia",
    "api_other": "c-ix", "outside_cuda": "c-io", "idle_unknown": "c-iu",
}
SMALL = 0.005  # parts below this share of the step are summed into one "other" figure in the lines
_GPU = ("tensor_core", "other_math", "math_unknown", "other_kernels", "communication", "copy_htod", "copy_dtoh",
        "copy_dtod", "copy_other", "memset")


def _ns(seconds: float) -> str:
    return duration(round(seconds * 1e9))


def _which(b: dict[str, Any]) -> str:
    what = "steps" if b["kind"] == "steps" else "time buckets with GPU work"
    span = f" {b['first']}-{b['last']}" if b["kind"] == "steps" else ""
    n = b["slow_left_out"]
    slow = f", {n} slow {'one' if n == 1 else 'ones'} left out" if n else ""
    return f"mean of {b['steps']} {what}{span}{slow}"


def _parts(parts: list[dict[str, Any]]) -> str:
    """The parts of one line, each with its time and share, those under SMALL summed into "N more" — but for the
    two largest where every part is under it (a GPU busy 0.6% of the step read "GPU busy: 4 more 56.6 µs", naming
    nothing), and a lone small part named, not "1 more"."""
    shown = [p for p in parts if p["share"] >= SMALL] or sorted(parts, key=lambda p: -p["seconds"])[:2]
    rest = [p for p in parts if p not in shown]
    if len(rest) == 1:
        shown, rest = shown + rest, []
    out = [f"{SHORT.get(p['name'], p['name'])} {_ns(p['seconds'])} ({pct(p['share'])})" for p in shown]
    if rest:
        out.append(f"{len(rest)} more {_ns(sum(p['seconds'] for p in rest))}")
    return " · ".join(out) or "-"


def lines(data: dict[str, Any]) -> tuple[str, ...]:
    """The budget in three lines: the step, the GPU's busy parts, the idle parts."""
    b = data.get("time_budget")
    if not b:
        return _achieved(data) if data.get("achieved") else ()
    gpu = [p for p in b["parts"] if p["name"] in _GPU]
    idle = [p for p in b["parts"] if p["name"] not in _GPU]
    busy = sum(p["seconds"] for p in gpu)
    step = b["step_s"]
    return ((f"{_which(b)}: {_ns(step)} — GPU busy {_ns(busy)} ({pct(busy / step if step else 0)}), "
            f"idle {_ns(step - busy)} ({pct(1 - busy / step if step else 0)})"),
            f"GPU busy: {_parts(gpu)}",
            f"GPU idle, the host: {_parts(idle)}",
            *_ceiling(data.get("speedup_ceiling_info")), *_achieved(data),
            *_mfu(data.get("mfu"), data.get("series_info")))


def _mfu(m: dict[str, Any] | None, series: dict[str, Any] | None) -> tuple[str, ...]:
    """The MFU line, saying what a step's FLOPs are: its program's own (a JAX job), else the capture's over its steps
    (work between the steps — an evaluation pass — counts in them)."""
    if not m:
        return ()
    program, steps = m.get("program"), (series or {}).get("steps")
    if program:  # one program, or those executed only inside the steps (model.PROGRAMS between them)
        names = list(dict.fromkeys(p.split("#")[0] for p in program.split(PROGRAMS)))
        of = f" ({' and '.join(names)}'s own: the program{'s' if len(names) > 1 else ''} each step executes)"
    else:
        of = f" (the capture's over its {steps:,} steps: work between them, evaluation included, counts)" if steps \
            else ""
    return ((f"Model FLOPs utilisation: {pct(m['mfu'])} — {_flop(m['flops_per_step'])} of matrix ops a "
             f"step{of} in {_ns(m['step_s'])}, against the {m['precision']} peak {m['peak_tflops']:,.1f} TFLOP/s"),)


def _flop(flops: float) -> str:
    """'1.25 TFLOP', '61.4 GFLOP', '3.2 MFLOP': three figures in the unit that fits (a small JAX step's 0.00 TFLOP
    said nothing)."""
    for scale, unit in ((1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP"), (1e3, "kFLOP")):
        if flops >= scale:
            v = flops / scale
            return f"{v:,.2f} {unit}" if v < 10 else f"{v:,.1f} {unit}" if v < 100 else f"{v:,.0f} {unit}"
    return f"{flops:,.0f} FLOP"


def _achieved(data: dict[str, Any]) -> tuple[str, ...]:
    """One line: achieved TFLOP/s per precision against its peak; without FLOPs, how to get them (a JAX job's way
    where XLA's marks say the capture is of one)."""
    found = data.get("achieved")
    unplaced = tuple(_without_thunks(data.get("xla_without_thunks")))
    if not found:
        if data.get("xla_modules"):
            return (f"Achieved TFLOP/s: no FLOPs in this capture — {NONE_IN_DUMP}",) + unplaced
        if data.get("xla_modules") == 0:  # a dump folder without a module's HLO text (packed, or another run's)
            return ((f"Achieved TFLOP/s: no FLOPs in this capture — the XLA dump given holds no module's optimized "
                    f"HLO text; {HOW_JAX}"),)
        jax = data.get("warmup") or (data.get("series_info") or {}).get("source") == XLA_EXECUTIONS
        return (f"Achieved TFLOP/s: no FLOPs in this capture — {HOW_JAX if jax else HOW}",)
    said = ", ".join(f"{p} {a['tflops']:,.1f} TFLOP/s" + (f" of {a['peak_tflops']:,.1f} peak "
                                                           f"({pct(a['tflops'] / a['peak_tflops'])})"
                                                           if a["peak_tflops"] else "")
                     + f" over {_ns(a['seconds'])} of its kernels" for p, a in found.items())
    cover = next(iter(found.values()))["coverage"]
    return ((f"Achieved (the ops' FLOPs over their kernels' time, whole capture; FLOPs known for {pct(cover)} of "
            f"kernel time): {said}"),) + unplaced


def _without_thunks(modules: list[str] | None) -> list[str]:
    """The line on dumped modules whose CUDA graphs' cuBLAS/cuDNN calls have no FLOPs for want of thunk files."""
    if not modules:
        return []
    named = ", ".join(modules[:3]) + (f" and {len(modules) - 3} more" if len(modules) > 3 else "")
    return [(f"no FLOPs for the cuBLAS and cuDNN calls in the CUDA graphs of {named}: the dump has no "
             "thunk_sequence_after_thunk_passes.txt and thunk_metadata.txt, which place a call's kernels (an XLA "
             "older than those files, or the files left out)")]


def _ceiling(info: dict[str, Any] | None) -> tuple[str, ...]:
    """One line: each target precision's ceiling, and what is left at the best of them."""
    if not info or not info["factors"]:
        return ()
    factors = info["factors"]
    best = max(factors, key=lambda f: f["factor"])
    said = ", ".join(f"{f['precision']} ≤ {f['factor']:.2f}×" for f in factors)
    return ((f"Speed-up ceiling of a precision change ({info['gpu']} peaks): {said} — at {best['precision']} the "
            f"step's largest part would be {best['left']} ({pct(best['left_share'])})"),)


def content(s: Shown) -> Lines | None:
    found = lines(s.data)
    return Lines(TITLE if s.data.get("time_budget") else "Achieved TFLOP/s", found) if found else None


def html(s: Shown) -> str:
    """One stacked bar of the step (every part a segment with its tooltip), its legend under it in two columns, in
    one SVG."""
    b = s.data.get("time_budget")
    if not b:
        found = content(s)
        return (f"<h{s.view.level}>{_t(found.title)}</h{s.view.level}>\n<p>{_t(found.lines[0])}</p>\n"
                if found else "")
    level, width, row = s.view.level, 760, 20
    parts = b["parts"]
    height = 32 + row * -(-len(parts) // 2)
    summary = ", ".join(f"{p['label']} {pct(p['share'])}" for p in parts)
    out = [(f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
           f'aria-labelledby="{s.view.ident}-budget"><title id="{s.view.ident}-budget">{_t(TITLE)}: '
           f'{_t(summary)}</title>')]
    x = 0.0
    for p in parts:
        w = p["share"] * width
        out.append(f'<rect class="{CLASS.get(p["name"], "c-other")}" x="{x:.1f}" y="0" width="{w:.1f}" '
                   f'height="22"><title>{_t(p["label"])}: {_ns(p["seconds"])}, {pct(p["share"])}</title></rect>')
        x += w
    for i, p in enumerate(parts):
        x, y = (i % 2) * width // 2, 32 + (i // 2) * row
        out.append(f'<rect class="{CLASS.get(p["name"], "c-other")}" x="{x}" y="{y + 2}" width="12" height="12"/>'
                   f'<text x="{x + 18}" y="{y + 13}">{_t(SHORT.get(p["name"], p["name"]))}</text>'
                   f'<text class="v" x="{x + 230}" y="{y + 13}">{_ns(p["seconds"])} · {pct(p["share"])}</text>')
    said = "".join(f"<p>{_t(line)}</p>\n" for line in lines(s.data)[3:])  # the ceiling, the achieved FLOPs
    return (f"<h{level}>{_t(TITLE)}</h{level}>\n<p>{_t(lines(s.data)[0])}</p>\n" + "".join(out) + "</svg>\n"
            + said)
