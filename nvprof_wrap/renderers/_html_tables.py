"""The report's tables as HTML (renderers/html.py): cells, rows, the rows past a limit one click away, and the
ops, kernel, device / process and source tables in the JSON shape (docs/json.md). Every text from a capture goes
through ``_t`` (renderers/_frame.py); names show short, whole on hover and a click away."""
from __future__ import annotations

from typing import Any

from nvprof_wrap.renderers import _rows
from nvprof_wrap.renderers._frame import name_cell, prose_cell
from nvprof_wrap.renderers._frame import t as _t
from nvprof_wrap.text.names import middle, shorten_all, shorten_ops
from nvprof_wrap.text.units import duration as _ns
from nvprof_wrap.text.units import pct as _pct

TC_MARK = {"yes": ("✓", "yes"), "no": ("✗", "no"), "unknown": ("?", "unknown")}
# Characters a name cell shows (the whole name on hover and one click away): at the narrowest name column (20rem for
# kernels, 14rem for ops) two to three lines, so that no row is taller than three (tests/renderers/test_html_browser.py)
KERNEL_CHARS, OP_CHARS, PATH_CHARS = 64, 50, 64


class Raw(str):
    """HTML built here from escaped parts and numbers — never from input — inserted as is."""


def n(x: int | None) -> str:
    return "-" if x is None else f"{x:,}"


def share_bar(x: float) -> Raw:
    return Raw(f'<span class="share"><span class="bar"><span style="width:{100 * min(max(x, 0.0), 1.0):.1f}%">'
               f"</span></span>{_pct(x)}</span>")


def table(head: tuple[str, ...], rows: list[list[Any]], numeric: frozenset[int] = frozenset(), cls: str = "") -> str:
    th = "".join(f'<th scope="col"{" class=n" if i in numeric else ""}>{_t(h)}</th>' for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(td(c, i in numeric) for i, c in enumerate(r)) + "</tr>\n" for r in rows)
    return (f'<div class="scroll"><table class="{cls}"><thead><tr>{th}</tr></thead>\n<tbody>\n{body}</tbody></table>'
            '</div>\n')


def td(cell: object, numeric: bool) -> str:
    if isinstance(cell, tuple):  # (css class, content)
        cls, cell = cell
        return f'<td class="{cls}">{cell if isinstance(cell, Raw) else _t(cell)}</td>'
    return f'<td{" class=n" if numeric else ""}>{cell if isinstance(cell, Raw) else _t(cell)}</td>'


def limited(head: tuple[str, ...], rows: list[list[Any]], limit: int, what: str, numeric: frozenset[int],
            cls: str = "") -> str:
    """The first `limit` rows in view, the rest one click away: the page keeps every row."""
    out = table(head, rows[:limit], numeric, cls)
    if len(rows) > limit:
        out += (f"<details><summary>the other {len(rows) - limit:,} {_t(what)}</summary>\n"
                f"{table(head, rows[limit:], numeric, cls)}</details>\n")
    return out


OP_HEAD = ("op / range", "kernels", "launches", "GPU time", "% of kernel time", "tensor-core share of its kernel time",
           "precision of its kernels")
GROUP_HEAD = ("launches", "kernel time", "tensor-core share of its kernel time", "tensor-core precisions", "GPU busy",
              "span (first kernel start to last kernel end)", "GPU idle (of the span)")
KERNEL_HEAD = ("kernel", "launches", "total", "mean", "% of kernel time", "tensor core", "precision", "family",
               "evidence", "why (reason · counter or code detail · flag)")


def ops(rows: list[dict[str, Any]], limit: int) -> str:
    """Numbered ranges (step 0 … step 29) as one row, as in the terminal; names short, whole on hover or a click."""
    rows = _rows.numbered_merged_dicts(rows)
    hw = any(o.get("hardware_tensor_pct") is not None for o in rows)
    head = (*OP_HEAD[:6], "tensor pipes (hardware, % of SM time)", OP_HEAD[6]) if hw else OP_HEAD
    names = shorten_ops([o["op"] for o in rows], OP_CHARS)
    return limited(head, [[("name", Raw(name_cell(o["op"], name))), n(o["kernels"]), n(o["launches"]),
                           _ns(o["total_ns"]), _pct(o["share"]), share_bar(o["tensor_core_share"]),
                           *([hw_pct(o.get("hardware_tensor_pct"))] if hw else []),
                           ("mix", Raw(" + ".join(f'<span class="nw">{_t(p["precision"])} {_pct(p["share"])}</span>'
                                                  for p in o["precisions"])))]
                          for o, name in zip(rows, names)],
                   limit, "ops", frozenset({1, 2, 3, 4, 6} if hw else {1, 2, 3, 4}), "ops")


def hw_pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}%"


def groups(rows: list[dict[str, Any]], key: str, head: tuple[str, str]) -> str:
    return table((*head, *GROUP_HEAD),
                 [["-" if g[key] is None else g[key], ("label", g["label"]), n(g["launches"]), _ns(g["kernel_ns"]),
                   share_bar(g["tensor_core_share"]), " + ".join(g["tensor_core_precisions"]) or "-",
                   _ns(g["busy_ns"]), _ns(g["span_ns"]), _pct(g["idle_share"])] for g in rows],
                 frozenset({2, 3, 6, 7, 8}))


def kernel_cells(k: dict[str, Any], name: str) -> list[Any]:
    """One kernel's row: its name short (``name``), whole on hover and a click away; a long why clamped."""
    mark, cls = TC_MARK.get(k["tensor_core"], ("?", "unknown"))
    evidence = k["evidence"] + (f" (name rules: {k['name_verdict']})"
                                if k.get("name_verdict") not in (None, k["tensor_core"]) else "")
    why = f'<span class="reason">{_t(k["reason"])}</span>'
    if k["counter_detail"]:
        why += f'<br><span class="detail">{_t(k["evidence"])}: {_t(k["counter_detail"])}</span>'
    if k["flag"]:
        why += f'<br><span class="flag">⚠ {_t(k["flag"])}</span>'
    why = prose_cell(why, sum(len(k[f] or "") for f in ("reason", "counter_detail", "flag")))
    return [("name", Raw(name_cell(k["name"], name))), n(k["launches"]), _ns(k["total_ns"]), _ns(k["mean_ns"]),
            _pct(k["share"]), Raw(f'<span class="tc tc-{cls}">{mark} {_t(k["tensor_core"])}</span>'),
            k["precision"] or "-", k["family"], evidence, ("why", Raw(why))]


def kernels(rows: list[dict[str, Any]], limit: int) -> str:
    names = shorten_all([k["name"] for k in rows], KERNEL_CHARS)
    return limited(KERNEL_HEAD, [kernel_cells(k, name) for k, name in zip(rows, names)], limit, "kernels",
                   frozenset({1, 2, 3, 4}), "kernels")


def _path(path: str) -> Raw:
    return Raw(name_cell(path, middle(path, PATH_CHARS)))


def _notes(notes: list[str]) -> Raw:
    text = "; ".join(notes) or "-"
    return Raw(prose_cell(_t(text), len(text)))


def sources(d: dict[str, Any]) -> str:
    out = table(("capture", "format", "partial", "notes"),
                [[("name", _path(s["path"])), s["format"], "yes" if s["partial"] else "no", _notes(s["notes"])]
                 for s in d["sources"]])
    if d["skipped"]:
        out += "<h4>Skipped files</h4>\n" + table(
            ("file", "why"), [[("name", _path(s["path"])), s["why"]] for s in d["skipped"]])
    return out
