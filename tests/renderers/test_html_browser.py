"""The HTML report in a real browser: Debian's `chromium` package driven by Playwright's Python package (no browser
build downloaded). The page must render (verdict, chart, tables with rows), log no console error, request nothing
but itself, and keep hostile names as text — checked once more with the page's Content-Security-Policy bypassed,
so the escaping alone has to hold. Skipped, with the reason, where chromium or playwright is missing;
.ci/run installs both."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.cli import main
from nvprof_wrap.renderers import Options, render
from nvprof_wrap.report.compare import compare
from tests._paths import RUNS
from tests.renderers._steps import real_series, unpacked
from tests.renderers.test_html import HOSTILE, HOSTILE_OP, HOSTILE_PROCESS, SAMPLES, hostile_capture
from tests.renderers.test_timeview import attached

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("NVPROF_WRAP_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# Headless, and nothing of the browser's own that talks to the network; any host name resolves to nothing.
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-default-apps", "--disable-extensions",
        "--host-resolver-rules=MAP * ~NOTFOUND"]


SPLIT_CHART = "svg.chart[aria-labelledby$='-chart']"  # the split's chart (the time budget's bar is another)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright's Python package is not installed (pip install playwright)")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"Debian's chromium is not installed ({CHROMIUM}; apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=60_000)
        try:
            yield b
        finally:
            b.close()


class Visit:
    """One page in a fresh context, with everything it logged, requested or tried to pop up."""

    def __init__(self, browser, path: Path, bypass_csp: bool = False, width: int = 1400,
                 viewport: dict | None = None) -> None:
        self.url = path.resolve().as_uri()
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.context = browser.new_context(bypass_csp=bypass_csp,
                                           viewport=viewport or {"width": width, "height": 900},
                                           service_workers="block")
        # nothing may leave the machine: every request but the page itself is recorded and aborted
        self.context.route("**/*", lambda route: route.continue_() if route.request.url == self.url else route.abort())
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", self._dialog)
        self.page.goto(self.url, wait_until="load")
        self.page.wait_for_timeout(300)  # time for a stray onerror / onload to fire

    def _dialog(self, d) -> None:
        self.dialogs.append(d.message)
        d.dismiss()

    def assert_quiet(self) -> None:
        """No console error or warning, no script error, no request but the page, no alert."""
        assert [m for m in self.console if m[0] in ("error", "warning")] == []
        assert self.errors == [] and self.dialogs == [] and self.requests == [self.url]

    def close(self) -> None:
        self.context.close()


def write_report(tmp_path: Path, source: Path, *extra: str) -> Path:
    out = tmp_path / "report.html"
    assert main(["report", str(source), "--format", "html", "-o", str(out), "--store", str(tmp_path / "s.sqlite"),
                 *extra]) == 0
    return out


def test_sample_report_renders_verdict_chart_and_tables(browser, tmp_path, capsys):
    assert main(["report", str(SAMPLES / "keras_reuters_fp16"), "--format", "json", "--store",
                 str(tmp_path / "s.sqlite")]) == 0
    import json

    d = json.loads(capsys.readouterr().out)
    v = Visit(browser, write_report(tmp_path, SAMPLES / "keras_reuters_fp16"))
    page = v.page
    try:
        verdict = page.locator(".verdict .message")
        assert verdict.is_visible() and verdict.text_content() == d["message"]
        assert page.locator(".verdict .hints li").all_text_contents() == d["hints"]
        chart = page.locator(SPLIT_CHART)
        assert chart.is_visible() and chart.bounding_box()["width"] > 300
        assert page.locator(".verdict").bounding_box()["y"] < chart.bounding_box()["y"]  # the verdict first
        # the bars are drawn to scale: each category's bar width over the whole bar is its share
        whole = sum(r.bounding_box()["width"] for r in chart.locator("rect").all()[:len(d["time_split"])])
        assert whole == pytest.approx(chart.bounding_box()["width"], rel=0.01)
        for rect, s in zip(chart.locator("rect").all()[:len(d["time_split"])], d["time_split"]):
            assert rect.bounding_box()["width"] == pytest.approx(s["share"] * whole, abs=1.5)
        # tables have rows: ops, scopes, device, process, the top kernels in view and the rest one click away
        tables = page.locator("table")
        assert tables.count() >= 6 and all(t.locator("tbody tr").count() > 0 for t in tables.all())
        kernels = page.locator("table.kernels")
        assert kernels.first.locator("tbody tr").count() == 15 and kernels.first.is_visible()
        rest = kernels.nth(1)
        assert not rest.is_visible()
        page.get_by_text(f"the other {len(d['kernels']) - 15} kernels").click()
        assert rest.is_visible() and rest.locator("tbody tr").count() == len(d["kernels"]) - 15
        # each kernel's whole name: the cell itself, or on hover (title) and a click away (<details>) where it is cut
        whole = page.evaluate("""() => [...document.querySelectorAll('table.kernels td.name')].map(td => {
            const w = td.querySelector('code.whole'), c = td.querySelector('code');
            return w ? [w.textContent, c.title] : [c.textContent, c.textContent]; })""")
        assert whole == [[k["name"], k["name"]] for k in d["kernels"]]
        page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
        assert (tmp_path / "page.png").stat().st_size > 50_000
        v.assert_quiet()
    finally:
        v.close()


@pytest.mark.parametrize("bypass_csp", [False, True], ids=["with-csp", "csp-bypassed"])
def test_hostile_names_stay_text_in_the_browser(browser, tmp_path, bypass_csp):
    v = Visit(browser, write_report(tmp_path, hostile_capture(tmp_path), "--limit", "100"), bypass_csp)
    page = v.page
    try:
        v.assert_quiet()  # no alert, no request for src=x or //example.com, no CSP violation logged
        injected = page.evaluate("""() => ({
            elements: document.querySelectorAll(
                'body script, body img, body iframe, body marquee, body style, body b, '
                + 'body svg:not(.chart):not(.ts)').length,
            handlers: [...document.querySelectorAll('*')].filter(
                e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
            hidden: getComputedStyle(document.querySelector('main')).display})""")
        assert injected == {"elements": 0, "handlers": 0, "hidden": "block"}
        code = page.locator("code").all_text_contents()
        for _, shown in HOSTILE.values():
            assert shown in code
        assert HOSTILE_OP in code and page.get_by_text(HOSTILE_PROCESS, exact=True).is_visible()
        assert page.locator(".verdict .message").is_visible()
    finally:
        v.close()


def test_demo_page_with_three_reports_and_working_links(browser, tmp_path, capsys):
    assert main(["demo", "--format", "html"]) == 0
    path = tmp_path / "demo.html"
    path.write_text(capsys.readouterr().out, encoding="utf-8")
    v = Visit(browser, path)
    try:
        assert v.page.locator("section .verdict").count() == 3 and v.page.locator(SPLIT_CHART).count() == 3
        v.page.locator('nav a[href="#r3"]').click()
        assert v.page.evaluate("location.hash") == "#r3" and v.page.locator("#r3 h2").is_visible()
        v.assert_quiet()
    finally:
        v.close()


def test_compare_page_of_the_fp32_and_bf16_runs_renders_quietly(browser, tmp_path, capsys):
    out = tmp_path / "compare.html"
    assert main(["compare", str(RUNS / "gpt_fp32_nsys"), str(RUNS / "gpt_bf16_nsys"), "--format", "html",
                 "-o", str(out)]) == 0
    v = Visit(browser, out)
    try:
        text = v.page.locator("body").inner_text()
        assert "9.5% → 33.5%" in text and "bf16" in text
        tables = v.page.locator("table")
        assert tables.count() == 5 and all(t.locator("tbody tr").count() > 0 for t in tables.all())
        v.assert_quiet()
    finally:
        v.close()


# The time view's layout, measured in the page: boxes as [left, top, right, bottom] in CSS pixels.
LAYOUT = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const all = (root, sel) => [...root.querySelectorAll(sel)].map(box);
  const section = document.querySelector('section.timeview');
  const lines = r => r.getBoundingClientRect().height / parseFloat(getComputedStyle(r.querySelector('td')).lineHeight);
  const rows = sel => [...document.querySelectorAll(sel)].filter(r => r.offsetParent !== null).map(lines);
  return {
    width: document.documentElement.clientWidth, scroll: document.documentElement.scrollWidth,
    section: box(section), before: box(section.previousElementSibling), after: box(section.nextElementSibling),
    charts: all(document, 'svg.ts'), figures: all(document, '.ts-fig'),
    inside: [...document.querySelectorAll('svg.ts')].map(s => ({
      title: all(s, 'text.ts-title'), legend: all(s, '.legend-item'), bars: all(s, 'g.bar rect'),
      labels: all(s, 'text.xtick, text.ytick, text.xlabel')})),
    rows: rows('table:not(.kernels) tbody tr'), kernel_rows: rows('table.kernels tbody tr')};
}"""
# A row of the compare page's tables is one line (two where a key wraps); the report page's tables, measured on the
# nanoGPT captures at 800 px: op rows with their precision mixes ~5.5 lines, the sources row ~6.5 (its notes).
COMPARE_ROW_LINES, REPORT_ROW_LINES, KERNEL_ROW_LINES = 2, 8, 3


def overlap(a: list[float], b: list[float], tol: float = 0.5) -> bool:
    return a[0] < b[2] - tol and b[0] < a[2] - tol and a[1] < b[3] - tol and b[1] < a[3] - tol


@pytest.fixture(scope="module")
def series_pages(tmp_path_factory) -> dict[str, Path]:
    """The fp32 nanoGPT report with its steps, and the compare page of the fp32 and bf16 runs with theirs."""
    folder = tmp_path_factory.mktemp("series")
    reports = {run: attached(analyze(unpacked(run, folder)), real_series(run, folder))
               for run in ("gpt_fp32_nsys", "gpt_bf16_nsys")}
    pages = {"report": render("html", reports["gpt_fp32_nsys"], Options()),
             "compare": render("html", compare(*reports.values(), labels=("gpt_fp32_nsys", "gpt_bf16_nsys")),
                               Options())}
    for name, text in pages.items():
        (folder / f"{name}.html").write_text(text, encoding="utf-8")
    return {name: folder / f"{name}.html" for name in pages}


def assert_time_view_laid_out(d: dict, width: int) -> None:
    assert d["width"] == width and d["scroll"] <= width  # nothing pushes the page sideways
    assert len(d["charts"]) == 4
    for left, top, right, bottom in d["charts"]:
        assert 0 <= left and right <= width and right - left > 300 and bottom - top > 130
    # the section sits between its neighbours, and its figures beside or under each other, never on each other
    assert d["before"][3] <= d["section"][1] + 0.5 and d["section"][3] <= d["after"][1] + 0.5
    figs = d["figures"]
    assert not [(i, j) for i in range(len(figs)) for j in range(i) if overlap(figs[i], figs[j])]
    columns = len({round(f[0]) for f in figs})
    assert columns == (2 if width >= 1280 else 1)
    for chart in d["inside"]:
        legend, others = chart["legend"], chart["title"] + chart["labels"] + chart["bars"]
        assert legend and not [(a, b) for a in legend for b in others if overlap(a, b)]
        assert not [(i, j) for i in range(len(legend)) for j in range(i) if overlap(legend[i], legend[j])]


@pytest.mark.parametrize("width", [1280, 800])
def test_time_view_at_1280_and_800_px(browser, series_pages, tmp_path, width):
    v = Visit(browser, series_pages["report"], width=width)
    try:
        d = v.page.evaluate(LAYOUT)
        assert_time_view_laid_out(d, width)
        assert d["section"][1] < v.page.get_by_role("heading", name="Where GPU time went").bounding_box()["y"]
        assert max(d["rows"]) <= REPORT_ROW_LINES
        v.page.screenshot(path=str(tmp_path / f"time-view-{width}.png"), full_page=True)
        v.assert_quiet()
    finally:
        v.close()


@pytest.mark.parametrize("width", [1280, 800])
def test_compare_page_charts_at_1280_and_800_px(browser, series_pages, tmp_path, width):
    v = Visit(browser, series_pages["compare"], width=width)
    try:
        d = v.page.evaluate(LAYOUT)
        assert_time_view_laid_out(d, width)
        assert d["rows"] and max(d["rows"]) <= COMPARE_ROW_LINES
        v.page.screenshot(path=str(tmp_path / f"compare-{width}.png"), full_page=True)
        v.assert_quiet()
    finally:
        v.close()


@pytest.mark.xfail(reason="kernel names wrap to ~34 lines in their cells (measured: nanoGPT's templated ATen "
                          "names); the name cells are being reworked separately (issue 28)", strict=False)
def test_kernel_rows_are_at_most_three_lines(browser, series_pages):
    v = Visit(browser, series_pages["report"], width=800)
    try:
        assert max(v.page.evaluate(LAYOUT)["kernel_rows"]) <= KERNEL_ROW_LINES
    finally:
        v.close()


# Layout (issue 28): at a desktop and a narrow window, no cell lies over another or spills out of itself, nothing is
# wider than the window but inside a scroll box of its own, and no row is taller than MAX_ROW_LINES lines of its text
# (names are cut in the middle, whole on hover and a click away; long prose is clamped). Ranges numbered per step
# are one row, as in the terminal.
MAX_ROW_LINES = 3
_ROWS = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; };
  const lh = e => { const s = getComputedStyle(e); const v = parseFloat(s.lineHeight);
                    return isNaN(v) ? 1.2 * parseFloat(s.fontSize) : v; };
  const rows = [...document.querySelectorAll('tbody tr')].filter(tr => tr.checkVisibility()).map(tr => {
    const td = tr.children[0], s = getComputedStyle(td);
    return {text: tr.textContent.slice(0, 80), cells: [...tr.children].map(box),
            spill: [...tr.children].filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent.slice(0, 40)),
            lines: (tr.getBoundingClientRect().height - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom) - 1)
                   / lh(td)};
  });
  const wide = [...document.querySelectorAll('table')].filter(t => t.checkVisibility()).filter(t => {
    const r = t.getBoundingClientRect(), sc = t.closest('.scroll');
    const scrolls = sc && getComputedStyle(sc).overflowX === 'auto' && sc.getBoundingClientRect().right
                    <= document.documentElement.clientWidth + 1;
    return r.right > document.documentElement.clientWidth + 1 && !scrolls; }).map(t => t.className);
  const de = document.documentElement;
  return {rows, wide, scrollWidth: de.scrollWidth, clientWidth: de.clientWidth,
          steps: [...document.querySelectorAll('table.ops td.name code')].map(c => c.textContent)
                 .filter(t => t.startsWith('step *'))};
}"""


def layout_problems(got: dict) -> list[str]:
    from tests.renderers.test_notebook import _overlaps

    problems = []
    for r in got["rows"]:
        cells = r["cells"]
        if any(_overlaps(a, b) for i, a in enumerate(cells) for b in cells[:i]):
            problems.append(f"cells overlap in the row {r['text']!r}")
        if r["spill"]:
            problems.append(f"text spills out of its cell: {r['spill']}")
        if r["lines"] > MAX_ROW_LINES + 0.25:
            problems.append(f"a row {r['lines']:.1f} lines tall: {r['text']!r}")
    if got["wide"] or got["scrollWidth"] > got["clientWidth"]:
        problems.append(f"wider than the window ({got['scrollWidth']} px in {got['clientWidth']}): {got['wide']}")
    return problems


@pytest.mark.parametrize("width", [1280, 800])
@pytest.mark.parametrize("source", [SAMPLES / "keras_reuters_fp16", RUNS / "gpt_fp32_nsys_steps",
                                    RUNS / "kineto_gpt_bf16"], ids=lambda p: p.name)
def test_tables_are_laid_out_at_a_desktop_and_a_narrow_width(browser, tmp_path, source, width):
    v = Visit(browser, write_report(tmp_path, source), viewport={"width": width, "height": 900})
    try:
        got = v.page.evaluate(_ROWS)
        assert len(got["rows"]) > 20
        problems = layout_problems(got)
        if source.name == "gpt_fp32_nsys_steps":  # 30 ranges `step 0` … `step 29`: one row
            assert got["steps"] == ["step * (30 ranges)"]
        assert not problems, f"{len(problems)} layout problems at {width} px:\n" + "\n".join(problems[:20])
        # a cut name: whole on hover, and a click shows it in full; the row grows only then
        cut = v.page.locator("table.kernels td.name details").first
        title = cut.locator("summary code").get_attribute("title")
        cut.locator("summary").click()
        assert cut.locator("code.whole").is_visible() and cut.locator("code.whole").text_content() == title
        v.assert_quiet()
    finally:
        v.close()


# The page's header (issue 45): the run, its command, the GPU, the driver, the date and the capture files, as the
# report knows them; at a desktop and a narrow window the page never scrolls sideways, the header's long command
# line included.
HEADER = """() => ({
  items: Object.fromEntries([...document.querySelectorAll('header.about dl.run > div')].map(
    d => [d.querySelector('dt').textContent, d.querySelector('dd').textContent])),
  inside: [...document.querySelectorAll('header.about dd')].every(
    d => d.getBoundingClientRect().right <= window.innerWidth + 0.5),
  scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth})"""


@pytest.mark.parametrize("width", [1280, 800])
@pytest.mark.parametrize("source", [RUNS / "timm_amp_steps_nsys", SAMPLES / "torch_ops"], ids=lambda p: p.name)
def test_header_and_no_sideways_scroll_at_1280_and_800_px(browser, tmp_path, capsys, source, width):
    import json

    assert main(["report", str(source), "--format", "json", "--store", str(tmp_path / "j.sqlite")]) == 0
    d = json.loads(capsys.readouterr().out)
    v = Visit(browser, write_report(tmp_path, source), viewport={"width": width, "height": 900})
    try:
        got = v.page.evaluate(HEADER)
        assert got["scrollWidth"] <= got["innerWidth"] == width
        assert got["inside"]
        items, info = got["items"], d["run_info"]
        assert items["run"] == info["run"] == str(source)
        assert items["GPU"] == ", ".join(sorted({g["name"] for g in d["gpus"]}))
        assert items["captures"].split(", ")[0] == d["sources"][0]["path"]
        assert "date" in items and items["date"].endswith(" UTC")
        if source.name == "timm_amp_steps_nsys":  # a run folder: its manifest's command and driver
            assert items["command"] == info["command"] and "train.py" in items["command"]
            assert items["driver"] == info["driver"] == "580.159.04"
        else:  # bare captures: no manifest, so no driver; nothing shown for what is not known
            assert "driver" not in items and info["driver"] is None
        v.assert_quiet()
    finally:
        v.close()
