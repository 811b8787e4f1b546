"""Modules by name, each imported when it is first asked for: a command's own stages (cli.COMMANDS), a format's
renderer (renderers.RENDERERS) — so that a command does not import every other command's or format's code."""
from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar, cast

T = TypeVar("T")  # the Protocol the modules meet


class Modules(Mapping[str, T], Generic[T]):
    """name → the module package.modules[name], imported on first use (a module that does not import is a broken
    install: its ImportError says so)."""

    def __init__(self, package: str, modules: Mapping[str, str]) -> None:
        self.package, self.modules = package, modules

    def __getitem__(self, name: str) -> T:
        return cast(T, importlib.import_module(f"{self.package}.{self.modules[name]}"))

    def __iter__(self) -> Iterator[str]:
        return iter(self.modules)

    def __len__(self) -> int:
        return len(self.modules)
