"""HTML text made safe (``t``: every text that comes from a capture goes through it) and a page framed for a
notebook (``notebook``): shared by the HTML renderer and the Report's _repr_html_."""
from __future__ import annotations

import html as _html

# Control characters → visible ASCII escapes (ESC → \x1b, newline → \n; fonts rarely draw the Control Pictures), bidi
# overrides → <U+202E> (a kernel name never holds them legitimately; shown, they cannot reorder or hide text),
# lone surrogates → U+FFFD.
_VISIBLE = ({c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))} | {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
            | {c: f"<U+{c:04X}>" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)}
            | {c: "\ufffd" for c in range(0xD800, 0xE000)})


def t(value: object) -> str:
    """Any value as HTML text: None → '-', control characters made visible, then escaped (quotes too)."""
    return _html.escape("-" if value is None else str(value).translate(_VISIBLE), quote=True)


# A notebook shows the page in a frame of its own: inlined into an output, JupyterLab's CSS right-aligned its names,
# squeezed the name columns to a few characters and laid the totals' labels over their values, and the page's CSS
# (body, table, :root) restyled the notebook.
# An <iframe srcdoc> isolates both ways whatever the notebook's theme; scoped styles would have to out-rank every
# theme's selectors with a reset of every property. sandbox="" lets the page run nothing, as its CSP says too. With no
# script the frame cannot size itself to the page (thousands of pixels tall even with two kernels): it is a fixed
# height, one screen, scrolled inside and resizable by its corner.
FRAME_HEIGHT_PX = 800


def notebook(page_html: str, title: str) -> str:
    """A page as a notebook output: an isolated, sandboxed frame holding the page, escaped into srcdoc."""
    return (f'<iframe srcdoc="{_html.escape(page_html, quote=True)}" sandbox="" title="{t(title)}" width="100%" '
            f'height="{FRAME_HEIGHT_PX}" style="display:block;width:100%;max-width:100%;height:{FRAME_HEIGHT_PX}px;'
            'border:1px solid rgba(127,127,127,.35);border-radius:4px;resize:vertical;overflow:auto"></iframe>')


def name_cell(full: str, short: str) -> str:
    """A name as a table cell shows it: the short form, the whole name on hover (title) and one click away
    (<details>: to read or copy it); a name shown whole is just itself."""
    if short == full:
        return f"<code>{t(full)}</code>"
    return (f'<details class="whole"><summary><code title="{t(full)}">{t(short)}</code></summary>'
            f'<code class="whole">{t(full)}</code></details>')


PROSE_CHARS = 80  # longer prose in a cell (a kernel's reason and evidence) is clamped to three lines


def prose_cell(markup: str, length: int) -> str:
    """Prose in a table cell (``markup``: already escaped, ``length`` characters of text): when long, three lines
    of it, and the whole in place a click away (<details> holding only its summary: CSS lifts the clamp when open)."""
    if length <= PROSE_CHARS:
        return markup
    return f'<details class="more"><summary><span class="clamp">{markup}</span></summary></details>'
