"""The HTML report: one self-contained page, from the bundled real H200 captures and from a real capture whose
strings were made hostile. The structure is checked with html.parser here; a real browser (Debian's chromium
driven by Playwright) checks it renders, runs nothing and fetches nothing (tests/renderers/test_html_browser.py)."""
from __future__ import annotations

import html as html_mod
import json
import re
import shutil
import sqlite3
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from nvprof_wrap.cli import main
from nvprof_wrap.renderers import RENDERERS, Options
from tests._paths import ROOT

SAMPLES = ROOT / "nvprof_wrap" / "samples"

# StringIds of nvprof_wrap/samples/keras_reuters_fp16/nsys_annotated.sqlite → hostile strings, and what the page
# must show for each (control characters as visible symbols, everything else literally).
HOSTILE = {
    765: ("<script>alert(1)</script>", "<script>alert(1)</script>"),  # kernel reduction_prod_kernel
    746: ("<img src=x onerror=alert(2)>", "<img src=x onerror=alert(2)>"),  # a curand kernel
    740: ("\x1b[31mred\x1b[0m\x07 \u202eevil\x7f\n", r"\x1b[31mred\x1b[0m\x07 <U+202E>evil\x7f\n"),  # ESC BEL bidi DEL
    749: ('"><svg onload=alert(3)>&amp; &lt;b&gt;', '"><svg onload=alert(3)>&amp; &lt;b&gt;'),
    748: ("</code></td></tr></table><iframe src=//example.com/x></iframe>",
          "</code></td></tr></table><iframe src=//example.com/x></iframe>"),
    293: ("keras:<b onmouseover=alert(5)>dense</b>", "keras:<b onmouseover=alert(5)>dense</b>"),  # an NVTX range
}
HOSTILE_PROCESS = "<marquee>py</marquee>"
HOSTILE_OP = "aten::<style>*{display:none}</style>"


def hostile_capture(folder: Path) -> Path:
    """The bundled Keras capture (real nsys schema and data) with kernel names, an NVTX range, an ATen op range and
    the process name replaced by markup and control characters."""
    path = folder / "hostile.sqlite"
    shutil.copy(SAMPLES / "keras_reuters_fp16" / "nsys_annotated.sqlite", path)
    conn = sqlite3.connect(path)
    conn.executemany("UPDATE StringIds SET value = ? WHERE id = ?", [(raw, i) for i, (raw, _) in HOSTILE.items()])
    conn.execute("UPDATE PROCESSES SET name = ? WHERE pid = 1823", (HOSTILE_PROCESS,))
    conn.execute("UPDATE NVTX_EVENTS SET text = ? || substr(text, 11) WHERE text LIKE 'aten::prod,%'", (HOSTILE_OP,))
    conn.commit()
    conn.close()
    return path


class Page(HTMLParser):
    """Every start tag with its attributes, the text of each element kind, and what a browser would fetch."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.stack: list[str] = []
        self.text: dict[str, list[str]] = {}
        self.doc_titles = 0
        self.raw = text
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "title" and "svg" not in self.stack:
            self.doc_titles += 1
        if tag not in ("meta", "br", "wbr", "rect"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def handle_data(self, data):
        if self.stack:
            self.text.setdefault(self.stack[-1], []).append(data)

    def count(self, tag: str) -> int:
        return sum(t == tag for t, _ in self.tags)

    def attrs(self) -> list[tuple[str, str, str | None]]:
        return [(t, k, v) for t, a in self.tags for k, v in a.items()]


def tables(html: str, cls: str) -> list[str]:
    """The markup of each <table class=cls> (names are escaped, so no '</table>' inside one)."""
    return [t.split("</table>", 1)[0] for t in html.split(f'<table class="{cls}">')[1:]]


def kernel_row(html: str, name: str) -> str:
    """The markup of the kernel's row: its name whole in the cell, or cut with the whole one a click away."""
    return next(r for r in html.split("<tr>")
                if f"<code>{escape(name)}</code>" in r or f'<code class="whole">{escape(name)}</code>' in r)


def render(capsys, *argv: str) -> tuple[str, dict]:
    """The page and the JSON of the same report (the page renders that shape)."""
    assert main(["report", *argv, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert main(["report", *argv, "--format", "html"]) == 0
    return capsys.readouterr().out, d


def assert_self_contained(p: Page) -> None:
    assert p.raw.startswith("<!DOCTYPE html>\n") and p.raw.count("<!DOCTYPE") == 1
    assert [p.count(t) for t in ("html", "head", "body", "style", "main")] == [1, 1, 1, 1, 1] and p.doc_titles == 1
    for tag in ("script", "link", "img", "iframe", "object", "embed", "base", "form", "video", "audio", "marquee"):
        assert p.count(tag) == 0, tag
    for tag, name, value in p.attrs():
        assert name not in ("src", "srcset", "action", "data", "xmlns:xlink") and not name.startswith("on"), (tag, name)
        if name == "href":
            assert value.startswith("#"), value  # in-page links only
        if name == "style":
            assert value.startswith("width:") and value.endswith("%"), value  # the share bars
    csp = [a["content"] for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp == ["default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"]
    # the SVG namespace is a name, not something fetched: the only URL allowed
    low = p.raw.lower().replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "http://" not in low and "https://" not in low and "url(" not in low and "@import" not in low


@pytest.mark.parametrize("sample", ["keras_reuters_fp16", "torch_ops", "two_children"])
def test_every_bundled_sample_is_one_self_contained_page_with_every_kernel(capsys, tmp_path, sample):
    html, d = render(capsys, str(SAMPLES / sample), "--store", str(tmp_path / "run.sqlite"))
    p = Page(html)
    assert_self_contained(p)
    # the verdict first: the first text after the page heading is the verdict sentence
    assert p.text["p"][0] == d["message"] and html.index('class="verdict') < html.index("<svg")
    assert p.text.get("li", [])[:len(d["hints"])] == d["hints"]  # (two_children: no hint)
    # the chart: one stacked bar + one bar per category of the time split, each labelled
    # (and the time view's charts, tests/renderers/test_timeview.py, each an <svg class="ts">)
    charts = html.count('<svg class="ts"')
    assert charts == (4 if d["series"] and any(r["api_launch_ns"] is not None for r in d["series"]) else 3) \
        if len(d["series"]) > 1 else charts == 0
    split = html[html.index("Where GPU time went"):]
    split = split[:split.index("</svg>")]
    assert split.count("<svg") == 1 and split.count("<rect") == 2 * len(d["time_split"])
    labels = [html_mod.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", split)]
    assert [c for c in labels if not c[0].isdigit()] == [s["category"] for s in d["time_split"]]
    # every kernel appears, whole and exactly once in the kernel tables (top rows + the rest under <details>)
    code = p.text["code"]
    assert all(code.count(k["name"]) == 1 for k in d["kernels"])
    rows = sum(t.count("<tr>") - 1 for t in tables(html, "kernels"))
    assert rows == len(d["kernels"]) + len(d["disagreements"])
    assert all(o["op"] in code for o in d["ops"] + d["scopes"])
    assert all(s["path"] in code for s in d["sources"])
    # per device and per process: one row each, with the device label / process name
    assert [g["label"] for g in d["devices"] + d["processes"]] == [
        t for t in p.text["td"] if t in {g["label"] for g in d["devices"] + d["processes"]}]


def test_kernel_rows_carry_the_evidence(capsys, tmp_path):
    """torch_ops has Nsight Compute counters beside the nsys timeline: rows show 'counters' and the counter detail."""
    html, d = render(capsys, str(SAMPLES / "torch_ops"), "--limit", "40")
    k = next(k for k in d["kernels"] if k["evidence"] == "counters" and k["counter_detail"])
    row = kernel_row(html, k["name"])
    cells = [c.split("</td>")[0].split(">", 1)[1] for c in row.split("<td")[1:]]
    assert cells[5].endswith(f"{k['tensor_core']}</span>") and cells[6] == (k["precision"] or "-")
    assert cells[7] == k["family"] and cells[8].startswith("counters") and len(cells) == 10
    why = (f'<span class="reason">{escape(k["reason"])}</span><br>'
           f'<span class="detail">counters: {escape(k["counter_detail"])}</span>')
    assert cells[9] in (why, f'<details class="more"><summary><span class="clamp">{why}</span></summary></details>')


def test_limit_keeps_every_row_one_click_away(capsys):
    html, d = render(capsys, str(SAMPLES / "torch_ops"), "--limit", "5")
    first, rest = tables(html, "kernels")
    assert first.count("<tr>") == 1 + 5 and rest.count("<tr>") == 1 + len(d["kernels"]) - 5
    assert f"the other {len(d['kernels']) - 5} kernels" in html


def test_hostile_names_stay_text(capsys, tmp_path):
    html, d = render(capsys, str(hostile_capture(tmp_path)))
    p = Page(html)
    assert_self_contained(p)
    for raw, shown in HOSTILE.values():
        assert shown in p.text["code"], shown
    assert HOSTILE_PROCESS in p.text["td"] and HOSTILE_OP in p.text["code"]
    kernels = {k["name"] for k in d["kernels"]}
    assert {raw for i, (raw, _) in HOSTILE.items() if i != 293} <= kernels  # the pipeline kept them as they were
    for c in "\x1b\x07\x7f\u202e":
        assert c not in html
    assert p.count("table") == html.count("<table ")  # no table closed or opened by a name


def test_notebook_display_is_the_page_in_a_sandboxed_frame(tmp_path):
    """_repr_html_ (a Report, p.report, the %%nvprof_wrap magic): one <iframe> whose srcdoc is the page byte for byte
    — hostile names included, so the escaping into the attribute holds — sandboxed, and nothing else: no src, no
    script, no style of the notebook's touched (tests/renderers/test_notebook.py checks the layout in a real
    notebook)."""
    from nvprof_wrap.pipeline import analyze

    rep = analyze(hostile_capture(tmp_path))
    out = rep._repr_html_()
    p = Page(out)
    assert [t for t, _ in p.tags] == ["iframe"] and out.count("<") == 2 and out.endswith("></iframe>")
    attrs = p.tags[0][1]
    assert set(attrs) == {"srcdoc", "sandbox", "title", "width", "height", "style"} and attrs["sandbox"] == ""
    assert attrs["srcdoc"] == RENDERERS["html"].render(rep, Options())  # html.parser unescapes the attribute
    assert_self_contained(Page(attrs["srcdoc"]))
    assert attrs["title"] == f"nvprof-wrap report: {rep.verdict.message}"


def test_text_escaping_covers_controls_quotes_and_surrogates():
    from nvprof_wrap.renderers._frame import t as _t

    assert _t("<a href='x'>&\"") == "&lt;a href=&#x27;x&#x27;&gt;&amp;&quot;"
    assert _t("\x00\x1b\x7f\x85\t\u2066\ud800") == r"\x00\x1b\x7f\x85\t&lt;U+2066&gt;" + "\ufffd"
    assert _t(None) == "-"


def test_output_file_for_report_and_one_line_saying_where(capsys, tmp_path):
    out = tmp_path / "report.html"
    code = main(["report", str(SAMPLES / "two_children"), "--format", "html", "-o", str(out)])
    o, err = capsys.readouterr()
    assert code == 0 and o == "" and err == f"nvprof-wrap: wrote the html report to {out}\n"
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>") and not list(tmp_path.glob(".*.tmp"))
    # any format: -o writes what stdout would have carried (no colour in a file)
    code = main(["report", str(SAMPLES / "two_children"), "--format", "json", "-o", str(tmp_path / "r.json")])
    assert code == 0 and json.loads((tmp_path / "r.json").read_text())["verdict"] == "yes"
    code = main(["report", str(SAMPLES / "two_children"), "-o", str(tmp_path / "r.txt")])
    assert code == 0 and (tmp_path / "r.txt").read_text().startswith("Tensor cores used: yes") \
        and "\x1b[" not in (tmp_path / "r.txt").read_text()


@pytest.mark.parametrize("target, why", [("missing/r.html", "does not exist"), (".", "is a directory")])
def test_unwritable_output_is_one_line_exit_2_before_any_work(capsys, tmp_path, target, why):
    code = main(["report", str(SAMPLES / "two_children"), "--format", "html", "-o", str(tmp_path / target)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and why in err and "Traceback" not in err


def test_a_run_folder_report_html_is_not_taken_for_a_capture(capsys, tmp_path):
    shutil.copy(SAMPLES / "two_children" / "nsys_two_child_processes.sqlite", tmp_path)
    assert main(["report", str(tmp_path), "--format", "html", "-o", str(tmp_path / "report.html")]) == 0
    assert main(["report", str(tmp_path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == []


def test_demo_is_one_page_with_every_sample(capsys):
    assert main(["demo", "--format", "html"]) == 0
    out = capsys.readouterr().out
    p = Page(out)
    assert_self_contained(p)
    views, charts = out.count('<section class="timeview"'), out.count('<svg class="ts"')  # the time views
    budgets = out.count('-budget"><title')  # each report's time budget bar (samples with steps have one)
    assert views == 3 and charts >= 3 * views and budgets >= 1
    assert p.count("section") - views == 3 and p.count("svg") - charts - budgets == 3 and \
        [a["href"] for t, a in p.tags if t == "a"] == ["#r1", "#r2", "#r3"]
    assert len({a["id"] for t, a in p.tags if "id" in a}) == sum("id" in a for t, a in p.tags)  # ids unique


def test_kernels_and_classify_pages(capsys):
    assert main(["kernels", str(SAMPLES / "torch_ops"), "--tc", "yes", "--format", "html"]) == 0
    p = Page(capsys.readouterr().out)
    assert_self_contained(p)
    titled = sum(1 for tag, a in p.tags if tag == "code" and "title" in a)  # a cut name: short, whole in <details>
    assert len(p.text["code"]) - titled == 12
    assert main(["classify", "<script>alert(1)</script>", "volta_h884gemm_64x64_ldg8_nn", "--format", "html"]) == 0
    p = Page(capsys.readouterr().out)
    assert_self_contained(p)
    assert p.text["code"] == ["<script>alert(1)</script>", "volta_h884gemm_64x64_ldg8_nn"]


def test_doctor_has_a_page_too(capsys):
    """Every command renders through the one registry: doctor's facts as a page (experiment: test_renderers.py)."""
    assert main(["doctor", "--no-probe", "--format", "html"]) == 0
    html = capsys.readouterr().out
    assert html.startswith("<!DOCTYPE html>") and "<h1>This machine</h1>" in html and "cupti-python" in html


def test_the_page_is_made_from_the_json_contract_alone(capsys):
    """Rendering the JSON that --format json printed gives the same page: the renderer needs nothing else."""
    from nvprof_wrap.renderers import html as page_renderer

    assert RENDERERS["html"] is page_renderer and page_renderer.EXTENSION == ".html" and page_renderer.NAME == "html"
    html, d = render(capsys, str(SAMPLES / "torch_ops"))
    assert page_renderer._page([(None, d)], 15) == html


def test_run_html_writes_report_html_into_the_run_folder(capsys, tmp_path):
    """`run --html` under the fake nsys (tests/fakes): the page beside the captures, the usual report on stdout."""
    import sys

    from tests.launch.test_launch import CHILD, wrapper

    out = tmp_path / "run"
    proc = wrapper(["--backend", "nsys", "-o", str(out), "--html", "--format", "json", "--", sys.executable, "-c",
                    CHILD], gpus="NVIDIA H200:9.0")
    assert proc.returncode == 3, proc.stderr  # still the job's exit code
    d = json.loads(proc.stdout)
    p = Page((out / "report.html").read_text(encoding="utf-8"))
    assert_self_contained(p)
    assert d["headline"] == ["Job failed (exit 3) — report of what ran"]  # the job's end first, then the verdict
    assert p.text["p"][:2] == [*d["headline"], d["message"]]
    assert f"nvprof-wrap: HTML report → {out / 'report.html'}\n" in proc.stderr
    assert main(["report", str(out), "--format", "json"]) == 0  # the page is not taken for a capture
    assert json.loads(capsys.readouterr().out)["skipped"] == []
    # --no-report --html: the page only, nothing printed after the job's own output
    proc = wrapper(["--backend", "nsys", "-o", str(tmp_path / "quiet"), "--no-report", "--html", "--",
                    sys.executable, "-c", "print('job says hi')"], gpus="NVIDIA H200:9.0")
    assert proc.returncode == 0 and proc.stdout == "job says hi\n"
    assert (tmp_path / "quiet" / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_flags_are_shown_beside_the_reason(capsys, tmp_path):
    """The torch_ops capture with its GPU relabelled sm_75: names claiming bf16/fp8/fp64 tensor-core math get a flag."""
    path = tmp_path / "t4.sqlite"
    shutil.copy(SAMPLES / "torch_ops" / "nsys_torch_ops.sqlite", path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE TARGET_INFO_GPU SET name = 'Tesla T4', computeMajor = 7, computeMinor = 5")
    conn.commit()
    conn.close()
    html, d = render(capsys, str(path), "--limit", "100")
    flagged = [k for k in d["kernels"] if k["flag"]]
    assert len(flagged) >= 3 and any("bf16" in k["flag"] for k in flagged)
    for k in flagged:
        row = kernel_row(html, k["name"])
        assert f'<span class="flag">⚠ {escape(k["flag"])}</span>' in row
    assert html.count('<span class="flag">') == len(flagged)


def test_chart_colours_come_from_kind_and_direction_never_from_the_label(monkeypatch):
    """Issue 15: the split's kinds and copy directions are fields; the page colours each bar from them, not by parsing
    the words the other renderers show (which may change)."""
    from nvprof_wrap.pipeline import analyze
    from nvprof_wrap.report import types

    report = analyze(SAMPLES / "keras_reuters_fp16")  # tensor-core and CUDA-core kernels, copies HtoD, DtoH, DtoD
    want = {("tensor_core", ""): "c-tc", ("cuda_core", ""): "c-cuda", ("unknown", ""): "c-unk",
            ("communication", ""): "c-comm", ("memcpy", "HtoD"): "c-h2d", ("memcpy", "DtoH"): "c-d2h",
            ("memcpy", "DtoD"): "c-d2d", ("memcpy", "PtoP"): "c-mem", ("memcpy", "HtoH"): "c-mem",
            ("memcpy", "other"): "c-mem", ("memset", ""): "c-mset"}
    present = {(s.kind, s.direction) for s in report.split}
    assert {("tensor_core", ""), ("memcpy", "HtoD"), ("memcpy", "DtoH")} <= present
    monkeypatch.setattr(types, "SPLIT_LABELS", {k: f"label {i}" for i, k in enumerate(types.SPLIT_LABELS)})
    page = RENDERERS["html"].render(report, Options())
    for s in report.split:
        label = s.category
        assert f'>{label}</text><rect class="{want[(s.kind, s.direction)]}"' in page
