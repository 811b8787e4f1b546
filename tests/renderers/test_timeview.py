"""The time view (renderers/_timeview.py): the per-step series of real nanoGPT H200 captures as charts — one bar per
step (or per bin above MAX_BARS), to scale, with captions that say what was binned, folded or cut — and the page's
"Over time" section and the compare page's before/after charts."""
from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import pytest

from nvprof_wrap import analyze
from nvprof_wrap.renderers import Options, _svg, _timeview, render
from nvprof_wrap.report.compare import compare
from nvprof_wrap.report.kinds import Named, Reports
from nvprof_wrap.report.series import Series, StepRow
from tests.renderers._steps import real_series, unpacked
from tests.renderers.test_html import SAMPLES, Page
from tests.renderers.test_svg import HOSTILE, NS

SVG = "{http://www.w3.org/2000/svg}svg"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt")
    return folder, {run: real_series(run, folder) for run in ("gpt_fp32_nsys", "gpt_bf16_nsys")}


def row(step: int, start_s: float = 0.0, **kw) -> StepRow:
    base = StepRow(step, start_s, duration_ns=10_000_000, processes=1, launches=100, kernel_ns=8_000_000,
                   tc_ns=2_000_000, unknown_ns=1_000_000, copy_ns=500_000, comm_ns=1_000_000, gpu_busy_ns=7_000_000,
                   api_ns={"launch": 1_000_000, "sync": 2_000_000, "alloc": 0, "other": 500_000},
                   outside_api_ns=6_500_000)
    return dataclasses.replace(base, **kw)


def series(n: int, **kw) -> Series:
    base = Series("steps", "step marks", None, tuple(row(i, i / 100) for i in range(n)), "runtime API records")
    return dataclasses.replace(base, **kw)


def svgs(html: str) -> list[ET.Element]:
    """Every chart of the time view, parsed on its own."""
    return [ET.fromstring(part[:part.index("</svg>") + 6]) for part in html.split('<svg class="ts"')[1:]
            for part in ['<svg class="ts"' + part]]


def by_title(html: str) -> dict[str, ET.Element]:
    return {s.find("s:title", NS).text: s for s in svgs(html)}


def bars(svg: ET.Element) -> list[ET.Element]:
    return svg.findall(".//s:g[@class='bar']", NS)


def test_real_steps_one_bar_each_to_scale(runs):
    _, got = runs
    s = got["gpt_fp32_nsys"]
    charts = by_title(_timeview.section(s))
    assert set(charts) == {"Step wall time: GPU busy and idle", "The host's time per step: CUDA calls and outside them",
                           "Tensor-core share of kernel time per step",
                           "GPU work per step: kernels, communication, copies"}
    for title in ("Step wall time: GPU busy and idle", "GPU work per step: kernels, communication, copies"):
        assert len(bars(charts[title])) == len(s.rows) == 30
    wall = charts["Step wall time: GPU busy and idle"]
    # each bar's busy + idle is its step's wall time; the scale is one for all bars (the first step is cut: below)
    for g, r in zip(bars(wall)[1:], s.rows[1:]):
        values = [float(x.get("data-value")) for x in g.findall("s:rect", NS)]
        assert sum(values) == pytest.approx(r.duration_ns, abs=1)
        assert values[0] == pytest.approx(min(r.gpu_busy_ns, r.duration_ns), abs=1)
    xt = [t.text for t in wall.iterfind(".//s:text[@class='v xtick']", NS)]
    assert xt == ["0", "5", "10", "15", "20", "25"]  # the steps' numbers


def test_the_tensor_core_line_is_each_steps_share(runs):
    _, got = runs
    s = got["gpt_bf16_nsys"]
    tc = by_title(_timeview.section(s))["Tensor-core share of kernel time per step"]
    (poly,) = tc.findall(".//s:polyline", NS)
    ys = [float(p.split(",")[1]) for p in poly.get("points").split()]
    top = min(float(g.get("y1")) for g in tc.iterfind(".//s:line[@class='grid']", NS))  # the 100% line
    bottom = _svg.HEIGHT - _svg.BOTTOM
    assert len(ys) == 30
    for y, r in zip(ys, s.rows):
        assert (bottom - y) / (bottom - top) == pytest.approx(r.tc_share, abs=0.002)
    assert all(0.3 < r.tc_share < 0.35 for r in s.rows)  # bf16 nanoGPT: a third of kernel time on tensor cores


def test_a_start_up_step_is_cut_and_named(runs):
    _, got = runs
    html = _timeview.section(got["gpt_fp32_nsys"])
    assert "Taller than the axis, cut at its top (two white strokes): step 0 (491 ms)." in html
    wall = by_title(html)["Step wall time: GPU busy and idle"]
    assert [len(g.findall("s:path[@class='cut']", NS)) for g in bars(wall)][:3] == [1, 0, 0]


def test_bins_above_max_bars():
    s = series(1000, rows=tuple(row(i + 1, i / 100, duration_ns=(i + 1) * 1000) for i in range(1000)))
    got, size = _timeview.bins(s.rows)
    assert size == 4 and len(got) == 250 and (got[0].first, got[0].last, got[-1].last) == (1, 4, 1000)
    assert got[0].row.duration_ns == round((1000 + 2000 + 3000 + 4000) / 4)
    html = _timeview.section(s)
    assert "1,000 steps (step marks), steps 1-1000, in bins of 4: each bar is the mean of its bin." in html
    for svg in svgs(html):
        if svg.find("s:title", NS).text != "Tensor-core share of kernel time per step":
            assert len(bars(svg)) == 250
    assert "the first of each bin of 4" in html
    assert _timeview.bins(s.rows[:300])[1] == 1


def test_a_bin_weighs_shares_by_time_and_keeps_missing_host_data_missing():
    rows = (row(0, kernel_ns=1_000, tc_ns=1_000, hw_tensor=50.0, duration_ns=1),
            row(1, kernel_ns=3_000, tc_ns=0, hw_tensor=None, api_ns=None, outside_api_ns=None, duration_ns=3))
    (b,), _ = _timeview.bins(rows, 2)
    assert b.row.tc_share == pytest.approx(0.25) and b.row.hw_tensor == 50.0 and b.row.api_ns["sync"] == 2_000_000
    (b,), _ = _timeview.bins(tuple(dataclasses.replace(r, api_ns=None, outside_api_ns=None) for r in rows), 2)
    assert b.row.api_ns is None and b.row.outside_api_ns is None


def test_no_host_records_no_host_chart_and_the_caption_says_why():
    s = series(5, host="none", rows=tuple(row(i, api_ns=None, outside_api_ns=None) for i in range(5)))
    html = _timeview.section(s)
    assert len(svgs(html)) == 3 and "The host's time" not in html and "no CUDA API records" in html


def test_hardware_tensor_activity_is_a_second_line():
    s = series(4, rows=tuple(row(i, hw_tensor=None if i == 2 else 10.0 * i) for i in range(4)))
    tc = by_title(_timeview.section(s))["Tensor-core share of kernel time per step"]
    polys = tc.findall(".//s:polyline", NS)
    assert len(polys) == 3 and sum(bool(p.get("stroke-dasharray")) for p in polys) == 2  # broken where unsampled
    assert "tensor pipes (hardware, % of SM time)" in [t.text for t in tc.iterfind(".//s:text", NS)]


def test_buckets_have_an_axis_in_seconds():
    s = series(20, kind="buckets", source="time", bucket_s=0.5, rows=tuple(row(i, i * 0.5, duration_ns=500_000_000)
                                                                           for i in range(20)))
    html = _timeview.section(s)
    assert list(by_title(html)) == ["Wall time per bucket: GPU busy and idle",
                                    "The host's time per bucket: CUDA calls and outside them",
                                    "Tensor-core share of kernel time per bucket",
                                    "GPU work per bucket: kernels, communication, copies"]
    ticks = [t.text for t in by_title(html)["Wall time per bucket: GPU busy and idle"].iterfind(
        ".//s:text[@class='v xtick']", NS)]
    assert ticks[0] == "0" and all(t.endswith(" s") for t in ticks[1:]) and ticks[-1] == "10 s"
    assert "No steps were marked: 20 buckets of 0.5 s of the capture&#x27;s time." in html


def test_folded_steps_keep_their_numbers():
    numbers = (0, 1, 2, 10, 50, 51, 400)
    s = series(7, folded=393, rows=tuple(row(n, i) for i, n in enumerate(numbers)))
    html = _timeview.section(s)
    assert "393 consecutive steps per row" in html
    ticks = [t.text for t in by_title(html)["Step wall time: GPU busy and idle"].iterfind(
        ".//s:text[@class='v xtick']", NS)]
    assert ticks == [str(n) for n in numbers]


def test_nothing_or_one_row_no_section():
    assert _timeview.section(None) == "" and _timeview.section(series(1)) == "" and _timeview.section(series(0)) == ""
    assert "Over time" in _timeview.section(series(2))


def test_capture_text_is_escaped():
    html = _timeview.section(series(3, source=HOSTILE, notes=(HOSTILE,)))
    assert "<script" not in html and "\x1b" not in html and "&lt;script&gt;" in html
    Page(html)


def attached(report, s: Series | None):
    """The report with the series measured here (tests/renderers/_steps.py) in place of its own."""
    import dataclasses

    return dataclasses.replace(report, series=s)


def test_the_page_shows_the_section_after_the_totals(runs):
    folder, got = runs
    report = attached(analyze(unpacked("gpt_bf16_nsys", folder)), got["gpt_bf16_nsys"])
    page = render("html", report, Options())
    parsed = Page(page)
    assert parsed.count("script") == 0 and parsed.count("svg") == 6  # four time charts, the split chart, the
    # time budget's bar
    i = page.index('<section class="timeview"')
    assert page.index('<dl class="totals">') < i < page.index("<h2>Where GPU time went</h2>")
    assert page.index('class="verdict') < i and "<h2>Over time</h2>" in page


def test_a_report_without_series_is_unchanged():
    import dataclasses

    report = dataclasses.replace(analyze(SAMPLES / "keras_reuters_fp16"), series=None)
    assert "timeview" not in render("html", report, Options()).split("</style>")[1]


def test_several_reports_each_with_its_own_section(runs):
    folder, got = runs
    items = tuple(Named(run, run, run, attached(analyze(unpacked(run, folder)), got[run])) for run in got)
    page = render("html", Reports(items), Options())
    assert page.count("<h3>Over time</h3>") == 2 and 'id="r2-ts-wall-title"' in page
    ids = [t[1]["id"] for t in Page(page).tags if "id" in t[1]]
    assert len(ids) == len(set(ids))


def test_the_compare_page_has_before_and_after_charts(runs):
    folder, got = runs
    before, after = (attached(analyze(unpacked(run, folder)), got[run]) for run in got)
    page = render("html", compare(before, after, labels=("fp32", "bf16")), Options())
    charts = by_title(page)
    assert list(charts) == ["Step wall time, before and after", "Tensor-core share of kernel time, before and after",
                            "Before: fp32: GPU busy and idle", "After: bf16: GPU busy and idle"]
    b, a = charts["Before: fp32: GPU busy and idle"], charts["After: bf16: GPU busy and idle"]
    ticks = lambda svg: [t.text for t in svg.iterfind(".//s:text[@class='v ytick']", NS)]
    assert ticks(b) == ticks(a)  # one scale for both
    assert len(bars(b)) == len(bars(a)) == 30
    lines = charts["Step wall time, before and after"].findall(".//s:polyline", NS)
    assert [len(p.get("points").split()) for p in lines] == [30, 30]
    assert "Taller than the axis, drawn at its top: step 1 (672 ms)." in page  # the higher of the two first steps
    assert Page(page).count("script") == 0
    without = compare(attached(analyze(unpacked("gpt_fp32_nsys", folder)), None), after)
    assert "Over time" not in render("html", without, Options())
