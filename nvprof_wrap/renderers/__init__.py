"""Renderers: each turns a Report (or kernel rows, or classifications) into text. They return
values and never print or open files; renderers do not import each other (``_rows`` is a
shared helper)."""
from nvprof_wrap.renderers import console, csv, html, json, markdown

RENDERERS = {"table": console, "json": json, "csv": csv, "markdown": markdown, "html": html}
__all__ = ["RENDERERS"]
