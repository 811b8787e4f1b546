"""The names of a job's step marks: what a training step is called on the timeline, and how a range's name says
which step it marks.

Step names are a contract between the job's processes and every stage that reads their captures, like the names
of the run folder's files: the job's own code marks 'step N' (nvprof_wrap.profile, the Keras callback, the bundled
workloads) or torch.profiler marks 'ProfilerStep#N'; `run` adds 'optimizer step N' to every PyTorch process and, with
--annotate keras, 'train batch N' and a 'keras:LAYER' range per layer call (tracer/annotate.py). Readers select the
ranges that may mark steps (LIKE, could_mark_a_step), the timeline turns them into windows and per-step series
(timeline/window.py: which steps, where they begin and end), the store counts them (store/queries.py), and the code
inside the job tells them apart live (tracer/window.py, which imports only itself: it keeps a copy of the patterns,
checked equal to these by tests/run/test_run_folder.py).

SOURCES are what can count a job's steps, in the order they are preferred: the job's own marks say what its author
calls a step.
"""
from __future__ import annotations

import re

STEP = "step {}"  # the job's own mark (nvprof_wrap.profile, the Keras callback, workloads/_torch_common.py)
PROFILER_STEP = "ProfilerStep#{}"  # torch.profiler's range around each step
OPTIMIZER_STEP = "optimizer step {}"  # tracer/annotate.py: from one optimizer.step() to the next
KERAS_BATCH = "train batch {}"  # tracer/annotate.py, with --annotate keras
# torch.profiler's range around each optimizer.step() call ('Optimizer.step#AdamW.step'): unnumbered, so its steps
# are numbered in start order — an optimizer step where the trace has no ProfilerStep#N (timeline/window.py)
TORCH_OPTIMIZER_PREFIX = "Optimizer.step#"
# XLA's range around each execution of a compiled program ('XlaModule:#hlo_module=jit_update,program_id=14586#',
# sometimes with more before the module: 'XlaModule:#prefix=args[0],hlo_module=…'; in NVTX domain TSL, which JAX/XLA
# opens whenever a profiler traces NVTX); its autotuner's candidate programs have no program_id
# ('XlaModule:#hlo_module=gemm_fusion_dot.6#'). A JAX step: an execution of the program run most often — one
# program: a module compiled again for another shape (the last, smaller batch) is another program.
XLA_MODULE_PREFIX = "XlaModule:#"
XLA_EXECUTIONS = "XLA executions"
KERAS_PREFIX = "keras:"  # --annotate keras: a range per Keras layer call ('keras:dense_1 (Dense)')
TORCH_PREFIX = "torch:"  # --annotate torch: a range per module
LAYER_PREFIXES = (KERAS_PREFIX, TORCH_PREFIX)

OWN, OPTIMIZER, BATCHES = SOURCES = ("step marks", "optimizer steps", "keras batches")


def _prefix(name: str) -> str:
    return name.removesuffix("{}")


OWN_PREFIXES = (_prefix(STEP), _prefix(PROFILER_STEP))
PROFILER_STEP_PREFIX = _prefix(PROFILER_STEP)
# A range's name → its step number, per source (no '#' or space needs escaping in these names).
PATTERNS: dict[str, re.Pattern[str]] = {
    OWN: re.compile(rf"^(?:{'|'.join(OWN_PREFIXES)})(\d+)$"),
    OPTIMIZER: re.compile(rf"^{_prefix(OPTIMIZER_STEP)}(\d+)$"),
    BATCHES: re.compile(rf"^{_prefix(KERAS_BATCH)}(\d+)$"),
}


def no_scope(name: str) -> bool:
    """Whether a range's name marks a step around every op of it that no op's scope should be (timeline/nvtx.py):
    torch.profiler's 'ProfilerStep#N' and Keras's 'train batch N' (under which a Keras-on-JAX job runs XLA's
    execution range: the scope that says which program a thunk is of). The job's own 'step N' and run's 'optimizer
    step N' stay scopes: the store counts a job's steps from the scopes and ops (store/queries.steps_marked)."""
    return name.startswith(PROFILER_STEP_PREFIX) or name.startswith(_BATCH) and bool(PATTERNS[BATCHES].match(name))


_BATCH = _prefix(KERAS_BATCH)


# SQL LIKE patterns that select the ranges a step window can come from (a reader's NVTX text column).
LIKE = (*(p + "%" for p in OWN_PREFIXES), _prefix(OPTIMIZER_STEP) + "%", _prefix(KERAS_BATCH) + "%",
        KERAS_PREFIX + "%", TORCH_OPTIMIZER_PREFIX + "%", XLA_MODULE_PREFIX + "%")
_TORCH_OPTIMIZER = re.compile(r"^Optimizer\.step#\w+\.step$")
_XLA_EXECUTION = re.compile(r"^XlaModule:#(?:[^#]*?,)?hlo_module=([^,#]+),program_id=(\d+)#$")


def xla_execution(name: str) -> tuple[str, int] | None:
    """(module, program id) of the program a range of XLA's marks one execution of (('jit_update', 14586)), None for
    any other range (an autotuner candidate's has no program_id)."""
    m = _XLA_EXECUTION.match(name)
    return (m.group(1), int(m.group(2))) if m else None


def xla_program(name: str) -> str | None:
    """The module of the program a range of XLA's marks one execution of ('jit_update'), else None."""
    found = xla_execution(name)
    return found[0] if found else None


def torch_optimizer_step(name: str) -> bool:
    """Whether a range is torch.profiler's mark of one optimizer.step() call ('Optimizer.step#SGD.step')."""
    return _TORCH_OPTIMIZER.match(name) is not None


def step_name(n: int) -> str:
    """The name of the job's own mark of step ``n``."""
    return STEP.format(n)


def marked(name: str) -> tuple[str, int] | None:
    """(the source, the step number) a range of this name marks, by its name alone (a Keras layer's range marks a
    batch only among the others: timeline/window.py); None for any other name."""
    for source, pattern in PATTERNS.items():
        m = pattern.match(name)
        if m:
            return source, int(m.group(1))
    return None


def could_mark_a_step(name: str) -> bool:
    """Whether a range of this name can mark a step or a Keras batch (what LIKE selects in SQL)."""
    return marked(name) is not None or name.startswith(KERAS_PREFIX) or torch_optimizer_step(name) or \
        xla_program(name) is not None


def glob_sql(column: str, source: str) -> str:
    """An SQL condition true where ``column`` names a step of ``source`` (OWN or OPTIMIZER): the prefix, then
    digits only (GLOB, as SQLite has no regular expressions)."""
    prefixes = OWN_PREFIXES if source == OWN else (_prefix(OPTIMIZER_STEP),)
    return " OR ".join(f"{column} GLOB '{p}[0-9]*' AND substr({column}, {len(p) + 1}) NOT GLOB '*[^0-9]*'"
                       for p in prefixes)
