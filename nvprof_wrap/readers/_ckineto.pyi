"""The signature of the Kineto reader's compiled loop (readers/_ckineto.c, built by setup.py; readers/_kineto_rows.py
calls it)."""
from typing import Any

def add_all(rows: Any, events: list[Any], cats: dict[str, int], kl: list[tuple[object, ...]],
            rt: list[tuple[object, ...]], rng: list[tuple[object, ...]], threads: dict[tuple[object, object], int],
            names: dict[str, int], range_names: dict[str, int], api: dict[str, int], call_kinds: dict[str, int],
            gpu_pids: set[object], flop_ops: frozenset[str], max_ts_us: float, max_dur_us: float,
            /) -> tuple[int, int]: ...
