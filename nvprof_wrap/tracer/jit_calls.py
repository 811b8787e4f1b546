"""A JAX job's steps for a capture window (window.py): the calls of the functions its ``jax.jit`` made.

XLA marks each execution of a compiled program on the timeline (the report's JAX steps: run/steps.py
XLA_EXECUTIONS), but in C++: nothing in Python sees them. What Python sees is the job calling its jitted functions —
each call of a jitted training step runs its program once. So `jax.jit` is wrapped once jax is imported: the
functions it makes count their calls, and the one called most is the step, as the report's program executed most.
Only the job's own `jax.jit` (and its libraries' — Flax, Keras): JAX's internals call their own, not the module's
attribute. A call while another jitted call runs (tracing a nested jitted function) is not counted: it runs no
program of its own.

Runs inside the user's process: standard library only, never raises into the job.
"""
# ruff: noqa: BLE001, S110
from __future__ import annotations

import threading
import types
from collections.abc import Callable
from typing import Any

# Told when step n begins (window.xla_execution, set by window.install: this module imports nothing of ours)
on_step: Callable[[int], None] | None = None


class _JitCalls:
    """The calls of the functions a JAX job made with ``jax.jit``, counted from outside any other call of them (a
    jitted function called while another one traces runs no program of its own): the function called most is the
    job's step, as the report's (the program XLA executed most). Step N begins at that function's N+1-th call; when
    another function overtakes it, the count goes on from its own (never backwards)."""

    def __init__(self) -> None:
        self.calls: dict[int, int] = {}
        self.leader: int | None = None
        self.inside = threading.local()
        self.lock = threading.Lock()

    def called(self, key: int) -> None:
        with self.lock:
            n = self.calls.get(key, 0)
            self.calls[key] = n + 1
            if self.leader is None or (key != self.leader and n + 1 > self.calls[self.leader]):
                self.leader = key
            leads = key == self.leader
        if leads and on_step is not None:
            on_step(n)


_JIT_CALLS = _JitCalls()


class _Counted:
    """A jitted function, each call outside another one counted (_JitCalls); everything else is the function's own
    (attributes, lower(), methods bound through __get__)."""

    def __init__(self, jitted: Any) -> None:
        object.__setattr__(self, "__wrapped__", jitted)
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:
                object.__setattr__(self, attr, getattr(jitted, attr))
            except Exception:
                pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inside = _JIT_CALLS.inside
        depth = getattr(inside, "depth", 0)
        if depth == 0:
            try:
                _JIT_CALLS.called(id(self))
            except Exception:
                pass
        inside.depth = depth + 1
        try:
            return self.__wrapped__(*args, **kwargs)
        finally:
            inside.depth = depth

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        return self if instance is None else types.MethodType(self, instance)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "__wrapped__"), name)

    def __repr__(self) -> str:
        return repr(self.__wrapped__)


def watch_jax(jax_module: Any) -> None:
    """XLA executions: ``jax.jit`` made to return functions whose calls are counted (_Counted); as a decorator with
    options only (jit(static_argnums=…)) the function it decorates. Only the job's own jax.jit: JAX's internals
    call theirs, not the module's attribute."""
    original = getattr(jax_module, "jit", None)
    if original is None or getattr(original, "_nvprof_wrap_window", False):
        return

    def counted(made: Any) -> Any:
        return _Counted(made) if callable(made) and hasattr(made, "lower") else made

    def jit(*args: Any, **kwargs: Any) -> Any:
        made = original(*args, **kwargs)
        if not args and "fun" not in kwargs and callable(made) and not hasattr(made, "lower"):
            return lambda fun: counted(made(fun))  # jit(**options) as a decorator
        return counted(made)

    jit._nvprof_wrap_window = True  # type: ignore[attr-defined]  # our marker: see window._watch_nvtx
    jit.__wrapped__ = original  # type: ignore[attr-defined]  # functools' marker on the wrapper
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(jit, attr, getattr(original, attr))
        except Exception:
            pass
    jax_module.jit = jit
