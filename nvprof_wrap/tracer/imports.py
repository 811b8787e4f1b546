"""Hooks that run once a module is imported, for code injected into the job (annotate.py, window.py): one
meta-path finder for every hook, as a second finder for the same module would never be asked."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

# A hook's return value is ignored: it patches the module it is given.
Hook = Callable[[ModuleType], object]


def _warn(msg: str) -> None:
    sys.stderr.write(f"nvprof-wrap: annotate: {msg}\n")


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the real loader of watched top-level modules to run their hooks once loaded.
    One finder for every hook (annotations, capture windows): a second finder for the same module would never be
    asked, the first one answers."""

    def __init__(self) -> None:
        self.hooks: dict[str, list[Hook]] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        hooks = self.hooks.pop(fullname, None)
        if not hooks:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader, original = spec.loader, spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original(module)
            for hook in hooks:  # one failing hook leaves the others in place
                try:
                    hook(module)
                except Exception as e:  # noqa: BLE001 - never break the user's import
                    _warn(f"could not annotate {fullname} ({getattr(hook, '__name__', hook)}): "
                          f"{type(e).__name__}: {e}")

        # Patching this one loader instance (not its class): other modules it loads keep the original.
        loader.exec_module = exec_module  # type: ignore[method-assign]  # this instance only, on purpose
        return spec


_FINDER: _AfterImport | None = None


def when_imported(name: str, hook: Hook) -> None:
    """Run hook(module) once the top-level module ``name`` is imported (now, when it already is)."""
    global _FINDER
    if name in sys.modules:  # already imported (e.g. by a chained sitecustomize)
        try:
            hook(sys.modules[name])
        except Exception as e:  # noqa: BLE001 - never break the user's program
            _warn(f"could not annotate {name} ({getattr(hook, '__name__', hook)}): {type(e).__name__}: {e}")
        return
    if _FINDER is None:
        _FINDER = _AfterImport()
        sys.meta_path.insert(0, _FINDER)
    _FINDER.hooks.setdefault(name, []).append(hook)
