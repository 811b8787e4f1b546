"""NVTX ranges per Keras layer call / torch module call, and per ATen op, added without changing the
user's script (``nvprof-wrap run --annotate keras,torch``).

Runs inside the job (imported by the injected sitecustomize when NVPROF_WRAP_ANNOTATE is set). Nothing is
imported eagerly: an import hook patches keras / torch right after the job imports them. Ranges:
  keras:<layer name> (<class>)     around keras.layers.Layer.__call__
  torch:<module class>             around torch.nn.Module.__call__ (with --annotate torch)
  aten::<op>                       from torch.autograd.profiler.emit_nvtx (with --annotate torch), forward
                                   and backward, on the thread that launches the kernels
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from typing import Any

ENV = "NVPROF_WRAP_ANNOTATE"
_state: dict[str, Any] = {"patched": set(), "emit_nvtx": None}


def _warn(msg: str) -> None:
    sys.stderr.write(f"nvprof-wrap: annotate: {msg}\n")


def _nvtx():
    """(push, pop): the nvtx package if present, else torch.cuda.nvtx, else None."""
    try:
        import nvtx

        return (lambda name: nvtx.push_range(name, domain="nvprof-wrap")), (lambda: nvtx.pop_range(domain="nvprof-wrap"))
    except Exception:  # noqa: BLE001, S110 - no nvtx package: try torch next
        pass
    try:
        import torch

        return torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    except Exception:  # noqa: BLE001
        return None


def _wrap_call(cls: type, label, push, pop) -> None:
    original = cls.__call__

    def __call__(self, *args, **kwargs):
        push(label(self))
        try:
            return original(self, *args, **kwargs)
        finally:
            pop()

    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    cls.__call__ = __call__


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


def patch_torch(torch_module: Any) -> None:
    if "torch" in _state["patched"]:
        return
    push, pop = torch_module.cuda.nvtx.range_push, torch_module.cuda.nvtx.range_pop
    _wrap_call(torch_module.nn.Module, _module_label, push, pop)
    ctx = torch_module.autograd.profiler.emit_nvtx(record_shapes=False)
    ctx.__enter__()  # stays on for the life of the process: ranges for every ATen op, backward included
    _state["emit_nvtx"] = ctx
    _state["patched"].add("torch")


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the real loader of watched top-level modules to patch them once loaded."""

    def __init__(self, hooks: dict[str, Any]) -> None:
        self.hooks = hooks

    def find_spec(self, fullname, path, target=None):
        hook = self.hooks.get(fullname)
        if hook is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader, original = spec.loader, spec.loader.exec_module

        def exec_module(module):
            original(module)
            try:
                hook(module)
            except Exception as e:  # noqa: BLE001 - never break the user's import
                _warn(f"could not annotate {fullname}: {type(e).__name__}: {e}")

        loader.exec_module = exec_module
        return spec


def install(kinds: str | None = None) -> None:
    wanted = {k.strip() for k in (kinds if kinds is not None else os.environ.get(ENV, "")).split(",") if k.strip()}
    hooks = {}
    if "keras" in wanted:
        hooks["keras"] = patch_keras
    if "torch" in wanted:
        hooks["torch"] = patch_torch
    for name, hook in list(hooks.items()):
        if name in sys.modules:  # already imported (e.g. by a chained sitecustomize)
            hook(sys.modules[name])
            del hooks[name]
    if hooks:
        sys.meta_path.insert(0, _AfterImport(hooks))
