"""Markdown: the verdict, the time split and the kernel table. Every cell is escaped so a kernel
name holding markup, pipes or HTML renders as inert text."""
from __future__ import annotations

import html

from nvprof_wrap.renderers import _compare, _doctor, _experiment, _ranks, _rows
from nvprof_wrap.renderers._options import Options
from nvprof_wrap.report import KernelRow, Report, serialise
from nvprof_wrap.report.compare import Comparison
from nvprof_wrap.report.headline import hardware_text, scope_text
from nvprof_wrap.report.kinds import Classifications, Doctor, Experiment, Kernels, Reports, Runs
from nvprof_wrap.text.names import shorten_all, shorten_ops
from nvprof_wrap.text.sanitize import clean

NAME = "markdown"
EXTENSION = ".md"
ALIASES = (".markdown",)
_MD_SPECIAL = "\\`*_{}[]()#+-.!|<>~"


def render(subject, options: Options) -> str:
    """The subject as Markdown: headings, bullet lists and pipe tables, every cell escaped."""
    o = options
    match subject:
        case Report():
            return _report(subject, o.wide, o.limit or 20)
        case Comparison():
            return _comparison(subject)
        case Kernels():
            return _kernel_rows(list(subject.rows), o.wide)
        case Classifications():
            return _table(["name", "tensor core", "precision", "family", "reason"],
                          [[c.name, c.tensor_core, c.precision or "-", c.family, c.reason] for c in subject.items])
        case Experiment():
            return _experiment.as_markdown(list(subject.rows))
        case Doctor():
            return "\n".join(f"- {_esc(line)}" for line in _doctor.lines(subject.facts)) + "\n"
        case Runs():
            return _table(list(_compare.RUN_HEAD), [_compare.run_cells(r) for r in subject.rows])
        case Reports():
            return _rows.one_after_another(subject, lambda r: render(r, o), mark="# ")
    raise TypeError(f"the markdown renderer has no form for {type(subject).__name__}")


def _esc(text: object) -> str:
    s = html.escape(clean(text), quote=False)  # controls shown escaped; <script> → &lt;script&gt; before markdown
    return "".join("\\" + c if c in _MD_SPECIAL and c not in "<>" else c for c in s)


def _table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(_esc(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _kernel_rows(rows: list[KernelRow], wide: bool) -> str:
    names = [k.name for k in rows] if wide else shorten_all([k.name for k in rows], 90)
    return _table(["kernel", "launches", "total ms", "% of kernel time", "tensor core", "precision", "evidence",
                   "reason"],
                  [[name, k.launches, f"{k.total_ns / 1e6:.3f}",
                    f"{100 * k.share:.1f}", k.tensor_core, k.precision or "-", k.evidence, k.reason]
                   for k, name in zip(rows, names)])


def _report(report: Report, wide: bool, limit: int) -> str:
    d = serialise.to_dict(report)
    scope = scope_text(report.scope)
    out = [*[f"**{_esc(line)}**\n" for line in report.headline],
           f"**{_esc(report.verdict.message)}**\n", *([f"_{_esc(scope)}_\n"] if scope else []),
           *[f"- {_esc(h)}" for h in report.hints],
           "\n## Where GPU time went\n",
           _table(["category", "ms", "% of GPU time (kernels, copies, sets)", "count"],
                  [[s["category"], f"{s['total_ns'] / 1e6:.3f}", f"{100 * s['share']:.1f}%", s["count"]]
                   for s in d["time_split"]]),
           ]
    # every table the terminal shows, in the same order (renderers/console.py)
    if report.devices:
        out += ["\n## Per device\n", _groups(report.devices, "device")]
    if report.ranks:
        r = report.ranks
        heads, cells = (_ranks.ROW_HEADS, _ranks.row_cells(r)) if len(r.rows) <= _ranks.ALL_ROWS else \
            (_ranks.SPREAD_HEADS, _ranks.spread_cells(r))
        out += [f"\n## {_ranks.title(r)}\n", _table(list(heads), cells),
                *[f"\n- {_esc(line)}" for line in _ranks.outlier_lines(r)]]
    if len(report.processes) > 1 and not _ranks.folds_processes(report):
        out += ["\n## Per process\n", _groups(report.processes, "pid")]
    if report.hardware:
        out += ["\n## Hardware: tensor-pipe activity sampled during the run\n"]
        out += [f"- {_esc(hardware_text(h))}" for h in report.hardware]
        out += [f"- ⚠ {_esc(c.name if wide else shorten_all([c.name], 90)[0])}: {_esc(c.message)} "
                f"({c.samples:,} samples)" for c in report.hardware_checks]
    out += [f"\n## Top {min(limit, len(report.kernels))} of {len(report.kernels)} kernels by GPU time\n",
            _kernel_rows(list(report.kernels[:limit]), wide)]
    for title, rows in (("Framework ops (NVTX or profiler ranges): which ran on tensor cores, in which precision",
                         report.ops), ("Outer ranges (layers / modules)", report.scopes)):
        if rows:
            shown = _rows.numbered_merged(rows)[:limit]
            names = [o.op for o in shown] if wide else shorten_ops([o.op for o in shown], 60)
            hw = any(o.hw_tensor is not None for o in shown)
            out += [f"\n## {title}\n",
                    _table(["op / range", "kernels", "launches", "ms", "% of kernel time",
                            "tensor core (of its kernel time)",
                            *(["tensor pipes (hardware, % of SM time)"] if hw else []), "precision of its kernels"],
                           [[name, o.kernels, o.launches, f"{o.total_ns / 1e6:.3f}", f"{100 * o.share:.1f}%",
                             f"{100 * o.tc_share:.1f}%",
                             *([("-" if o.hw_tensor is None else f"{o.hw_tensor:.1f}%")] if hw else []),
                             _rows.mix_text(o.precisions)]
                            for o, name in zip(shown, names)])]
    if report.disagreements:
        out += ["\n## Counters disagree with the name rules\n", _kernel_rows(list(report.disagreements), wide)]
    health = report.health
    if health:
        out += [f"\n**Training health: {_esc(health.status)}** ({_esc(health.counted)})\n"]
        out += [f"- {_esc(f)}" for f in health.findings]
    fmts: dict[str, int] = {}
    for src in report.sources:
        fmts[src.format] = fmts.get(src.format, 0) + 1
    out += [f"\n_Read {len(report.sources)} capture(s): {_esc(', '.join(f'{n} {f}' for f, n in fmts.items()))}_\n"]
    out += [f"- note: {_esc(src.path)}: {_esc(note)}" for src in report.sources for note in src.notes]
    if report.skipped:
        shown, more = _rows.skipped_summary(report.skipped)
        out += ["\n## Skipped files\n", _table(["file", "why"], [list(s) for s in shown])]
        out += [f"\n{_esc(more)}\n"] if more else []
    return "\n".join(out)


def _groups(rows, key: str) -> str:
    return _table([key, "", "launches", "kernel ms", "tensor core (of its kernel time)", "TC precision",
                   "GPU idle (of first kernel start to last kernel end)"],
                  [[_rows.shown_key(g.key), g.label, g.launches, f"{g.kernel_ns / 1e6:.3f}", f"{100 * g.tc_share:.1f}%",
                    " + ".join(g.precisions) or "-", "-" if g.idle_share is None else f"{100 * g.idle_share:.1f}%"]
                   for g in rows])


def _comparison(comparison) -> str:
    out = [f"- {_esc(line)}" for line in _compare.headline(comparison)] + [""]
    out += [f"**{_esc(f)}**" if i == 0 else f"- {_esc(f)}" for i, f in enumerate(comparison.findings)]
    for key, what in _compare.TABLES:
        rows = getattr(comparison, key)
        if rows:
            head = [h.format(what=what) for h in _compare.HEAD]
            out += ["", f"## {_esc(_compare.title(key, what))}", "", _table(head, [_compare.cells(r) for r in rows])]
    return "\n".join(out) + "\n"
