"""Never a silent nothing: a capture whose host side recorded kernel launch calls, or whose GPU recorded copies and
sets, but that holds no kernel record is bad input, said in one line (what was found, and why kernels go missing) —
never "No GPU kernels were recorded" with exit 0. A capture with neither (a job that launched nothing) still says that.

Launch calls without kernels are refused by each reader (the records were lost: a folder skips that file, saying
why); copies without kernels by the pipeline, for the whole report (one process of a run may copy without launching).
An Nsight Systems export without a kernel table (one file for the whole job) says what it holds instead: CUDA API
calls, none a launch, and the copies or sets the GPU recorded — the job launched no kernel while it was profiled.
"""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from nvprof_wrap.errors import BadInput

# CUPTI callback ids of the calls that launch kernels or graphs (cupti_runtime_cbid.h, cupti_driver_cbid.h): the
# cbid column of nvprof's CUPTI_ACTIVITY_KIND_RUNTIME / _DRIVER and of the built-in tracer's runtime / driver tables.
RUNTIME_LAUNCH_CBIDS = (13,  # cudaLaunch_v3020
                        211, 213, 214,  # cudaLaunchKernel_v7000, cudaLaunch_ptsz_v7000, cudaLaunchKernel_ptsz_v7000
                        269, 270, 272,  # cudaLaunchCooperativeKernel_v9000, _ptsz, …MultiDevice
                        311, 312,  # cudaGraphLaunch_v10000, _ptsz
                        430, 431)  # cudaLaunchKernelExC_v11060, _ptsz
DRIVER_LAUNCH_CBIDS = (115, 116, 117,  # cuLaunch, cuLaunchGrid, cuLaunchGridAsync
                       307, 442,  # cuLaunchKernel, _ptsz
                       477, 478, 480,  # cuLaunchCooperativeKernel, _ptsz, …MultiDevice
                       514, 515,  # cuGraphLaunch, _ptsz
                       652, 653)  # cuLaunchKernelEx, _ptsz
# The same calls by name (Kineto's cuda_runtime events; nsys_sqlite matches them in SQL with LIKE)
LAUNCH_NAME = re.compile(r"cu(?:da)?\w*Launch\w*Kernel|cu(?:da)?GraphLaunch")

LOST = "the GPU activity was not traced or not flushed"


def refuse_launches(path: Path | str, calls: int, launches: int, copies: int = 0, hint: str = "") -> None:
    """Raise BadInput when the capture (whose reader found no kernel) recorded kernel launch calls.

    calls: CUDA API calls recorded; launches: how many of them launch kernels; copies: copy and set events."""
    if launches:
        copied = f" and {copies:,} copy/set events on the GPU" if copies else ""
        raise BadInput(path, f"{calls:,} CUDA API calls, {launches:,} of them kernel launches{copied}, but no kernel "
                             f"records: {LOST}{f' ({hint})' if hint else ''}")


def copies_only(path: Path | str | None, copies: int, what: str = "") -> BadInput:
    """The error for a report whose captures hold copy/set events on the GPU but no kernel."""
    return BadInput(path, f"{copies:,} copy/set events on the GPU{what}, but no kernel records: kernels were not "
                          "traced, or none ran while the job was profiled")


def api_calls(conn: sqlite3.Connection, table: str, cbids: tuple[int, ...]) -> tuple[int, int]:
    """(calls, kernel launch calls) of a CUPTI API table with a cbid column (nvprof, the built-in tracer)."""
    marks = ",".join(str(c) for c in cbids)
    calls, launches = conn.execute(f"SELECT COUNT(*), COALESCE(SUM(cbid IN ({marks})), 0) FROM {table}").fetchone()
    return int(calls), int(launches)
