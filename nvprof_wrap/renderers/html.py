"""HTML: one self-contained page to share — inline CSS and an inline SVG chart, no script, nothing fetched (a
Content-Security-Policy tells the browser so too). It renders the documented JSON shape (``report/serialise.py``,
docs/json.md), not the Report's internals, so it follows the contract every script already reads.

Every text that comes from a capture (kernel names, NVTX ranges, process names, paths) goes through ``_t``:
HTML-escaped, and control characters (ESC, BEL, NUL, bidi overrides) shown as visible escapes, so a hostile
name stays text."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from nvprof_wrap._version import __version__
from nvprof_wrap.model import Classification
from nvprof_wrap.renderers import _compare, _doctor, _experiment, _outline, _rows, _timeview
from nvprof_wrap.renderers._frame import t as _t
from nvprof_wrap.renderers._html_tables import TC_MARK
from nvprof_wrap.renderers._html_tables import Raw as _Raw
from nvprof_wrap.renderers._html_tables import kernels as _kernels
from nvprof_wrap.renderers._html_tables import n as _n
from nvprof_wrap.renderers._html_tables import table as _table
from nvprof_wrap.renderers._options import Options
from nvprof_wrap.renderers._sections_html import heading
from nvprof_wrap.renderers._shapes import Content, Lines, Shown, Table, View
from nvprof_wrap.report import KernelRow, Report, serialise
from nvprof_wrap.report.compare import Comparison
from nvprof_wrap.report.experiment import ExperimentRow
from nvprof_wrap.report.kinds import Classifications, Doctor, Experiment, Kernels, Reports, Runs

NAME = "html"
EXTENSION = ".html"
ALIASES = (".htm",)
# Defence in depth: even if some text escaped the escaping, nothing could run and nothing could be fetched.
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

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
.c-om{fill:#4d5866}.c-il{fill:#f0b27a}.c-is{fill:#e07b53}.c-ia{fill:#d9a066}.c-ix{fill:#e8c9a8}.c-io{fill:#efe2d0}
.c-iu{fill:#dcdcdc}
details{margin:.4rem 0}summary{cursor:pointer;color:var(--muted)}.muted,footer{color:var(--muted)}
nav ol{margin:.2rem 0 1rem}footer{margin-top:3rem;font-size:.8rem;border-top:1px solid var(--line);padding-top:.6rem}
header.about{margin:0 0 .8rem}dl.run{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.1rem 1rem;
margin:0;font-size:.88rem}dl.run div{display:contents}dl.run dt{color:var(--muted)}dl.run dd{margin:0;min-width:0;
overflow-wrap:anywhere}dl.run code{font:.82rem/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
@media (max-width:1000px){th.n{white-space:normal}table.ops td.name{min-width:14rem}}
"""


def _body(shown: Shown) -> str:
    """The run's header, then the sections of one report the page writes, in its order (renderers/_outline.py)."""
    return _about(shown.data) + "".join(section.html(shown) if section.html else
                   _draw(section.content(shown) if section.content and shown.source is not None else None, shown)
                   for section in _outline.arranged("html"))


CAPTURES_LISTED = 4  # capture files named in the header; the rest are counted (all of them are under Sources)


def _about(data: dict[str, Any]) -> str:
    """The header of a report's page: the run (folder or file), its command, the GPU, the driver, the date and the
    capture files — what the report knows (``run_info``, ``gpus``, ``sources``; docs/json.md), absent items left out.
    Long values wrap anywhere (a command line, a path), so the header never widens the page."""
    info = data.get("run_info") or {}
    gpus = sorted({g["name"] for g in data.get("gpus") or [] if g.get("name")})
    paths = [src["path"] for src in data.get("sources") or []]
    more = f" and {len(paths) - CAPTURES_LISTED} more" if len(paths) > CAPTURES_LISTED else ""
    started = info.get("started_ns")
    items = [("run", info.get("run")), ("command", info.get("command")), ("GPU", ", ".join(gpus)),
             ("driver", info.get("driver")),
             ("date", datetime.fromtimestamp(started / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
              if started else None),
             ("captures", ", ".join(paths[:CAPTURES_LISTED]) + more)]
    code = ("run", "command", "captures")
    shown = "".join(f"<div><dt>{_t(k)}</dt><dd>{f'<code>{_t(v)}</code>' if k in code else _t(v)}</dd></div>"
                    for k, v in items if v)
    return f'<header class="about"><dl class="run">{shown}</dl></header>\n' if shown else ""


def _draw(content: Content | None, shown: Shown) -> str:
    """A section written once (renderers/_shapes.py), as the page draws its shapes."""
    if isinstance(content, Table):
        return (heading(shown, content.title) + _table(content.columns, [list(r) for r in content.rows],
                                                       content.numeric)
                + (f'<p class="muted">{_t(content.caption)}</p>\n' if content.caption else ""))
    if isinstance(content, Lines):
        return heading(shown, content.title) + "<ul>" + "".join(f"<li>{_t(x)}</li>" for x in content.lines) + "</ul>\n"
    return ""


def _page(reports: list[tuple[str | None, Report | dict[str, Any]]], limit: int = 15) -> str:
    """One document for one or more reports: (title or None, the report or its JSON form, docs/json.md)."""
    shown = [(title, Shown(r, View(limit=limit), serialise.to_dict(r)) if isinstance(r, Report) else
              Shown(None, View(limit=limit), r)) for title, r in reports]
    if len(shown) == 1:
        title, one = shown[0]
        body = f"<h1>{_t(title or 'nvprof-wrap report')}</h1>\n" + _body(one)
        head_title = f"{title or 'nvprof-wrap report'} — {one.data['message']}"
    else:
        toc = "".join(f'<li><a href="#r{i}">{_t(t)}</a></li>' for i, (t, _) in enumerate(shown, 1))
        body = f"<h1>nvprof-wrap reports</h1>\n<nav><ol>{toc}</ol></nav>\n" + "".join(
            f'<section id="r{i}"><h2>{_t(t)}</h2>\n'
            f'{_body(Shown(s.source, View(limit=limit, ident=f"r{i}", level=3), s.data))}</section>\n'
            for i, (t, s) in enumerate(shown, 1))
        head_title = "nvprof-wrap reports"
    rules = shown[0][1].data.get("rules_version", "") if shown else ""
    return _document(head_title, body, f"rules {rules} · schema {serialise.SCHEMA}")


def _document(title: str, body: str, about: str = "") -> str:
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_t(title)}</title>\n<style>{CSS}{_timeview.CSS}</style>\n</head>\n<body>\n<main>\n{body}</main>\n"
            f"<footer>nvprof-wrap {_t(__version__)}{' · ' + _t(about) if about else ''} · a self-contained page: "
            "no scripts, nothing loaded from the network.</footer>\n</body>\n</html>\n")


def render(subject: object, options: Options) -> str:
    """The subject as one self-contained page."""
    limit = options.limit
    match subject:
        case Report():
            return _page([(None, subject)], limit or 15)
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
            return _page([(item.title, item.report) for item in subject.items], limit or 15)
    raise TypeError(f"the html renderer has no form for {type(subject).__name__}")


def _kernel_page(rows: list[KernelRow], limit: int | None) -> str:
    dicts = [_rows.kernel(k) for k in rows]
    body = f"<h1>{_n(len(dicts))} kernels</h1>\n" + _kernels(dicts, limit or len(dicts) or 1)
    return _document(f"nvprof-wrap: {len(dicts)} kernels", body)


def _classifications(items: list[Classification]) -> str:
    rows = [[("name", _Raw(f"<code>{_t(c['name'])}</code>")),
             _Raw(f'<span class="tc tc-{TC_MARK.get(c["tensor_core"], ("?", "unknown"))[1]}">'
                  f'{TC_MARK.get(c["tensor_core"], ("?", "unknown"))[0]} {_t(c["tensor_core"])}</span>'),
             c["precision"] or "-", c["family"], ("why", c["reason"]), c["rule"] or "-"]
            for c in (_rows.classification(i) for i in items)]
    body = "<h1>Kernel name verdicts</h1>\n" + _table(("kernel", "tensor core", "precision", "family", "reason",
                                                       "rule"), rows, cls="kernels")
    return _document("nvprof-wrap: kernel name verdicts", body)


def _experiment_page(rows: list[ExperimentRow]) -> str:
    body = "<h1>Precision experiment</h1>\n" + _table(_experiment.HEAD, [_experiment.cells(r) for r in rows],
                                                      frozenset(range(1, 10)))
    notes = [f"<li>{_t(r.precision)}: {_t(f)}</li>" for r in rows for f in r.findings]
    return _document("nvprof-wrap: precision experiment", body + (f"<ul>{''.join(notes)}</ul>\n" if notes else ""))


def _comparison(comparison: Comparison) -> str:
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
