"""CSV: one row per kernel (or classification). Control characters are shown escaped (sanitize.py); cells that a
spreadsheet would run as a formula (starting with = + - @, or their full-width forms, after any whitespace: spreadsheets
skip leading blanks) are prefixed with ' so they stay text."""
from __future__ import annotations

import csv as _csv
import io
from typing import Any

from nvprof_wrap.renderers import _compare, _doctor, _rows
from nvprof_wrap.renderers._options import Options
from nvprof_wrap.report import Report, serialise
from nvprof_wrap.report.compare import Comparison
from nvprof_wrap.report.kinds import Classifications, Doctor, Experiment, Kernels, Reports, Runs
from nvprof_wrap.text.sanitize import csv_cell

NAME = "csv"
EXTENSION = ".csv"


def _table(dicts: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    if dicts:
        w = _csv.DictWriter(buf, fieldnames=list(dicts[0]), lineterminator="\n")
        w.writeheader()
        w.writerows({k: csv_cell(v) for k, v in d.items()} for d in dicts)
    return buf.getvalue()


# report --format csv --table T: one table per file, the same rows and fields as that table of the JSON report
TABLES = ("kernels", "time_split", "devices", "processes", "ops", "scopes", "disagreements", "sources", "skipped",
          "hardware", "hardware_checks", "hardware_series", "series", "ranks", "rank_outliers")


def render(subject: object, options: Options) -> str:
    """The subject as one CSV table with a header row; a report's table is ``options.table`` (TABLES)."""
    match subject:
        case Report():
            rows = serialise.to_dict(subject)[options.table]
            rows = rows[:options.limit] if options.limit else rows
            return _table([{k: _flat(v) for k, v in r.items()} for r in rows])
        case Comparison():  # one row per (table, key): every table of the comparison, with a column saying which
            d = _compare.as_dict(subject)
            return _table([{"table": key, **row} for key, _ in _compare.TABLES for row in d[key]])
        case Kernels():
            return _table([_rows.kernel(k) for k in subject.rows])
        case Classifications():
            return _table([_rows.classification(c) for c in subject.items])
        case Experiment():
            # imported here: it brings rich (for its terminal table), and every command offering --table imports
            # this module, `report --format json` among them
            from nvprof_wrap.renderers import _experiment

            return _experiment.as_csv(list(subject.rows))
        case Doctor():
            return _table([{"fact": line} for line in _doctor.lines(subject.facts)])
        case Runs():
            return _table([{k: " + ".join(v) if isinstance(v, list) else v for k, v in r.items()}
                           for r in subject.rows])
        case Reports():
            return _rows.one_after_another(subject, lambda r: render(r, options))
    raise TypeError(f"the csv renderer has no form for {type(subject).__name__}")


def _flat(v: object) -> object:
    """A list in a cell: 'fp32 0.890267; fp32 (3xTF32) 0.100041' (precision mix), 'a; b' (notes)."""
    if not isinstance(v, list):
        return v
    return "; ".join(" ".join(map(str, x.values())) if isinstance(x, dict) else str(x) for x in v)
