"""NVIDIA DLProf's CSV reports (``dlprof --reports=summary,detail``), recognised so that they are refused in words.

DLProf (2020-2022, TensorFlow 1 and PyTorch on Volta-Ampere) ran Nsight Systems and wrote its own tables of what it
found: the summary (``System Config``, ``Summary Report``, ``All Kernels`` with "Kernels using TC"), the op report
(``Op Name, Op Type, …, TC Eligible, Using TC``) and a kernel report (``Kernel Name``, ``Uses TC``). None of them is
a capture this tool can check: the summary and op reports name no kernel, and their tensor-core columns are DLProf's
own verdict. The refusal quotes that verdict and points to the Nsight Systems report DLProf recorded beside them
(``nsys_profile.qdrep`` / ``.sqlite``), which this tool reads.
"""
from __future__ import annotations

import csv
from pathlib import Path

from nvprof_wrap.readers._csv import cut_lines, number, open_text
from nvprof_wrap.readers._head import Head

_READ_INSTEAD = "read the nsys report DLProf made beside it (nsys_profile.qdrep / .sqlite)"
_TC = ("Using TC", "Uses TC")


def explain(head: Head) -> str | None:
    """Why a DLProf report is not read, with DLProf's own tensor-core figures; None for any other file."""
    text = head.text
    if not text:
        return None
    first = text.splitlines()[:3]
    if "DLProf Version" in text and ("Summary Report" in text or "Kernels using TC" in text):
        return _summary(head.path)
    if any(any(t in line for t in _TC) and ("Op Name" in line or "Kernel Name" in line) for line in first):
        return _table(head.path)
    return None


def _rows(path: Path) -> list[list[str]]:
    with open_text(path) as f:
        return [r for r in csv.reader(cut_lines(f)) if r]


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.1f} ms"


def _summary(path: Path) -> str:
    values = {r[0].strip(): [c.strip() for c in r[1:]] for r in _rows(path)}
    version = (values.get("DLProf Version") or ["?"])[0]
    names = values.get("GPU Name(s)") or []
    gpus = f"{len(names)} × {names[0]}" if len(set(names)) == 1 and len(names) > 1 else ", ".join(names[:2]) or "?"
    every, tc = values.get("All kernels"), values.get("Kernels using TC")
    own = ""
    if every and tc and len(every) >= 3 and len(tc) >= 3:
        t_all, t_tc = number(every[0]) or 0, number(tc[0]) or 0
        share = f", {100 * t_tc / t_all:.1f}% of kernel GPU time" if t_all else ""
        own = f"; its own count: {tc[2]} of {every[2]} kernels used tensor cores ({_ms(t_tc)}{share})"
    return f"DLProf summary report (DLProf {version}, {gpus}): not read, it names no kernel{own}; {_READ_INSTEAD}"


def _table(path: Path) -> str:
    rows = _rows(path)
    at = next((i for i, r in enumerate(rows) if any(c.strip() in _TC for c in r)), 0)
    head = [c.strip() for c in rows[at]]
    idx = {c: i for i, c in enumerate(head)}
    kernels = "Kernel Name" in idx
    tc = next(idx[c] for c in _TC if c in idx)
    time = next((i for c, i in idx.items() if "GPU Time" in c and c.startswith(("Total", "GPU"))), None)
    kind = idx.get("Op Type")
    body = [r for r in rows[at + 1:] if len(r) == len(head)]
    used = [r for r in body if r[tc].strip().lower() == "yes"]
    eligible = [r for r in body if "TC Eligible" in idx and r[idx["TC Eligible"]].strip().lower() == "yes"
                and r[tc].strip().lower() != "yes"]
    share = ""
    if time is not None:
        total = sum(number(r[time]) or 0 for r in body)
        if total:
            share = f" ({100 * sum(number(r[time]) or 0 for r in used) / total:.1f}% of their GPU time)"
    if kernels:
        what = "DLProf kernel report: not read"
    else:
        weight: dict[str, float] = {}  # GPU time per op type (a count of rows without a time column)
        for r in body:
            op = r[kind] if kind is not None else r[0]
            weight[op] = weight.get(op, 0) + ((number(r[time]) or 0) if time is not None else 1)
        heaviest = sorted(weight, key=weight.__getitem__, reverse=True)[:3]  # ties in first-seen order
        what = f"DLProf op report: not read, it names ops ({', '.join(heaviest)}, …), " \
               "not kernels"
    more = f", {len(eligible)} more eligible" if eligible else ""
    return (f"{what}; its own '{head[tc]}' column: {len(used)} of {len(body)} {'kernels' if kernels else 'ops'} used "
            f"tensor cores{share}{more}; {_READ_INSTEAD}")
