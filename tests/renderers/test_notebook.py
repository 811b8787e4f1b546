"""The report as a notebook shows it (issue 22): a real notebook, executed by nbclient on an ipykernel, displays
``nvprof_wrap.analyze(<bundled sample>)`` as its last expression; the executed notebook is converted to HTML with
nbconvert's lab template (JupyterLab's own CSS) and opened in Debian's chromium through Playwright at a 1000 px wide
viewport. Layout is asserted, not pixels: the stat tiles do not overlap, op and kernel names are left-aligned, no
table row is taller than three lines of its text, the kernel-name column has room, nothing overflows the page, and
the report's own CSS does not restyle the notebook around it.

Nothing is written outside tmp_path: the kernel's IPython, Jupyter and temporary folders point there. Skipped, with
the reason, where nbclient, nbformat, ipykernel, nbconvert, playwright or chromium is missing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._paths import ROOT
from tests.renderers.test_html_browser import browser  # noqa: F401 - the same headless Chromium, as a fixture

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SAMPLE = ROOT / "nvprof_wrap" / "samples" / "keras_reuters_fp16" / "nsys_annotated.sqlite"
WIDTH = 1000
MAX_ROW_LINES = 3
MIN_KERNEL_PX, MIN_NAME_PX = 300, 200  # a demangled kernel name's column; an op's, a path's (40 and 25 characters)


def _need(module: str, pip: str) -> object:
    return pytest.importorskip(module, reason=f"{module} is not installed (pip install {pip})")


@pytest.fixture(scope="module")
def notebook_page(tmp_path_factory):
    """(the executed notebook as nbconvert's lab template shows it, the same page without the report's output)."""
    _need("nbformat", "nbformat")
    _need("nbclient", "nbclient")
    _need("ipykernel", "ipykernel")
    _need("nbconvert", "nbconvert")
    tmp = tmp_path_factory.mktemp("notebook")
    env = {"IPYTHONDIR": tmp / "ipython", "JUPYTER_CONFIG_DIR": tmp / "jupyter-config",
           "JUPYTER_DATA_DIR": tmp / "jupyter-data", "JUPYTER_RUNTIME_DIR": tmp / "jupyter-runtime",
           "MPLCONFIGDIR": tmp / "mpl", "TMPDIR": tmp / "tmp"}
    for p in env.values():
        p.mkdir()
    # nbconvert's templates (share/jupyter/nbconvert) sit under the prefix nbconvert was installed in: inside a venv
    # made with --system-site-packages that is the base interpreter's, which Jupyter's path does not search (the
    # notebook tests erred there: "No template sub-directory with name 'lab'")
    shares = [os.path.join(prefix, "share", "jupyter") for prefix in dict.fromkeys((sys.prefix, sys.base_prefix))]
    jupyter_path = os.pathsep.join(filter(None, [*shares, os.environ.get("JUPYTER_PATH")]))
    # Executed in a child Python: nbclient's runner and asyncio threads would outlive the test in this process, and
    # a process with other threads never forks its readers (system/fork.py), which later tests check.
    code = f"""
import copy, json, os, sys
import nbclient, nbconvert, nbformat
from jupyter_client.kernelspec import NoSuchKernel
nb = nbformat.v4.new_notebook(cells=[
    nbformat.v4.new_markdown_cell("# Were tensor cores used?"),
    nbformat.v4.new_code_cell("import nvprof_wrap\\nprint(nvprof_wrap.__file__)"),
    nbformat.v4.new_code_cell("nvprof_wrap.analyze({str(SAMPLE)!r})"),
])
client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                 resources={{"metadata": {{"path": {str(tmp)!r}}}}})
try:
    client.execute(env=dict(os.environ))
except NoSuchKernel as e:
    print(json.dumps({{"skip": str(e)}})); sys.exit(0)
exporter = nbconvert.HTMLExporter(template_name="lab")
shown, _ = exporter.from_notebook_node(nb)
bare = copy.deepcopy(nb)
bare.cells[-1].outputs = []
without, _ = exporter.from_notebook_node(bare)
open({str(tmp / "shown.html")!r}, "w", encoding="utf-8").write(shown)
open({str(tmp / "without.html")!r}, "w", encoding="utf-8").write(without)
print(json.dumps({{"printed": "".join(o.get("text", "") for o in nb.cells[1].outputs),
                  "html": "text/html" in nb.cells[-1].outputs[0]["data"]}}))
"""
    # the kernel imports this checkout's nvprof_wrap, and it and the client keep their folders in tmp
    child_env = {**os.environ, **{k: str(v) for k, v in env.items()}, "JUPYTER_PATH": jupyter_path,
                 "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    proc = subprocess.run([sys.executable, "-c", code], env=child_env, cwd=tmp, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skip" in got:
        pytest.skip(f"no python3 Jupyter kernel: {got['skip']}")
    assert got["printed"].strip() == str(ROOT / "nvprof_wrap" / "__init__.py")  # this checkout's code, not another's
    assert got["html"]
    return tmp / "shown.html", tmp / "without.html"


def _open(browser, path: Path):  # noqa: F811
    context = browser.new_context(viewport={"width": WIDTH, "height": 900}, service_workers="block")
    url = path.resolve().as_uri()
    # nothing but the page itself is loaded (the template's MathJax / require.js links are refused)
    context.route("**/*", lambda route: route.continue_() if route.request.url == url else route.abort())
    page = context.new_page()
    page.goto(url, wait_until="load")
    page.wait_for_timeout(300)
    return context, page


def _report_frame(page):
    """The frame that holds the report: the notebook page itself, or a frame inside it."""
    frames = [f for f in page.frames if f.locator(".verdict").count()]
    assert len(frames) == 1, "the report is shown exactly once"
    return frames[0]


def _overlaps(a: dict, b: dict) -> bool:
    return (min(a["x"] + a["width"], b["x"] + b["width"]) - max(a["x"], b["x"]) > 0.5
            and min(a["y"] + a["height"], b["y"] + b["height"]) - max(a["y"], b["y"]) > 0.5)


_LAYOUT = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; };
  const lh = e => { const s = getComputedStyle(e); const v = parseFloat(s.lineHeight);
                    return isNaN(v) ? 1.2 * parseFloat(s.fontSize) : v; };
  const de = document.documentElement;
  return {
    tiles: [...document.querySelectorAll('dl.totals > div')].map(box),
    tileText: [...document.querySelectorAll('dl.totals dt, dl.totals dd')].map(
      e => ({text: e.textContent, box: box(e), scroll: e.scrollWidth, client: e.clientWidth,
             lines: box(e).height / lh(e)})),
    names: [...document.querySelectorAll('td.name')].filter(td => td.offsetParent !== null).map(td => {
      const c = td.querySelector('code'), s = getComputedStyle(td);
      return {text: c.textContent, align: s.textAlign, cell: box(td), code: box(c),
              padLeft: parseFloat(s.paddingLeft), width: td.getBoundingClientRect().width,
              kernel: td.closest('table').classList.contains('kernels')};
    }),
    // each short cell's own text (a number, a share, a precision mix), not the row it stretches to
    cells: [...document.querySelectorAll('tbody td:not(.name):not(.why)')].filter(td => td.offsetParent !== null)
      .map(td => { const r = document.createRange(); r.selectNodeContents(td);
                   return {text: td.textContent, lines: r.getBoundingClientRect().height / lh(td)}; }),
    scrollWidth: de.scrollWidth, clientWidth: de.clientWidth,
  };
}"""


def _layout_problems(got: dict, top: list, framed: dict | None) -> list[str]:
    """What is wrong with the report's layout, in words (all of it, not only the first thing)."""
    problems = []
    # the tiles of totals sit side by side or wrap, never on top of each other, nor their label on their value
    if len(got["tiles"]) != 6:
        problems.append(f"{len(got['tiles'])} tiles of totals, not 6")
    for what, boxes in (("tiles", got["tiles"]), ("tile labels and values", [t["box"] for t in got["tileText"]])):
        overlapping = [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes[:i]) if _overlaps(a, b)]
        if overlapping:
            problems.append(f"{what} overlap: {overlapping}")
    cramped = [t["text"] for t in got["tileText"] if t["scroll"] > t["client"] + 1 or t["lines"] > 2.2]
    if cramped:
        problems.append(f"tile texts cut or wrapped to more than two lines: {cramped}")
    # op and kernel names read from the left, in a column wide enough for a name to take a few lines at most
    if len(got["names"]) < 15:
        problems.append(f"only {len(got['names'])} op or kernel names in view")
    for n in got["names"]:
        if n["align"] not in ("left", "start") or n["code"]["x"] - n["cell"]["x"] > n["padLeft"] + 1:
            problems.append(f"name not left-aligned ({n['align']}, {n['code']['x'] - n['cell']['x']:.0f} px in): "
                            f"{n['text']}")
        if n["width"] < (MIN_KERNEL_PX if n["kernel"] else MIN_NAME_PX):
            problems.append(f"name column {n['width']:.0f} px wide: {n['text']}")
    # no cell but a name or a why (prose: demangled template names run to 2,000 characters) is taller than three
    # lines: no number, share or precision mix is squeezed into a column of a word
    tall = [(c["text"], round(c["lines"], 1)) for c in got["cells"] if c["lines"] > MAX_ROW_LINES + 0.2]
    if len(got["cells"]) < 100 or tall:
        problems.append(f"{len(tall)} of {len(got['cells'])} cells taller than {MAX_ROW_LINES} lines: {tall[:8]}")
    # nothing is wider than the notebook or the report's own view of it (wide tables scroll in their own box)
    if got["scrollWidth"] > got["clientWidth"]:
        problems.append(f"the report is {got['scrollWidth']} px wide in {got['clientWidth']} px")
    if top[0] > top[1]:
        problems.append(f"the notebook page is {top[0]} px wide in a {top[1]} px viewport")
    if framed is not None and (framed["x"] < 0 or framed["x"] + framed["width"] > top[1] or framed["height"] < 400):
        problems.append(f"the report's frame is out of the page or too small: {framed}")
    return problems


def test_notebook_report_is_laid_out_as_the_page(browser, notebook_page, tmp_path):  # noqa: F811
    shown, without = notebook_page
    context, page = _open(browser, shown)
    try:
        page.screenshot(path=str(tmp_path / "notebook.png"), full_page=True)
        frame = _report_frame(page)
        got = frame.evaluate(_LAYOUT)
        top = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        framed = None if frame == page.main_frame else frame.frame_element().bounding_box()
        problems = _layout_problems(got, top, framed)
        # the report's CSS stays the report's: the notebook around it looks as it does without the report
        style = "() => { const s = getComputedStyle(document.body); return [s.maxWidth, s.margin, s.fontFamily, " \
                "s.fontSize, s.backgroundColor, getComputedStyle(document.querySelector('.jp-Cell')).padding]; }"
        around = page.evaluate(style)
    finally:
        context.close()
    context, page = _open(browser, without)
    try:
        if page.evaluate(style) != around:
            problems.append(f"the report restyles the notebook: {around} instead of {page.evaluate(style)}")
    finally:
        context.close()
    assert not problems, f"{len(problems)} layout problems:\n" + "\n".join(problems[:30])


def test_notebook_kernel_keeps_its_folders_in_tmp_path(notebook_page):
    """The kernel's IPython profile landed in the test's folder (IPYTHONDIR reached it), not in $HOME."""
    tmp = notebook_page[0].parent
    assert any((tmp / "ipython").iterdir()), "IPYTHONDIR was not used: the kernel may have written elsewhere"
