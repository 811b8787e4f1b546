"""HTML: one self-contained page to share — inline CSS and an inline SVG chart, no script, nothing fetched (a
Content-Security-Policy tells the browser so too). It renders the documented JSON shape (``report/serialise.py``,
docs/json.md), not the Report's internals, so it follows the contract every script already reads.

Every text that comes from a capture (kernel names, NVTX ranges, process names, paths) goes through ``_t``:
HTML-escaped, and control characters (ESC, BEL, NUL, bidi overrides) shown as visible escapes, so a hostile
name stays text."""
from __future__ import annotations

from nvprof_wrap._version import __version__
from nvprof_wrap.model import counted
from nvprof_wrap.renderers import _compare, _doctor, _experiment, _ranks, _rows, _timeview
from nvprof_wrap.renderers._frame import name_cell, prose_cell
from nvprof_wrap.renderers._frame import t as _t
from nvprof_wrap.renderers._html_tables import KERNEL_CHARS, TC_MARK
from nvprof_wrap.renderers._html_tables import Raw as _Raw
from nvprof_wrap.renderers._html_tables import groups as _groups
from nvprof_wrap.renderers._html_tables import kernels as _kernels
from nvprof_wrap.renderers._html_tables import n as _n
from nvprof_wrap.renderers._html_tables import ops as _ops
from nvprof_wrap.renderers._html_tables import sources as _sources
from nvprof_wrap.renderers._html_tables import table as _table
from nvprof_wrap.renderers._options import Options
from nvprof_wrap.report import Report, serialise
from nvprof_wrap.report.compare import Comparison
from nvprof_wrap.report.kinds import Classifications, Doctor, Experiment, Kernels, Reports, Runs
from nvprof_wrap.text.names import shorten_all
from nvprof_wrap.text.units import duration as _ns
from nvprof_wrap.text.units import pct as _pct

NAME = "html"
EXTENSION = ".html"
ALIASES = (".htm",)
# Defence in depth: even if some text escaped the escaping, nothing could run and nothing could be fetched.
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

# the verdict box's colour, by the report's tone (Report.tone: the share and the hints, not "yes" alone)
VERDICT_CLASS = {"good": "yes", "bad": "no", "partial": "unknown", "unknown": "unknown"}
# The colour (CSS class) of each kind of GPU time in the split (its `kind` and, for copies, its `direction` fields —
# never its label, which is words for people)
KIND_CLASS = {"tensor_core": "c-tc", "cuda_core": "c-cuda", "unknown": "c-unk", "communication": "c-comm",
              "memcpy": "c-mem", "memset": "c-mset"}
COPY_CLASS = {"HtoD": "c-h2d", "DtoH": "c-d2h", "DtoD": "c-d2d"}

# Below 1000 px (a notebook's output frame, a narrow window) headers wrap and op names give up room, so that the op
# and device tables fit; precision mixes break only between their parts (.nw). tests/renderers/test_notebook.py
# checks it.
CSS = """
:root{color-scheme:light dark;--fg:#1d232b;--muted:#5c6673;--bg:#fff;--line:#d9dee5;--head:#f3f5f8;
--yes:#1f7a3a;--yes-bg:#e5f4ea;--no:#b3261e;--no-bg:#fbe9e7;--unk:#8a5a00;--unk-bg:#fff4d6}
@media (prefers-color-scheme:dark){:root{--fg:#e4e8ee;--muted:#9aa5b1;--bg:#14181d;--line:#2e353e;--head:#1d232a;
--yes:#6fd08c;--yes-bg:#16301f;--no:#ff8a80;--no-bg:#3a1a18;--unk:#ffcc66;--unk-bg:#352a10}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1400px;padding:1.2rem 1.5rem 3rem;font:15px/1.45 system-ui,-apple-system,"Segoe UI",
Roboto,sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:1.35rem;margin:.2rem 0 1rem}h2{font-size:1.2rem;margin:2.2rem 0 .6rem}
h3{font-size:1.05rem;margin:1.8rem 0 .5rem}
.verdict{border-left:6px solid;border-radius:6px;padding:.8rem 1.1rem;margin:.6rem 0 1rem}
.verdict .headline{font-size:1.15rem;font-weight:650;margin:0 0 .4rem;color:var(--no)}
.verdict .message{font-size:1.15rem;font-weight:650;margin:0}.verdict ul{margin:.5rem 0 0;padding-left:1.2rem}
.v-yes{border-color:var(--yes);background:var(--yes-bg)}.v-yes .message{color:var(--yes)}
.v-no{border-color:var(--no);background:var(--no-bg)}.v-no .message{color:var(--no)}
.v-unknown{border-color:var(--unk);background:var(--unk-bg)}.v-unknown .message{color:var(--unk)}
dl.totals{display:flex;flex-wrap:wrap;gap:.4rem 2rem;margin:.4rem 0}dl.totals div{min-width:8rem}
dl.totals dt{color:var(--muted);font-size:.8rem}dl.totals dd{margin:0;font-weight:600}
table{border-collapse:collapse;margin:.3rem 0;font-size:.88rem;width:100%}
th,td{border-bottom:1px solid var(--line);padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:var(--head);position:sticky;top:0}td.n,th.n{text-align:right;white-space:nowrap}
td code{font:.82rem/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
td.name{min-width:20rem;max-width:40rem}td.name details,details.more{margin:0}
td.name summary,details.more summary{color:inherit;list-style:none}td.name code.whole{display:block;margin-top:.2rem}
td.name summary::-webkit-details-marker,details.more summary::-webkit-details-marker{display:none}
td.name summary code::before,details.more .clamp::before{content:"▸\\00a0"}
td.name details[open] summary code::before,details.more[open] .clamp::before{content:"▾\\00a0"}
.clamp{display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:3;overflow:hidden}
details.more[open] .clamp{display:block}td.label{min-width:9rem}td.mix{min-width:13rem}
td.why{min-width:18rem;max-width:34rem}.scroll{overflow-x:auto}
.tc{font-weight:650;white-space:nowrap}.tc-yes{color:var(--yes)}.tc-no{color:var(--no)}.tc-unknown{color:var(--unk)}
.flag{color:var(--no);font-weight:600}.detail{color:var(--muted)}.share,.nw{white-space:nowrap}
.bar{display:inline-block;width:4rem;height:.6rem;background:var(--line);border-radius:3px;margin-right:.4rem;
vertical-align:middle;overflow:hidden}.bar span{display:block;height:100%;background:var(--yes)}
svg.chart{max-width:100%;height:auto;display:block;margin:.4rem 0}svg.chart text{fill:var(--fg);font-size:13px}
svg.chart text.v{fill:var(--muted)}svg.chart line.grid{stroke:var(--line)}
svg.chart polyline.tensor{stroke:#2e9d4e;stroke-width:2}svg.chart polyline.sm{stroke:#b0b7c0;stroke-width:1.2}
.c-tc{fill:#2e9d4e}.c-cuda{fill:#7b8797}.c-unk{fill:#e0a21b}.c-comm{fill:#8b5cc7}.c-h2d{fill:#2f7fd1}
.c-d2h{fill:#5aa6e8}.c-d2d{fill:#1d5fa3}.c-mem{fill:#8fc3f0}.c-mset{fill:#a0704a}.c-other{fill:#b0b7c0}
details{margin:.4rem 0}summary{cursor:pointer;color:var(--muted)}.muted,footer{color:var(--muted)}
nav ol{margin:.2rem 0 1rem}footer{margin-top:3rem;font-size:.8rem;border-top:1px solid var(--line);padding-top:.6rem}
@media (max-width:1000px){th.n{white-space:normal}table.ops td.name{min-width:14rem}}
"""


def _verdict(d: dict) -> str:
    hints = "".join(f"<li>{_t(h)}</li>" for h in d["hints"])
    return (f'<div class="verdict v-{VERDICT_CLASS.get(d.get("verdict_tone", ""), "unknown")}" role="status">'
            + "".join(f'<p class="headline">{_t(line)}</p>' for line in d.get("headline") or ())
            + f'<p class="message">{_t(d["message"])}</p>'
            + (f'<p class="scope"><strong>{_t(d["scope"]["description"])}</strong></p>' if d.get("scope") else "")
            + (f'<ul class="hints">{hints}</ul>' if hints else "")
            + "</div>\n")


def _totals(d: dict) -> str:
    items = (("GPU kernel time", _ns(d["kernel_time_ns"])), ("kernel launches", _n(d["launches"])),
             ("distinct kernels", _n(d["distinct_kernels"])), ("tensor-core kernels", _n(d["tensor_core_kernels"])),
             ("tensor-core share of kernel time", _pct(d["tensor_core_time_fraction"])),
             ("tensor-core precisions", " + ".join(d["tensor_core_precisions"]) or "-"))
    return '<dl class="totals">' + "".join(f"<div><dt>{_t(k)}</dt><dd>{_t(v)}</dd></div>" for k, v in items) + "</dl>\n"


def _kind_class(s: dict) -> str:
    """A time_split row's colour, from its kind and direction."""
    if s["kind"] == "memcpy" and s["direction"] in COPY_CLASS:
        return COPY_CLASS[s["direction"]]
    return KIND_CLASS.get(s["kind"], "c-other")


def _chart(split: list[dict], ident: str) -> str:
    """Horizontal bars, one per category, under one stacked bar of the whole; every bar has its numbers beside it
    and a tooltip."""
    if not split:
        return '<p class="muted">No GPU operations were recorded.</p>\n'
    width, label_w, bar_w, row_h, top = 760, 250, 330, 24, 36
    height = top + row_h * len(split)
    summary = ", ".join(f"{s['category']} {_pct(s['share'])}" for s in split)
    out = [(f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-labelledby="{ident}-chart"><title id="{ident}-chart">Where GPU time '
            f'went: {_t(summary)}</title>')]
    x = 0.0
    for s in split:
        w, tip = s["share"] * width, f'{_t(s["category"])}: {_ns(s["total_ns"])}, {_pct(s["share"])}'
        out.append(f'<rect class="{_kind_class(s)}" x="{x:.1f}" y="0" width="{w:.1f}" height="22">'
                   f'<title>{tip}</title></rect>')
        x += w
    for i, s in enumerate(split):
        y, cls = top + i * row_h, _kind_class(s)
        w = max(s["share"] * bar_w, 1.0 if s["total_ns"] else 0.0)
        out.append(f'<text x="0" y="{y + 15}">{_t(s["category"])}</text>'
                   f'<rect class="{cls}" x="{label_w}" y="{y + 3}" width="{w:.1f}" height="16"><title>'
                   f'{_t(s["category"])}: {_n(s["count"])} operations</title></rect>'
                   f'<text class="v" x="{label_w + bar_w + 10}" y="{y + 15}">{_ns(s["total_ns"])} · '
                   f'{_pct(s["share"])} · {_n(s["count"])}×</text>')
    return "\n".join(out) + "\n</svg>\n"


def _hardware(d: dict, ident: str) -> str:
    """Per device, the hardware's tensor-pipe activity in words, a line chart of it over time (SM activity behind
    it), and the kernels whose samples contradict their name."""
    out = "<ul>" + "".join(f"<li>{_t(h['message'])}</li>" for h in d["hardware"]) + "</ul>\n"
    for dev in sorted({p["device_id"] for p in d.get("hardware_series", [])}):
        out += _timeline([p for p in d["hardware_series"] if p["device_id"] == dev], f"{ident}-hw{dev}", dev)
    checks = d.get("hardware_checks") or []
    if checks:
        out += _table(("kernel", "device", "name says", "tensor pipes", "samples", "what the hardware says"),
                      [[("name", _Raw(name_cell(c["name"], n))), c["device_id"], c["name_verdict"],
                        f"{c['tensor']:.1f}%", _n(c["samples"]),
                        ("why", _Raw(prose_cell(_t(c["message"]), len(c["message"]))))]
                       for c, n in zip(checks, shorten_all([c["name"] for c in checks], KERNEL_CHARS))],
                      frozenset({1, 3, 4}), cls="kernels")
    return out


def _timeline(points: list[dict], ident: str, device: int) -> str:
    """Tensor-pipe activity (and SM activity, lighter) over the run: one self-contained SVG, 0-100%."""
    if not points:
        return ""
    width, height, left, bottom = 760, 160, 40, 24
    end = max(p["t_s"] + p["dt_s"] for p in points) or 1.0
    x = lambda t: left + (width - left - 10) * t / end
    y = lambda v: 8 + (height - bottom - 8) * (1 - min(max(v, 0.0), 100.0) / 100)
    line = lambda key: " ".join(f"{x(p['t_s'] + p['dt_s'] / 2):.1f},{y(p[key]):.1f}" for p in points)
    mean = sum(p["tensor"] for p in points) / len(points)
    grid = "".join(f'<line x1="{left}" x2="{width - 10}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
                   f'<text class="v" x="0" y="{y(v) + 4:.1f}">{v}%</text>' for v in (0, 50, 100))
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-labelledby="{ident}"><title id="{ident}">Device {device}: tensor-pipe activity over '
            f'{end:.3g} s, mean {mean:.1f}% of SM time</title>{grid}'
            f'<polyline class="sm" fill="none" points="{line("sm")}"/>'
            f'<polyline class="tensor" fill="none" points="{line("tensor")}"/>'
            f'<text class="v" x="{left}" y="{height - 6}">0 s</text>'
            f'<text class="v" x="{width - 60}" y="{height - 6}">{end:.3g} s</text>'
            f'<text class="v" x="{left + 60}" y="{height - 6}">— tensor pipes  — SMs (lighter), % of SM time'
            '</text></svg>\n')


_CHART_NOTE = ('<p class="muted">Shares of summed GPU operation time (kernels, copies, memsets); × counts launches '
               "or operations.</p>\n")
def _health(h: dict) -> str:
    findings = "".join(f"<li>{_t(f)}</li>" for f in h["findings"])
    return (f"<p><strong>{_t(h['status'])}</strong> ({_t(counted(h['epochs'], h.get('unit', 'epoch')))})</p>"
            + (f"<ul>{findings}</ul>" if findings else "") + "\n")


def _report_body(d: dict, limit: int = 15, ident: str = "r1", level: int = 2, series=None) -> str:
    """The sections of one report (a dict in the JSON shape), verdict first, then its series over time (when it has
    one); ``level`` is their heading level."""
    def h(text: str) -> str:
        return f"<h{level}>{_t(text)}</h{level}>\n"

    parts = [_verdict(d), _totals(d), _timeview.section(series, ident, level), h("Where GPU time went"),
             _chart(d["time_split"], ident), _CHART_NOTE]
    if d["ops"]:
        parts += [h("Framework ops (NVTX or profiler ranges): which ran on tensor cores, in which precision"),
                  _ops(d["ops"], limit)]
    if d["scopes"]:
        parts += [h("Outer ranges (layers / modules)"), _ops(d["scopes"], limit)]
    if d["devices"]:
        parts += [h("Per device"), _groups(d["devices"], "device_id", ("device", "GPU"))]
    if d.get("hardware"):
        parts += [h("Hardware: tensor-pipe activity sampled during the run"), _hardware(d, ident)]
    ranks = _ranks.from_dict(d)
    if ranks:
        parts += [h(_ranks.title(ranks)), _rank_table(ranks)]
    if d["processes"] and not (ranks and len(d["processes"]) > _ranks.ALL_ROWS):
        parts += [h("Per process"), _groups(d["processes"], "pid", ("pid", "process"))]
    if d["kernels"]:
        parts += [h(f"Kernels by GPU time ({len(d['kernels']):,}), with the evidence for each verdict"),
                  _kernels(d["kernels"], limit)]
    if d["disagreements"]:
        parts += [h("Counters or compiled code disagree with the name rules"), _kernels(d["disagreements"], limit)]
    health = d.get("health")
    if health:
        parts += [h("Training health"), _health(health)]
    parts += [h("Sources"), _sources(d)]
    return "".join(parts)


def _rank_table(ranks) -> str:
    """Every rank up to _ranks.ALL_ROWS (else the spread), then the ranks that stand out, each a line."""
    if len(ranks.rows) <= _ranks.ALL_ROWS:
        out = _table(_ranks.ROW_HEADS, _ranks.row_cells(ranks), frozenset(range(1, 8)) - {4})
    else:
        out = _table(_ranks.SPREAD_HEADS, _ranks.spread_cells(ranks), frozenset({1, 2, 3}))
    lines = _ranks.outlier_lines(ranks)
    if lines:
        cls = "hints" if ranks.outliers else "note"
        out += f'<ul class="{cls}">' + "".join(f"<li>{_t(line)}</li>" for line in lines) + "</ul>\n"
    return out


def _page(reports: list[tuple[str | None, dict]], limit: int = 15) -> str:
    """One document for one or more reports in the JSON shape: (title or None, dict)."""
    series = [_timeview.series_of(d) for _, d in reports]
    if len(reports) == 1:
        title, d = reports[0]
        body = f"<h1>{_t(title or 'nvprof-wrap report')}</h1>\n" + _report_body(d, limit, series=series[0])
        head_title = f"{title or 'nvprof-wrap report'} — {d['message']}"
    else:
        toc = "".join(f'<li><a href="#r{i}">{_t(t)}</a></li>' for i, (t, _) in enumerate(reports, 1))
        body = f"<h1>nvprof-wrap reports</h1>\n<nav><ol>{toc}</ol></nav>\n" + "".join(
            f'<section id="r{i}"><h2>{_t(t)}</h2>\n{_report_body(d, limit, f"r{i}", 3, s)}</section>\n'
            for i, ((t, d), s) in enumerate(zip(reports, series), 1))
        head_title = "nvprof-wrap reports"
    rules = reports[0][1].get("rules_version", "") if reports else ""
    return _document(head_title, body, f"rules {rules} · schema {_rows.SCHEMA}")


def _document(title: str, body: str, about: str = "") -> str:
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_t(title)}</title>\n<style>{CSS}{_timeview.CSS}</style>\n</head>\n<body>\n<main>\n{body}</main>\n"
            f"<footer>nvprof-wrap {_t(__version__)}{' · ' + _t(about) if about else ''} · a self-contained page: "
            "no scripts, nothing loaded from the network.</footer>\n</body>\n</html>\n")


def render(subject, options: Options) -> str:
    """The subject as one self-contained page."""
    limit = options.limit
    match subject:
        case Report():
            return _page([(None, serialise.to_dict(subject))], limit or 15)
        case Comparison():
            return _comparison(subject)
        case Kernels():
            return _kernel_page(list(subject.rows), limit)
        case Classifications():
            return _classifications(list(subject.items))
        case Experiment():
            return _experiment_page(list(subject.rows))
        case Doctor():
            items = "".join(f"<li>{_t(line)}</li>" for line in _doctor.lines(subject.facts))
            return _document("nvprof-wrap doctor", f"<h1>This machine</h1>\n<ul>{items}</ul>\n")
        case Runs():
            rows = list(subject.rows)
            body = f"<h1>{len(rows)} recorded runs</h1>\n" + _table(_compare.RUN_HEAD,
                                                                     [_compare.run_cells(r) for r in rows])
            return _document("nvprof-wrap: runs", body)
        case Reports():  # one page, each report under its title
            return _page([(item.title, serialise.to_dict(item.report)) for item in subject.items], limit or 15)
    raise TypeError(f"the html renderer has no form for {type(subject).__name__}")


def _kernel_page(rows: list, limit: int | None) -> str:
    dicts = [_rows.kernel(k) for k in rows]
    body = f"<h1>{_n(len(dicts))} kernels</h1>\n" + _kernels(dicts, limit or len(dicts) or 1)
    return _document(f"nvprof-wrap: {len(dicts)} kernels", body)


def _classifications(items: list) -> str:
    rows = [[("name", _Raw(f"<code>{_t(c['name'])}</code>")),
             _Raw(f'<span class="tc tc-{TC_MARK.get(c["tensor_core"], ("?", "unknown"))[1]}">'
                  f'{TC_MARK.get(c["tensor_core"], ("?", "unknown"))[0]} {_t(c["tensor_core"])}</span>'),
             c["precision"] or "-", c["family"], ("why", c["reason"]), c["rule"] or "-"]
            for c in (_rows.classification(i) for i in items)]
    body = "<h1>Kernel name verdicts</h1>\n" + _table(("kernel", "tensor core", "precision", "family", "reason",
                                                       "rule"), rows, cls="kernels")
    return _document("nvprof-wrap: kernel name verdicts", body)


def _experiment_page(rows: list) -> str:
    body = "<h1>Precision experiment</h1>\n" + _table(_experiment.HEAD, [_experiment.cells(r) for r in rows],
                                                      frozenset(range(1, 10)))
    notes = [f"<li>{_t(r.precision)}: {_t(f)}</li>" for r in rows for f in r.findings]
    return _document("nvprof-wrap: precision experiment", body + (f"<ul>{''.join(notes)}</ul>\n" if notes else ""))


def _comparison(comparison) -> str:
    body = "<h1>Before and after</h1>\n<ul>" + "".join(f"<li>{_t(x)}</li>" for x in _compare.headline(comparison))
    body += "</ul>\n<ul>" + "".join(f"<li>{_t(f)}</li>" for f in comparison.findings) + "</ul>\n"
    body += _timeview.compare_section(*comparison.series, (comparison.before.label, comparison.after.label))
    for key, what in _compare.TABLES:
        rows = getattr(comparison, key)
        if rows:
            head = tuple(h.format(what=what) for h in _compare.HEAD)
            body += f"<h2>{_t(_compare.title(key, what))}</h2>\n" + _table(head, [_compare.cells(r) for r in rows],
                                                                          frozenset(range(1, 8)))
    return _document("nvprof-wrap: before and after", body)
