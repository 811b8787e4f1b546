"""nvprof-wrap doctor — what this machine has: GPUs (compute capability, driver), which profilers were found
and where, which Keras backends are importable; on a GPU it also runs workloads/matmul_probe.py under the best
backend and says whether tensor cores are visible (the positive control: fp16 GEMMs use them from Volta on).

examples:
  nvprof-wrap doctor
  nvprof-wrap doctor --no-probe --format json
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from nvprof_wrap.cli import _exit
from nvprof_wrap.cli._output import add_format, add_save, check_output, options, put
from nvprof_wrap.errors import ToolMissing
from nvprof_wrap.launch import BACKENDS, cupti, ncu
from nvprof_wrap.launch.base import RunSpec
from nvprof_wrap.launch.gpus import list_gpus
from nvprof_wrap.launch.runner import execute
from nvprof_wrap.pipeline import analyze
from nvprof_wrap.renderers import RENDERERS
from nvprof_wrap.store import Store
from nvprof_wrap.system import tempdirs

PROBE = Path(__file__).resolve().parents[1] / "workloads" / "matmul_probe.py"  # see experiment_cmd.WORKLOADS


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="what GPUs, profilers and Keras backends this machine has", description=__doc__,
                       epilog=_exit.READ, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--no-probe", action="store_true", help="do not run the matmul probe")
    p.add_argument("-o", "--output", default=None,
                   help="run folder for the probe, kept (default: a temporary folder, removed after)")
    add_format(p)
    add_save(p, "the facts")


def facts() -> dict:
    # Every backend of the table and Nsight Compute; cupti-python is a package, not a program on the machine.
    programs = [b for b in (*BACKENDS, ncu.NCU) if b is not cupti.BACKEND]
    found = {b.name: (b, b.find()) for b in programs}
    return {
        "gpus": [vars(g) for g in list_gpus()],
        "profilers": {k: ({"path": v, "version": b.version(v)} if v else None) for k, (b, v) in found.items()},
        "cupti_python": cupti.BACKEND.find() is not None,
        "libcupti": _libcupti(),
        "python_packages": {m: importlib.util.find_spec(m) is not None
                            for m in ("keras", "tensorflow", "torch", "jax")},
        "keras_backend": os.environ.get("KERAS_BACKEND", "tensorflow (Keras' default)"),
    }


def _libcupti() -> dict:
    """The libcupti the tracer's ctypes binding would drive (loaded here, never subscribed), or why none."""
    from nvprof_wrap.tracer import ccupti

    try:
        b = ccupti.load()
        return {"path": b.path, "api_version": b.get_version()}
    except (ccupti.Unavailable, ccupti.CuptiError) as e:
        return {"path": None, "why": str(e)}


def probe(folder: str | None) -> dict:
    """The probe's run: in -o DIR, kept; else in a temporary folder, removed after (doctor leaves nothing in the
    current folder)."""
    if folder:
        return _probe(folder)
    with tempdirs.folder("doctor") as tmp:
        got = _probe(str(Path(tmp) / "probe"))
    if got["ran"]:
        got["folder"] = "a temporary run folder, removed; -o DIR keeps it"
    return got


def _probe(folder: str) -> dict:
    try:
        out, manifest = execute(RunSpec([sys.executable, str(PROBE)], "auto", folder, name="doctor-probe",
                                        silent=True))  # the probe's and the profiler's output: in its folder's logs
    except ToolMissing as e:
        return {"ran": False, "why": str(e)}
    store = Store(out / "run.sqlite", mirror=out)
    try:
        rep = analyze(out, store=store)
    finally:
        store.close()
    return {"ran": True, "backend": manifest.backend, "folder": str(out), "verdict": rep.verdict.message,
            "tensor_cores_visible": rep.verdict.tensor_cores == "yes"}


def run(args: argparse.Namespace) -> int:
    check_output(args.save, into=args.output)
    f = facts()
    if f["gpus"] and not args.no_probe and PROBE.is_file():
        f["probe"] = probe(args.output)
    put(args, RENDERERS[args.format].render_doctor(f, **options(args)), "doctor facts")
    return 0
