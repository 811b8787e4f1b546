"""nvprof-wrap run [--backend auto|nvprof|nsys|cupti|none] [-o DIR] [--name NAME] -- CMD ARGS...

Runs CMD (never through a shell) under a profiler, child processes included, saves its output and
a manifest in the run folder, then prints the report. The wrapper exits with the job's exit code.
--html also writes the report as one self-contained page, report.html, into the run folder.
Gates (--min-tensor-core-share, --expect-precision) make a CI step: the job's own failure code wins, else 1
when a gate is missed. Every reported run is remembered in the run history (`nvprof-wrap runs`).
--save FILE writes the printed report to FILE instead (its format from the extension unless --format; -o names the
run folder). -o accepts %p (pid), %h (host) and %q{VAR} (environment variable; its value must be one folder name).
A run folder holds one run: -o into a folder that holds one is refused unless --force, which replaces it
entirely. Under torchrun/srun/mpirun each rank writes to DIR/rank<N>.

examples:
  nvprof-wrap run -- python train.py --epochs 1
  nvprof-wrap run --backend nsys -o runs/bf16 --html -- python train.py --precision bf16
  nvprof-wrap run --annotate keras -- python workloads/reuters_mlp.py --precision mixed_float16
  nvprof-wrap run --min-tensor-core-share 0.3 --expect-precision bf16 -- python train.py   # CI gate
  nvprof-wrap run --capture-steps 100:120 -- python train.py    # record steps 100-119 only, the profiler idle else
  nvprof-wrap run --backend nsys --capture-after 60 --capture-for 10 -- python train.py
  nvprof-wrap run --backend none --numerics -- python train.py   # no profiler: why did fp16 training break?
"""
from __future__ import annotations

import argparse

from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._args import (
    WIDE_HELP,
    Subcommands,
    add_format,
    add_gates,
    add_save,
    between,
    positive,
    render_options,
)
from nvprof_wrap.cli._exit import internal_error
from nvprof_wrap.cli._gates import gate, gates
from nvprof_wrap.cli._progress import reading
from nvprof_wrap.cli._write import check_output, put, say, write_text
from nvprof_wrap.errors import INTERNAL, IO_ERROR, BadInput, CannotWrite, IOFailure, NvprofWrapError
from nvprof_wrap.launch import CHOICES
from nvprof_wrap.launch.base import RunSpec
from nvprof_wrap.launch.none import NAME as NO_PROFILER
from nvprof_wrap.launch.runner import check_name, execute, expand_output, no_capture_reason
from nvprof_wrap.pipeline.stores import remember, report_run, window_never_opened
from nvprof_wrap.renderers import Options, render
from nvprof_wrap.run import CaptureWindow, Run, names
from nvprof_wrap.timeline.series import asked_per_step


def add_parser(sub: Subcommands, name: str) -> None:
    p = sub.add_parser(name, help="run a command under a profiler and report", description=__doc__,
                       epilog=_exit.RUN, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=CHOICES, default="auto",
                   help="profiler (default: auto, the first usable here: nsys, then cupti, then nvprof; none: no "
                        "profiler, the job's log, health and numerics only: for machines without a GPU or profiler)")
    p.add_argument("-o", "--output", help="run folder (default runs/NAME-TIMESTAMP); new or empty")
    p.add_argument("--force", action="store_true",
                   help="replace the run that -o DIR already holds: only a run folder nvprof-wrap made, and only the "
                        "files its run wrote (anything else there is named and kept: the run is refused)")
    p.add_argument("--name", help="run name (default: the command's name)")
    p.add_argument("--nsys", help="path of the nsys executable (default: $NVPROF_WRAP_NSYS, else nsys on PATH)")
    p.add_argument("--annotate", metavar="keras,torch", type=annotate_kinds,
                   help="add NVTX ranges per Keras layer call and/or torch module call and ATen op (no change to "
                        "the script), so the report says which ops ran on tensor cores in which precision "
                        "(default: none)")
    p.add_argument("--no-step-marks", dest="step_marks", action="store_false",
                   help="do not mark torch optimizer steps (by default every optimizer.step() of a PyTorch process "
                        "ends an NVTX range 'optimizer step N', which --steps reads: no change to the script)")
    add_numerics(p)
    p.add_argument("--no-xla-dump", dest="xla_dump", action="store_false",
                   help="do not have XLA (JAX, TensorFlow) dump what it compiled into RUN/xla-dump (by default "
                        "--xla_dump_to is added to the job's XLA_FLAGS: the report reads the HLO to decide the "
                        "kernels XLA generated; docs/jax.md)")
    p.add_argument("--no-report", action="store_true", help="only run and capture")
    add_window(p)
    add_hardware(p)
    p.add_argument("--verbose", action="store_true",
                   help="show the profiler's own output live too (progress bars, 'Generated:' lines); by default it "
                        f"goes only to the run folder's {names.STDOUT_LOG} / {names.STDERR_LOG}")
    p.add_argument("--html", action="store_true",
                   help=f"also write the report as one self-contained page, RUN_DIR/{names.REPORT_HTML} (docs/html.md)")
    p.add_argument("--limit", type=positive, default=15, help="kernels to list (default 15)")
    p.add_argument("--wide", action="store_true", help=WIDE_HELP)
    p.add_argument("--per-step", action="store_true", help="the report's one row per step (see report --per-step)")
    add_format(p)
    add_save(p)
    add_gates(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS")


def add_numerics(p: argparse.ArgumentParser) -> None:
    p.add_argument("--numerics", action="store_true",
                   help="record the job's numbers per training step and layer — activations, gradients, weights, "
                        "the update, optimizer state, the loss and loss scale — in Keras 3 and PyTorch processes (no "
                        "change to the script): numerics-PID.jsonl in the run folder (docs/numerics-recorder.md)")


ANNOTATE_KINDS = ("keras", "torch")


def annotate_kinds(text: str) -> str:
    """--annotate: a comma-separated list of keras and torch (argparse turns the ValueError into its usage line)."""
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in ANNOTATE_KINDS]
    if not kinds or unknown:
        raise argparse.ArgumentTypeError(f"{text!r}: give keras, torch or keras,torch")
    return ",".join(dict.fromkeys(kinds))


def add_window(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("capture window (record only part of the job; docs/backends.md#capture-windows)")
    g.add_argument("--capture-steps", metavar="A:B", type=step_range,
                   help="record only steps A to B-1: the job's own NVTX 'step N' ranges, else its torch optimizer "
                        "steps, else its Keras training batches, counted from 0 (no change to the script); the "
                        "profiler stays idle before and after (default: the whole job)")
    g.add_argument("--capture-after", metavar="S", type=between(0, 1e7, "seconds"),
                   help="record only from S seconds after the job started (default: from its start)")
    g.add_argument("--capture-for", metavar="S", type=between(0.001, 1e7, "seconds"),
                   help="record for S seconds from --capture-after (default 0), then no more (default: to the job's "
                        "end)")


def step_range(text: str) -> tuple[int, int]:
    """--capture-steps A:B: two whole numbers, 0 <= A < B."""
    parts = text.split(":")
    try:
        a, b = (int(x) for x in parts) if len(parts) == 2 else (None, None)
    except ValueError:
        a = b = None
    if a is None or b is None or not 0 <= a < b:
        raise argparse.ArgumentTypeError(f"{text!r}: give A:B, two whole numbers with 0 <= A < B (steps A to B-1), "
                                         "e.g. 100:120")
    return a, b


def capture_window(args: argparse.Namespace) -> CaptureWindow | None:
    """The window asked for, or None; one line when the options contradict each other."""
    steps, after, length = args.capture_steps, args.capture_after, args.capture_for
    if steps is not None:
        if after is not None or length is not None:
            raise BadInput(None, "--capture-steps and --capture-after/--capture-for together: give a window of steps "
                                 "or one of seconds")
        if not args.step_marks:
            raise BadInput(None, "--capture-steps counts the torch optimizer steps that --no-step-marks turns off: "
                                 "leave one of them out")
        return CaptureWindow("steps", steps[0], steps[1])
    if after is None and length is None:
        return None
    start = after or 0.0
    return CaptureWindow("seconds", start, None if length is None else start + length)


def add_hardware(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-hardware", dest="hardware", action="store_false",
                   help="do not sample the GPU's tensor pipes (by default NVML GPM is read every --hardware-interval "
                        "beside the job on Hopper and newer, and nsys runs record GPU metrics where the GPU has them: "
                        "docs/hardware-truth.md)")
    p.add_argument("--hardware-interval", type=between(0.01, 60, "seconds"), default=0.1, metavar="S",
                   help="GPM sampling interval in seconds (default 0.1)")
    p.add_argument("--gpu-metrics-frequency", type=between(10, 200_000, "samples per second", integer=True),
                   default=10_000, metavar="HZ",
                   help="nsys GPU metrics samples per second (default 10000: 100 µs samples; more resolves shorter "
                        "kernels and makes bigger captures)")


def _command(args: argparse.Namespace) -> list[str]:
    cmd = args.passthrough if args.passthrough is not None else args.cmd
    if not cmd:
        raise BadInput(None, "no command to run: nvprof-wrap run [options] -- CMD ARGS...")
    return [str(word) for word in cmd]  # argparse's words, or the list main() kept after "--"


def run(args: argparse.Namespace) -> int:
    check_name(args.name)  # before the job runs, as the --save FILE is checked
    check_output(args.save, into=expand_output(args.output) if args.output else None)
    spec = RunSpec(_command(args), args.backend, args.output, args.name, args.nsys,
                   quiet_stdout=args.format != "table" and not args.no_report, annotate=args.annotate,
                   step_marks=args.step_marks, force=args.force, verbose=args.verbose, hardware=args.hardware,
                   hardware_interval_s=args.hardware_interval, gpu_metrics_hz=args.gpu_metrics_frequency,
                   capture=capture_window(args), numerics=args.numerics, xla_dump=args.xla_dump)
    folder, manifest = execute(spec)
    say(f"nvprof-wrap: {manifest.backend} run of {' '.join(spec.command)[:80]} → {folder} "
        f"(exit {manifest.exit_code}, {manifest.wall_s} s)")
    if manifest.hardware and manifest.gpus:
        say(f"nvprof-wrap: tensor-pipe activity: {manifest.hardware}")
    recorded = manifest.recorded
    if recorded and not manifest.captures and manifest.backend != NO_PROFILER:
        why = window_never_opened(folder) or no_capture_reason(folder, manifest)
        say(f"nvprof-wrap: error: the {manifest.backend} run wrote no capture in {folder}: "
            f"{' '.join(why.split())[:300]}")
        return manifest.exit_code or 2  # the job succeeded, its run was not recorded: not a missed gate (1)
    for problem in manifest.problems:
        say(f"nvprof-wrap: {'warning' if recorded else 'error'}: {problem}")
    gated, internal = 0, False
    unrecorded = IO_ERROR if manifest.storage_failed else 2  # the code of a job that succeeded, not recorded
    gated_on = args.min_tensor_core_share is not None or args.expect_precision
    if recorded and (not args.no_report or args.html or gated_on):
        try:
            # the rows asked for, or the HTML page that charts them: the series' limit lifted (timeline/series.py)
            with asked_per_step(args.per_step or args.html or args.format == "html"), reading() as progress:
                rep = report_run(folder, warn=say, progress=progress)
            if args.html:
                page = Run(folder).report_html
                write_text(page, render("html", rep, Options(limit=args.limit)), run_file=True)
                say(f"nvprof-wrap: HTML report → {page}")
            results = gates(args, rep)
            if not args.no_report:
                text = render(args.format, rep, render_options(args, wide=args.wide, per_step=args.per_step,
                                                               limit=args.limit, gates=tuple(results) or None))
                try:
                    put(args, text, "report")
                except (CannotWrite, IOFailure) as e:  # our stdout full or closed: said; the job's code counts
                    if args.save is not None:
                        raise
                    say(f"nvprof-wrap: error: {e}; the run is recorded: nvprof-wrap report {folder} prints it")
            remember(folder, rep, say)
            gated = gate(args, rep, results)
        except NvprofWrapError as e:  # the job ran: its code still counts (below)
            say(f"nvprof-wrap: error: {e}")
            recorded, unrecorded = False, e.exit_code
        except Exception as e:  # noqa: BLE001 — a bug of ours after the job ran: one line; the job's code counts
            internal_error(e)
            internal = True
    # The job's code is the truth about the job; a job that succeeded but whose run could not be recorded or
    # read is not a success of `run`; a job that succeeded and was read but missed a gate exits 1; a job that
    # succeeded but whose report met a bug of ours exits with the internal error's code.
    code = manifest.exit_code
    assert code is not None  # execute() waited for the job: its code is known
    if code != 0:
        return code
    return INTERNAL if internal else unrecorded if not recorded else gated
