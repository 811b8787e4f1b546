"""Every limit that bounds the work one input can cause, in one place (documented in docs/reliability.md).

A capture is hostile or damaged as often as it is huge: each limit is far above anything a real profiler writes
(the largest real values seen are beside each) and far below what would cost minutes or gigabytes.
"""
from __future__ import annotations

# Names (kernels, ops, processes, devices) are cut here, with "…" appended. The longest real kernel name in the
# fixtures is a 4,889-character CUTLASS name.
MAX_NAME_CHARS = 100_000

# Classification reads at most this much of a name (each rule is a regular expression searched over it: 60 rules
# over 20 names of 100,000 characters took 2.5 s); past it the verdict is 'unknown' unless the rest cannot change it,
# as for a name the profiler cut. Shortening for tables reads the whole name, in one pass.
MAX_CLASSIFIED_CHARS = 16_384

# JSON traces (Kineto / Chrome): nesting deeper than this is refused (real traces: 6 levels); a string longer
# than this is cut in the stream, before the parser buffers it (real traces: a few KB for a call stack).
MAX_JSON_DEPTH = 100
MAX_JSON_STRING_BYTES = 1 << 20

# Text formats (CSV): a line longer than this is refused (a real ncu CSV line: a few KB).
MAX_LINE_BYTES = 8 << 20

# Demangling: each name gets this much time, memory and output in a helper process; past any, the mangled name
# is kept and the capture's notes say so. After DEMANGLE_MAX_OVERRUNS such names in one process, names that could
# overrun are no longer tried. Real names demangle in microseconds to a few KB.
DEMANGLE_SECONDS = 1.0
DEMANGLE_MAX_CHARS = MAX_NAME_CHARS
DEMANGLE_MEMORY_BYTES = 1 << 30
DEMANGLE_MAX_OVERRUNS = 3

# Queries on a SQLite capture (timeline/guard.py): each connection, the compiled helper's too, gets a budget of
# SQLite VM instructions, SQL_FLOOR_STEPS + SQL_STEPS_PER_BYTE per byte of the file, counted every SQL_STEP_GRAIN
# instructions (about 1 ms here: 70M instructions/s on 2 busy cores; a pending SIGTERM / SIGINT is seen there too).
# Far above any real read (measured: under 200 instructions per byte of capture for a whole read, every query added
# up), far below minutes: 4 s of VM work at least.
SQL_FLOOR_STEPS = 300_000_000
SQL_STEPS_PER_BYTE = 4_000
SQL_STEP_GRAIN = 50_000

# A kernel, copy or set that lasted less than nothing or longer than this is counted without its time.
MAX_DURATION_NS = 7 * 24 * 3600 * 10**9
# ... as is one that starts at or before its clock's zero: CUPTI writes 0 for a kernel whose times "could not be
# collected" (its documentation; seen in the wild after millions of records), and Nsight Systems' clock starts at the
# session's start, so nothing a GPU ran starts at or before 0 ns on either (a 0 moved to the session's clock is
# negative). Read as a time, one such kernel of a 1 s capture ran "4.8 s" and turned its 31.7% tensor-core share
# into <0.1%. The SQL condition of a row whose times are usable, for its start and end columns s and e:
USABLE_OF = "{s} > 0 AND {e} >= {s} AND {e} - {s} <= " + str(MAX_DURATION_NS)
USABLE = USABLE_OF.format(s="start", e='"end"')  # a capture's table: columns start and "end"

# A run's manifest.json lists its processes: a few KB, a few MB for thousands of ranks. A bigger one is not one
# `run` wrote: refused (reading it for ranks: ignored).
MAX_MANIFEST_BYTES = 64 << 20

# Skipped files: the terminal and Markdown reports list this many, then summarise the rest by reason.
SKIPPED_SHOWN = 5

# A gzipped SQLite capture (nsys.sqlite.gz) is unpacked to a temporary file to be read; past this it is refused (a
# real 5M-launch nsys export is ~600 MB).
MAX_GUNZIPPED_SQLITE_BYTES = 32 << 30

# Every gzip stream (system/bounded.py Gunzip): past its free allowance unpacked, more than GUNZIP_MAX_RATIO times the
# compressed bytes read is a gzip bomb, refused as the bytes come out. Real captures unpack 3-50x (SQLite 3-6x, JSON
# traces 15-30x, ncu CSV 40-50x); whitespace and blank lines ~1000x. The allowance is what the reader gets through
# in seconds: text is read line by line in Python (64 MiB of blank lines: 17-35 s in a CSV reader), JSON through a
# filter at C speed (~200 MB/s), SQLite by SQL once unpacked.
GUNZIP_FREE_BYTES = 16 << 20
GUNZIP_FREE_JSON_BYTES = 1 << 30
GUNZIP_MAX_RATIO = 200

# A capture's summary (readers/summary.py) is its aggregates: KBs to a few MB. Unpacked, more is not one of ours
# (it was read whole up to 1 GiB before being refused); parsed, it costs a few times its size in memory.
MAX_SUMMARY_BYTES = 64 << 20

# The Triton cache scan (classify/static.py): a .ptx file bigger than this is not read (the real ones in the fixtures
# are 11-42 KB; a large autotuned kernel's PTX is a few MB); at most this many .ptx files and bytes are read in all,
# and folders are walked this deep, never through a link (Triton's cache is CACHE/HASH/FILE: 2 levels). A symlink
# to /dev/zero named x.ptx was read until MemoryError; a FIFO hung the report.
MAX_PTX_BYTES = 16 << 20
MAX_PTX_FILES = 100_000
MAX_PTX_TOTAL_BYTES = 1 << 30
MAX_PTX_DEPTH = 8
# ... and at most this many folder entries looked at (a real cache holds 6-8 files per kernel; `/` holds millions).
MAX_PTX_ENTRIES = 2_000_000

# XLA's HLO dumps (classify/xla_hlo.py, --xla_dump_to): a module's after-optimizations text is KBs to tens of MB (a
# transformer's train step on the H200: 1.2 MB); bigger is not read. At most this many files and bytes in all, this
# deep (XLA writes one flat folder), this many folder entries, never through a link.
MAX_HLO_BYTES = 256 << 20
MAX_HLO_FILES = 50_000
MAX_HLO_TOTAL_BYTES = 2 << 30
MAX_HLO_DEPTH = 4
MAX_HLO_ENTRIES = 1_000_000

# The numerics recorder's files (report/numerics.py): it writes lines of at most 64 KiB and files of at most 64 MiB
# (docs/numerics.md); a longer line is damage (skipped and counted), and at most this much is read of one file, of
# all of them, and this many files (one per process).
MAX_NUMERICS_LINE_BYTES = 1 << 20
MAX_NUMERICS_FILE_BYTES = 80 << 20
MAX_NUMERICS_TOTAL_BYTES = 512 << 20
MAX_NUMERICS_FILES = 4096
