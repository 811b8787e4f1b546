"""NVTX ranges per Keras layer call / torch module call, per ATen op, and per optimizer step, added without changing
the user's script (``nvprof-wrap run --annotate keras,torch``; the steps always, unless ``--no-step-marks``).

Runs inside the job (imported by the injected sitecustomize when NVPROF_WRAP_ANNOTATE is set). Nothing is
imported eagerly: an import hook patches keras / torch right after the job imports them. Ranges:
  keras:<layer name> (<class>)     around keras.layers.Layer.__call__
  torch:<module class>             around torch.nn.Module.__call__ (with --annotate torch)
  aten::<op>, seq = N, op_id = N, sizes = [[..], ..]
                                   from torch.autograd.profiler.emit_nvtx(record_shapes=True) (with
                                   --annotate torch), forward and backward, on the thread that launches the
                                   kernels; the sizes give the GEMMs' FLOPs (NVPROF_WRAP_ANNOTATE_SHAPES=0: none)
  optimizer step <N>               (kind "steps", on by default in `run`) from the end of one torch optimizer
                                   step to the end of the next: torch.optim's global step hook, so any loop that
                                   calls optimizer.step() -- a plain script, the Hugging Face Trainer, Lightning --
                                   is marked. Step 0 runs from torch's import to the end of the first step; only the
                                   first optimizer that steps counts (a GAN's second optimizer would double every
                                   step). Start/end ranges, not push/pop: they never unbalance the job's own ranges.
  train batch <N>                  (kind "steps") around each Keras training batch, from the callbacks' batch
                                   begin to its end: Keras jobs (any backend) have steps too.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from nvprof_wrap.tracer.imports import when_imported

ENV = "NVPROF_WRAP_ANNOTATE"
_state: dict[str, Any] = {"patched": set(), "emit_nvtx": None}


# (push(name), pop()): what opens and closes an NVTX range; their return values are ignored.
_PushPop = tuple[Callable[[str], object], Callable[[], object]]


def _warn(msg: str) -> None:
    sys.stderr.write(f"nvprof-wrap: annotate: {msg}\n")


def _nvtx() -> _PushPop | None:
    """(push, pop): the nvtx package if present, else torch.cuda.nvtx, else None."""
    try:
        import nvtx

        return ((lambda name: nvtx.push_range(name, domain="nvprof-wrap")),
                (lambda: nvtx.pop_range(domain="nvprof-wrap")))
    except Exception:  # noqa: BLE001, S110 - no nvtx package: try torch next
        pass
    try:
        import torch

        return torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    except Exception:  # noqa: BLE001
        return None


def _wrap_call(cls: type, label: Callable[[Any], str], push: Callable[[str], object],
               pop: Callable[[], object]) -> None:
    original = cls.__call__

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        push(label(self))
        try:
            return original(self, *args, **kwargs)
        finally:
            pop()

    __call__.__wrapped__ = original  # type: ignore[attr-defined]  # functools' marker, not in a function's type
    # Patching the user's framework class in place is the point: its instances are created by the user's code.
    cls.__call__ = __call__  # type: ignore[method-assign]  # patched in place on purpose: see above


def patch_keras(keras_module: Any) -> None:
    fns = _nvtx()
    if fns is None or "keras" in _state["patched"]:
        return
    layer = getattr(getattr(keras_module, "layers", None), "Layer", None)
    if layer is None:
        return
    _wrap_call(layer, lambda self: f"keras:{getattr(self, 'name', '?')} ({type(self).__name__})", *fns)
    _state["patched"].add("keras")


def _module_label(module: Any) -> str:
    """Keras 3 layers on the torch backend are torch modules: name them as Keras layers."""
    cls = type(module)
    if cls.__module__.startswith("keras") and isinstance(getattr(module, "name", None), str):
        return f"keras:{module.name} ({cls.__name__})"
    return f"torch:{cls.__name__}"


# The ops' input shapes in their range names (", sizes = [[64, 768], [768, 3072]]"): the GEMMs' FLOPs
# (readers/_nvtx_flops.py). Their cost is one sizes() copy per tensor input and its text per op, beside the range
# name torch formats anyway (torch/csrc/profiler/util.cpp getNvtxStr); NVPROF_WRAP_ANNOTATE_SHAPES=0 leaves them out.
SHAPES_ENV = "NVPROF_WRAP_ANNOTATE_SHAPES"


def record_shapes() -> bool:
    return os.environ.get(SHAPES_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def patch_torch(torch_module: Any) -> None:
    if "torch" in _state["patched"]:
        return
    push, pop = torch_module.cuda.nvtx.range_push, torch_module.cuda.nvtx.range_pop
    _wrap_call(torch_module.nn.Module, _module_label, push, pop)
    ctx = torch_module.autograd.profiler.emit_nvtx(record_shapes=record_shapes())
    ctx.__enter__()  # stays on for the life of the process: ranges for every ATen op, backward included
    _state["emit_nvtx"] = ctx
    _state["patched"].add("torch")


STEP_NAME = "optimizer step {}"  # timeline/window.py reads it (after the job's own 'step N' marks, if any)


def patch_steps(torch_module: Any) -> None:
    """Marks optimizer steps as NVTX ranges (see the module docstring)."""
    if "steps" in _state["patched"]:
        return
    import importlib

    try:  # torch.optim deletes its 'optimizer' attribute (torch 2.11): the submodule is only in sys.modules
        register = importlib.import_module("torch.optim.optimizer").register_optimizer_step_post_hook
    except (ImportError, AttributeError):
        register = None
    nvtx = getattr(torch_module.cuda, "nvtx", None)
    if register is None or nvtx is None or not hasattr(nvtx, "range_start"):
        _warn(f"no optimizer step marks: torch {getattr(torch_module, '__version__', '?')} has no global step hook")
        return
    import atexit
    import weakref

    from nvprof_wrap.tracer import window

    try:
        window.optimizer_step(0)  # a capture window of steps 0:B opens before step 0's range starts
        first = nvtx.range_start(STEP_NAME.format(0))
    except Exception as e:  # noqa: BLE001 - a torch built without CUDA has no NVTX: nothing to mark with
        _warn(f"no optimizer step marks: torch.cuda.nvtx cannot mark ({type(e).__name__}: {e})")
        return
    marks: dict[str, Any] = {"owner": None, "n": 0, "range": first}

    def after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        try:
            owner = marks["owner"]() if marks["owner"] is not None else None
            if owner is None:  # the first optimizer to step (or a new one, once that one is gone)
                marks["owner"] = weakref.ref(optimizer)
            elif owner is not optimizer:
                return
            nvtx.range_end(marks["range"])
            marks["n"] += 1
            window.optimizer_step(marks["n"])  # between the ranges: a window holds whole steps, marks included
            marks["range"] = nvtx.range_start(STEP_NAME.format(marks["n"]))
        except Exception as e:  # noqa: BLE001 - never break the user's training step
            _warn(f"step marks stopped: {type(e).__name__}: {e}")
            marks["owner"] = lambda: None
            handle.remove()

    def close() -> None:
        try:
            nvtx.range_end(marks["range"])
        except Exception:  # noqa: BLE001, S110 - at exit: the range simply stays open in the capture
            pass

    handle = register(after_step)
    atexit.register(close)
    _state["patched"].add("steps")


BATCH_NAME = "train batch {}"  # timeline/window.py reads it (after 'step N' and optimizer steps)


def patch_keras_batches(keras_module: Any) -> None:
    """Marks Keras training batches (kind "steps"): a range from CallbackList.on_train_batch_begin to
    on_train_batch_end, which Model.fit calls around every batch; counted over epochs from 0. The Keras torch
    backend steps no torch optimizer, so without these a Keras job has no steps."""
    cls = getattr(getattr(keras_module, "callbacks", None), "CallbackList", None)
    fns = _nvtx()
    if cls is None or fns is None or "keras batches" in _state["patched"]:
        return
    push, pop = fns
    begin, end = cls.on_train_batch_begin, cls.on_train_batch_end
    count, open_ = [0], [False]

    def on_train_batch_begin(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            if open_[0]:
                pop()
            push(BATCH_NAME.format(count[0]))
            open_[0] = True
            count[0] += 1
        except Exception:  # noqa: BLE001, S110 - never break the user's training step
            pass
        return begin(self, *args, **kwargs)

    def on_train_batch_end(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return end(self, *args, **kwargs)
        finally:
            if open_[0]:
                open_[0] = False
                try:
                    pop()
                except Exception:  # noqa: BLE001, S110
                    pass

    cls.on_train_batch_begin, cls.on_train_batch_end = on_train_batch_begin, on_train_batch_end
    _state["patched"].add("keras batches")
    from nvprof_wrap.tracer import window

    window.MARKED.add(window.SOURCES[2])  # counted as the window counts them: a window can be cut at these


def install(kinds: str | None = None) -> None:
    wanted = {k.strip() for k in (kinds if kinds is not None else os.environ.get(ENV, "")).split(",") if k.strip()}
    if "keras" in wanted:
        when_imported("keras", patch_keras)
    if "steps" in wanted:
        when_imported("keras", patch_keras_batches)
    for kind, patch in (("steps", patch_steps), ("torch", patch_torch)):
        if kind in wanted:
            when_imported("torch", patch)
