"""What Nsight Systems and Nsight Compute print to the console:

- ``nsys profile --stats=true`` / ``nsys stats`` tables (``cuda_gpu_kern_sum``, ``cuda_gpu_mem_time_sum``; older:
  "CUDA Kernel Statistics", "CUDA Memory Operation Statistics (by time)"): a header, a row of dashes that gives
  each column's span, rows until a line that is not one. Times in ns. nsys cuts names wider than its column with
  "…"; such names are kept as they are and classify.py does not trust what the cut may hide (classify/engine.py).
  ``--format table`` boxes the same table (``+---+`` rules, ``| … |`` rows); a row out of line with its header (a
  copy that lost a space) is split at its own spaces, so no name loses its first letters. With ``:nvtx-name`` each
  name starts with its innermost NVTX range (``forward/elementwise_kernel``): range and kernel are kept apart.
  The same tables as people paste them into a README or a notebook are read too: without nsys's own lines around
  them (the header says which table it is: ``Instances … Name`` kernels, ``Count … Operation`` copies), inside
  Markdown code fences, as ``--format csv`` rows, or as a Markdown pipe table. Numbers carry the separators of the
  locale nsys ran in: 3-digit groups (``1,139,457``), 4-digit groups (``44,0087,8248``: zh_CN), none, or ``.``
  groups with a decimal comma (``1.139.457`` / ``459.569,0``: de_DE), decided per table from its integer column.
  A table repeated verbatim (a README that pastes one section twice) is counted once, and a Markdown heading or a
  ``GPU: …`` / ``Name: …`` line that names a known GPU (classify/gpus.toml) starts that GPU's tables.
- ``ncu``'s default per-kernel output: ``[pid] process@host``, then per launch a line naming the kernel (and,
  in newer versions, its grid, context, stream, device and compute capability) and ``Section:`` blocks of
  ``metric  unit  value`` rows. The Duration row gives the kernel's time; tensor-pipe metrics (``--metrics``)
  become counter verdicts as in the CSV export.
"""
from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from nvprof_wrap.classify import gpus
from nvprof_wrap.classify.counters import DURATION
from nvprof_wrap.model import Gpu, KernelAgg, MemAgg, OpAgg, merge_kernels, merge_memops
from nvprof_wrap.readers._csv import LIMIT_ERROR, TIME_UNITS_NS, long_row, number
from nvprof_wrap.readers._no_kernels import LAUNCH_NAME
from nvprof_wrap.readers.ncu_csv import _Launch
from nvprof_wrap.readers.nsys_stats_csv import NVTX_NOTE, _direction, merge_ops, nvtx_split
from nvprof_wrap.text.demangle import demangle
from nvprof_wrap.timeline.nvtx import op_name

KERNEL_TABLES = re.compile(r"cuda_gpu_kern_sum|gpukernsum|CUDA Kernel Statistics|cuda_gpu_kern_gb_sum")
MEMORY_TABLES = re.compile(r"cuda_gpu_mem_time_sum|gpumemtimesum"
                           r"|CUDA Memory Operation Statistics \((?:by time|nanosec)")
COMBINED_TABLES = re.compile(r"\bcuda_gpu_sum\b|\bgpusum\b")  # kernels and copies, told apart by Category
API_TABLES = re.compile(r"cuda_api_sum|cudaapisum|CUDA API Statistics")
_TITLE = re.compile(r"Executing '(\w+)'|\*\* .*\((\w+)\):|^(CUDA [A-Za-z ]+Statistics[^:]*):?")
_DASHES = re.compile(r"^\s*-{3,}(?:\s+-{3,})+\s*$")
_PIPE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$")
# nsys stats --format table (the boxed layout): '+---+---+' rules above and below the header and at the end
_BOX_RULE = re.compile(r"^\s*\+-{3,}(?:\+-{3,})+\+\s*$")
_SKIPPED = re.compile(r"SKIPPED: (\S+) does not contain CUDA kernel data")
_GENERATED = re.compile(r"^\s+(\S+\.(?:nsys-rep|qdrep))\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)[\s#]*$")
_GPU_LINE = re.compile(r"^\s*(?:[\w ]*\bGPU\b[\w ]*|Device(?: Name)?|Name)\s*[:=]\s*(.+?)\s*$", re.IGNORECASE)
_GPU_WORDS = re.compile(r"NVIDIA|GeForce|Tesla|Quadro|TITAN|Jetson|\bRTX\b", re.IGNORECASE)
_CC_LINE = re.compile(r"^\s*Compute Capability\s*[:=]\s*(\d+)\.(\d+)\s*$", re.IGNORECASE)
_NAME_LINE = 200  # the longest line read for a GPU's name
_COUNTS = ("Instances", "Count", "Num Calls", "Calls", "Operations")
_NVTX_MODE = re.compile(r"nvtx-name")
_LEAD = re.compile(r"^(?:(?:results?|runs?|measured|timings?|benchmarks?|profil\w*)\s+(?:from|on|for|with)\s+)",
                   re.IGNORECASE)


@dataclass
class NsysTables:
    """What the nsys stats tables of a text hold: kernels, copies, the GPUs the text names, and notes."""

    kernels: list[KernelAgg] = field(default_factory=list)
    memops: list[MemAgg] = field(default_factory=list)
    devices: list[Gpu] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ops: list[OpAgg] = field(default_factory=list)  # kernels by the NVTX range nsys put before their names


def _spans(dashes: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]


def _cells(line: str, spans: list[tuple[int, int]], head: list[str] | None = None) -> list[str]:
    """Cells by the dashes' spans; the last (the name) runs to the end of the line. A row out of line with its
    header (a pasted copy that lost or gained a space: vLLM's docs) would lose or gain the name's first letters by
    the spans, so where every cell before the name is one word (numbers, a category) the row is split at its
    spaces instead: the name is what follows the last of them, whole. So is a row further out of line (every line's
    indentation stripped in a paste: each row loses its own), which the spans cut through its numbers — read as
    other numbers, exit 0 —, where each of those words is what its column holds (head: the header's cells)."""
    out = [line[a:b].strip() for a, b in spans[:-1]]
    words = re.split(r"[ \t]+", line.strip(), maxsplit=len(spans) - 1)
    if len(words) == len(spans) and (all(_one_word(w, c) for w, c in zip(words[:-1], out)) or (
            head is not None and not _in_line(line, spans, out)
            and all(_holds(w, h) for w, h in zip(words[:-1], head[:-1])))):
        return words
    return [*out, line[spans[-1][0]:].strip()]


def _in_line(line: str, spans: list[tuple[int, int]], cells: list[str]) -> bool:
    """Whether a line's text keeps to the columns of spans: nothing in the blanks between the columns before the
    name, no blank inside a cell there (a cell holds one number — grouped by blanks, maybe — or word), no tab
    (whose width the spans do not know). A line that moved against its header puts its characters across a
    column's edge, one or the other."""
    if "\t" in line:
        return False
    return not _crossed(line, spans) and not any(
        re.search(r"\S\s+\S", c) and not _SPACE_GROUPED.fullmatch(c) for c in cells)


# a number grouped in thousands by single blanks ('1 139 457'), as some locales print it: one cell
_SPACE_GROUPED = re.compile(r"-?\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:[.,]\d+)?")


def _crossed(line: str, spans: list[tuple[int, int]]) -> bool:
    """Whether the line holds text in a blank between two columns."""
    return any(line[b:a2].strip() for (_a, b), (a2, _b2) in itertools.pairwise(spans))


_TEXT_COLUMNS = ("Category", "Style", "Operation", "Name", "Range")  # columns of words, not numbers


def _holds(word: str, column: str) -> bool:
    """Whether a word can be a cell of the column: a number in a column of numbers, any word in one of text."""
    if column.startswith(_TEXT_COLUMNS):
        return True
    return _number(word, ",") is not None or _number(word, ".") is not None


def _head_cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """A header's cells by the dashes' spans; split at its runs of two or more blanks (or tabs: a header's own
    words are one blank apart) where its text is out of line with the dashes (a header whose one leading blank was
    lost, copied from its first visible character) and that gives one cell a column."""
    cells = [line[a:b].strip() for a, b in spans[:-1]] + [line[spans[-1][0]:].strip()] if spans else []
    if "\t" not in line and not _crossed(line, spans):
        return cells
    split = [c for c in re.split(r"\t+|\s{2,}", line.strip()) if c]
    return split if len(split) == len(spans) else cells


def _one_word(word: str, by_span: str) -> bool:
    """Whether a row's word is the cell its column's span holds, give or take the characters a shifted row moves."""
    return bool(by_span) and abs(len(word) - len(by_span)) <= 1 and (word in by_span or by_span in word)


def _pipe_cells(line: str, n: int = 0) -> list[str]:
    """A pipe table's cells; with n (the header's), the last cell (the name) keeps any '|' in it."""
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [c.strip().strip("`").strip() for c in inner.split("|", n - 1 if n else -1)]


def _csv_cells(line: str) -> list[str]:
    try:
        cells = next(csv.reader([line.strip()]), [])
    except csv.Error as e:  # a name past csv's field limit: the line read again with a longer one (_csv.long_row)
        if LIMIT_ERROR not in str(e) or (row := long_row(line.strip())) is None:
            raise
        cells = row
    return [c.strip() for c in cells]


def _header_kind(head: list[str]) -> str | None:
    """Which table a header is, from its columns alone (a table pasted without nsys's title)."""
    last = head[-1] if head else ""

    def has(prefix: str) -> bool:
        return any(h.startswith(prefix) for h in head)

    if not has("Total Time"):
        return None
    if has("Category") and last == "Operation":
        return "combined"
    if last == "Operation" or (last == "Name" and has("Operations")):
        return "memory"
    if last == "Name" and has("Instances"):
        return "kernel"
    if last == "Name" and has("Num Calls"):
        return "api"
    return None


def _title_kind(title: str) -> str | None:
    for pattern, kind in ((MEMORY_TABLES, "memory"), (KERNEL_TABLES, "kernel"), (COMBINED_TABLES, "combined"),
                          (API_TABLES, "api")):
        if title and pattern.search(title):
            return kind
    return None


def _grouping(values: list[str]) -> str:
    """The thousands separator of a table, from its integer column (Total Time): ',' (3- or 4-digit groups), '.' with
    a decimal comma, or none."""
    for v in values:
        t = v.strip()
        if re.fullmatch(r"\d{1,4}(?:\.\d{3,4})+", t):
            return "."
        if "," in t:
            return ","
    return ","


def _number(text: str, sep: str) -> float | None:
    t = re.sub(r"[\s\u00a0\u202f'’_]", "", text)
    if sep == ".":
        t = t.replace(".", "").replace(",", ".")
    return number(t)


class _Table:
    """One table being read: its syntax, kind, columns and rows (cells), flushed at its end."""

    def __init__(self, syntax: str, head: list[str], kind: str | None,
                 spans: list[tuple[int, int]] | None = None, closed: str = "") -> None:
        self.syntax, self.head, self.kind, self.spans = syntax, head, kind, spans
        self.idx = {c: i for i, c in enumerate(head)}
        self.rows: list[list[str]] = []
        # closed: a pipe table's header, which ends in '|' where the table closes its rows so (cut_short)
        self.closed = syntax == "pipe" and closed.rstrip().endswith("|")
        self.padded = False  # a row ends in blanks: nsys padded the rows to the name column's width
        self.ends: list[tuple[bool, int]] = []  # per row: (its line ends in its name: unpadded, unclosed; its length)

    def cells(self, line: str) -> list[str] | None:
        """The row's cells, or None when the line is no row of this table (the table ends there)."""
        if not line.strip():
            return None
        if self.syntax == "pipe":
            cells = _pipe_cells(line, len(self.head)) if line.lstrip().startswith("|") else []
        elif self.syntax == "csv":
            cells = _csv_cells(line)
        else:
            cells = _cells(line.rstrip("\n"), self.spans or [], self.head)
        if len(cells) != len(self.head):
            return None
        total, count = _col(self.idx, "Total Time"), _col(self.idx, *_COUNTS)
        if total is None or count is None:
            return None
        numeric = all(_number(cells[i], ",") is not None or _number(cells[i], ".") is not None for i in (total, count))
        if numeric and not cells[-1]:  # a row without its name: cut off before it (cut_before_name says so)
            return None
        if numeric and self.syntax != "csv":
            blank = line[-1:].isspace()
            self.padded |= blank
            self.ends.append((not line.rstrip().endswith("|") if self.closed else not blank, len(cells[-1])))
        return cells if numeric else None

    def cut_before_name(self, line: str) -> bool:
        """Whether the line, which ended the table, is one of its rows cut off before its name (a paste or a file
        cut short there): one or more cells, each what its column holds (numbers; a word in a Category column), and
        no name — the line ends before the name's column, or its name cell is empty."""
        if self.syntax == "pipe" and not line.lstrip().startswith("|"):
            return False
        if self.syntax == "columns":
            spans = self.spans or []
            if not spans or len(line.rstrip()) > spans[-1][0]:  # the line reaches the name's column
                return False
        cells = self.split(line)
        return 0 < len(cells) < len(self.head) and all(_holds(c, h) for c, h in zip(cells, self.head))

    def split(self, line: str) -> list[str]:
        """The line's cells as the table's syntax splits them, without the empty ones at its end."""
        cells = _pipe_cells(line) if self.syntax == "pipe" else \
            _csv_cells(line) if self.syntax == "csv" else line.split()
        while cells and not cells[-1]:
            cells.pop()
        return cells

    def cut_short(self, row: int) -> bool:
        """Whether the row's line ends inside its name (a text cut off mid-row: the name 'nvjet' of
        'nvjet_tst_256x152_64x4_1x2_h_bz_coopA_TNT' had read as a whole kernel's): a closed table's row without its
        closing '|'; in a table whose rows nsys padded to its name column's width (the longest name's), an unpadded
        row whose name is shorter than the longest one — a line's indentation, lost in a paste, changes neither."""
        if row >= len(self.ends) or not self.ends[row][0]:
            return False
        return self.closed or (self.padded and self.ends[row][1] < max(n for _e, n in self.ends))


def nsys_tables(lines: Iterable[str]) -> NsysTables:
    out = NsysTables()
    kernels: list[KernelAgg] = []
    mem: list[MemAgg] = []
    title, pending, table = "", None, None
    seen: set[tuple[str, tuple[tuple[str, ...], ...]]] = set()  # (kind, rows) of the tables read
    repeated = 0
    devices: dict[str, Gpu] = {}
    device: int | None = None
    launch_calls = 0  # kernel launch calls in the last cuda_api_sum table, for a kernel table nsys skipped
    reports: list[str] = []
    after_generated = False
    nvtx_names = False  # the text says its kernel names carry their NVTX range (nsys's 'nvtx-name' option)
    ops: list[OpAgg] = []

    def flush() -> None:
        nonlocal repeated, launch_calls
        if table is None or not table.rows or table.kind is None:
            return
        key = (table.kind, tuple(tuple(r) for r in table.rows))
        if table.kind != "api" and key in seen:
            repeated += 1
            return
        seen.add(key)
        t = table
        sep = _grouping([r[_col(t.idx, "Total Time")] for r in t.rows])
        total_i = _col(t.idx, "Total Time")
        count_i = _col(t.idx, *_COUNTS)
        lo, hi = _col(t.idx, "Min", "Minimum"), _col(t.idx, "Max", "Maximum")
        cat = _col(t.idx, "Category")
        if t.kind == "api":
            launch_calls = sum(int(_number(r[count_i], sep) or 0) for r in t.rows if LAUNCH_NAME.match(r[-1]))
            return
        for j, r in enumerate(t.rows):
            total, count = _number(r[total_i], sep), _number(r[count_i], sep)
            if total is None or count is None:
                continue
            kind = t.kind if t.kind != "combined" else {"CUDA_KERNEL": "kernel", "MEMORY_OPER": "memory"}.get(
                r[cat] if cat is not None else "", "")
            if kind == "memory":
                what, d = _direction(r[-1])
                mem.append(MemAgg(None, device, what, d, int(count), int(total)))
            elif kind == "kernel":
                where, raw = nvtx_split(r[-1])
                name = _mark_cut(demangle(raw), t.cut_short(j))
                kernels.append(KernelAgg(None, device, name, int(count), int(total),
                                         _int(r[lo], sep) if lo is not None else None,
                                         _int(r[hi], sep) if hi is not None else None))
                if where is not None or nvtx_names:
                    ops.append(OpAgg(None, op_name(where), op_name(where), name, int(count), int(total)))
        if t.kind in ("kernel", "combined"):
            launch_calls = 0

    for raw in lines:
        line = raw.rstrip("\n")
        if table is not None:
            cells = table.cells(line)
            if cells is not None:
                table.rows.append(cells)
                continue
            if table.kind in ("kernel", "combined") and table.cut_before_name(line):
                out.notes.append(_cut_row_note(table, line))
            flush()
            table, title = None, ""
        if pending is not None:  # a header waits for its rule line
            syntax, head_line = pending
            pending = None
            if syntax == "pipe" and (_PIPE_RULE.match(line) or _BOX_RULE.match(line)):
                head = _pipe_cells(head_line)
                table = _Table("pipe", head, _header_kind(head) or _title_kind(title), closed=head_line)
                continue
            if syntax == "columns" and _DASHES.match(line):
                spans = _spans(line)
                head = _head_cells(head_line, spans)
                table = _Table("columns", head, _header_kind(head) or _title_kind(title), spans)
                continue
        if _NVTX_MODE.search(line):
            nvtx_names = True
        if m := _TITLE.search(line):
            title = next(g for g in m.groups() if g)
            continue
        if "Total Time" in line:
            stripped = line.strip()
            if stripped.startswith("|"):
                pending = ("pipe", line)
            elif stripped.count(",") >= 2 and any(c.startswith("Total Time") for c in _csv_cells(line)):
                head = _csv_cells(line)
                table = _Table("csv", head, _header_kind(head) or _title_kind(title))
            else:
                pending = ("columns", line)
            continue
        if m := _SKIPPED.search(line):
            if _title_kind(title) == "kernel":
                why = (f" although its cuda_api_sum table counts {launch_calls:,} kernel launch calls: the launches "
                       "failed, or the GPU side was not traced — that run's kernels are not in this report"
                       if launch_calls else "")
                out.notes.append(f"nsys stats found no CUDA kernel data in {_base(m.group(1))}{why}")
                launch_calls = 0
            continue
        if line.strip() == "Generated:":
            after_generated = True
            continue
        if after_generated and (g := _GENERATED.match(line)):
            reports.append(_base(g.group(1)))
            continue
        after_generated = False
        named = _gpu_named(line)
        if named:
            name = named
            if name not in devices:
                devices[name] = Gpu(len(devices), name)
            device = devices[name].device_id
        elif device is not None and (cc := _CC_LINE.match(line)):
            gpu, d = next((gpu, d) for gpu, d in devices.items() if d.device_id == device)
            if d.cc_major is None:
                devices[gpu] = Gpu(d.device_id, gpu, int(cc.group(1)), int(cc.group(2)))
    flush()
    out.kernels, out.memops = list(merge_kernels(kernels)), list(merge_memops(mem))
    if ops:
        out.ops = merge_ops(ops)
        out.notes.append(NVTX_NOTE.format(len(out.ops)))
    out.devices = list(devices.values()) if any(k.device_id is not None for k in out.kernels) else []
    if repeated:
        out.notes.append(f"{repeated} nsys stats table{'s' if repeated > 1 else ''} repeated verbatim in the file "
                         "(the same section pasted twice?): counted once")
    if len(set(reports)) > 1:
        out.notes.append(f"the stats of {len(set(reports))} nsys reports ({', '.join(sorted(set(reports))[:4])}) "
                         "in one file: summed")
    return out


CUT_ROW = "a row of an nsys stats kernel table ends before its name"


def _cut_row_note(table: _Table, line: str) -> str:
    """What a row cut off before its name (_Table.cut_before_name) lost: the row is not read (no name, and its last
    number may be cut too)."""
    cells = table.split(line)  # every one a number or a category: cut_before_name read them
    share = f" ({cells[0]}% of the table's time)" if len(cells) > 1 and table.head[0].startswith("Time") else ""
    shown = re.sub(r"\s+", " ", line.strip())[:48]
    return f"{CUT_ROW} ('{shown}'): that kernel{share} is not in this report — the text was cut off there"


def _base(path: str) -> str:
    return re.split(r"[/\\]", path)[-1]


def _gpu_named(line: str) -> str | None:
    """The GPU a Markdown heading or a 'GPU: …' / 'Name: …' line names, when it is one that classify/gpus.toml
    knows (the heading's 'Results from' dropped). Only short lines: a program's own long lines are never names."""
    if len(line) > _NAME_LINE:
        return None
    if m := _HEADING.match(line):
        text = _LEAD.sub("", m.group(1).strip())
        return text if gpus.lookup(text) else None
    if (m := _GPU_LINE.match(line)) and _GPU_WORDS.search(m.group(1)) and gpus.lookup(m.group(1)):
        return re.sub(r"\s*\((?:SM|sm_|CC)[^)]*\)$", "", m.group(1))
    return None


def _mark_cut(name: str, short: bool = False) -> str:
    """Older nsys cuts long names at a fixed width without saying so: a name whose brackets do not close was cut,
    and gets the '…' that newer versions print, so the classifier treats it as cut. short: the row's line ended
    inside the name (_Table.cut_short): cut too."""
    if name.endswith(("…", "...")):
        return name
    if short:
        return name + "…"
    depth = {"(": 0, "<": 0}
    for ch in name:
        if ch in "(<":
            depth[ch] += 1
        elif ch == ")":
            depth["("] -= 1
        elif ch == ">":
            depth["<"] -= 1
    return name + "…" if depth["("] > 0 or depth["<"] > 0 else name


def _col(idx: dict[str, int], *prefixes: str) -> int | None:
    return next((i for p in prefixes for c, i in idx.items() if c.startswith(p)), None)


def _int(text: str, sep: str = ",") -> int | None:
    v = _number(text, sep)
    return None if v is None else int(v)


_PROC = re.compile(r"^\s*\[(\d+)\] \S+@\S+")
_LAUNCH = re.compile(r"^  (\S.*?)(?: \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\))?,(?: [^,]+,)? Context \d+, Stream \d+"
                     r"(?:, Device (\d+), CC (\d+)\.(\d+))?\s*$")
_ROW = re.compile(r"^\s{4,}(\S.*?)\s{2,}(?:(\S+)\s+)?(-?[\d,]*\.?\d+(?:e[+-]?\d+)?)\s*$")


_CONNECTED = re.compile(r"^==PROF== Connected to process (\d+)")
_PROFILING = re.compile(r'^==PROF== Profiling ".*" - (\d+): ')


def ncu_sections(lines: Iterable[str]) -> tuple[dict[tuple[str, int], _Launch], int]:
    """One _Launch per kernel launch (the ncu CSV reader's type, so both share aggregation and verdicts), and how
    many launches ncu's own '==PROF== Profiling "…" - N:' lines say it profiled (0 where the text has none)."""
    launches: dict[tuple[str, int], _Launch] = {}  # (pid, launch number)
    profiled: set[tuple[str, str]] = set()  # (process, launch number) of the ==PROF== lines
    pid, current, connected = "", None, ""
    for line in lines:
        if line.startswith("=="):
            if m := _CONNECTED.match(line):
                connected = m.group(1)
            elif m := _PROFILING.match(line):
                profiled.add((connected, m.group(1)))
            continue
        if m := _PROC.match(line):
            pid, current = m.group(1), None
        elif m := _LAUNCH.match(line.rstrip("\n")):
            current = launches[(pid, len(launches))] = _Launch(
                m.group(1), pid, m.group(2) or "", f"{m.group(3)}.{m.group(4)}" if m.group(3) else "")
        elif current is not None and (m := _ROW.match(line)):
            name, unit, value = m.group(1).strip(), m.group(2) or "", number(m.group(3))
            if name == "Duration" or name == DURATION:
                current.metrics[DURATION] = None if value is None else value * TIME_UNITS_NS.get(unit, 1)
            elif "__" in name or name.endswith("_utilization"):
                current.metrics[name] = value
    return launches, len(profiled)


def ncu_count_note(sections: int, profiled: int) -> str | None:
    """A note where ncu's ==PROF== lines name another number of profiled launches than the text has sections: lines
    wrapped or cut (a console folded at 80 columns read as 1 launch of 14, unsaid) or sections pasted twice."""
    if not profiled or not sections or sections == profiled:
        return None
    why = ("the others' sections are missing or broken (lines wrapped or cut in a paste?): not counted"
           if sections < profiled else
           "sections repeated (the text pasted twice?): each counted as often as it is there")
    return f"ncu console: its ==PROF== lines name {profiled:,} profiled launches, its sections {sections:,} — {why}"
