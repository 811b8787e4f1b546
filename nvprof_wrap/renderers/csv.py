"""CSV: one row per kernel (or classification). Control characters are shown escaped (sanitize.py); cells that a
spreadsheet would run as a formula (starting with = + - @, or their full-width forms, after any whitespace: spreadsheets
skip leading blanks) are prefixed with ' so they stay text."""
from __future__ import annotations

import csv as _csv
import io

from nvprof_wrap.renderers import _compare, _doctor, _experiment, _rows
from nvprof_wrap.report import KernelRow, Report
from nvprof_wrap.text.sanitize import csv_cell

NAME = "csv"
EXTENSION = ".csv"


def _cell(v: object) -> object:
    return csv_cell(v)


def _table(dicts: list[dict]) -> str:
    buf = io.StringIO()
    if dicts:
        w = _csv.DictWriter(buf, fieldnames=list(dicts[0]), lineterminator="\n")
        w.writeheader()
        w.writerows({k: _cell(v) for k, v in d.items()} for d in dicts)
    return buf.getvalue()


# report --format csv --table T: one table per file, the same rows and fields as that table of the JSON report
TABLES = ("kernels", "time_split", "devices", "processes", "ops", "scopes", "disagreements", "sources", "skipped")


def render_report(report: Report, table: str = "kernels", limit: int | None = None, **_: object) -> str:
    rows = _rows.report(report)[table]
    rows = rows[:limit] if limit else rows
    return _table([{k: _flat(v) for k, v in r.items()} for r in rows])


def _flat(v: object) -> object:
    """A list in a cell: 'fp32 0.890267; fp32 (3xTF32) 0.100041' (precision mix), 'a; b' (notes)."""
    if not isinstance(v, list):
        return v
    return "; ".join(" ".join(map(str, x.values())) if isinstance(x, dict) else str(x) for x in v)


def render_kernels(rows: list[KernelRow], **_: object) -> str:
    return _table([_rows.kernel(k) for k in rows])


def render_classifications(items: list, **_: object) -> str:
    return _table([_rows.classification(c) for c in items])


def render_experiment(rows: list, **_: object) -> str:
    return _experiment.as_csv(rows)


def render_doctor(facts: dict, **_: object) -> str:
    return _table([{"fact": line} for line in _doctor.lines(facts)])


def render_compare(comparison, **_: object) -> str:
    """One row per (table, key): every table of the comparison, with a column saying which."""
    d = _compare.as_dict(comparison)
    return _table([{"table": key, **row} for key, _ in _compare.TABLES for row in d[key]])


def render_runs(rows: list[dict], **_: object) -> str:
    return _table([{k: " + ".join(v) if isinstance(v, list) else v for k, v in r.items()} for r in rows])
